// TurboJPEGLibrary: libturbojpeg (TurboJPEG 2.x API) opened with dlopen at first use.
//
// libleap.so does not link libturbojpeg: it loads and works where the library is absent, and only JPEG
// decoding and encoding then fail, with a message saying what to install. The library is opened and its
// symbols are resolved once (a Swift global is initialised exactly once, thread-safely); every call then
// uses its own tjhandle, so any number of threads can decode at the same time.
import Glibc
import LeapCore

/// The functions of the TurboJPEG 2.1 API that JPEG uses (`tjhandle` is `void *`, `unsigned long` is UInt).
struct TurboJPEGLibrary: @unchecked Sendable {
    static let soname = "libturbojpeg.so.0"
    static let debianPackage = "libturbojpeg0"

    typealias InitFn = @convention(c) () -> UnsafeMutableRawPointer?
    typealias DestroyFn = @convention(c) (UnsafeMutableRawPointer?) -> Int32
    // (handle, jpegBuf, jpegSize, &width, &height, &jpegSubsamp, &jpegColorspace)
    typealias DecompressHeader3Fn = @convention(c) (
        UnsafeMutableRawPointer?, UnsafePointer<UInt8>?, UInt,
        UnsafeMutablePointer<Int32>?, UnsafeMutablePointer<Int32>?, UnsafeMutablePointer<Int32>?, UnsafeMutablePointer<Int32>?
    ) -> Int32
    // (handle, jpegBuf, jpegSize, dstBuf, width, pitch, height, pixelFormat, flags)
    typealias Decompress2Fn = @convention(c) (
        UnsafeMutableRawPointer?, UnsafePointer<UInt8>?, UInt, UnsafeMutablePointer<UInt8>?, Int32, Int32, Int32, Int32, Int32
    ) -> Int32
    // (handle, srcBuf, width, pitch, height, pixelFormat, &jpegBuf, &jpegSize, jpegSubsamp, jpegQual, flags)
    typealias Compress2Fn = @convention(c) (
        UnsafeMutableRawPointer?, UnsafePointer<UInt8>?, Int32, Int32, Int32, Int32,
        UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?, UnsafeMutablePointer<UInt>?, Int32, Int32, Int32
    ) -> Int32
    typealias BufSizeFn = @convention(c) (Int32, Int32, Int32) -> UInt
    typealias GetErrorStr2Fn = @convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutablePointer<CChar>?
    typealias GetErrorCodeFn = @convention(c) (UnsafeMutableRawPointer?) -> Int32

    let initDecompress: InitFn
    let initCompress: InitFn
    let destroy: DestroyFn
    let decompressHeader3: DecompressHeader3Fn
    let decompress2: Decompress2Fn
    let compress2: Compress2Fn
    let bufSize: BufSizeFn
    let getErrorStr2: GetErrorStr2Fn
    let getErrorCode: GetErrorCodeFn

    // turbojpeg.h constants.
    static let pixelFormatRGB: Int32 = 0     // TJPF_RGB
    static let pixelFormatCMYK: Int32 = 11   // TJPF_CMYK
    static let colorspaceCMYK: Int32 = 3     // TJCS_CMYK
    static let colorspaceYCCK: Int32 = 4     // TJCS_YCCK
    static let subsampling420: Int32 = 2     // TJSAMP_420
    static let flagNoRealloc: Int32 = 1024        // TJFLAG_NOREALLOC: write into our buffer, never reallocate it
    static let flagAccurateDCT: Int32 = 4096      // TJFLAG_ACCURATEDCT: libjpeg's default islow DCT (TurboJPEG's
                                                  // encoder otherwise uses the fast, less accurate one)
    static let flagStopOnWarning: Int32 = 8192    // TJFLAG_STOPONWARNING: a warning (corrupt data) aborts the call
    static let flagLimitScans: Int32 = 32768      // TJFLAG_LIMITSCANS: reject progressive files with > 500 scans
    static let errorWarning: Int32 = 0            // TJERR_WARNING

    /// The library, or the reason it cannot be used (resolved on first access, once per process).
    static let shared: Result<TurboJPEGLibrary, LeapError> = load()

    private static func load() -> Result<TurboJPEGLibrary, LeapError> {
        var lib: DynamicLibrary
        switch DynamicLibrary.open(soname) {
        case .success(let opened): lib = opened
        case .failure(let failure):
            return .failure(LeapError.unsupported(
                "JPEG support needs \(soname) (TurboJPEG), which could not be loaded (\(failure.reason)); "
                    + "install the Debian package \(debianPackage) (apt-get install \(debianPackage))"))
        }
        let initDecompress = lib.function("tjInitDecompress", InitFn.self)
        let initCompress = lib.function("tjInitCompress", InitFn.self)
        let destroy = lib.function("tjDestroy", DestroyFn.self)
        let decompressHeader3 = lib.function("tjDecompressHeader3", DecompressHeader3Fn.self)
        let decompress2 = lib.function("tjDecompress2", Decompress2Fn.self)
        let compress2 = lib.function("tjCompress2", Compress2Fn.self)
        let bufSize = lib.function("tjBufSize", BufSizeFn.self)
        let getErrorStr2 = lib.function("tjGetErrorStr2", GetErrorStr2Fn.self)
        let getErrorCode = lib.function("tjGetErrorCode", GetErrorCodeFn.self)
        guard let initDecompress, let initCompress, let destroy, let decompressHeader3, let decompress2, let compress2,
              let bufSize, let getErrorStr2, let getErrorCode
        else {
            lib.close()
            return .failure(LeapError.unsupported(
                "\(soname) lacks \(lib.missing.joined(separator: ", ")) (TurboJPEG 2.0 or newer is needed); "
                    + "install the Debian package \(debianPackage)"))
        }
        // The handle stays open for the life of the process: the function pointers point into it.
        return .success(TurboJPEGLibrary(
            initDecompress: initDecompress, initCompress: initCompress, destroy: destroy,
            decompressHeader3: decompressHeader3, decompress2: decompress2, compress2: compress2,
            bufSize: bufSize, getErrorStr2: getErrorStr2, getErrorCode: getErrorCode))
    }

    /// The last error of `handle` (copied: TurboJPEG reuses its buffer).
    func errorMessage(_ handle: UnsafeMutableRawPointer?) -> String {
        guard let s = getErrorStr2(handle) else { return "unknown TurboJPEG error" }
        return String(cString: s)
    }
}
