// WeightMatrix: a view of a 2-D weight tensor (usually inside the mmapped GGUF) for the matmul kernels.
import CLeapKernels
import LeapCore
import LeapGGUF

/// `rows` output neurons of `cols` inputs each, stored row after row in `type` blocks
/// (ggml `ne = [cols, rows]`, ne0 = cols contiguous). The memory is not owned.
package struct WeightMatrix: @unchecked Sendable {
    package let type: GGMLType
    package let rows: Int
    package let cols: Int
    package internal(set) var data: UnsafeRawPointer // [rows, rowBytes]
    package let rowBytes: Int
    /// One expert of a stacked tensor (llama.cpp multiplies those with MUL_MAT_ID).
    package var isExpert = false
    /// The data is in the kernels' 8-row layout (`LK_ROWS8`, see `PackedMatrices`), not row after row:
    /// only the matmul kernels and `Kernels.dequantizeRow` read it then.
    package var rows8 = false
    /// How llama.cpp's x86 CPU backend holds this tensor (`LK_LLAMA_*`), which decides its summation order
    /// (`lk_matmul_tensor`): repacked into interleaved 8-row blocks when the row count is a multiple of 8 (a tied
    /// output is a repacked duplicate of the token embedding there).
    package var llamaLayout: Int32 {
        let layout = rows % 8 != 0 ? Int32(LK_LLAMA_PLAIN) : isExpert ? Int32(LK_LLAMA_REPACKED_ID) : Int32(LK_LLAMA_REPACKED)
        return rows8 ? layout | Int32(LK_ROWS8) : layout
    }

    /// Validates everything the kernels later rely on without checks.
    package init(type: GGMLType, rows: Int, cols: Int, data: UnsafeRawPointer) throws {
        guard lk_type_supported(Int32(type.rawValue)) != 0 else {
            throw LeapError(.unsupported, "weight type \(type.name) is not supported by the matmul kernels")
        }
        guard rows > 0, cols > 0 else {
            throw LeapError(.invalidArgument, "weight shape [\(cols), \(rows)] must have positive dimensions")
        }
        guard let rb = type.rowBytes(cols), cols % type.blockSize == 0 else {
            throw LeapError(
                .invalidArgument,
                "weight row of \(cols) elements is not a multiple of the \(type.name) block size \(type.blockSize)")
        }
        guard rows.multipliedReportingOverflow(by: rb).overflow == false else {
            throw LeapError(.invalidArgument, "weight of \(rows) rows x \(rb) bytes overflows")
        }
        self.type = type
        self.rows = rows
        self.cols = cols
        self.data = data
        self.rowBytes = rb
    }

    /// Total bytes of the matrix.
    package var byteCount: Int { rows * rowBytes }

    /// Row `r` of a matrix in the row layout (`rows8` false).
    package func row(_ r: Int) -> UnsafeRawPointer { data + r * rowBytes }

    /// The activation format this type is multiplied with (Q8_0, Q8_1, Q8_K, or F32).
    package var activationType: GGMLType {
        GGMLType(rawValue: UInt32(lk_activation_type(Int32(type.rawValue)))) ?? .f32
    }
}

extension WeightMatrix {
    /// A 2-D tensor of a loaded GGUF file (`ne = [cols, rows]`; higher dims must be 1). Valid while `file` lives.
    package init(file: GGUFFile, tensor: GGUFTensorInfo) throws {
        let ne = tensor.ne4
        guard ne[2] == 1, ne[3] == 1 else {
            throw LeapError(.modelLoading, "tensor '\(tensor.name)' has shape \(tensor.ne), expected a 2-D matrix")
        }
        let data = file.tensorData(tensor)
        guard let base = data.baseAddress, data.count == tensor.byteCount else {
            throw LeapError(.modelLoading, "tensor '\(tensor.name)' has no data in \(file.path)")
        }
        try self.init(type: tensor.type, rows: ne[1], cols: ne[0], data: base)
        guard byteCount == tensor.byteCount else {
            throw LeapError(.modelLoading, "tensor '\(tensor.name)': \(tensor.byteCount) bytes, expected \(byteCount)")
        }
    }
}
