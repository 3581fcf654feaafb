// What a saved state depends on besides its prompt: the model file (its size and a hash of its header,
// metadata and tensor table) and the build of the kernels that computed it (the kernel path in effect and
// the build-id of the binary they are linked into). A state computed by another model, path or build is
// never loaded: its numbers would differ from what this process computes.
import CLeapKernels
import CLeapStateSupport
import LeapCore
import LeapGGUF

package struct ModelIdentity: Equatable, Sendable {
    /// SHA-256 of the model file's size and header bytes.
    package let model: [UInt8]
    /// SHA-256 of `model`, the kernel path name, the kernels' build-id and the snapshot format version.
    package let full: [UInt8]
    /// The kernel path name, e.g. "avx2" (for messages).
    package let kernelPath: String

    package init(model: [UInt8], kernelPath: String, buildID: [UInt8]) {
        self.model = model
        self.kernelPath = kernelPath
        var h = SHA256()
        h.update(Array("libleap prefix state".utf8) + [0])
        appendLE(UInt32(SnapshotFormat.version), into: &h)
        h.update(model)
        h.update(Array(kernelPath.utf8) + [0])
        h.update(buildID)
        full = h.finalize()
    }

    /// The identity of `file` computed with the kernels of this process (the path in effect on this thread).
    package init(file: GGUFFile) {
        var h = SHA256()
        var size: [UInt8] = []
        appendLE(UInt64(file.fileSize), into: &size)
        h.update(size)
        h.update(file.headerBytes)
        let path = lk_isa_name(lk_get_isa()).map { String(cString: $0) } ?? "unknown"
        self.init(model: h.finalize(), kernelPath: path, buildID: ModelIdentity.kernelBuildID)
    }

    /// The build-id of the binary the kernels are linked into (empty when it has none).
    package static let kernelBuildID: [UInt8] = {
        var id = [UInt8](repeating: 0, count: 64)
        let n = id.withUnsafeMutableBufferPointer { lk_build_id($0.baseAddress, $0.count) }
        return Array(id[0..<n])
    }()

    /// The folder of this model's snapshots under a cache path (one per model file; builds share it).
    package var folderName: String { SHA256.hex(Array(model[0..<8])) }
}

private func appendLE(_ v: UInt32, into h: inout SHA256) {
    var b: [UInt8] = []
    appendLE(v, into: &b)
    h.update(b)
}
