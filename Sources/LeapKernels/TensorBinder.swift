// TensorBinder: binds the tensors of a GGUF by name with shape checks, for every model and encoder loader.
// Matrices stay in the mmap (no copy); small 1-D vectors are dequantized to float arrays.
import LeapCore
import LeapGGUF

/// Binds tensors by name with shape checks; every error names the tensor and the file.
package struct TensorBinder {
    package let file: GGUFFile

    package init(file: GGUFFile) { self.file = file }

    package func has(_ name: String) -> Bool { file.tensor(named: name) != nil }

    package func info(_ name: String) throws -> GGUFTensorInfo {
        guard let t = file.tensor(named: name) else {
            throw LeapError.modelLoading("missing tensor '\(name)' in \(file.path)")
        }
        return t
    }

    /// A 2-D weight with ne = [cols, rows].
    package func matrix(_ name: String, rows: Int, cols: Int) throws -> WeightMatrix {
        let t = try info(name)
        let ne = t.ne
        guard (ne.count == 2 && ne[0] == cols && ne[1] == rows) || (ne.count > 2 && ne[0] == cols && ne[1] == rows && ne[2...].allSatisfy { $0 == 1 }) else {
            throw LeapError.modelLoading("tensor '\(name)' has shape \(ne), expected [\(cols), \(rows)] in \(file.path)")
        }
        return try view(t, rows: rows, cols: cols)
    }

    /// A 1-D float vector of `n` elements (any type; dequantized copy).
    package func vector(_ name: String, _ n: Int) throws -> [Float] {
        let t = try info(name)
        guard t.elementCount == n, t.ne.first == n || t.ne.count > 1 else {
            throw LeapError.modelLoading("tensor '\(name)' has shape \(t.ne), expected [\(n)] in \(file.path)")
        }
        return try file.dequantize(t)
    }

    /// A small 2-D float tensor (e.g. conv taps ne = [L, E]) dequantized, row-major [E][L].
    package func small(_ name: String, ne0: Int, ne1: Int) throws -> [Float] {
        let t = try info(name)
        guard t.elementCount == ne0 * ne1, t.ne.count >= 2, t.ne[0] == ne0, t.ne[1] == ne1 else {
            throw LeapError.modelLoading("tensor '\(name)' has shape \(t.ne), expected [\(ne0), \(ne1)] in \(file.path)")
        }
        return try file.dequantize(t)
    }

    package func optionalVector(_ name: String, _ n: Int) throws -> [Float]? {
        has(name) ? try vector(name, n) : nil
    }

    /// A tensor of exactly shape `ne` (missing trailing dims count as 1), dequantized in storage order.
    package func floats(_ name: String, ne expected: [Int]) throws -> [Float] {
        let t = try info(name)
        try requireShape(t, expected)
        return try file.dequantize(t)
    }

    /// A tensor of exactly shape `ne` (e.g. a 1×1 convolution kernel [1, 1, in, out]) viewed as `rows` rows
    /// of `cols` contiguous elements; rows·cols must be its element count.
    package func matrix(_ name: String, ne expected: [Int], rows: Int, cols: Int) throws -> WeightMatrix {
        let t = try info(name)
        try requireShape(t, expected)
        guard rows * cols == t.elementCount else {
            throw LeapError.modelLoading("tensor '\(name)' of \(t.elementCount) elements cannot be viewed as [\(cols), \(rows)]")
        }
        return try view(t, rows: rows, cols: cols)
    }

    /// The mmapped data of `t` as a [rows, cols] weight matrix.
    private func view(_ t: GGUFTensorInfo, rows: Int, cols: Int) throws -> WeightMatrix {
        let data = file.tensorData(t)
        guard let base = data.baseAddress, data.count == t.byteCount else {
            throw LeapError.modelLoading("tensor '\(t.name)' data is outside \(file.path)")
        }
        do {
            return try WeightMatrix(type: t.type, rows: rows, cols: cols, data: base)
        } catch let e as LeapError {
            throw LeapError(e.kind == .unsupported ? .unsupported : .modelLoading, "tensor '\(t.name)': \(e.message)")
        }
    }

    private func requireShape(_ t: GGUFTensorInfo, _ expected: [Int]) throws {
        let pad = { (ne: [Int]) in ne + Array(repeating: 1, count: max(0, 4 - ne.count)) }
        guard pad(t.ne) == pad(expected) else {
            throw LeapError.modelLoading("tensor '\(t.name)' has shape \(t.ne), expected \(expected) in \(file.path)")
        }
    }
}
