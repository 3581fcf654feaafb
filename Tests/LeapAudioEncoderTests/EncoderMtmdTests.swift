import LeapAudioEncoder
import LeapTestFiles
import Testing

/// Against llama.cpp's mtmd (mel + conformer + adapter from the same raw 16 kHz samples and the same
/// file, scripts/fixtures/make_audio_encoder_mtmd_goldens.py).
@Suite struct EncoderMtmdTests {
    /// In llama.cpp's arithmetic (the default: conv.0 on the F16-rounded log-mel and kernel, as ggml_conv_2d's
    /// im2col does) we are within 3e-5 of mtmd on the all-F32 copy of this file (f32MatchesMtmd below; in
    /// float arithmetic, 5e-4). On this F16 + Q8_0 file ggml's summation orders and ours still land some
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

    /// All F32 (the mixed file's values, dequantized: F32Copy.swift), mtmd with flash attention off: both
    /// sides compute in float32 in different summation orders, except conv.0, where both round the log-mel
    /// and the kernel to F16 (ggml_conv_2d's im2col) — an input within float noise of an F16 rounding
    /// boundary can round the other way on one side, a step of 2^-11 relative on one conv input, and float
    /// reordering through one conformer layer and the adapter adds ~1e-6 relative (values up to 3): measured
    /// 2.4e-5 to 3.0e-5; the 1e-4 bounds both.
    @Test(arguments: rawClips)
    func f32MatchesMtmd(_ clip: String) throws {
        let encoder = try AudioEncoder.load(file: f32Copy(of: fixture(mixedModel + ".gguf")))
        let got = try encode(encoder, try loadClip(clip))
        let want = try golden("\(clip).\(f32Model).mtmd.f32")
        #expect(got.count == want.count)
        let (diff, scale) = maxDifference(got, want)
        #expect(diff <= 1e-4, "max |Δ| \(diff) (values up to \(scale))")
    }

    /// The 44.1 and 8 kHz WAVs: ours through the engine's path (WAV decode, our band-limited resampler), mtmd
    /// on the same WAVs resampled by libsoxr HQ (the reference our resampler is measured against; mtmd's own
    /// file helper resamples with miniaudio's linear interpolator, whose images above 4 kHz from 8 kHz are not
    /// what a resampler should give). The two resamplers agree in the passband to about 1e-4 but not in the
    /// transition band near 8 kHz, so the top mel bins and through them the embeddings differ, as in
    /// ResampledInputTests against liquid-audio's soxr path: the same bounds, 0.01 at 44.1 kHz and 0.05 at
    /// 8 kHz (5-20x the resampler difference, far below a wrong rate or a dropped block), row cosines above
    /// 0.9999, equal embedding counts.
    @Test(arguments: [("clip_44k", Float(0.01)), ("clip_8k", Float(0.05))])
    func f32WavMatchesMtmd(_ clip: String, bound: Float) throws {
        let encoder = try AudioEncoder.load(file: f32Copy(of: fixture(mixedModel + ".gguf")))
        let got = try encode(encoder, try loadClip(clip))
        let want = try golden("\(clip).\(f32Model).mtmd.f32")
        #expect(got.count == want.count)
        let (diff, scale) = maxDifference(got, want)
        #expect(diff < bound, "max |Δ| \(diff) (values up to \(scale))")
        let d = encoder.outputDim
        var worst = 1.0
        for r in 0..<(min(got.count, want.count) / d) {
            worst = min(worst, cosine(got[(r * d)..<((r + 1) * d)], want[(r * d)..<((r + 1) * d)]))
        }
        #expect(worst > 0.9999, "lowest row cosine \(worst)")
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
