// ConvSubsampling: NeMo's dw_striding pre-encoder, 8x in time (and in frequency).
//
// The log-mel [T, F] is a one-channel image (time × frequency). With C channels:
//   conv.0  Conv2d 1→C, 3×3, stride 2, pad 1, bias, ReLU          → [T1, F1, C]
//   conv.2  depthwise 3×3, stride 2, pad 1, bias                  → [T2, F2, C]
//   conv.3  pointwise 1×1 C→C, bias, ReLU
//   conv.5  depthwise 3×3, stride 2, pad 1, bias                  → [T3, F3, C]
//   conv.6  pointwise 1×1 C→C, bias, ReLU
//   out     Linear(C·F3 → d) of each time step flattened channel-major (c·F3 + f)
// with L → (L − 1) / 2 + 1 at each stride-2 step. Activations are channel-last ([time][freq][channel]) so
// the pointwise convolutions are plain matrix products over positions.
//
// Output frames are produced in chunks of `chunkFrames`: a chunk [a, b) reads conv.2/3 rows 2a−1 ... 2b−1
// and conv.0 rows 4a−3 ... 4b−1 (rows outside the signal are the zero padding), so the scratch is a fixed
// size whatever the length (about 4·chunkFrames·F1·C floats), at the price of recomputing 3 conv.0 rows
// and 1 conv.2/3 row per chunk.
import LeapCore
import LeapKernels

struct ConvSubsampling: @unchecked Sendable {
    static let chunkFrames = 16

    let channels: Int           // C
    let melBins: Int            // F
    let conv0: [Float]          // [9][C]: tap (ky·3 + kx) for every output channel (F16 values when inputF16)
    let inputF16: Bool          // conv.0 reads the log-mel rounded to F16 (llama.cpp's im2col)
    let bias0: [Float]          // [C]
    let depthwise1: [Float]     // [9][C]
    let depthwiseBias1: [Float] // [C]
    let pointwise1: BatchedLinear      // C → C
    let depthwise2: [Float]     // [9][C]
    let depthwiseBias2: [Float] // [C]
    let pointwise2: BatchedLinear      // C → C
    let out: BatchedLinear             // C·F3 → d

    static func halved(_ n: Int) -> Int { (n - 1) / 2 + 1 }
    /// Output frames for `frames` input frames.
    static func outputFrames(_ frames: Int) -> Int { halved(halved(halved(frames))) }

    var bins1: Int { Self.halved(melBins) }
    var bins2: Int { Self.halved(bins1) }
    var bins3: Int { Self.halved(bins2) }

    init(_ b: TensorBinder, config c: AudioEncoderConfig, numerics: AudioEncoderNumerics) throws {
        let ch = c.subsamplingChannels
        channels = ch
        melBins = c.melBins
        // ggml [kx, ky, in, out] = PyTorch [out][in][ky][kx]; stored here tap-major for channel-vector loops.
        func taps(_ name: String) throws -> [Float] {
            let w = try b.floats(name, ne: [3, 3, 1, ch])  // [C][9]
            var t = [Float](repeating: 0, count: 9 * ch)
            for o in 0..<ch { for k in 0..<9 { t[k * ch + o] = w[o * 9 + k] } }
            return t
        }
        func pointwise(_ i: Int) throws -> BatchedLinear {
            BatchedLinear(try Linear(weight: b.matrix("a.conv1d.\(i).weight", ne: [1, 1, ch, ch], rows: ch, cols: ch),
                                     bias: b.floats("a.conv1d.\(i).bias", ne: [1, 1, ch])))
        }
        let first = try taps("a.conv1d.0.weight")
        inputF16 = numerics.firstConvolutionInF16
        conv0 = inputF16 ? first.map { Float(Float16($0)) } : first
        bias0 = try b.floats("a.conv1d.0.bias", ne: [1, 1, ch])
        depthwise1 = try taps("a.conv1d.2.weight")
        depthwiseBias1 = try b.floats("a.conv1d.2.bias", ne: [1, 1, ch])
        pointwise1 = try pointwise(3)
        depthwise2 = try taps("a.conv1d.5.weight")
        depthwiseBias2 = try b.floats("a.conv1d.5.bias", ne: [1, 1, ch])
        pointwise2 = try pointwise(6)
        out = try BatchedLinear(b, "a.pre_encode.out", inputs: ch * c.subsampledBins, outputs: c.modelDim)
    }

    /// Floats of scratch `callAsFunction` needs (independent of the clip length).
    var scratchFloats: Int {
        let k = Self.chunkFrames, ch = channels
        return (4 * k + 3) * bins1 * ch + 2 * (2 * k + 1) * bins2 * ch + 2 * k * bins3 * ch + k * ch * bins3
    }

    /// x[t] for t < outputFrames(frames).
    func callAsFunction(
        mel: UnsafePointer<Float>,              // [frames, melBins]
        frames: Int,
        into x: UnsafeMutablePointer<Float>,    // [outputFrames(frames), d]
        scratch: UnsafeMutablePointer<Float>,   // [scratchFloats]
        pool: ThreadPool
    ) {
        let t1 = Self.halved(frames), t2 = Self.halved(t1), t3 = Self.halved(t2)
        let k = Self.chunkFrames, ch = channels
        let rows0 = 4 * k + 3, rows1 = 2 * k + 1
        let s0 = scratch                                // [rows0, F1, C] conv.0 + ReLU
        let s1 = s0 + rows0 * bins1 * ch                // [rows1, F2, C] conv.2
        let s1p = s1 + rows1 * bins2 * ch               // [rows1, F2, C] conv.3 + ReLU
        let s2 = s1p + rows1 * bins2 * ch               // [k, F3, C] conv.5
        let s2p = s2 + k * bins3 * ch                   // [k, F3, C] conv.6 + ReLU
        let flat = s2p + k * bins3 * ch                 // [k, C·F3]
        var a = 0
        while a < t3 {
            let n = min(k, t3 - a)
            let first0 = 4 * a - 3, count0 = 4 * n + 3
            let first1 = 2 * a - 1, count1 = 2 * n + 1
            firstConv(mel, frames: frames, rows: first0..<(first0 + count0), valid: 0..<t1, into: s0, pool: pool)
            depthwise(s0, firstRow: first0, inBins: bins1, taps: depthwise1, bias: depthwiseBias1,
                      rows: first1..<(first1 + count1), valid: 0..<t2, outBins: bins2, into: s1, pool: pool)
            // conv.3 on the rows inside the signal; the others stay zero padding for conv.5.
            let lo1 = max(0, -first1), hi1 = min(count1, t2 - first1)
            s1p.initialize(repeating: 0, count: count1 * bins2 * ch)
            pointwiseReLU(pointwise1, s1 + lo1 * bins2 * ch, positions: (hi1 - lo1) * bins2,
                          into: s1p + lo1 * bins2 * ch, pool: pool)
            depthwise(s1p, firstRow: first1, inBins: bins2, taps: depthwise2, bias: depthwiseBias2,
                      rows: a..<(a + n), valid: 0..<t3, outBins: bins3, into: s2, pool: pool)
            pointwiseReLU(pointwise2, s2, positions: n * bins3, into: s2p, pool: pool)
            // [n][F3][C] → [n][C·F3]
            let f3 = bins3
            for t in 0..<n {
                for f in 0..<f3 {
                    let src = s2p + (t * f3 + f) * ch, dst = flat + t * ch * f3 + f
                    for c in 0..<ch { dst[c * f3] = src[c] }
                }
            }
            out(flat, rows: n, into: x + a * out.outputs, pool: pool)
            a += n
        }
    }

    /// conv.0 + ReLU for output rows `rows` (absolute conv.0 row indices); rows outside `valid` are zeros.
    private func firstConv(
        _ mel: UnsafePointer<Float>, frames: Int, rows: Range<Int>, valid: Range<Int>,
        into dst: UnsafeMutablePointer<Float>,  // [rows.count, F1, C]
        pool: ThreadPool
    ) {
        let ch = channels, f1 = bins1, fIn = melBins
        conv0.withUnsafeBufferPointer { w in
            bias0.withUnsafeBufferPointer { bias in
                guard let wp = w.baseAddress else { return }
                pool.parallelFor(rows.count, chunksPerThread: 2) { range in
                    for r in range {
                        let t = rows.lowerBound + r
                        let rowOut = dst + r * f1 * ch
                        guard valid.contains(t) else {
                            rowOut.initialize(repeating: 0, count: f1 * ch)
                            continue
                        }
                        for f in 0..<f1 {
                            let o = rowOut + f * ch
                            for c in 0..<ch { o[c] = bias[c] }
                            for ky in 0..<3 {
                                let ti = 2 * t - 1 + ky
                                guard ti >= 0, ti < frames else { continue }
                                for kx in 0..<3 {
                                    let fi = 2 * f - 1 + kx
                                    guard fi >= 0, fi < fIn else { continue }
                                    let m = mel[ti * fIn + fi]
                                    let v = self.inputF16 ? Float(Float16(m)) : m
                                    let tap = wp + (ky * 3 + kx) * ch
                                    for c in 0..<ch { o[c] += v * tap[c] }
                                }
                            }
                            for c in 0..<ch { o[c] = max(o[c], 0) }
                        }
                    }
                }
            }
        }
    }

    /// Depthwise 3×3 stride-2 convolution of `src` (rows firstRow..., [rows][inBins][C], rows outside the
    /// buffer are zero padding) for output rows `rows`; output rows outside `valid` are zeros.
    private func depthwise(
        _ src: UnsafePointer<Float>, firstRow: Int, inBins: Int, taps: [Float], bias: [Float],
        rows: Range<Int>, valid: Range<Int>, outBins: Int,
        into dst: UnsafeMutablePointer<Float>,  // [rows.count, outBins, C]
        pool: ThreadPool
    ) {
        let ch = channels
        let srcRows = 2 * rows.count + 1  // the rows the caller computed: 2·rows.lowerBound − 1 ...
        taps.withUnsafeBufferPointer { w in
            bias.withUnsafeBufferPointer { bias in
                guard let wp = w.baseAddress else { return }
                pool.parallelFor(rows.count, chunksPerThread: 2) { range in
                    for r in range {
                        let t = rows.lowerBound + r
                        let rowOut = dst + r * outBins * ch
                        guard valid.contains(t) else {
                            rowOut.initialize(repeating: 0, count: outBins * ch)
                            continue
                        }
                        for f in 0..<outBins {
                            let o = rowOut + f * ch
                            for c in 0..<ch { o[c] = bias[c] }
                            for ky in 0..<3 {
                                let ri = 2 * t - 1 + ky - firstRow  // row in src
                                guard ri >= 0, ri < srcRows else { continue }
                                for kx in 0..<3 {
                                    let fi = 2 * f - 1 + kx
                                    guard fi >= 0, fi < inBins else { continue }
                                    let x = src + (ri * inBins + fi) * ch
                                    let tap = wp + (ky * 3 + kx) * ch
                                    for c in 0..<ch { o[c] += x[c] * tap[c] }
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    private func pointwiseReLU(
        _ layer: BatchedLinear, _ src: UnsafePointer<Float>, positions: Int, into dst: UnsafeMutablePointer<Float>,
        pool: ThreadPool
    ) {
        layer(src, rows: positions, into: dst, pool: pool)
        let n = positions * channels
        pool.parallelFor(n, align: 64, chunksPerThread: 1) { r in
            for i in r { dst[i] = max(dst[i], 0) }
        }
    }
}
