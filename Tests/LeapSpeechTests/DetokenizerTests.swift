import LeapTestFiles
import Testing
import LeapCore
import LeapModels
import LeapSpeech

private func goldenCodes() throws -> [AudioFrame] {
    try #require(try goldens()["waveform"]?["codes"]?.arrayValue).map { f in
        AudioFrame(codes: (f.arrayValue ?? []).map { Int32($0.intValue ?? -1) })
    }
}

private func turnWaveform(_ session: SpeakingSession, _ frames: [AudioFrame]) throws -> [Float] {
    session.startTurn()
    var out: [Float] = []
    for f in frames { out += try session.waveform(f) }
    return out + session.finishTurn()
}

// liquid-audio's LFM2AudioDetokenizer on 35 frames (210 positions: the window of 30 and the conv state
// matter) against the stream, frame by frame: the reference decodes the whole sequence at once. The
// detokenizer is F32 with an F32 KV cache; samples are of magnitude ~0.1, float32 rounding in the model and
// the FFT leaves differences far below 1e-4.
@Test func waveformMatchesLiquidAudioDetokenizer() throws {
    let frames = try goldenCodes()
    let want = try fixtureFloats("waveform.f32")
    let config = SpeechConfig(mode: .sequential)
    let session = try SpeakingSession(model: try speechModel(), config: config, backboneWidth: 64, threads: 1, kvCacheType: .f32)
    let got = try turnWaveform(session, frames)
    #expect(got.count == 1920 * frames.count && want.count == got.count)
    #expect(maxAbsDiff(got, want) < 1e-4, "max difference \(maxAbsDiff(got, want))")
    // a second turn starts from a clean state
    let again = try turnWaveform(session, frames)
    #expect(again == got)
}

// The stream restarts a full context from the frames that can still reach the next output (its receptive
// field, 63 positions = 11 frames here): with room for 14 frames it restarts many times over 35 frames and
// the waveform stays the unbounded one up to float rounding (RoPE positions move, relative ones do not).
@Test func contextRestartKeepsTheWaveform() throws {
    let frames = try goldenCodes()
    let model = try speechModel()
    let config = SpeechConfig(mode: .sequential)
    let wide = try SpeakingSession(model: model, config: config, backboneWidth: 64, threads: 1, kvCacheType: .f32)
    let narrow = try SpeakingSession(model: model, config: config, backboneWidth: 64, threads: 1, kvCacheType: .f32, contextFrames: 14)
    let a = try turnWaveform(wide, frames), b = try turnWaveform(narrow, frames)
    #expect(maxAbsDiff(a, b) < 1e-5, "max difference \(maxAbsDiff(a, b))")
    #expect(leapError { _ = try SpeakingSession(model: model, config: config, backboneWidth: 64, contextFrames: 11) }?.kind == .invalidArgument)
}

// Frame by frame (6 rows a call, state kept) equals one call on all rows: the model is causal.
@Test func detokenizerStreamEqualsOneBatch() throws {
    let frames = Array(try goldenCodes().prefix(12))
    let model = try speechModel()
    let stream = try DetokenizerStream(detokenizer: model.detokenizer, threads: 1, kvCacheType: .f32)
    var streamed: [Float] = []
    var buf = [Float](repeating: 0, count: 6 * 1282)
    for f in frames {
        try buf.withUnsafeMutableBufferPointer { try stream.spectra(f, into: $0) }
        streamed += buf
    }
    // the same rows, computed here from the table, in one eval
    let v = model.vocoder
    let t = try #require(v.file.tensor(named: "emb.emb.weight"))
    let table = try v.file.dequantize(t)
    var rows: [Float] = []
    for f in frames {
        var e = [Float](repeating: 0, count: 32)
        for (k, c) in f.codes.enumerated() { for j in 0..<32 { e[j] += table[(Int(c) + 2048 * k) * 32 + j] } }
        e = e.map { $0 / 8 }
        for _ in 0..<6 { rows += e }
    }
    let ctx = try model.detokenizer.model.makeContext(ContextOptions(contextSize: 128, kvCacheType: .f32, threads: 1))
    try rows.withUnsafeBufferPointer { try ctx.eval(embeddings: $0, wantAllLogits: true) }
    var whole: [Float] = []
    for p in 0..<(6 * frames.count) { whole += Array(try ctx.logits(at: p)) }
    #expect(maxAbsDiff(streamed, whole) < 1e-5, "max difference \(maxAbsDiff(streamed, whole))")
    #expect(leapError { try buf.withUnsafeMutableBufferPointer { try stream.spectra(AudioFrame(codes: [Int32](repeating: 2048, count: 8)), into: $0) } }?.kind == .invalidArgument)
}

// The detokenizer backbone through LeapModels against llama.cpp running the same tokenizer GGUF on the same
// rows (6 a call, F16 KV cache on both sides, llama.cpp's flash attention off): 1282 outputs of magnitude
// up to ~5 a position over 48 positions, past the window of 30. The forward pass follows ggml's arithmetic
// (observed ≤ 5e-7); 1e-4 leaves room for a summation-order change. (llama.cpp's default, flash attention
// on, accumulates P·V in F16 and differs by up to 3e-3.)
@Test func detokenizerMatchesLlamaCpp() throws {
    let want = try fixtureFloats("detokenizer_llamacpp.f32")
    let n = Int(try goldens()["detokenizer_llamacpp"]?["frames"]?.intValue ?? 0)
    let frames = Array(try goldenCodes().prefix(n))
    let model = try speechModel()
    let stream = try DetokenizerStream(detokenizer: model.detokenizer, threads: 1, kvCacheType: .f16)
    var got: [Float] = []
    var buf = [Float](repeating: 0, count: 6 * 1282)
    for f in frames {
        try buf.withUnsafeMutableBufferPointer { try stream.spectra(f, into: $0) }
        got += buf
    }
    #expect(want.count == got.count)
    #expect(maxAbsDiff(got, want) < 1e-4, "max difference \(maxAbsDiff(got, want))")
}
