import LeapAudioEncoder
import LeapTestFiles
import Testing

/// Against llama.cpp's mtmd (mel + conformer + adapter from the same raw 16 kHz samples and the same
/// file, scripts/fixtures/make_audio_encoder_mtmd_goldens.py).
@Suite struct EncoderMtmdTests {
    /// In llama.cpp's arithmetic (the default: conv.0 on the F16-rounded log-mel and kernel, as ggml_conv_2d's
    /// im2col does) we are within 3e-5 of mtmd on an all-F32 512-wide file (checked while making the fixtures;
    /// in float arithmetic, 5e-4). On this F16 + Q8_0 file ggml's summation orders and ours still land some
    /// Q8_0 and F16 activation roundings on different sides, and each such flip moves an input by a full
    /// quantum (1/127 of its block's largest value for Q8_0), so mtmd, liquid-audio and we are about the same
    /// distance apart: measured 0.022-0.030 between us and mtmd, 0.029-0.031 between mtmd and liquid-audio,
    /// for values up to 2.9. Bound: 0.06 and every row's cosine above 0.999; the row count must match exactly.
    @Test(arguments: rawClips)
    func mixedMatchesMtmd(_ clip: String) throws {
        let encoder = try loadEncoder(mixedModel)
        let samples = try loadClip(clip)
        let got = try encode(encoder, samples)
        let want = try golden("\(clip).\(mixedModel).mtmd.f32")
        #expect(got.count == want.count)
        let (diff, scale) = maxDifference(got, want)
        #expect(diff < 0.06, "max |Δ| \(diff) (values up to \(scale))")
        let d = encoder.outputDim
        var worst = 1.0
        for r in 0..<(min(got.count, want.count) / d) {
            worst = min(worst, cosine(got[(r * d)..<((r + 1) * d)], want[(r * d)..<((r + 1) * d)]))
        }
        #expect(worst > 0.999, "lowest row cosine \(worst)")
    }

    /// The end-to-end golden's prompt layout (asr_greedy.json, for the conversation tests): mtmd put as many
    /// embeddings in each clip's audio chunk as we produce.
    @Test func asrGoldenAudioChunkSizes() throws {
        let json = String(decoding: try #require(readBytes(fixture("asr_greedy.json"))), as: UTF8.self)
        let encoder = try loadEncoder(mixedModel)
        for clip in rawClips {
            let n = encoder.embeddingCount(sampleCount: try loadClip(clip).count)
            #expect(json.contains("\"clip\": \"\(clip).wav\""))
            #expect(json.contains("\"audio\": \(n)\n"), "no audio chunk of \(n) embeddings for \(clip)")
        }
    }
}
