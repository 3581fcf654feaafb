// EncoderWorkspace: every buffer one encode needs, allocated once (a single 64-byte aligned block).
//
// Memory grows linearly with the number of encoder frames n = T' (12.5 per second of audio):
//   n·d       ×7   x, normed (a LayerNorm's output, then its branch's), qu (q + u), qv (q + v), k, v, the
//                  attention context (qu and qv also hold the conv module's GLU and depthwise outputs)
//   (2n−1)·d  ×2   position table and its per-layer projection
//   d·nPad         vᵀ, nPad = n rounded up to 16
//   n·W            FFN hidden / conv pointwise-1 output / adapter hidden, W = max(ffn, 2d, adapter hidden)
//   per thread     B·nPad + B·(B + n − 1) attention scores and the rel-pos band of B = 64 query rows
//   fixed          the subsampling chunk (independent of n)
// (plus the log-mel, frames·128, and the [n, output] result). Nothing is O(n²): attention runs per head and
// per block of query rows, and the rel-pos term is computed for the band of positions those rows need.
// For 5 minutes (n = 3751) of the real model (d 512, FFN 2048, 2 threads) this is about 135 MB.
import Glibc
import LeapCore

struct EncoderWorkspace {
    static let queryBlock = 64

    let frames: Int        // n
    let paddedFrames: Int  // nPad
    let modelDim: Int      // d
    let wideDim: Int       // W
    let threads: Int

    let x, normed, qu, qv, k, v, context: UnsafeMutablePointer<Float>   // [n, d] each
    let positions, projectedPositions: UnsafeMutablePointer<Float>      // [2n − 1, d] each
    let valuesT: UnsafeMutablePointer<Float>                            // [d, nPad]
    let wide: UnsafeMutablePointer<Float>                               // [n, W]
    let attention: UnsafeMutablePointer<Float>                          // [threads, attentionFloatsPerThread]
    let subsampling: UnsafeMutablePointer<Float>                        // [subsamplingFloats]
    private let base: UnsafeMutableRawPointer
    let byteCount: Int

    /// Floats of one thread's attention block: scores [B, nPad] and the rel-pos band [B, B + n − 1].
    static func attentionFloatsPerThread(frames n: Int) -> Int {
        let b = queryBlock
        return b * padded(n) + b * (b + n - 1)
    }

    static func padded(_ n: Int) -> Int { (n + 15) / 16 * 16 }

    /// Floats of each buffer, in allocation order, each rounded up to 16 (64-byte boundaries).
    private static func bufferSizes(frames n: Int, modelDim d: Int, wideDim w: Int, threads: Int,
                                    subsamplingFloats: Int) -> [Int] {
        [n * d, n * d, n * d, n * d, n * d, n * d, n * d, (2 * n - 1) * d, (2 * n - 1) * d,
         d * padded(n), n * w, threads * attentionFloatsPerThread(frames: n), subsamplingFloats].map(padded)
    }

    /// Bytes the workspace allocates (see the table above).
    static func byteCount(frames n: Int, modelDim d: Int, wideDim w: Int, threads: Int, subsamplingFloats: Int) -> Int {
        4 * bufferSizes(frames: n, modelDim: d, wideDim: w, threads: threads, subsamplingFloats: subsamplingFloats)
            .reduce(0, +)
    }

    init(frames n: Int, modelDim d: Int, wideDim w: Int, threads: Int, subsamplingFloats: Int) throws {
        frames = n
        paddedFrames = Self.padded(n)
        modelDim = d
        wideDim = w
        self.threads = threads
        let rounded = Self.bufferSizes(frames: n, modelDim: d, wideDim: w, threads: threads,
                                       subsamplingFloats: subsamplingFloats)
        let total = rounded.reduce(0, +)
        byteCount = total * 4
        var p: UnsafeMutableRawPointer?
        guard posix_memalign(&p, 64, max(64, byteCount)) == 0, let block = p else {
            throw LeapError(.outOfMemory, "cannot allocate the \(byteCount >> 20) MB the audio encoder needs for \(n) frames")
        }
        base = block
        let all = base.bindMemory(to: Float.self, capacity: max(16, total))
        var offsets: [Int] = []
        var o = 0
        for r in rounded { offsets.append(o); o += r }
        x = all + offsets[0]
        normed = all + offsets[1]
        qu = all + offsets[2]
        qv = all + offsets[3]
        k = all + offsets[4]
        v = all + offsets[5]
        context = all + offsets[6]
        positions = all + offsets[7]
        projectedPositions = all + offsets[8]
        valuesT = all + offsets[9]
        wide = all + offsets[10]
        attention = all + offsets[11]
        subsampling = all + offsets[12]
    }

    func deallocate() { free(base) }

    /// Thread `t`'s attention block.
    func attentionBlock(thread t: Int) -> UnsafeMutablePointer<Float> {
        attention + t * Self.attentionFloatsPerThread(frames: frames)
    }
}
