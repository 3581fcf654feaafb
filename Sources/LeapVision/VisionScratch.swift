// VisionScratch: the activation buffers of one encode call, sized once for its largest tile and reused by
// every tile and layer.
import CLeapKernels
import CLeapMediaKernels

/// Buffers for tiles of up to `capacity` patches (widths from the encoder's configuration).
final class VisionScratch {
    let capacity: Int                          // patches
    let patches: UnsafeMutablePointer<Float>   // [T, 3·p·p] patchified pixels
    let x: UnsafeMutablePointer<Float>         // [T, D] residual stream
    let normed: UnsafeMutablePointer<Float>    // [T, D] LayerNorm output
    let q: UnsafeMutablePointer<Float>         // [T, D]
    let k: UnsafeMutablePointer<Float>         // [T, D]
    let v: UnsafeMutablePointer<Float>         // [T, D]
    let queriesPacked: UnsafeMutablePointer<Float> // [H, ⌈T/32⌉·32, dh] each head's queries as packed weights
    let keysPacked: UnsafeMutablePointer<Float>    // [H, ⌈T/12⌉·12, dh] each head's keys as packed tokens
    let valuesPacked: UnsafeMutablePointer<Float>  // [H, ⌈dh/32⌉·32, T] each head's values, transposed, packed
    let attention: UnsafeMutablePointer<Float>     // [T, D] heads' outputs side by side
    let probabilitiesPerThread: Int                // floats: [T, queryBlock]
    let probabilities: UnsafeMutablePointer<Float> // [threads, T, queryBlock] scores, then exponentials
    let inverseSums: UnsafeMutablePointer<Float>   // [threads, queryBlock] 1 / Σ of each query's exponentials
    let ff: UnsafeMutablePointer<Float>        // [T, max(F, P/f²)] MLP hidden, then projector hidden
    let merged: UnsafeMutablePointer<Float>    // [T / f², f²·D] pixel-unshuffled tokens

    private var all: [UnsafeMutablePointer<Float>] = []

    init(config c: VisionProjectorConfig, projectorHidden: Int, patches capacity: Int, threads: Int) {
        self.capacity = capacity
        let T = capacity, D = c.hiddenSize, H = c.headCount, dh = c.headDim
        let tokens = capacity / (c.downsampleFactor * c.downsampleFactor)
        var all: [UnsafeMutablePointer<Float>] = []
        func buffer(_ n: Int) -> UnsafeMutablePointer<Float> {
            let p = UnsafeMutablePointer<Float>.allocate(capacity: max(1, n))
            all.append(p)
            return p
        }
        func roundUp(_ n: Int, _ m: Int) -> Int { (n + m - 1) / m * m }
        let panel = Int(LK_VG_PANEL_ROWS)
        let block = TileAttention.queryBlock
        patches = buffer(T * 3 * c.patchSize * c.patchSize)
        x = buffer(T * D)
        normed = buffer(T * D)
        q = buffer(T * D)
        k = buffer(T * D)
        v = buffer(T * D)
        queriesPacked = buffer(H * roundUp(T, panel) * dh)
        keysPacked = buffer(H * roundUp(T, Int(LK_VG_BLOCK_TOKENS)) * dh)
        valuesPacked = buffer(H * roundUp(dh, panel) * T)
        attention = buffer(T * D)
        probabilitiesPerThread = T * block
        probabilities = buffer(threads * probabilitiesPerThread)
        inverseSums = buffer(threads * block)
        ff = buffer(max(T * c.feedForwardSize, tokens * projectorHidden))
        merged = buffer(T * D)
        self.all = all
    }

    deinit { for p in all { p.deallocate() } }
}
