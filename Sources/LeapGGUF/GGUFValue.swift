/// GGUF metadata value types, with their ids as stored in the file.
package enum GGUFValueType: UInt32, Sendable, CaseIterable {
    case uint8 = 0, int8 = 1, uint16 = 2, int16 = 3, uint32 = 4, int32 = 5, float32 = 6, bool = 7
    case string = 8, array = 9, uint64 = 10, int64 = 11, float64 = 12

    /// The name gguf-py and llama.cpp use ("UINT32", "STRING", ...).
    package var name: String {
        switch self {
        case .uint8: return "UINT8"
        case .int8: return "INT8"
        case .uint16: return "UINT16"
        case .int16: return "INT16"
        case .uint32: return "UINT32"
        case .int32: return "INT32"
        case .float32: return "FLOAT32"
        case .bool: return "BOOL"
        case .string: return "STRING"
        case .array: return "ARRAY"
        case .uint64: return "UINT64"
        case .int64: return "INT64"
        case .float64: return "FLOAT64"
        }
    }

    /// Bytes of one value in the file, nil for variable-size types (STRING, ARRAY).
    var fixedSize: Int? {
        switch self {
        case .uint8, .int8, .bool: return 1
        case .uint16, .int16: return 2
        case .uint32, .int32, .float32: return 4
        case .uint64, .int64, .float64: return 8
        case .string, .array: return nil
        }
    }
}

/// One metadata value.
package enum GGUFValue: Sendable, Equatable {
    case uint8(UInt8)
    case int8(Int8)
    case uint16(UInt16)
    case int16(Int16)
    case uint32(UInt32)
    case int32(Int32)
    case float32(Float)
    case bool(Bool)
    case string(String)
    case uint64(UInt64)
    case int64(Int64)
    case float64(Double)
    case array(GGUFArray)

    package var type: GGUFValueType {
        switch self {
        case .uint8: return .uint8
        case .int8: return .int8
        case .uint16: return .uint16
        case .int16: return .int16
        case .uint32: return .uint32
        case .int32: return .int32
        case .float32: return .float32
        case .bool: return .bool
        case .string: return .string
        case .uint64: return .uint64
        case .int64: return .int64
        case .float64: return .float64
        case .array: return .array
        }
    }

    /// "UINT32", or "ARRAY[STRING]" for arrays (used in error messages).
    package var typeDescription: String {
        if case .array(let a) = self { return "ARRAY[\(a.elementType.name)]" }
        return type.name
    }

    /// The value of any integer type, nil for other types or when it does not fit an Int.
    package var integerValue: Int? {
        switch self {
        case .uint8(let v): return Int(v)
        case .int8(let v): return Int(v)
        case .uint16(let v): return Int(v)
        case .int16(let v): return Int(v)
        case .uint32(let v): return Int(v)
        case .int32(let v): return Int(v)
        case .uint64(let v): return Int(exactly: v)
        case .int64(let v): return Int(exactly: v)
        default: return nil
        }
    }

    package var isInteger: Bool {
        switch type {
        case .uint8, .int8, .uint16, .int16, .uint32, .int32, .uint64, .int64: return true
        default: return false
        }
    }
}

/// A metadata array. Elements are stored unboxed per element type, so that a 262k-entry vocabulary or
/// score table is one Swift array rather than 262k enum values.
package enum GGUFArray: Sendable, Equatable {
    case uint8([UInt8])
    case int8([Int8])
    case uint16([UInt16])
    case int16([Int16])
    case uint32([UInt32])
    case int32([Int32])
    case float32([Float])
    case bool([Bool])
    case string([String])
    case uint64([UInt64])
    case int64([Int64])
    case float64([Double])
    /// Nested arrays (legal in GGUF, unused by real models); each inner array keeps its own element type.
    case array([GGUFArray])

    package var elementType: GGUFValueType {
        switch self {
        case .uint8: return .uint8
        case .int8: return .int8
        case .uint16: return .uint16
        case .int16: return .int16
        case .uint32: return .uint32
        case .int32: return .int32
        case .float32: return .float32
        case .bool: return .bool
        case .string: return .string
        case .uint64: return .uint64
        case .int64: return .int64
        case .float64: return .float64
        case .array: return .array
        }
    }

    package var count: Int {
        switch self {
        case .uint8(let a): return a.count
        case .int8(let a): return a.count
        case .uint16(let a): return a.count
        case .int16(let a): return a.count
        case .uint32(let a): return a.count
        case .int32(let a): return a.count
        case .float32(let a): return a.count
        case .bool(let a): return a.count
        case .string(let a): return a.count
        case .uint64(let a): return a.count
        case .int64(let a): return a.count
        case .float64(let a): return a.count
        case .array(let a): return a.count
        }
    }

    /// Element `i` boxed as a value (for generic consumers such as JSON export).
    package func element(_ i: Int) -> GGUFValue? {
        guard i >= 0, i < count else { return nil }
        switch self {
        case .uint8(let a): return .uint8(a[i])
        case .int8(let a): return .int8(a[i])
        case .uint16(let a): return .uint16(a[i])
        case .int16(let a): return .int16(a[i])
        case .uint32(let a): return .uint32(a[i])
        case .int32(let a): return .int32(a[i])
        case .float32(let a): return .float32(a[i])
        case .bool(let a): return .bool(a[i])
        case .string(let a): return .string(a[i])
        case .uint64(let a): return .uint64(a[i])
        case .int64(let a): return .int64(a[i])
        case .float64(let a): return .float64(a[i])
        case .array(let a): return .array(a[i])
        }
    }
}
