import Glibc

/// A shared library opened with dlopen at first use (libturbojpeg, libcurl): libleap.so does not link the
/// optional ones, so it loads where they are absent. Symbols are looked up by name; the ones not found are
/// collected in `missing` so that one message can name them all.
public struct DynamicLibrary {
    /// Why a library could not be opened: the dynamic loader's message.
    public struct OpenFailure: Error {
        public let reason: String
    }

    private let handle: UnsafeMutableRawPointer
    public private(set) var missing: [String] = []

    public static func open(_ soname: String) -> Result<DynamicLibrary, OpenFailure> {
        guard let handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL) else {
            return .failure(OpenFailure(reason: dlerror().map { String(cString: $0) } ?? "not found"))
        }
        return .success(DynamicLibrary(handle: handle))
    }

    /// The C function `name` as `type` (a @convention(c) function type), or nil (then named in `missing`).
    public mutating func function<F>(_ name: String, _ type: F.Type) -> F? {
        address(name).map { unsafeBitCast($0, to: type) }
    }

    /// The address of `name` (for functions Swift cannot call directly, such as variadic ones), or nil.
    public mutating func address(_ name: String) -> UnsafeMutableRawPointer? {
        guard let p = dlsym(handle, name) else {
            missing.append(name)
            return nil
        }
        return p
    }

    /// Closes the library when it cannot be used. A library whose functions are kept stays open for the
    /// life of the process: the function pointers point into it.
    public func close() {
        dlclose(handle)
    }
}
