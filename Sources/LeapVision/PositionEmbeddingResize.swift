// PositionEmbeddingResize: SigLIP2 NaFlex learns its position embeddings on a square grid (16 x 16) and
// resizes them to each tile's patch grid with antialiased bilinear interpolation, align_corners=False
// (PyTorch's F.interpolate(mode="bilinear", antialias=True); ggml's GGML_SCALE_MODE_BILINEAR | ANTIALIAS).
package enum PositionEmbeddingResize {
    /// The interpolation weights along one axis: row o (of `outputs`) holds the weight of each of the
    /// `inputs` source positions, a triangle of half-width max(1, inputs / outputs) centred on
    /// (o + 0.5) · inputs / outputs − 0.5, normalized to sum to 1.
    package static func axisWeights(inputs: Int, outputs: Int) -> [Float] { // [outputs, inputs]
        var w = [Float](repeating: 0, count: outputs * inputs)
        let scale = Double(inputs) / Double(outputs)
        let support = max(scale, 1)
        for o in 0..<outputs {
            let center = (Double(o) + 0.5) * scale - 0.5
            var sum = 0.0
            for s in 0..<inputs { sum += max(0, 1 - abs(Double(s) - center) / support) }
            for s in 0..<inputs {
                w[o * inputs + s] = Float(max(0, 1 - abs(Double(s) - center) / support) / sum)
            }
        }
        return w
    }

    /// Resizes `grid` ([gridHeight, gridWidth, dim], row-major) to [height, width, dim].
    package static func resize(
        _ grid: UnsafePointer<Float>, gridHeight: Int, gridWidth: Int, dim: Int,
        height: Int, width: Int,
        into out: UnsafeMutablePointer<Float> // [height, width, dim]
    ) {
        let wy = axisWeights(inputs: gridHeight, outputs: height) // [height, gridHeight]
        let wx = axisWeights(inputs: gridWidth, outputs: width)   // [width, gridWidth]
        // Columns first: rows[a][j] = Σ_b wx[j][b] · grid[a][b]
        let rows = UnsafeMutablePointer<Float>.allocate(capacity: gridHeight * width * dim) // [gridHeight, width, dim]
        defer { rows.deallocate() }
        rows.initialize(repeating: 0, count: gridHeight * width * dim)
        for a in 0..<gridHeight {
            for j in 0..<width {
                let dst = rows + (a * width + j) * dim
                for b in 0..<gridWidth {
                    let wgt = wx[j * gridWidth + b]
                    if wgt == 0 { continue }
                    let src = grid + (a * gridWidth + b) * dim
                    for d in 0..<dim { dst[d] += wgt * src[d] }
                }
            }
        }
        // Then rows: out[i][j] = Σ_a wy[i][a] · rows[a][j]
        out.initialize(repeating: 0, count: height * width * dim)
        for i in 0..<height {
            for a in 0..<gridHeight {
                let wgt = wy[i * gridHeight + a]
                if wgt == 0 { continue }
                for j in 0..<width {
                    let dst = out + (i * width + j) * dim, src = rows + (a * width + j) * dim
                    for d in 0..<dim { dst[d] += wgt * src[d] }
                }
            }
        }
    }
}
