import Glibc
import LeapCore

/// A GGUF file: validated header, metadata and tensor infos; tensor data memory-mapped read-only.
///
/// Opening maps the file (`MAP_SHARED`, `PROT_READ`: no copy, pages shared between processes) and parses
/// only the header section, so it costs milliseconds even for multi-GB files. Tensor data pointers stay
/// valid while the `GGUFFile` lives; it is immutable after init and safe to share between threads.
package final class GGUFFile: @unchecked Sendable {
    package let version: UInt32
    package let metadata: GGUFMetadata
    package let tensors: [GGUFTensorInfo]
    package let alignment: Int
    /// Absolute offset of the data section.
    package let dataOffset: Int
    /// Size of the file in bytes.
    package let fileSize: Int
    /// The path given to `init(path:)`, or "<memory>".
    package let path: String

    private let tensorIndex: [String: Int]
    private let storage: Storage
    private var bytes: UnsafeRawBufferPointer { storage.bytes }

    /// Where the bytes live: an mmap of the file, or a heap copy (in-memory parsing for tests and fuzzing).
    private enum Storage {
        case mapped(UnsafeMutableRawPointer, Int)
        case heap(UnsafeMutableRawPointer, Int)
        case empty

        var bytes: UnsafeRawBufferPointer {
            switch self {
            case .mapped(let p, let n), .heap(let p, let n): return UnsafeRawBufferPointer(start: p, count: n)
            case .empty: return UnsafeRawBufferPointer(start: nil, count: 0)
            }
        }

        func release() {
            switch self {
            case .mapped(let p, let n): munmap(p, n)
            case .heap(let p, _): p.deallocate()
            case .empty: break
            }
        }
    }

    /// Maps and validates the GGUF file at `path`.
    package convenience init(path: String) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw LeapError.io("cannot open GGUF file '\(path)': \(errnoString())") }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw LeapError.io("cannot stat GGUF file '\(path)': \(errnoString())") }
        guard (st.st_mode & S_IFMT) == S_IFREG else {
            throw LeapError.io("'\(path)' is not a regular file" + ((st.st_mode & S_IFMT) == S_IFDIR ? " (it is a directory)" : ""))
        }
        let size = Int(st.st_size)
        guard size > 0 else { throw LeapError.format("not a GGUF file: '\(path)' is empty") }
        guard let p = mmap(nil, size, PROT_READ, MAP_SHARED, fd, 0), p != MAP_FAILED else {
            throw LeapError.io("cannot memory-map GGUF file '\(path)' (\(size) bytes): \(errnoString())")
        }
        do {
            try self.init(storage: .mapped(p, size), path: path)
        } catch let e as LeapError {
            throw LeapError(e.kind, "\(path): \(e.message)")
        }
    }

    /// Parses a GGUF file held in memory (copied; same validation as `init(path:)`).
    package convenience init(bytes: [UInt8]) throws {
        guard !bytes.isEmpty else { try self.init(storage: .empty, path: "<memory>"); return }
        let p = UnsafeMutableRawPointer.allocate(byteCount: bytes.count, alignment: 64)
        bytes.withUnsafeBytes { src in p.copyMemory(from: src.baseAddress.unsafelyUnwrapped, byteCount: src.count) }
        try self.init(storage: .heap(p, bytes.count), path: "<memory>")
    }

    /// Takes ownership of `storage` (released on failure too).
    private init(storage: Storage, path: String) throws {
        let layout: GGUFLayout
        do {
            layout = try parseGGUF(storage.bytes)
        } catch {
            storage.release()
            throw error
        }
        self.storage = storage
        self.path = path
        fileSize = storage.bytes.count
        version = layout.version
        metadata = layout.metadata
        tensors = layout.tensors
        alignment = layout.alignment
        dataOffset = layout.dataOffset
        var index: [String: Int] = [:]
        index.reserveCapacity(tensors.count)
        for (i, t) in tensors.enumerated() { index[t.name] = i }
        tensorIndex = index
    }

    deinit { storage.release() }

    /// Gives this process's copies of the whole pages in [p, p + count) of a mapped file back to the kernel:
    /// they are read from the file again if touched (a matrix copied elsewhere need not stay resident twice).
    /// Nothing for a heap copy, whose bytes would be lost.
    package func releasePages(_ p: UnsafeRawPointer, count: Int) {
        guard case .mapped = storage else { return }
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let start = (Int(bitPattern: p) + page - 1) / page * page
        let end = (Int(bitPattern: p) + count) / page * page
        guard end > start, let base = UnsafeMutableRawPointer(bitPattern: start) else { return }
        _ = madvise(base, end - start, MADV_DONTNEED)
    }

    // MARK: - Tensors

    /// The header, metadata and tensor table: the file's bytes before the tensor data (what identifies a model
    /// apart from its weights).
    package var headerBytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: bytes[0..<min(dataOffset, bytes.count)]) }

    package func tensor(named name: String) -> GGUFTensorInfo? { tensorIndex[name].map { tensors[$0] } }

    package func tensorIndex(named name: String) -> Int? { tensorIndex[name] }

    /// The tensor `name`, or a `.modelLoading` error naming it.
    package func requireTensor(_ name: String) throws -> GGUFTensorInfo {
        guard let t = tensor(named: name) else { throw LeapError.modelLoading("missing tensor '\(name)' in \(path)") }
        return t
    }

    /// The raw bytes of a tensor of this file (valid while `self` lives). `info` must come from `tensors`.
    package func tensorData(_ info: GGUFTensorInfo) -> UnsafeRawBufferPointer {
        // Tensor infos were checked against the file size at load; clamp anyway so a foreign info can't escape.
        let all = bytes
        let start = min(max(0, info.fileOffset), all.count)
        let end = min(start + max(0, min(info.byteCount, all.count - start)), all.count)
        return UnsafeRawBufferPointer(rebasing: all[start..<end])
    }

    /// Row `row` of `tensor` (of `tensor.rowLength` elements) dequantized to floats.
    package func dequantizeRow(_ tensor: GGUFTensorInfo, _ row: Int) throws -> [Float] {
        guard row >= 0, row < tensor.rowCount else {
            throw LeapError.invalidArgument("row \(row) is out of range for tensor '\(tensor.name)' (\(tensor.rowCount) rows)")
        }
        let data = tensorData(tensor)
        let rowBytes = tensor.rowBytes
        guard data.count == tensor.byteCount, let base = data.baseAddress else {
            throw LeapError.invalidArgument("tensor '\(tensor.name)' does not belong to \(path)")
        }
        let n = tensor.rowLength
        return [Float](unsafeUninitializedCapacity: n) { out, initialized in
            LeapGGUF.dequantize(type: tensor.type, src: base + row * rowBytes, count: n, into: out.baseAddress.unsafelyUnwrapped)
            initialized = n
        }
    }

    /// Rows `rows` of `tensor` dequantized into `out` (`rows.count * tensor.rowLength` floats).
    package func dequantizeRows(_ tensor: GGUFTensorInfo, _ rows: Range<Int>, into out: UnsafeMutablePointer<Float>) throws {
        guard rows.lowerBound >= 0, rows.upperBound <= tensor.rowCount else {
            throw LeapError.invalidArgument("rows \(rows) are out of range for tensor '\(tensor.name)' (\(tensor.rowCount) rows)")
        }
        let data = tensorData(tensor)
        guard data.count == tensor.byteCount else {
            throw LeapError.invalidArgument("tensor '\(tensor.name)' does not belong to \(path)")
        }
        guard !rows.isEmpty, let base = data.baseAddress else { return }
        LeapGGUF.dequantize(type: tensor.type, src: base + rows.lowerBound * tensor.rowBytes,
                            count: rows.count * tensor.rowLength, into: out)
    }

    /// The whole tensor dequantized to floats (`elementCount` values, ne0 fastest).
    package func dequantize(_ tensor: GGUFTensorInfo) throws -> [Float] {
        let data = tensorData(tensor)
        guard data.count == tensor.byteCount else {
            throw LeapError.invalidArgument("tensor '\(tensor.name)' does not belong to \(path)")
        }
        let n = tensor.elementCount
        guard n > 0, let base = data.baseAddress else { return [] }
        return [Float](unsafeUninitializedCapacity: n) { out, initialized in
            LeapGGUF.dequantize(type: tensor.type, src: base, count: n, into: out.baseAddress.unsafelyUnwrapped)
            initialized = n
        }
    }

    // MARK: - Metadata shortcuts (see GGUFMetadata)

    package func string(_ key: String) throws -> String { try metadata.string(key) }
    package func uint32(_ key: String) throws -> UInt32 { try metadata.uint32(key) }
    package func int(_ key: String) throws -> Int { try metadata.int(key) }
    package func float(_ key: String) throws -> Float { try metadata.float(key) }
    package func bool(_ key: String) throws -> Bool { try metadata.bool(key) }
    package func stringArray(_ key: String) throws -> [String] { try metadata.stringArray(key) }
    package func int32Array(_ key: String) throws -> [Int32] { try metadata.int32Array(key) }
    package func floatArray(_ key: String) throws -> [Float] { try metadata.floatArray(key) }
    package func optionalString(_ key: String) throws -> String? { try metadata.optionalString(key) }
    package func optionalUInt32(_ key: String) throws -> UInt32? { try metadata.optionalUInt32(key) }
    package func optionalInt(_ key: String) throws -> Int? { try metadata.optionalInt(key) }
    package func optionalFloat(_ key: String) throws -> Float? { try metadata.optionalFloat(key) }
    package func optionalBool(_ key: String) throws -> Bool? { try metadata.optionalBool(key) }
    package func optionalStringArray(_ key: String) throws -> [String]? { try metadata.optionalStringArray(key) }
    package func optionalInt32Array(_ key: String) throws -> [Int32]? { try metadata.optionalInt32Array(key) }
    package func optionalFloatArray(_ key: String) throws -> [Float]? { try metadata.optionalFloatArray(key) }
}

private func errnoString() -> String {
    guard let s = strerror(errno) else { return "errno \(errno)" }
    return String(cString: s)
}
