import LeapAudioEncoder
import LeapCore
import Testing

@Suite struct MelSpectrogramTests {
    /// liquid-audio's AudioToMelSpectrogramPreprocessor (NeMo) on the same samples. Both compute in float32
    /// (torch's FFT and matmul against ours): float FFT rounding is relative to a frame's loudest bins, so in
    /// its quiet bins it becomes a relative error of the power that the log turns into an absolute one and
    /// the per-bin normalisation scales by 1/std. Measured 3-5.5e-5 for values up to 2.1; bound 1e-4 (a wrong
    /// window, filter, padding or std would move values by 1e-2 and more).
    @Test(arguments: rawClips)
    func matchesLiquidAudio(_ clip: String) throws {
        let encoder = try loadEncoder(tinyModel)
        let samples = try loadClip(clip)
        let mel = try encoder.melFeatures(samples)
        let want = try golden(clip + ".mel.f32")  // [frames, 128]
        #expect(mel.frames == samples.count / 160 + 1)
        #expect(mel.values.count == want.count)
        let (diff, scale) = maxDifference(mel.values, want)
        #expect(diff < 1e-4, "max |Δ| \(diff) (values up to \(scale))")
        // The last frame is beyond the n/160 valid ones: always zero.
        #expect(mel.values[(mel.frames - 1) * 128..<(mel.frames * 128)].allSatisfy { $0 == 0 })
    }

    /// Per mel bin over the valid frames the output has mean 0 and unbiased std std/(std + 1e-5) ≈ 1.
    @Test func normalisedPerFeature() throws {
        let encoder = try loadEncoder(tinyModel)
        let samples = try loadClip("clip_2s5")
        let mel = try encoder.melFeatures(samples)
        let valid = samples.count / 160
        for m in [0, 17, 64, 127] {
            var s = 0.0, sq = 0.0
            for f in 0..<valid { s += Double(mel.values[f * 128 + m]) }
            let mean = s / Double(valid)
            for f in 0..<valid { sq += (Double(mel.values[f * 128 + m]) - mean) * (Double(mel.values[f * 128 + m]) - mean) }
            #expect(abs(mean) < 1e-5)
            #expect(abs((sq / Double(valid - 1)).squareRoot() - 1) < 1e-3)
        }
    }

    @Test func tooShortEmptyOrBrokenInputIsRejected() throws {
        let encoder = try loadEncoder(tinyModel)
        for n in [0, 1, 319] {
            #expect(throws: LeapError.self) { _ = try encoder.melFeatures([Float](repeating: 0.1, count: n)) }
            #expect(throws: LeapError.self) { _ = try encode(encoder, [Float](repeating: 0.1, count: n)) }
            #expect(encoder.embeddingCount(sampleCount: n) == 0)
        }
        // 320 samples = 2 valid frames: the shortest clip that normalises.
        let ok = try encoder.melFeatures((0..<320).map { Float(($0 * 7919) % 200) / 200 - 0.5 })
        #expect(ok.frames == 3)
        // Silence normalises to zeros (std 0: (x − mean) / (0 + 1e-5)), a usable input.
        let silence = try encode(encoder, [Float](repeating: 0, count: 4000))
        #expect(silence.count == encoder.embeddingCount(sampleCount: 4000) * encoder.outputDim)
        #expect(silence.allSatisfy { $0.isFinite })
        let loud = (0..<4000).map { Float($0 % 7) * 1e20 }
        #expect(throws: LeapError.self) { _ = try encode(encoder, loud) }
        var nan = [Float](repeating: 0.1, count: 4000)
        nan[1234] = .nan
        do {
            _ = try encode(encoder, nan)
            Issue.record("a NaN sample was accepted")
        } catch let e as LeapError {
            #expect(e.kind == .invalidArgument && e.message.contains("1234"))
        }
    }
}
