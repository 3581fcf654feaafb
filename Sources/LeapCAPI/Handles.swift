import LeapCore

/// Every C handle is a retained Swift object of a class deriving from `HandleBox`. The tag catches a
/// handle of one kind passed where another is expected (e.g. a leap_message* given to a model function)
/// before any cast happens.
class HandleBox {
    enum Kind: UInt32 {
        case message = 0x4D53_4731  // "MSG1"
        case pcm = 0x5043_4D31
        case gguf = 0x4747_5546
        case tokenizer = 0x544F_4B31
        case template = 0x544D_5031
        case model = 0x4D44_4C31
        case context = 0x4354_5831
        case conversation = 0x434E_5631
        case function = 0x464E_4331
        case options = 0x4F50_5431
        case stream = 0x5354_5231
        case resampler = 0x5253_4D31
        case sampler = 0x534D_5031
        case cancelToken = 0x434E_4C31
        case speculator = 0x5350_4331
    }

    /// Set to 0 by `release` so that a dangling double free is caught as long as the memory is not reused.
    private(set) var tag: UInt32
    init(kind: Kind) { tag = kind.rawValue }

    func invalidate() { tag = 0 }
}

enum Handle {
    /// Byte offset of `HandleBox.tag` inside the object (after the isa pointer and the refcount word).
    static let tagOffset = 2 * MemoryLayout<UInt>.size

    /// create: +1 retain, handed to C.
    static func retain(_ box: HandleBox) -> OpaquePointer {
        OpaquePointer(Unmanaged.passRetained(box).toOpaque())
    }

    /// A handle for an object the library keeps alive itself (e.g. the message of an event): no retain.
    static func unretained(_ box: HandleBox) -> OpaquePointer {
        OpaquePointer(Unmanaged.passUnretained(box).toOpaque())
    }

    /// use: borrow without changing the retain count, checking the kind.
    static func borrow<T: HandleBox>(_ p: OpaquePointer?, _ type: T.Type, kind: HandleBox.Kind, _ name: StaticString) throws -> T {
        guard let p else { throw LeapError.invalidArgument("\(name) must not be NULL") }
        let raw = UnsafeRawPointer(p)
        // The tag is the first stored property, right after the 16-byte object header (isa + refcount).
        // Read it as raw memory before forming a reference, so that a pointer to something else (another
        // library's object, a freed handle) is rejected without touching its "reference count".
        guard raw.load(fromByteOffset: tagOffset, as: UInt32.self) == kind.rawValue else {
            throw LeapError.invalidArgument("\(name) is not a valid \(kind) handle (wrong kind of handle, or already freed)")
        }
        let box = Unmanaged<HandleBox>.fromOpaque(raw).takeUnretainedValue()
        guard let typed = box as? T else {
            throw LeapError.invalidArgument("\(name) is not a valid \(kind) handle (wrong kind of handle, or already freed)")
        }
        return typed
    }

    /// free: drop the C reference. NULL and handles of another kind are ignored.
    static func release(_ p: OpaquePointer?, kind: HandleBox.Kind) {
        guard let p else { return }
        guard UnsafeRawPointer(p).load(fromByteOffset: tagOffset, as: UInt32.self) == kind.rawValue else { return }
        Unmanaged<HandleBox>.fromOpaque(UnsafeRawPointer(p)).takeUnretainedValue().invalidate()
        Unmanaged<HandleBox>.fromOpaque(UnsafeRawPointer(p)).release()
    }
}
