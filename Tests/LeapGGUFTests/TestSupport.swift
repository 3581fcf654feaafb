import Glibc
import LeapCore
import LeapGGUF
import LeapTestFiles

/// Tests/Fixtures/gguf
let ggufFixtures = fixturesDir("gguf")

/// Path of a real model in $LEAP_MODELS_DIR or <repo>/models, nil when absent.
func modelPath(_ file: String) -> String? {
    let dir = getenv("LEAP_MODELS_DIR").map { String(cString: $0) } ?? repoDir + "/models"
    let path = dir + "/" + file
    return access(path, R_OK) == 0 ? path : nil
}


/// The error a throwing expression produced (nil if it did not throw a LeapError).
func leapError(_ body: () throws -> Void) -> LeapError? {
    do { try body() } catch let e as LeapError { return e } catch { return nil }
    return nil
}

/// A minimal GGUF writer for building valid and malformed files byte by byte.
struct GGUFBuilder {
    struct Tensor {
        var name: String
        var ne: [UInt64]
        var type: UInt32
        var offset: UInt64? = nil  // nil: next aligned offset
        var data: [UInt8]
    }

    var magic: [UInt8] = Array("GGUF".utf8)
    var version: UInt32 = 3
    var kv: [(key: [UInt8], value: [UInt8])] = []  // value = type id + payload
    var tensors: [Tensor] = []
    var alignment = 32
    /// Override the counts written in the header.
    var tensorCountOverride: UInt64? = nil
    var kvCountOverride: UInt64? = nil

    static func le<T: FixedWidthInteger>(_ v: T) -> [UInt8] {
        withUnsafeBytes(of: v.littleEndian) { Array($0) }
    }
    static func str(_ s: String) -> [UInt8] { str(Array(s.utf8)) }
    static func str(_ b: [UInt8]) -> [UInt8] { le(UInt64(b.count)) + b }

    static func u8(_ v: UInt8) -> [UInt8] { le(UInt32(0)) + [v] }
    static func u32(_ v: UInt32) -> [UInt8] { le(UInt32(4)) + le(v) }
    static func i32(_ v: Int32) -> [UInt8] { le(UInt32(5)) + le(v) }
    static func f32(_ v: Float) -> [UInt8] { le(UInt32(6)) + le(v.bitPattern) }
    static func bool(_ v: UInt8) -> [UInt8] { le(UInt32(7)) + [v] }
    static func string(_ s: String) -> [UInt8] { le(UInt32(8)) + str(s) }
    static func u64(_ v: UInt64) -> [UInt8] { le(UInt32(10)) + le(v) }
    /// ARRAY of `elemType` with `count` and the raw element bytes.
    static func array(_ elemType: UInt32, _ count: UInt64, _ payload: [UInt8]) -> [UInt8] {
        le(UInt32(9)) + le(elemType) + le(count) + payload
    }

    mutating func add(_ key: String, _ value: [UInt8]) { kv.append((Array(key.utf8), value)) }

    mutating func addTensor(_ name: String, _ ne: [UInt64], _ type: GGMLType, data: [UInt8]? = nil, offset: UInt64? = nil) {
        var n = 1
        for d in ne { n &*= Int(truncatingIfNeeded: d) }
        let bytes = data ?? [UInt8](repeating: 0, count: max(0, n / type.blockSize * type.blockBytes))
        tensors.append(Tensor(name: name, ne: ne, type: type.rawValue, offset: offset, data: bytes))
    }

    func bytes() -> [UInt8] {
        var out = magic + Self.le(version)
        out += Self.le(tensorCountOverride ?? UInt64(tensors.count)) + Self.le(kvCountOverride ?? UInt64(kv.count))
        for (k, v) in kv { out += Self.str(k) + v }
        var offsets: [UInt64] = []
        var next: UInt64 = 0
        for t in tensors {
            let off = t.offset ?? next
            offsets.append(off)
            // Crafted far-away offsets (tests of "past the end") don't grow the data section.
            guard off < 1 << 24 else { continue }
            next = max(next, (off + UInt64(t.data.count) + UInt64(alignment) - 1) / UInt64(alignment) * UInt64(alignment))
        }
        for (t, off) in zip(tensors, offsets) {
            out += Self.str(t.name) + Self.le(UInt32(t.ne.count))
            for d in t.ne { out += Self.le(d) }
            out += Self.le(t.type) + Self.le(off)
        }
        while out.count % alignment != 0 { out.append(0) }
        let dataStart = out.count
        var data = [UInt8](repeating: 0, count: Int(next))
        for (t, off) in zip(tensors, offsets) where Int(off) + t.data.count <= data.count {
            data.replaceSubrange(Int(off)..<Int(off) + t.data.count, with: t.data)
        }
        _ = dataStart
        return out + data
    }
}
