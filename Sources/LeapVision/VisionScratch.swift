// VisionScratch: the activation buffers of one encode call, sized once for its largest tile and reused by
// every tile and layer.

/// Buffers for tiles of up to `capacity` patches (widths from the encoder's configuration).
final class VisionScratch {
    let capacity: Int                          // patches
    let queryBlock: Int                        // attention queries per task
    let patches: UnsafeMutablePointer<Float>   // [T, 3·p·p] patchified pixels
    let x: UnsafeMutablePointer<Float>         // [T, D] residual stream
    let normed: UnsafeMutablePointer<Float>    // [T, D] LayerNorm output
    let q: UnsafeMutablePointer<Float>         // [T, D]
    let k: UnsafeMutablePointer<Float>         // [T, D]
    let v: UnsafeMutablePointer<Float>         // [T, D]
    let qHeads: UnsafeMutablePointer<Float>    // [H, T, dh]
    let kHeads: UnsafeMutablePointer<Float>    // [H, T, dh]
    let vHeadsT: UnsafeMutablePointer<Float>   // [H, dh, Tpad] values transposed
    let attention: UnsafeMutablePointer<Float> // [T, D] heads' outputs side by side
    let scores: UnsafeMutablePointer<Float>    // [threads, queryBlock, Tpad]
    let ff: UnsafeMutablePointer<Float>        // [T, max(F, P/f²)] MLP hidden, then projector hidden
    let merged: UnsafeMutablePointer<Float>    // [T / f², f²·D] pixel-unshuffled tokens

    private var all: [UnsafeMutablePointer<Float>] = []

    init(config c: VisionProjectorConfig, projectorHidden: Int, patches capacity: Int, threads: Int) {
        self.capacity = capacity
        queryBlock = min(256, capacity)
        let T = capacity, D = c.hiddenSize
        let tokens = capacity / (c.downsampleFactor * c.downsampleFactor)
        var all: [UnsafeMutablePointer<Float>] = []
        func buffer(_ n: Int) -> UnsafeMutablePointer<Float> {
            let p = UnsafeMutablePointer<Float>.allocate(capacity: max(1, n))
            all.append(p)
            return p
        }
        patches = buffer(T * 3 * c.patchSize * c.patchSize)
        x = buffer(T * D)
        normed = buffer(T * D)
        q = buffer(T * D)
        k = buffer(T * D)
        v = buffer(T * D)
        qHeads = buffer(T * D)
        kHeads = buffer(T * D)
        vHeadsT = buffer(Self.padded(T) * D)
        attention = buffer(T * D)
        scores = buffer(threads * queryBlock * Self.padded(T))
        ff = buffer(max(T * c.feedForwardSize, tokens * projectorHidden))
        merged = buffer(T * D)
        self.all = all
    }

    deinit { for p in all { p.deallocate() } }

    /// `T` rounded up to the matmul kernels' 16-column tiles (Tpad).
    static func padded(_ T: Int) -> Int { (T + 15) / 16 * 16 }
}
