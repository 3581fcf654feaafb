// BatchedLinear: a linear layer for the encoders' batches of hundreds of rows (image patches, audio frames).
// F32 and F16 weights are packed once, at load, into the panels of lk_vg_gemm_packed (a register-blocked
// product; the shared float kernels keep llama.cpp's one-token summation order, which costs them 2-3x here);
// F16 weights multiply activations rounded to F16, as ggml and Linear do. Q8_0 weights are repacked at load for
// lk_vq8_gemm_packed in the layout of the kernel path selected then (vpmaddwd's s16 pairs, AVX-512 VNNI's byte
// quads, arm64 sdot's): from 16 rows the results of Linear's Q8_0 product, faster. Other types, Q8_0 where no
// layout runs, and a path selected later with another layout use Linear (Kernels.matmul).
import CLeapKernels
import CLeapMediaKernels
import LeapCore

package struct BatchedLinear {
    package let linear: Linear
    private let packed: PackedWeights?
    private let packedQ8: PackedQ8Weights?
    package var inputs: Int { linear.inputs }
    package var outputs: Int { linear.outputs }
    package var bias: [Float]? { linear.bias }

    package init(_ linear: Linear) {
        self.linear = linear
        packed = PackedWeights(linear.weight)
        packedQ8 = packed == nil ? PackedQ8Weights(linear.weight) : nil
    }

    package init(_ b: TensorBinder, _ name: String, inputs: Int, outputs: Int, bias: Linear.BiasUse = .required) throws {
        self.init(try Linear(b, name, inputs: inputs, outputs: outputs, bias: bias))
    }

    package func callAsFunction(
        _ x: UnsafePointer<Float>,          // [rows, inputs]
        rows: Int,
        into y: UnsafeMutablePointer<Float>, // [rows, outputs]
        pool: ThreadPool
    ) {
        if rows >= Int(LK_VQ8_MIN_TOKENS), let packedQ8, multiplyQ8(packedQ8, x, rows: rows, into: y, pool: pool) { return }
        guard rows > 0, packed != nil else {
            linear(x, rows: rows, into: y, pool: pool)
            return
        }
        Self.multiplyPacked([(self, y)], x, rows: rows, pool: pool)
    }

    /// layer.y = layer.linear(x) ([rows, outputs] each) for layers that take the same input (attention's query,
    /// key and value). When all have packed weights of one type (F32 or F16) X is packed once and every layer's
    /// panels run as the tasks of one pass over the pool (one wait for the slowest thread instead of one per
    /// layer); otherwise the layers run one after another.
    package static func multiply(
        _ layers: [(linear: BatchedLinear, y: UnsafeMutablePointer<Float>)],
        _ x: UnsafePointer<Float>, // [rows, inputs]
        rows: Int,
        pool: ThreadPool
    ) {
        guard rows > 0, let type = layers.first?.linear.packed?.type,
              layers.allSatisfy({ $0.linear.packed?.type == type && $0.linear.inputs == layers[0].linear.inputs }) else {
            for (l, y) in layers { l(x, rows: rows, into: y, pool: pool) }
            return
        }
        multiplyPacked(layers, x, rows: rows, pool: pool)
    }

    /// lk_vg_gemm_packed for layers whose weights are all packed, of one type, with one input width: X packed
    /// once, then tasks of at most 1/(2·threads) of all the layers' panels (each within one layer). A layer whose
    /// product fails (no scratch memory) runs again through Linear.
    private static func multiplyPacked(
        _ layers: [(linear: BatchedLinear, y: UnsafeMutablePointer<Float>)], _ x: UnsafePointer<Float>, rows: Int,
        pool: ThreadPool
    ) {
        let linears = layers.map(\.linear), ys = layers.map(\.y)
        let K = linears[0].inputs, type = linears[0].packed!.type
        let xp = pool.scratch(bytes: lk_vg_packed_x_floats(Int64(rows), Int64(K)) * 4)
            .assumingMemoryBound(to: Float.self) // [blocks of 12 tokens][K][12]
        let blocks = (rows + Int(LK_VG_BLOCK_TOKENS) - 1) / Int(LK_VG_BLOCK_TOKENS)
        let roundF16: Int32 = type == Int32(LK_TYPE_F16) ? 1 : 0
        pool.parallelFor(blocks, chunksPerThread: 2) { r in
            lk_vg_pack_x(x, Int64(K), Int64(rows), Int64(K), roundF16, xp, Int64(r.lowerBound), Int64(r.upperBound))
        }
        let panel = Int(LK_VG_PANEL_ROWS)
        let panelCounts = linears.map { ($0.outputs + panel - 1) / panel }
        let chunk = max(1, (panelCounts.reduce(0, +) + 2 * pool.threadCount - 1) / (2 * pool.threadCount))
        var tasks: [(layer: Int, panels: Range<Int>)] = [] // each layer in pieces of (nearly) equal size
        for (i, n) in panelCounts.enumerated() {
            let pieces = (n + chunk - 1) / chunk
            for j in 0..<pieces { tasks.append((i, n * j / pieces..<n * (j + 1) / pieces)) }
        }
        let failed = UnsafeMutablePointer<Int32>.allocate(capacity: linears.count)
        defer { failed.deallocate() }
        failed.initialize(repeating: 0, count: linears.count)
        withBiases(linears[...], []) { biases in
            pool.run(tasks: tasks.count) { t, _ in
                let (i, r) = tasks[t], l = linears[i], N = l.outputs
                if lk_vg_gemm_packed(type, l.packed!.data, Int64(K), xp, Int64(Int(LK_VG_BLOCK_TOKENS) * K),
                                     Int64(LK_VG_BLOCK_TOKENS), Int64(rows), biases[i], ys[i], Int64(N),
                                     Int64(r.lowerBound * panel), Int64(min(N, r.upperBound * panel))) == 0 {
                    failed[i] = 1
                }
            }
        }
        for i in linears.indices where failed[i] != 0 { linears[i].linear(x, rows: rows, into: ys[i], pool: pool) }
    }

    /// body(the layers' bias pointers, nil where a layer has none), valid during the call.
    private static func withBiases(
        _ rest: ArraySlice<BatchedLinear>, _ got: [UnsafePointer<Float>?], _ body: ([UnsafePointer<Float>?]) -> Void
    ) {
        guard let l = rest.first else { return body(got) }
        l.withBias { b in withBiases(rest.dropFirst(), got + [b], body) }
    }

    /// lk_vq8_gemm_packed; false (nothing reliable written) when it declines.
    private func multiplyQ8(
        _ packed: PackedQ8Weights,
        _ x: UnsafePointer<Float>,          // [rows, inputs]
        rows: Int,
        into y: UnsafeMutablePointer<Float>, // [rows, outputs]
        pool: ThreadPool
    ) -> Bool {
        let K = inputs, N = outputs
        let layout = packed.layout
        guard layout == lk_vq8_layout() else { return false }
        let xp = pool.scratch(bytes: lk_vq8_packed_x_bytes(layout, Int64(rows), Int64(K))) // [rows][K / 32 blocks]: values, scales (offsets)
        pool.parallelFor(rows, chunksPerThread: 2) { r in
            lk_vq8_pack_x(layout, x, Int64(K), Int64(K), xp, Int64(r.lowerBound), Int64(r.upperBound))
        }
        let panel = Int(LK_VQ8_PANEL_ROWS), panels = (N + panel - 1) / panel
        let failed = UnsafeMutablePointer<Int32>.allocate(capacity: 1)
        defer { failed.deallocate() }
        failed.pointee = 0
        withBias { bias in
            pool.parallelFor(panels, chunksPerThread: 2) { r in
                if lk_vq8_gemm_packed(layout, packed.data, Int64(K), xp, Int64(rows), bias, y, Int64(N),
                                      Int64(r.lowerBound * panel), Int64(min(N, r.upperBound * panel))) == 0 {
                    failed.pointee = 1
                }
            }
        }
        return failed.pointee == 0
    }

    private func withBias(_ body: (UnsafePointer<Float>?) -> Void) {
        guard let b = linear.bias else { return body(nil) }
        b.withUnsafeBufferPointer { body($0.baseAddress) }
    }
}

/// F32 or F16 weights packed into lk_vg_gemm_packed's panels (owned; the original stays in the mmap).
package final class PackedWeights: @unchecked Sendable {
    package let type: Int32
    package let data: UnsafeMutableRawPointer

    /// nil for types the packed product does not take.
    package init?(_ w: WeightMatrix) {
        guard w.type == .f32 || w.type == .f16 else { return nil }
        type = Int32(w.type.rawValue)
        let rows = Int64(w.rows), cols = Int64(w.cols)
        data = .allocate(byteCount: lk_vg_packed_weight_bytes(type, rows, cols), alignment: 64)
        let panels = (rows + Int64(LK_VG_PANEL_ROWS) - 1) / Int64(LK_VG_PANEL_ROWS)
        guard lk_vg_pack_weights(type, w.data, w.rowBytes, rows, cols, data, 0, panels) == 1 else {
            data.deallocate()
            return nil
        }
    }

    deinit { data.deallocate() }
}

/// Q8_0 weights packed for lk_vq8_gemm_packed (owned; the original stays in the mmap), in the layout of the
/// kernel path selected when they were packed.
package final class PackedQ8Weights: @unchecked Sendable {
    package let data: UnsafeMutableRawPointer
    package let layout: Int32

    /// nil for other types, or where no layout runs (lk_vq8_layout).
    package init?(_ w: WeightMatrix) {
        layout = lk_vq8_layout()
        guard w.type == .q8_0, layout != Int32(LK_VQ8_NONE) else { return nil }
        let rows = Int64(w.rows), cols = Int64(w.cols)
        data = .allocate(byteCount: lk_vq8_packed_weight_bytes(layout, rows, cols), alignment: 64)
        let panels = (rows + Int64(LK_VQ8_PANEL_ROWS) - 1) / Int64(LK_VQ8_PANEL_ROWS)
        guard lk_vq8_pack_weights(layout, w.data, w.rowBytes, rows, cols, data, 0, panels) == 1 else {
            data.deallocate()
            return nil
        }
    }

    deinit { data.deallocate() }
}
