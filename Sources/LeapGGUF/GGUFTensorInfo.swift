/// One tensor of a GGUF file, as described by its tensor info (validated at load time).
package struct GGUFTensorInfo: Sendable, Equatable {
    package var name: String
    /// Dimensions, `ne[0]` the fastest (contiguous) axis; `ne.count` is the file's n_dims (0...4).
    package var ne: [Int]
    package var type: GGMLType
    /// Offset of the data relative to the start of the data section (as stored in the file).
    package var offset: Int
    /// Absolute offset of the data in the file.
    package var fileOffset: Int
    package var byteCount: Int
    package var elementCount: Int

    package var nDims: Int { ne.count }
    /// `ne` padded with 1s to 4 dimensions (ggml's view of any tensor).
    package var ne4: [Int] { ne + Array(repeating: 1, count: max(0, 4 - ne.count)) }
    /// Elements per row (`ne[0]`, 1 for a 0-d tensor).
    package var rowLength: Int { ne.first ?? 1 }
    /// Number of rows (`ne[1] * ne[2] * ne[3]`).
    package var rowCount: Int { rowLength == 0 ? 0 : elementCount / rowLength }
    /// Bytes per row.
    package var rowBytes: Int { rowCount == 0 ? 0 : byteCount / rowCount }
}
