import CLeap
import Glibc
import LeapCore
import LeapMessages

// Every entry point is a guard clause plus `ffi { ... }`: Swift errors become a `leap_status` and a
// thread-local message; nothing traps across the ABI.

/// Runs `body`, mapping a thrown error to its status and recording the message for `leap_last_error()`.
@inline(__always)
func ffi(_ body: () throws -> Void) -> leap_status {
    do {
        try body()
        LastError.clear()
        return LEAP_OK
    } catch let e as LeapError {
        LastError.set(e.message)
        return leapStatus(e.kind)
    } catch {
        LastError.set("internal error: \(error)")
        return LEAP_ERR_INTERNAL
    }
}

/// The C status of an error kind. Exhaustive on purpose: a new kind does not build until it has a code.
func leapStatus(_ kind: LeapError.Kind) -> leap_status {
    switch kind {
    case .invalidArgument: return LEAP_ERR_INVALID_ARGUMENT
    case .io: return LEAP_ERR_IO
    case .format: return LEAP_ERR_FORMAT
    case .unsupported: return LEAP_ERR_UNSUPPORTED
    case .serialization: return LEAP_ERR_SERIALIZATION
    case .audioFormat: return LEAP_ERR_AUDIO_FORMAT
    case .modelLoading: return LEAP_ERR_MODEL_LOADING
    case .generation: return LEAP_ERR_GENERATION
    case .promptExceedsContext: return LEAP_ERR_PROMPT_EXCEEDS_CONTEXT
    case .functionCallParsing: return LEAP_ERR_FUNCTION_CALL_PARSING
    case .cancelled: return LEAP_ERR_CANCELLED
    case .busy: return LEAP_ERR_BUSY
    case .outOfMemory: return LEAP_ERR_OUT_OF_MEMORY
    case .bufferTooSmall: return LEAP_ERR_BUFFER_TOO_SMALL
    case .internal: return LEAP_ERR_INTERNAL
    }
}

/// Throws `LeapError.invalidArgument` naming a NULL argument.
@inline(__always)
func required<T>(_ value: T?, _ name: StaticString) throws -> T {
    guard let value else { throw LeapError.invalidArgument("\(name) must not be NULL") }
    return value
}

/// Reads a NUL-terminated C string that must be valid UTF-8.
func utf8String(_ p: UnsafePointer<CChar>?, _ name: StaticString) throws -> String {
    let p = try required(p, name)
    let n = strlen(p)
    let bytes = UnsafeRawBufferPointer(start: p, count: n).bindMemory(to: UInt8.self)
    guard let s = String(validating: bytes, as: UTF8.self) else {
        throw LeapError.invalidArgument("\(name) is not valid UTF-8")
    }
    return s
}

/// A heap copy of `s` for the caller, released by `leap_string_free`.
func ownedCString(_ s: String) throws -> UnsafeMutablePointer<CChar> {
    guard let p = strdup(s) else { throw LeapError(.outOfMemory, "out of memory copying a string") }
    return p
}

/// A malloc'ed copy of `elements` for the caller, released by `leap_buffer_free`. Never NULL (an empty
/// array still gets a 1-byte allocation so that NULL keeps meaning "nothing returned").
func ownedBuffer<T>(_ elements: [T]) throws -> UnsafeMutablePointer<T> {
    let bytes = max(1, elements.count * MemoryLayout<T>.stride)
    guard let raw = malloc(bytes) else { throw LeapError(.outOfMemory, "out of memory allocating \(bytes) bytes") }
    let p = raw.bindMemory(to: T.self, capacity: max(1, elements.count))
    elements.withUnsafeBufferPointer { src in
        if let base = src.baseAddress { p.initialize(from: base, count: src.count) }
    }
    return p
}

/// No user address space on x86-64 or arm64 reaches 2^48 bytes: a larger element count (typically a
/// negative value or SIZE_MAX arriving through a size_t, which Swift sees as a negative Int) cannot
/// describe readable memory and is rejected before any pointer arithmetic.
let maxCallerBufferBytes = 1 << 48

/// `count` elements of `T` at `p`, borrowed (not copied); `count` elements must be readable when
/// `count > 0`. NULL is fine for 0 elements.
func borrowedBuffer<T>(_ p: UnsafePointer<T>?, _ count: Int, _ name: StaticString) throws -> UnsafeBufferPointer<T> {
    guard count >= 0, count <= maxCallerBufferBytes / max(1, MemoryLayout<T>.stride) else {
        throw LeapError.invalidArgument("the element count of \(name) is \(UInt(bitPattern: count)), larger than any buffer")
    }
    if count == 0 { return UnsafeBufferPointer(start: nil, count: 0) }
    return UnsafeBufferPointer(start: try required(p, name), count: count)
}

/// The shape of every function returning an owned array plus its count: both out-parameters are cleared
/// first (so any failure, even the other one being NULL, leaves NULL / 0), then filled from `body`.
func returnBuffer<T>(_ out: UnsafeMutablePointer<UnsafeMutablePointer<T>?>?, _ outName: StaticString,
                     _ outCount: UnsafeMutablePointer<Int>?, _ countName: StaticString,
                     _ body: () throws -> [T]) throws {
    out?.pointee = nil
    outCount?.pointee = 0
    let out = try required(out, outName)
    let outCount = try required(outCount, countName)
    let elements = try body()
    out.pointee = try ownedBuffer(elements)
    outCount.pointee = elements.count
}

/// Copies a C array argument into Swift (see `borrowedBuffer`).
func array<T>(_ p: UnsafePointer<T>?, _ count: Int, _ name: StaticString) throws -> [T] {
    Array(try borrowedBuffer(p, count, name))
}

/// Copies a C array of audio samples into Swift; every sample must be finite.
func samplesArray(_ p: UnsafePointer<Float>?, _ count: Int, _ name: StaticString) throws -> [Float] {
    let b = try borrowedBuffer(p, count, name)
    if let i = ContentValidation.firstNonFiniteSample(b) {
        throw LeapError.invalidArgument("\(name)[\(i)] is \(b[i]); samples must be finite")
    }
    return Array(b)
}

/// Reads a growable params struct: `struct_size` bytes from the caller (at most our own size) over the
/// defaults, so older and newer callers both work.
func readParams<T>(_ p: UnsafePointer<T>?, defaults: T, _ name: StaticString) throws -> T {
    guard let p else { return defaults }
    let given = Int(UnsafeRawPointer(p).load(as: UInt32.self))
    guard given >= MemoryLayout<UInt32>.size else {
        throw LeapError.invalidArgument("\(name)->struct_size is \(given); initialize the struct with its *_default() function")
    }
    var value = defaults
    withUnsafeMutableBytes(of: &value) { dst in
        let n = min(given, dst.count)
        dst.copyMemory(from: UnsafeRawBufferPointer(start: UnsafeRawPointer(p), count: n))
        // Keep our own struct_size: the remainder of the struct holds our defaults.
        dst.storeBytes(of: UInt32(MemoryLayout<T>.size), as: UInt32.self)
    }
    return value
}

/// Writes `value` into a caller struct of `size` bytes (at most our own size), keeping the caller's
/// struct_size: the mirror of `readParams` for structs the library fills.
func writeParams<T>(_ value: T, to p: UnsafeMutablePointer<T>, size: Int) {
    var v = value
    withUnsafeBytes(of: &v) { src in
        let n = min(size, src.count)
        if let base = src.baseAddress { UnsafeMutableRawPointer(p).copyMemory(from: base, byteCount: n) }
    }
}

/// The body of every `leap_*_init(&s, sizeof s)`: writes `defaults` into the caller's struct (at most
/// `size` bytes) with `struct_size` set to the bytes that struct really has. A NULL pointer or a size too
/// small to hold `struct_size` is ignored (these functions return nothing).
func initParams<T>(_ defaults: T, into p: UnsafeMutablePointer<T>?, size: Int) {
    guard let p, size >= MemoryLayout<UInt32>.size else { return }
    var d = defaults
    withUnsafeMutableBytes(of: &d) { $0.storeBytes(of: UInt32(min(size, MemoryLayout<T>.size)), as: UInt32.self) }
    writeParams(d, to: p, size: size)
}
