import Glibc
import LeapAudioEncoder
import LeapTestFiles
import Testing

/// Long clips encode in memory linear in their length: attention runs per head and per block of query rows
/// and computes the relative-position term only for the band those rows need, so nothing of size n² (n =
/// encoder frames) is ever allocated. 5 minutes of audio is n = 3751 (30001 log-mel frames).
@Suite(.serialized) struct LongClipMemoryTests {
    static let fiveMinutes = 5 * 60 * 16_000

    /// The working memory `encode` allocates, against the documented formula (EncoderWorkspace) recomputed
    /// here for the 512-wide fixture: d = 512, FFN 64, adapter 64, 16 subsampling channels.
    @Test func workspaceIsTheLinearFormula() throws {
        let encoder = try loadEncoder(mixedModel)
        let threads = 2
        func expected(_ samples: Int) -> Int {
            let n = encoder.embeddingCount(sampleCount: samples)
            let d = 512, wide = max(64, 2 * d, 64), nPad = (n + 15) / 16 * 16, block = 64
            let attentionPerThread = block * nPad + block * (block + n - 1)
            let k = 16, ch = 16  // subsampling: chunk of 16 output frames, bins 64 / 32 / 16
            let subsampling = (4 * k + 3) * 64 * ch + 2 * (2 * k + 1) * 32 * ch + 2 * k * 16 * ch + k * ch * 16
            let floats = 7 * n * d + 2 * (2 * n - 1) * d + d * nPad + n * wide + threads * attentionPerThread + subsampling
            return 4 * floats
        }
        #expect(encoder.embeddingCount(sampleCount: Self.fiveMinutes) == 3751)
        for seconds in [1, 10, 60, 300, 600] {
            #expect(encoder.workspaceByteCount(sampleCount: seconds * 16_000, threads: threads) == expected(seconds * 16_000))
        }
        // Linear growth: doubling the clip at most doubles the memory (an n² term would quadruple it).
        let m5 = encoder.workspaceByteCount(sampleCount: Self.fiveMinutes, threads: threads)
        let m10 = encoder.workspaceByteCount(sampleCount: 2 * Self.fiveMinutes, threads: threads)
        #expect(Double(m10) / Double(m5) < 2.01)
        #expect(m5 < 128 << 20)  // about 112 MB; [8 heads, 3750, 3750] scores alone would be 450 MB
    }

    /// Encodes 5 minutes and measures the peak resident memory it adds (Linux: VmHWM after resetting it
    /// through /proc/self/clear_refs). Measured about 120 MB (the 112 MB workspace, the log-mel, the
    /// pre-emphasised copy, F16-rounded activations of the position projection); the bound, 400 MB, leaves
    /// room for tests running alongside but not for the 450 MB of a materialised [heads, n, n] score tensor.
    @Test func fiveMinutesEncodeWithBoundedPeakMemory() throws {
        let encoder = try loadEncoder(mixedModel)
        let n = Self.fiveMinutes
        var samples = [Float](repeating: 0, count: n)
        var seed: UInt64 = 12345
        for i in 0..<n {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            let noise = Float(Int64(bitPattern: seed >> 11) % 1000) / 1000 * 0.02
            samples[i] = 0.3 * sinf(Float(i) * (0.05 + 0.00001 * Float(i % 160_000))) + noise
        }
        let before = try #require(memoryStatus("VmRSS"))
        let canReset = resetPeakMemory()
        let out = try encode(encoder, samples)
        let peak = try #require(memoryStatus("VmHWM"))
        #expect(out.count == 3751 * encoder.outputDim)
        #expect(out.allSatisfy { $0.isFinite })
        if canReset {
            let grown = peak - before
            #expect(grown < 400 << 20, "peak resident memory grew by \(grown >> 20) MB")
        }
    }

    /// A field of /proc/self/status in bytes.
    func memoryStatus(_ field: String) -> Int? {
        guard let bytes = readBytes("/proc/self/status") else { return nil }
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") where line.hasPrefix(field + ":") {
            let kb = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap { Int($0) }
            return kb.map { $0 * 1024 }
        }
        return nil
    }

    /// Resets VmHWM to the current RSS (Linux ≥ 4.0).
    func resetPeakMemory() -> Bool {
        guard let f = fopen("/proc/self/clear_refs", "w") else { return false }
        defer { fclose(f) }
        return fputs("5", f) >= 0
    }
}
