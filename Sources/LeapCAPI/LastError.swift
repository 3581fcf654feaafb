import Glibc

/// The thread-local message behind `leap_last_error()`: a strdup'ed C string per thread, freed when the
/// thread exits or the next message replaces it.
enum LastError {
    private static let key: pthread_key_t = {
        var k = pthread_key_t()
        _ = pthread_key_create(&k) { p in free(p) }
        return k
    }()

    private static let empty: UnsafePointer<CChar> = {
        let s: StaticString = ""
        return UnsafeRawPointer(s.utf8Start).assumingMemoryBound(to: CChar.self)
    }()

    static func set(_ message: String) {
        let old = pthread_getspecific(key)
        pthread_setspecific(key, strdup(message))
        free(old)
    }

    static func clear() {
        if let old = pthread_getspecific(key) {
            pthread_setspecific(key, nil)
            free(old)
        }
    }

    static var current: UnsafePointer<CChar> {
        guard let p = pthread_getspecific(key) else { return empty }
        return UnsafePointer(p.assumingMemoryBound(to: CChar.self))
    }
}
