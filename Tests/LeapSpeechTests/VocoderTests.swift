import Glibc
import LeapTestFiles
import Testing
import LeapCore
import LeapGGUF
import LeapKernels
import LeapModels
import LeapSpeech

let tinyVocoder: VocoderWeights? = try? VocoderWeights(path: fixturePath("vocoder-tiny.gguf"))

private func hiddenStates() throws -> [(hidden: [Float], codes: [Int32])] {
    let g = try goldens()
    return try #require(g["frames"]?.arrayValue).map { f in
        (try #require(f["hidden"]?.arrayValue).map { Float($0.doubleValue ?? .nan) },
         try #require(f["codes"]?.arrayValue).map { Int32($0.intValue ?? -1) })
    }
}

@Test func vocoderFileLoads() throws {
    let v = try #require(tinyVocoder)
    #expect(v.backboneWidth == 64 && v.depthformerWidth == 64 && v.detokenizerWidth == 32)
    #expect(v.depthformer.headDim == 2)
    // the fixtures hold the converter's types F32 and Q4_0 (vocoder) and Q8_0 (depthformer-128)
    #expect(Set(v.file.tensors.map(\.type)) == [.f32, .q4_0])
}

// Per-codebook logits of `_sample_audio_frame` (greedy) for fixed hidden states. The reference multiplies
// the file's dequantized weights with activations rounded as ggml rounds them (to_logits is Q4_0: its input
// goes to Q8_0 blocks), so what is left is float32 summation order on logits of magnitude ~3 (observed
// < 1e-6; 1e-4 is the bound). One thing can legitimately differ more: an input element within ~1e-6 of a
// Q8_0 rounding boundary may round the other way, moving that codebook's logits by one step (amax/127 ≈
// 0.03) times a weight (≲ 0.3): at most one codebook a frame may then differ, by less than 1e-2.
@Test func frameLogitsMatchLiquidAudio() throws {
    let v = try #require(tinyVocoder)
    let expected = try fixtureFloats("frame_logits.f32")
    let n = AudioCodes.codebooks * AudioCodes.classes
    let gen = AudioFrameGenerator(vocoder: v, pool: try ThreadPool(threads: 2))
    for (i, state) in try hiddenStates().enumerated() {
        var sampler = AudioCodeSampler(.greedy)
        var logits = [Float](repeating: 0, count: n)
        let frame = try state.hidden.withUnsafeBufferPointer { h in
            try logits.withUnsafeMutableBufferPointer { try gen.frame(hidden: h, sampler: &sampler, logitsOut: $0) }
        }
        var flipped = 0
        for c in 0..<AudioCodes.codebooks {
            let r = (i * n + c * AudioCodes.classes)..<(i * n + (c + 1) * AudioCodes.classes)
            let d = maxAbsDiff(Array(logits[(c * AudioCodes.classes)..<((c + 1) * AudioCodes.classes)]), Array(expected[r]))
            if d >= 1e-4 { flipped += 1 }
            #expect(d < 1e-2, "state \(i) codebook \(c): max logit difference \(d)")
        }
        #expect(flipped <= 1, "state \(i): \(flipped) codebooks differ by more than 1e-4")
        #expect(frame.codes == state.codes)
    }
}

// One depthformer layer of width 128 (head dim 4: two rotation pairs per head, so interleaved and NEOX
// pairing give different outputs) in Q8_0 over the 8 steps of a frame, against liquid-audio's
// RawLMBackbone.forward_cached with ggml's Q8_0 activation rounding. Outputs are of magnitude ~3; the
// difference left is summation order (and a rare Q8_0 rounding flip: one step of amax/127 in one input).
@Test func depthformerStepsMatchLiquidAudio() throws {
    let file = try GGUFFile(path: fixturePath("depthformer-128.gguf"))
    let w = try DepthformerWeights(TensorBinder(file: file), layers: 1, dim: 128)
    let d = Depthformer(weights: w, pool: try ThreadPool(threads: 1))
    let x = try fixtureFloats("depthformer128_in.f32"), want = try fixtureFloats("depthformer128_out.f32")
    var got = [Float](repeating: 0, count: 8 * 128)
    try x.withUnsafeBufferPointer { xp in
        try got.withUnsafeMutableBufferPointer { o in
            for t in 0..<8 { try d.step(xp.baseAddress! + t * 128, into: o.baseAddress! + t * 128) }
        }
    }
    #expect(maxAbsDiff(got, want) < 1e-3, "max difference \(maxAbsDiff(got, want))")
    // a ninth step does not fit in a frame; reset starts a new one with the same first output
    #expect(leapError { try x.withUnsafeBufferPointer { xp in var y = [Float](repeating: 0, count: 128); try d.step(xp.baseAddress!, into: &y) } }?.kind == .invalidArgument)
    d.reset()
    var first = [Float](repeating: 0, count: 128)
    try x.withUnsafeBufferPointer { try d.step($0.baseAddress!, into: &first) }
    #expect(first == Array(got[0..<128]))
}

@Test func feedbackRowIsTheSumOfTheCodebookRows() throws {
    let v = try #require(tinyVocoder)
    let gen = AudioFrameGenerator(vocoder: v, pool: try ThreadPool(threads: 1))
    let codes: [Int32] = [0, 2048, 7, 100, 2047, 5, 1000, 3]
    let row = try gen.feedbackEmbedding(AudioFrame(codes: codes))
    // independently: dequantize the whole table and add the 8 rows in double
    let t = try #require(v.file.tensor(named: "audio_embedding.embedding.weight"))
    let table = try v.file.dequantize(t)
    for j in 0..<64 {
        var s = 0.0
        for (k, c) in codes.enumerated() { s += Double(table[(Int(c) + 2049 * k) * 64 + j]) }
        #expect(abs(Double(row[j]) - s) < 1e-5)
    }
    #expect(leapError { _ = try gen.feedbackEmbedding(AudioFrame(codes: [2049, 0, 0, 0, 0, 0, 0, 0])) }?.kind == .invalidArgument)
    #expect(leapError { _ = try gen.feedbackEmbedding(AudioFrame(codes: [0, 0])) }?.kind == .invalidArgument)
}

@Test func frameRejectsAHiddenStateOfTheWrongWidth() throws {
    let v = try #require(tinyVocoder)
    let gen = AudioFrameGenerator(vocoder: v, pool: try ThreadPool(threads: 1))
    var s = AudioCodeSampler(.greedy)
    let short = [Float](repeating: 0, count: 63)
    #expect(leapError { _ = try short.withUnsafeBufferPointer { try gen.frame(hidden: $0, sampler: &s) } }?.kind == .invalidArgument)
    var bad = [Float](repeating: 0, count: 64)
    bad[3] = .nan
    #expect(leapError { _ = try bad.withUnsafeBufferPointer { try gen.frame(hidden: $0, sampler: &s) } }?.kind == .invalidArgument)
}

// Files that are not an LFM2.5-Audio vocoder: a text model (no depthformer), a detokenizer given as the
// vocoder, and a file of the older LFM2-Audio `audiodecoder-*` kind (depthformer + Mimi), which is named.
@Test func wrongAndOldFilesAreRejected() throws {
    let backbone = leapError { _ = try VocoderWeights(path: fixturePath("speech-backbone.gguf")) }
    #expect(backbone?.kind == .modelLoading)
    #expect(backbone?.message.contains("not an LFM2.5-Audio vocoder") == true)
    #expect(leapError { _ = try VocoderWeights(path: fixturePath("tokenizer-tiny.gguf")) }?.kind == .modelLoading)
    // a depthformer-only file lacks the rest of the vocoder
    let partial = leapError { _ = try VocoderWeights(path: fixturePath("depthformer-128.gguf")) }
    #expect(partial?.kind == .modelLoading)
    #expect(partial?.message.contains("depth_linear.weight") == true)

    let dir = "/tmp/leap-speech-tests-\(getpid())"
    mkdir(dir, 0o755)
    defer { _ = unlink(dir + "/audiodecoder-LFM2-Audio-1.5B-Q8_0.gguf"); rmdir(dir) }
    let old = dir + "/audiodecoder-LFM2-Audio-1.5B-Q8_0.gguf"
    let bytes = try fileBytes(fixturePath("depthformer-128.gguf"))
    let f = fopen(old, "wb")
    fwrite(bytes, 1, bytes.count, f)
    fclose(f)
    let v1 = leapError { _ = try VocoderWeights(path: old) }
    #expect(v1?.kind == .unsupported)
    #expect(v1?.message.contains("LFM2-Audio (v1)") == true && v1?.message.contains("Mimi") == true)

    // the detokenizer refuses a text model, and a vocoder whose emb.emb width does not match
    let v = try #require(tinyVocoder)
    let lm = try LanguageModel.load(path: fixturePath("speech-backbone.gguf"))
    #expect(leapError { _ = try AudioDetokenizer(model: lm, vocoder: v) }?.kind == .modelLoading)
}
