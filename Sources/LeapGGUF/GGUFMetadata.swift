import LeapCore

/// The key/value metadata of a GGUF file, in file order, with lookup by key.
///
/// Typed accessors throw `LeapError(.modelLoading)` naming the key and the types involved, e.g.
/// "GGUF key llama.block_count: expected UINT32, found STRING". `optionalX` variants return nil when the
/// key is absent (but still throw on a wrong type).
package struct GGUFMetadata: Sendable, Sequence {
    package private(set) var entries: [(key: String, value: GGUFValue)] = []
    private var index: [String: Int] = [:]

    package init() {}

    package var count: Int { entries.count }
    package var keys: [String] { entries.map { $0.key } }
    package subscript(key: String) -> GGUFValue? { index[key].map { entries[$0].value } }
    package func makeIterator() -> IndexingIterator<[(key: String, value: GGUFValue)]> { entries.makeIterator() }
    package func contains(_ key: String) -> Bool { index[key] != nil }
    /// Position of `key` in file order.
    package func position(of key: String) -> Int? { index[key] }

    /// Appends an entry; returns false (and changes nothing) if the key exists already.
    mutating func append(_ key: String, _ value: GGUFValue) -> Bool {
        guard index[key] == nil else { return false }
        index[key] = entries.count
        entries.append((key, value))
        return true
    }

    // MARK: - Typed access

    private func mismatch(_ key: String, _ expected: String, _ found: GGUFValue) -> LeapError {
        LeapError.modelLoading("GGUF key \(key): expected \(expected), found \(found.typeDescription)")
    }

    package func optionalString(_ key: String) throws -> String? {
        guard let v = self[key] else { return nil }
        guard case .string(let s) = v else { throw mismatch(key, "STRING", v) }
        return s
    }

    /// Any integer type whose value fits a UInt32 (llama.cpp writes UINT32; some converters INT32/UINT64).
    package func optionalUInt32(_ key: String) throws -> UInt32? {
        guard let v = self[key] else { return nil }
        guard let i = v.integerValue else { throw mismatch(key, "UINT32", v) }
        guard let u = UInt32(exactly: i) else {
            throw LeapError.modelLoading("GGUF key \(key): value \(i) (\(v.type.name)) does not fit a UINT32")
        }
        return u
    }

    /// Any integer type whose value fits an Int.
    package func optionalInt(_ key: String) throws -> Int? {
        guard let v = self[key] else { return nil }
        guard let i = v.integerValue else {
            if case .uint64(let u) = v {
                throw LeapError.modelLoading("GGUF key \(key): value \(u) (UINT64) is too large")
            }
            throw mismatch(key, "an integer", v)
        }
        return i
    }

    /// FLOAT32 or FLOAT64.
    package func optionalFloat(_ key: String) throws -> Float? {
        guard let v = self[key] else { return nil }
        switch v {
        case .float32(let f): return f
        case .float64(let d): return Float(d)
        default: throw mismatch(key, "FLOAT32", v)
        }
    }

    package func optionalBool(_ key: String) throws -> Bool? {
        guard let v = self[key] else { return nil }
        guard case .bool(let b) = v else { throw mismatch(key, "BOOL", v) }
        return b
    }

    package func optionalArray(_ key: String) throws -> GGUFArray? {
        guard let v = self[key] else { return nil }
        guard case .array(let a) = v else { throw mismatch(key, "ARRAY", v) }
        return a
    }

    package func optionalStringArray(_ key: String) throws -> [String]? {
        guard let v = self[key] else { return nil }
        guard case .array(.string(let a)) = v else { throw mismatch(key, "ARRAY[STRING]", v) }
        return a
    }

    /// INT32 or UINT32 elements (also the narrower integer types), each fitting an Int32.
    package func optionalInt32Array(_ key: String) throws -> [Int32]? {
        guard let v = self[key] else { return nil }
        guard case .array(let a) = v else { throw mismatch(key, "ARRAY[INT32]", v) }
        func convert<T: BinaryInteger>(_ xs: [T]) throws -> [Int32] {
            var out = [Int32]()
            out.reserveCapacity(xs.count)
            for (i, x) in xs.enumerated() {
                guard let y = Int32(exactly: x) else {
                    throw LeapError.modelLoading("GGUF key \(key): element \(i) = \(x) does not fit an INT32")
                }
                out.append(y)
            }
            return out
        }
        switch a {
        case .int32(let xs): return xs
        case .uint32(let xs): return try convert(xs)
        case .int16(let xs): return try convert(xs)
        case .uint16(let xs): return try convert(xs)
        case .int8(let xs): return try convert(xs)
        case .uint8(let xs): return try convert(xs)
        case .int64(let xs): return try convert(xs)
        case .uint64(let xs): return try convert(xs)
        default: throw mismatch(key, "ARRAY[INT32]", v)
        }
    }

    /// FLOAT32 elements (FLOAT64 converted).
    package func optionalFloatArray(_ key: String) throws -> [Float]? {
        guard let v = self[key] else { return nil }
        switch v {
        case .array(.float32(let xs)): return xs
        case .array(.float64(let xs)): return xs.map { Float($0) }
        default: throw mismatch(key, "ARRAY[FLOAT32]", v)
        }
    }

    package func string(_ key: String) throws -> String { try required(key, optionalString(key)) }
    package func uint32(_ key: String) throws -> UInt32 { try required(key, optionalUInt32(key)) }
    package func int(_ key: String) throws -> Int { try required(key, optionalInt(key)) }
    package func float(_ key: String) throws -> Float { try required(key, optionalFloat(key)) }
    package func bool(_ key: String) throws -> Bool { try required(key, optionalBool(key)) }
    package func array(_ key: String) throws -> GGUFArray { try required(key, optionalArray(key)) }
    package func stringArray(_ key: String) throws -> [String] { try required(key, optionalStringArray(key)) }
    package func int32Array(_ key: String) throws -> [Int32] { try required(key, optionalInt32Array(key)) }
    package func floatArray(_ key: String) throws -> [Float] { try required(key, optionalFloatArray(key)) }

    private func required<T>(_ key: String, _ value: T?) throws -> T {
        guard let value else { throw LeapError.modelLoading("missing required GGUF key \(key)") }
        return value
    }
}
