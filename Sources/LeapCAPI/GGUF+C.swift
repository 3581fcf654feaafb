import CLeap
import Glibc
import LeapCore
import LeapGGUF
import LeapJSON

// leap_gguf_*: a handle around a `GGUFFile` (read-only, so usable from several threads at once).

final class GGUFBox: HandleBox {
    let file: GGUFFile
    /// NUL-terminated tensor names, borrowed by leap_gguf_tensor_info until the handle is freed.
    let cNames: [UnsafeMutablePointer<CChar>]

    init(_ file: GGUFFile) throws {
        self.file = file
        var names: [UnsafeMutablePointer<CChar>] = []
        names.reserveCapacity(file.tensors.count)
        for t in file.tensors {
            guard let p = strdup(t.name) else {
                names.forEach { free($0) }
                throw LeapError(.outOfMemory, "out of memory copying tensor names")
            }
            names.append(p)
        }
        cNames = names
        super.init(kind: .gguf)
    }

    deinit { cNames.forEach { free($0) } }

    func tensor(_ index: Int) throws -> GGUFTensorInfo {
        guard index >= 0, index < file.tensors.count else {
            throw LeapError.invalidArgument("tensor index \(index) is out of range (the file has \(file.tensors.count) tensors)")
        }
        return file.tensors[index]
    }

    func value(_ key: String) throws -> GGUFValue {
        guard let v = file.metadata[key] else { throw LeapError.invalidArgument("the GGUF file has no metadata key '\(key)'") }
        return v
    }
}

private func borrowGGUF(_ p: OpaquePointer?) throws -> GGUFBox {
    try Handle.borrow(p, GGUFBox.self, kind: .gguf, "gguf")
}

@c @implementation
public func leap_gguf_open(_ path: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> leap_status {
    ffi {
        let out = try required(out, "out_gguf")
        out.pointee = nil
        let path = try utf8String(path, "path")
        out.pointee = Handle.retain(try GGUFBox(GGUFFile(path: path)))
    }
}

@c @implementation
public func leap_gguf_free(_ g: OpaquePointer?) {
    Handle.release(g, kind: .gguf)
}

@c @implementation
public func leap_gguf_version(_ g: OpaquePointer?, _ out: UnsafeMutablePointer<UInt32>?) -> leap_status {
    ffi {
        let out = try required(out, "out_version")
        out.pointee = try borrowGGUF(g).file.version
    }
}

@c @implementation
public func leap_gguf_metadata_count(_ g: OpaquePointer?, _ out: UnsafeMutablePointer<Int>?) -> leap_status {
    ffi {
        let out = try required(out, "out_count")
        out.pointee = try borrowGGUF(g).file.metadata.count
    }
}

@c @implementation
public func leap_gguf_metadata_key(_ g: OpaquePointer?, _ index: Int, _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> leap_status {
    ffi {
        let out = try required(out, "out_key")
        out.pointee = nil
        let m = try borrowGGUF(g).file.metadata
        guard index >= 0, index < m.count else {
            throw LeapError.invalidArgument("metadata index \(index) is out of range (the file has \(m.count) entries)")
        }
        out.pointee = try ownedCString(m.entries[index].key)
    }
}

@c @implementation
public func leap_gguf_metadata_type(_ g: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> leap_status {
    ffi {
        let out = try required(out, "out_type")
        out.pointee = nil
        let box = try borrowGGUF(g)
        out.pointee = try ownedCString(box.value(try utf8String(key, "key")).typeDescription)
    }
}

@c @implementation
public func leap_gguf_metadata_json(_ g: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> leap_status {
    ffi {
        let out = try required(out, "out_json")
        out.pointee = nil
        let box = try borrowGGUF(g)
        let value = try box.value(try utf8String(key, "key"))
        var json = ""
        appendJSON(value, to: &json)
        out.pointee = try ownedCString(json)
    }
}

@c @implementation
public func leap_gguf_tensor_count(_ g: OpaquePointer?, _ out: UnsafeMutablePointer<Int>?) -> leap_status {
    ffi {
        let out = try required(out, "out_count")
        out.pointee = try borrowGGUF(g).file.tensors.count
    }
}

@c @implementation
public func leap_gguf_find_tensor(_ g: OpaquePointer?, _ name: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<Int>?) -> leap_status {
    ffi {
        let out = try required(out, "out_index")
        let box = try borrowGGUF(g)
        let name = try utf8String(name, "name")
        guard let i = box.file.tensorIndex(named: name) else {
            throw LeapError.invalidArgument("the GGUF file has no tensor named '\(name)'")
        }
        out.pointee = i
    }
}

@c @implementation
public func leap_gguf_tensor_info_get(_ g: OpaquePointer?, _ index: Int, _ out: UnsafeMutablePointer<leap_gguf_tensor_info>?) -> leap_status {
    ffi {
        let out = try required(out, "out_info")
        let given = Int(UnsafeRawPointer(out).load(as: UInt32.self))
        guard given >= MemoryLayout<UInt32>.size else {
            throw LeapError.invalidArgument("out_info->struct_size is \(given); set it to sizeof(leap_gguf_tensor_info)")
        }
        let box = try borrowGGUF(g)
        let t = try box.tensor(index)
        let ne = t.ne4
        var info = leap_gguf_tensor_info()
        info.struct_size = UInt32(MemoryLayout<leap_gguf_tensor_info>.size)
        info.n_dims = UInt32(t.nDims)
        info.name = UnsafePointer(box.cNames[index])
        info.ne = (Int64(ne[0]), Int64(ne[1]), Int64(ne[2]), Int64(ne[3]))
        info.type = t.type.rawValue
        info.type_name = staticTypeName(t.type)
        info.offset = UInt64(t.fileOffset)
        info.size = UInt64(t.byteCount)
        info.n_elements = UInt64(t.elementCount)
        // Fill at most the caller's struct_size bytes, keeping the caller's struct_size.
        withUnsafeBytes(of: &info) { src in
            let n = min(given, src.count)
            let skip = MemoryLayout<UInt32>.size
            UnsafeMutableRawPointer(out).advanced(by: skip)
                .copyMemory(from: src.baseAddress.unsafelyUnwrapped.advanced(by: skip), byteCount: n - skip)
        }
    }
}

@c @implementation
public func leap_gguf_tensor_dequantize(_ g: OpaquePointer?, _ index: Int, _ out: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>?, _ outCount: UnsafeMutablePointer<Int>?) -> leap_status {
    ffi {
        let out = try required(out, "out_values")
        out.pointee = nil
        let outCount = try required(outCount, "out_count")
        outCount.pointee = 0
        let box = try borrowGGUF(g)
        let t = try box.tensor(index)
        let (bytes, overflow) = t.elementCount.multipliedReportingOverflow(by: MemoryLayout<Float>.size)
        guard !overflow, let raw = malloc(max(1, bytes)) else {
            throw LeapError(.outOfMemory, "out of memory allocating \(t.elementCount) floats for tensor '\(t.name)'")
        }
        let values = raw.bindMemory(to: Float.self, capacity: max(1, t.elementCount))
        do {
            try box.file.dequantizeRows(t, 0..<t.rowCount, into: values)
        } catch {
            free(raw)
            throw error
        }
        out.pointee = values
        outCount.pointee = t.elementCount
    }
}

/// "F32", "Q4_K", ... as a C string with static storage.
private func staticTypeName(_ type: GGMLType) -> UnsafePointer<CChar> {
    let s: StaticString
    switch type {
    case .f32: s = "F32"
    case .f16: s = "F16"
    case .bf16: s = "BF16"
    case .q4_0: s = "Q4_0"
    case .q4_1: s = "Q4_1"
    case .q5_0: s = "Q5_0"
    case .q5_1: s = "Q5_1"
    case .q8_0: s = "Q8_0"
    case .q8_1: s = "Q8_1"
    case .q2_K: s = "Q2_K"
    case .q3_K: s = "Q3_K"
    case .q4_K: s = "Q4_K"
    case .q5_K: s = "Q5_K"
    case .q6_K: s = "Q6_K"
    case .q8_K: s = "Q8_K"
    }
    return UnsafeRawPointer(s.utf8Start).assumingMemoryBound(to: CChar.self)
}

// MARK: - GGUF values as JSON

/// Numbers keep their exact value (UINT64 beyond Int64, floats in shortest round-trip form); non-finite
/// floats, which JSON cannot express, become null.
private func appendJSON(_ v: GGUFValue, to out: inout String) {
    switch v {
    case .uint8(let x): out += String(x)
    case .int8(let x): out += String(x)
    case .uint16(let x): out += String(x)
    case .int16(let x): out += String(x)
    case .uint32(let x): out += String(x)
    case .int32(let x): out += String(x)
    case .uint64(let x): out += String(x)
    case .int64(let x): out += String(x)
    case .float32(let x): out += x.isFinite ? "\(x)" : "null"
    case .float64(let x): out += x.isFinite ? "\(x)" : "null"
    case .bool(let x): out += x ? "true" : "false"
    case .string(let s): out += JSONValue.string(s).serialized()
    case .array(let a):
        out += "["
        for i in 0..<a.count {
            if i > 0 { out += "," }
            if let e = a.element(i) { appendJSON(e, to: &out) }
        }
        out += "]"
    }
}
