// SigLIP2Encoder: the NaFlex vision tower of LFM2-VL. A tile of H x W normalized pixels becomes
// (H/p)·(W/p) patches of p x p x 3 values, embedded linearly, plus the learned position grid resized to the
// tile's patch grid; then pre-norm ViT blocks (LayerNorm, multi-head attention with biases, LayerNorm,
// MLP fc1 → GELU → fc2, each with a residual) and a final LayerNorm (post_ln). No pooling head.
import CLeapKernels
import LeapCore
import LeapGGUF
import LeapKernels

/// One pre-norm ViT block.
struct SigLIP2Block {
    let norm1: LayerNorm   // ln1
    let query: BatchedLinear   // attn_q  [D → D]
    let key: BatchedLinear     // attn_k
    let value: BatchedLinear   // attn_v
    let output: BatchedLinear  // attn_out
    let norm2: LayerNorm   // ln2
    let up: BatchedLinear      // ffn_up   (fc1) [D → F]
    let down: BatchedLinear    // ffn_down (fc2) [F → D]

    init(_ b: TensorBinder, layer i: Int, _ c: VisionProjectorConfig) throws {
        let p = "v.blk.\(i).", D = c.hiddenSize, F = c.feedForwardSize
        norm1 = try LayerNorm(b, p + "ln1", D, eps: c.layerNormEps)
        query = try BatchedLinear(b, p + "attn_q", inputs: D, outputs: D)
        key = try BatchedLinear(b, p + "attn_k", inputs: D, outputs: D)
        value = try BatchedLinear(b, p + "attn_v", inputs: D, outputs: D)
        output = try BatchedLinear(b, p + "attn_out", inputs: D, outputs: D)
        norm2 = try LayerNorm(b, p + "ln2", D, eps: c.layerNormEps)
        up = try BatchedLinear(b, p + "ffn_up", inputs: D, outputs: F)
        down = try BatchedLinear(b, p + "ffn_down", inputs: F, outputs: D)
    }
}

struct SigLIP2Encoder {
    let config: VisionProjectorConfig
    /// v.patch_embd: the conv kernel ne = [p, p, 3, D] read as a [D, 3·p·p] matrix, so a patch's inputs are
    /// ordered (channel, row, column) (transformers flattens (row, column, channel); the converter permutes).
    let patchEmbedding: BatchedLinear
    /// The same kernel rounded to F16 (llama.cpp's arithmetic; the file's own tensor when it is F16).
    let patchEmbeddingF16: BatchedLinear
    private let patchKernelF16: HalfMatrixStorage?
    let positionGrid: [Float]   // [G, G, D] v.position_embd, row-major over the grid
    let gridSize: Int           // G
    let blocks: [SigLIP2Block]
    let postNorm: LayerNorm
    let attention: TileAttention

    init(_ b: TensorBinder, _ c: VisionProjectorConfig) throws {
        config = c
        let D = c.hiddenSize, p = c.patchSize
        let patch = try b.info("v.patch_embd.weight")
        guard patch.ne4 == [p, p, 3, D] else {
            throw LeapError.modelLoading(
                "tensor 'v.patch_embd.weight' has shape \(patch.ne), expected [\(p), \(p), 3, \(D)] in \(b.file.path)")
        }
        let data = b.file.tensorData(patch)
        guard let base = data.baseAddress, data.count == patch.byteCount else {
            throw LeapError.modelLoading("tensor 'v.patch_embd.weight' data is outside \(b.file.path)")
        }
        let kernel = try WeightMatrix(type: patch.type, rows: D, cols: 3 * p * p, data: base)
        guard kernel.byteCount == patch.byteCount else {
            throw LeapError.modelLoading("tensor 'v.patch_embd.weight' has \(patch.byteCount) bytes, expected \(kernel.byteCount)")
        }
        patchEmbedding = BatchedLinear(try Linear(weight: kernel, bias: b.vector("v.patch_embd.bias", D)))
        if kernel.type == .f16 {
            patchKernelF16 = nil
            patchEmbeddingF16 = patchEmbedding
        } else {
            let half = try HalfMatrixStorage(kernel)
            patchKernelF16 = half
            patchEmbeddingF16 = BatchedLinear(try Linear(weight: half.matrix, bias: patchEmbedding.bias))
        }

        let pos = try b.info("v.position_embd.weight")
        let positions = pos.ne.count >= 2 ? pos.ne[1] : 0
        let g = Int(Double(positions).squareRoot().rounded())
        guard pos.ne.count == 2, pos.ne[0] == D, g > 0, g * g == positions else {
            throw LeapError.modelLoading(
                "tensor 'v.position_embd.weight' has shape \(pos.ne), expected [\(D), G·G] (a square grid) in \(b.file.path)")
        }
        gridSize = g
        positionGrid = try b.file.dequantize(pos)

        blocks = try (0..<c.layerCount).map { try SigLIP2Block(b, layer: $0, c) }
        postNorm = try LayerNorm(b, "v.post_ln", D, eps: c.layerNormEps)
        attention = TileAttention(heads: c.headCount, headDim: c.headDim)
    }

    /// Runs the tower on one tile; leaves its [T, D] features (after post_ln) in scratch.normed, patches in
    /// row-major order (T = (height/p)·(width/p)).
    func callAsFunction(
        pixels: UnsafePointer<Float>, // [height, width, 3] normalized
        height: Int, width: Int, numerics: VisionNumerics, gelu: GELU, scratch s: VisionScratch, pool: ThreadPool
    ) throws {
        let p = config.patchSize, D = config.hiddenSize, F = config.feedForwardSize
        let rows = height / p, cols = width / p, T = rows * cols
        pool.parallelFor(rows, chunksPerThread: 1) { r in
            patchify(pixels, width: width, patchRows: r, patchColumns: cols, into: s.patches)
        }
        (numerics.patchEmbeddingInF16 ? patchEmbeddingF16 : patchEmbedding)(
            s.patches, rows: T, into: s.x, pool: pool)
        positionGrid.withUnsafeBufferPointer { grid in
            guard let grid = grid.baseAddress else { return }
            PositionEmbeddingResize.resize(grid, gridHeight: gridSize, gridWidth: gridSize, dim: D,
                                           height: rows, width: cols, into: s.normed)
        }
        addResidual(s.normed, to: s.x, rows: T, thenNorm: blocks.first?.norm1 ?? postNorm, into: s.normed, pool: pool)

        for (i, blk) in blocks.enumerated() {
            // s.normed = norm1(x)
            BatchedLinear.multiply([(blk.query, s.q), (blk.key, s.k), (blk.value, s.v)], s.normed, rows: T, pool: pool)
            attention(s, patches: T, pool: pool)
            blk.output(s.attention, rows: T, into: s.normed, pool: pool)
            addResidual(s.normed, to: s.x, rows: T, thenNorm: blk.norm2, into: s.normed, pool: pool)

            blk.up(s.normed, rows: T, into: s.ff, pool: pool)
            gelu(numerics.mlpGELU, s.ff, rows: T, width: F, pool: pool)
            blk.down(s.ff, rows: T, into: s.normed, pool: pool)
            let next = i + 1 < blocks.count ? blocks[i + 1].norm1 : postNorm
            addResidual(s.normed, to: s.x, rows: T, thenNorm: next, into: s.normed, pool: pool)
        }
    }

    /// x += delta, then normed = norm(x), row by row over the pool (each row's sum still in L1 for its norm).
    /// `normed` may alias `delta` (a row is read before it is written).
    private func addResidual(
        _ delta: UnsafePointer<Float>,         // [rows, D]
        to x: UnsafeMutablePointer<Float>,      // [rows, D]
        rows: Int, thenNorm norm: LayerNorm,
        into normed: UnsafeMutablePointer<Float>, // [rows, D]
        pool: ThreadPool
    ) {
        let D = config.hiddenSize
        pool.parallelFor(rows, chunksPerThread: 1) { r in
            for t in r {
                lk_add(x + t * D, delta + t * D, x + t * D, Int64(D))
                norm(x + t * D, rows: 1, into: normed + t * D)
            }
        }
    }

    /// patches[r·cols + c][ch·p·p + y·p + x] = pixels[r·p + y][c·p + x][ch] for the patch rows `patchRows`.
    private func patchify(
        _ pixels: UnsafePointer<Float>, width: Int, patchRows: Range<Int>, patchColumns: Int,
        into out: UnsafeMutablePointer<Float> // [rows·patchColumns, 3·p·p]
    ) {
        let p = config.patchSize, n = 3 * p * p
        for r in patchRows {
            for c in 0..<patchColumns {
                let patch = out + (r * patchColumns + c) * n
                for y in 0..<p {
                    let src = pixels + ((r * p + y) * width + c * p) * 3
                    for x in 0..<p {
                        for ch in 0..<3 { patch[ch * p * p + y * p + x] = src[x * 3 + ch] }
                    }
                }
            }
        }
    }
}

/// An F16 copy of a weight matrix, owned (the original stays in the mmap).
final class HalfMatrixStorage: @unchecked Sendable {
    let matrix: WeightMatrix
    private let data: UnsafeMutablePointer<UInt16>

    init(_ w: WeightMatrix) throws {
        let rows = w.rows, cols = w.cols
        data = .allocate(capacity: rows * cols)
        let row = UnsafeMutablePointer<Float>.allocate(capacity: cols)
        defer { row.deallocate() }
        for r in 0..<rows {
            try Kernels.dequantizeRow(w, row: r, into: row)
            lk_f32_to_f16_row(row, data + r * cols, Int64(cols))
        }
        do {
            matrix = try WeightMatrix(type: .f16, rows: rows, cols: cols, data: UnsafeRawPointer(data))
        } catch {
            data.deallocate()
            throw error
        }
    }

    deinit { data.deallocate() }
}
