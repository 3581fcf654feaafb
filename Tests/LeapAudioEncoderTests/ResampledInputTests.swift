import LeapAudioEncoder
import Testing

@Suite struct ResampledInputTests {
    /// 44.1 and 8 kHz WAVs through the engine's path (WAV decode, our resampler to 16 kHz) against liquid-audio's
    /// (ChatState resamples with torchaudio; here the oracle's stand-in, soxr through librosa), tiny F32 model.
    /// The two resamplers are different band-limited filters: they agree in the passband to about 1e-4 but not
    /// in the transition band near the new Nyquist frequency (and, from 8 kHz, in what little they leave above
    /// 4 kHz), so the top mel bins and through them the embeddings differ. Measured: 44.1 kHz 0.0015, 8 kHz 0.0095
    /// for values up to 1.9, every row's cosine above 0.99997. Bounds: 0.01 and 0.05, and cosine > 0.9999 —
    /// 5-20x the resampler difference seen, far below what a wrong rate or a dropped block does.
    @Test(arguments: [("clip_44k", Float(0.01)), ("clip_8k", Float(0.05))])
    func wavThroughOurResampler(_ clip: String, bound: Float) throws {
        let encoder = try loadEncoder(tinyModel, numerics: .liquidAudio)
        let samples = try loadClip(clip)
        let got = try encode(encoder, samples)
        let want = try golden("\(clip).\(tinyModel).la.f32")
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
}
