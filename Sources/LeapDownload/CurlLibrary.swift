// CurlLibrary: libcurl's easy interface, opened with dlopen at first use.
//
// libleap.so does not link libcurl: it loads and works where libcurl is absent, and only downloads then
// fail, with a message naming the library and the package to install. The library is opened once per
// process (a Swift global is initialised exactly once, thread-safely); each transfer has its own easy
// handle. LEAP_LIBCURL names another file to open instead (a path or soname; a file that does not exist
// makes the library behave as where libcurl is not installed).
import CLeapCurl
import Glibc
import LeapCore

package struct CurlLibrary: @unchecked Sendable {
    package static let soname = "libcurl.so.4"
    static let debianPackage = "libcurl4"

    typealias GlobalInitFn = @convention(c) (Int) -> Int32
    typealias EasyInitFn = @convention(c) () -> UnsafeMutableRawPointer?
    typealias EasyPerformFn = @convention(c) (UnsafeMutableRawPointer?) -> Int32
    typealias EasyCleanupFn = @convention(c) (UnsafeMutableRawPointer?) -> Void
    typealias EasyStrerrorFn = @convention(c) (Int32) -> UnsafePointer<CChar>?
    typealias SlistAppendFn = @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?) -> UnsafeMutableRawPointer?
    typealias SlistFreeAllFn = @convention(c) (UnsafeMutableRawPointer?) -> Void

    let easyInit: EasyInitFn
    let easyPerform: EasyPerformFn
    let easyCleanup: EasyCleanupFn
    let easyStrerror: EasyStrerrorFn
    let slistAppend: SlistAppendFn
    let slistFreeAll: SlistFreeAllFn
    /// The variadic curl_easy_setopt / curl_easy_getinfo, called through CLeapCurl.
    let setoptFn: UnsafeMutableRawPointer
    let getinfoFn: UnsafeMutableRawPointer

    // curl.h option numbers: CURLOPTTYPE_LONG 0, _OBJECTPOINT 10000, _FUNCTIONPOINT 20000, _OFF_T 30000.
    enum Option: Int32 {
        case writeData = 10001           // CURLOPT_WRITEDATA
        case url = 10002                 // CURLOPT_URL
        case range = 10007               // CURLOPT_RANGE ("N-": from byte N to the end)
        case errorBuffer = 10010         // CURLOPT_ERRORBUFFER (CURL_ERROR_SIZE = 256 bytes)
        case userAgent = 10018           // CURLOPT_USERAGENT
        case lowSpeedLimit = 19          // CURLOPT_LOW_SPEED_LIMIT (bytes/s)
        case lowSpeedTime = 20           // CURLOPT_LOW_SPEED_TIME (s)
        case httpHeader = 10023          // CURLOPT_HTTPHEADER (struct curl_slist *)
        case headerData = 10029          // CURLOPT_HEADERDATA
        case noProgress = 43             // CURLOPT_NOPROGRESS
        case followLocation = 52         // CURLOPT_FOLLOWLOCATION
        case xferInfoData = 10057        // CURLOPT_XFERINFODATA
        case maxRedirects = 68           // CURLOPT_MAXREDIRS
        case connectTimeout = 78         // CURLOPT_CONNECTTIMEOUT (s)
        case noSignal = 99               // CURLOPT_NOSIGNAL
        case protocols = 181             // CURLOPT_PROTOCOLS (bit mask)
        case redirectProtocols = 182     // CURLOPT_REDIR_PROTOCOLS
        case writeFunction = 20011       // CURLOPT_WRITEFUNCTION
        case headerFunction = 20079      // CURLOPT_HEADERFUNCTION
        case xferInfoFunction = 20219    // CURLOPT_XFERINFOFUNCTION
        case suppressConnectHeaders = 265 // CURLOPT_SUPPRESS_CONNECT_HEADERS (libcurl 7.54)
    }
    package static let protocolHTTP = 1, protocolHTTPS = 2          // CURLPROTO_HTTP, CURLPROTO_HTTPS
    static let globalDefault = 3                            // CURL_GLOBAL_DEFAULT (SSL | WIN32)
    static let infoResponseCode: Int32 = 0x200000 + 2       // CURLINFO_RESPONSE_CODE (long)
    static let errorBufferSize = 256                        // CURL_ERROR_SIZE

    // CURLcode values this library tells apart.
    enum Code {
        static let ok: Int32 = 0
        static let unsupportedProtocol: Int32 = 1
        static let couldntResolveProxy: Int32 = 5
        static let couldntResolveHost: Int32 = 6
        static let couldntConnect: Int32 = 7
        static let partialFile: Int32 = 18
        static let writeError: Int32 = 23
        static let operationTimedOut: Int32 = 28
        static let rangeError: Int32 = 33
        static let abortedByCallback: Int32 = 42
        static let tooManyRedirects: Int32 = 47
        static let gotNothing: Int32 = 52
        static let sendError: Int32 = 55
        static let recvError: Int32 = 56
    }

    /// The library, or why it cannot be used (resolved on first access, once per process).
    package static let shared: Result<CurlLibrary, LeapError> = {
        let override = getenv("LEAP_LIBCURL").map { String(cString: $0) }
        return load(soname: override.flatMap { $0.isEmpty ? nil : $0 } ?? soname)
    }()

    /// Opens `soname` (a test opens a name that does not exist to see the error of a machine without libcurl).
    package static func load(soname: String) -> Result<CurlLibrary, LeapError> {
        var lib: DynamicLibrary
        switch DynamicLibrary.open(soname) {
        case .success(let opened): lib = opened
        case .failure(let failure):
            return .failure(LeapError.unsupported(
                "downloading needs \(soname) (libcurl), which could not be loaded (\(failure.reason)); install the Debian "
                    + "package \(debianPackage) (apt-get install \(debianPackage)), or download the files yourself "
                    + "and load the bundle from a path"))
        }
        let globalInit = lib.function("curl_global_init", GlobalInitFn.self)
        let easyInit = lib.function("curl_easy_init", EasyInitFn.self)
        let easyPerform = lib.function("curl_easy_perform", EasyPerformFn.self)
        let easyCleanup = lib.function("curl_easy_cleanup", EasyCleanupFn.self)
        let easyStrerror = lib.function("curl_easy_strerror", EasyStrerrorFn.self)
        let slistAppend = lib.function("curl_slist_append", SlistAppendFn.self)
        let slistFreeAll = lib.function("curl_slist_free_all", SlistFreeAllFn.self)
        let setopt = lib.address("curl_easy_setopt")
        let getinfo = lib.address("curl_easy_getinfo")
        guard let globalInit, let easyInit, let easyPerform, let easyCleanup, let easyStrerror, let slistAppend,
              let slistFreeAll, let setopt, let getinfo
        else {
            lib.close()
            return .failure(LeapError.unsupported("\(soname) lacks \(lib.missing.joined(separator: ", ")); install the Debian package \(debianPackage)"))
        }
        // Once, before any easy handle (curl_global_init is not thread-safe; this initialiser runs once).
        let status = globalInit(globalDefault)
        guard status == Code.ok else {
            return .failure(LeapError.unsupported("\(soname): curl_global_init failed (CURLcode \(status))"))
        }
        // The handle stays open for the life of the process: the function pointers point into it.
        return .success(CurlLibrary(easyInit: easyInit, easyPerform: easyPerform, easyCleanup: easyCleanup,
                                    easyStrerror: easyStrerror, slistAppend: slistAppend, slistFreeAll: slistFreeAll,
                                    setoptFn: setopt, getinfoFn: getinfo))
    }

    func set(_ h: UnsafeMutableRawPointer, _ o: Option, _ v: Int) -> Int32 { leapcurl_setopt_long(setoptFn, h, o.rawValue, v) }
    func set(_ h: UnsafeMutableRawPointer, _ o: Option, _ p: UnsafeRawPointer?) -> Int32 { leapcurl_setopt_pointer(setoptFn, h, o.rawValue, p) }

    func responseCode(_ h: UnsafeMutableRawPointer) -> Int {
        var code = 0
        return leapcurl_getinfo_long(getinfoFn, h, CurlLibrary.infoResponseCode, &code) == Code.ok ? code : 0
    }

    func message(_ code: Int32) -> String {
        easyStrerror(code).map { String(cString: $0) } ?? "CURLcode \(code)"
    }
}
