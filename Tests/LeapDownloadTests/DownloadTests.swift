import Glibc
import LeapCore
import LeapDownload
import LeapTestFiles
import Testing

/// Downloader against scripts/bundle_test_server.py on loopback, serving a copy of a fixture model
/// (1.1 MB). Each test has its own server and folder.
@Suite struct DownloadTests {
    let dir = TempDir()
    let server: TestServer
    let model: [UInt8]

    init() throws {
        model = try fileBytes(fixtureModel)
        try writeFile(dir.path + "/model.gguf", model)
        server = try TestServer(root: dir.path)
    }

    var dest: String { dir.path + "/cache/sub/model.gguf" }

    @Test func wholeFileWithServerChecksumAndProgress() throws {
        var reports: [(Int64, Int64?)] = []
        let report = try Downloader.download(server.base + "/etag/model.gguf", to: dest) { reports.append(($0, $1)) }
        #expect(try fileBytes(dest) == model)
        #expect(!exists(dest + ".part"))
        #expect(report.resumedFrom == 0 && report.attempts == 1 && report.bytes == Int64(model.count))
        // The server's X-Linked-ETag is the SHA-256 Python's hashlib computed; the download was checked against it.
        #expect(report.verifiedSHA256 == SHA256.hex(SHA256.hash(model)))
        #expect(reports.last.map { $0.0 == Int64(model.count) && $0.1 == Int64(model.count) } == true)
        #expect(zip(reports, reports.dropFirst()).allSatisfy { $0.0 <= $1.0 }, "progress goes forward")
    }

    @Test func droppedConnectionResumesWithRange() throws {
        let report = try Downloader.download(server.base + "/drop/model.gguf", to: dest)
        #expect(try fileBytes(dest) == model)
        #expect(report.attempts == 2)
        // The server cut the first response after half the file; the second asked for the rest.
        let log = try server.requests().filter { $0.path.hasSuffix("model.gguf") }
        #expect(log.map(\.range) == [nil, "bytes=\(model.count / 2)-"])
    }

    @Test func partialFileOfAnEarlierRunIsResumed() throws {
        var options = DownloadOptions()
        options.maxAttempts = 1
        let e = leapError { try Downloader.download(server.base + "/dropalways/model.gguf", to: dest, options: options) }
        #expect(e?.kind == .io)
        #expect(e?.message.contains("the connection was closed after \(model.count / 2) of \(model.count) bytes") == true, "\(e?.message ?? "")")
        #expect(e?.message.contains("model.gguf.part") == true)
        #expect(!exists(dest) && size(dest + ".part") == model.count / 2)
        let report = try Downloader.download(server.base + "/plain/model.gguf", to: dest)
        #expect(report.resumedFrom == Int64(model.count / 2))
        #expect(try fileBytes(dest) == model)
        #expect(try server.requests().last?.range == "bytes=\(model.count / 2)-")
    }

    @Test func serverIgnoringRangeRestartsTheFile() throws {
        try Downloader.makeDirectories(parentOf: dest)
        try writeFile(dest + ".part", [UInt8](repeating: 0xAB, count: 1000))
        try Downloader.download(server.base + "/norange/model.gguf", to: dest)
        #expect(try fileBytes(dest) == model)
    }

    @Test func completePartFileGets416AndIsKept() throws {
        try Downloader.makeDirectories(parentOf: dest)
        try writeFile(dest + ".part", model)
        let report = try Downloader.download(server.base + "/etag/model.gguf", to: dest)
        #expect(try fileBytes(dest) == model)
        #expect(report.verifiedSHA256 == nil, "a 416 carries no checksum")
        #expect(try server.requests().last?.range == "bytes=\(model.count)-")
    }

    @Test func partFileLongerThanTheFileStartsAgain() throws {
        // The file changed on the server: the range past its end gets 416 with another size.
        try Downloader.makeDirectories(parentOf: dest)
        try writeFile(dest + ".part", [UInt8](repeating: 1, count: model.count + 100))
        try Downloader.download(server.base + "/plain/model.gguf", to: dest)
        #expect(try fileBytes(dest) == model)
        #expect(try server.requests().map(\.range) == ["bytes=\(model.count + 100)-", nil])
    }

    @Test func impossibleAnnouncedSizeFailsTheDownload() throws {
        // A resumed download whose 206 gives no total size and a Content-Length near 2^63: the total it
        // implies (offset + length) does not fit an Int64, which is an error naming the sizes.
        try Downloader.makeDirectories(parentOf: dest)
        try writeFile(dest + ".part", Array(model[0..<1000]))
        let e = leapError { try Downloader.download(server.base + "/hugelength/model.gguf", to: dest) }
        #expect(e?.kind == .io)
        #expect(e?.message.contains("announced \(Int64.max - 9) bytes after byte 1000") == true, "\(e?.message ?? "")")
        #expect(!exists(dest) && size(dest + ".part") == 1000)
    }

    @Test func notFound() throws {
        let e = leapError { try Downloader.download(server.base + "/missing/model.gguf", to: dest) }
        #expect(e?.kind == .io)
        #expect(e?.message.contains("HTTP 404") == true, "\(e?.message ?? "")")
        #expect(!exists(dest) && !exists(dest + ".part"))
    }

    @Test func wrongChecksumFromServerOrCaller() throws {
        let e = leapError { try Downloader.download(server.base + "/badetag/model.gguf", to: dest) }
        #expect(e?.kind == .io)
        #expect(e?.message.contains("SHA-256 mismatch") == true && e?.message.contains("the server's ETag") == true, "\(e?.message ?? "")")
        #expect(!exists(dest) && !exists(dest + ".part"))
        let wrong = String(repeating: "0", count: 64)
        let f = leapError { try Downloader.download(server.base + "/plain/model.gguf", to: dest, sha256: wrong) }
        #expect(f?.message.contains("the manifest says \(wrong)") == true, "\(f?.message ?? "")")
        #expect(!exists(dest) && !exists(dest + ".part"))
        let g = leapError { try Downloader.download(server.base + "/plain/model.gguf", to: dest, size: 12) }
        #expect(g?.message.contains("the manifest says 12") == true, "\(g?.message ?? "")")
        // The caller's checksum, when right, wins over a wrong one from the server.
        let right = SHA256.hex(SHA256.hash(model))
        #expect(try Downloader.download(server.base + "/badetag/model.gguf", to: dest, sha256: right).verifiedSHA256 == right)
    }

    @Test func redirectCarryingTheChecksum() throws {
        let report = try Downloader.download(server.base + "/redirect+etag/model.gguf", to: dest)
        #expect(try fileBytes(dest) == model)
        #expect(report.verifiedSHA256 == SHA256.hex(SHA256.hash(model)))
        #expect(try server.requests().map(\.path).filter { $0.hasSuffix("model.gguf") } == ["/redirect+etag/model.gguf", "/plain/model.gguf"])
    }

    @Test func serverThatStopsAnswering() throws {
        var options = DownloadOptions()
        options.stallTimeout = 1
        let e = leapError { try Downloader.download(server.base + "/stall/model.gguf", to: dest, options: options) }
        #expect(e?.kind == .io)
        #expect(e?.message.contains("the server stopped answering (no data for 1 s)") == true, "\(e?.message ?? "")")
        #expect(!exists(dest) && size(dest + ".part") == model.count / 2)
    }

    @Test func unreachableServer() throws {
        // A port nothing listens on: the server of this test, stopped.
        let url = server.base + "/plain/model.gguf"
        kill(server.pid, SIGKILL)
        var status: Int32 = 0
        waitpid(server.pid, &status, 0)
        let e = leapError { try Downloader.download(url, to: dest) }
        #expect(e?.kind == .io)
        #expect(e?.message.contains("cannot connect to the server") == true, "\(e?.message ?? "")")
        #expect(!exists(dest) && !exists(dest + ".part"))
    }

    @Test func cancelFromAnotherThread() throws {
        let cancel = DownloadCancellation()
        let canceller = Thread { usleep(300_000); cancel.cancel() }
        // slow: 4 KiB every 20 ms, about 5 s for the file, so the cancel lands mid-transfer.
        let e = leapError { try Downloader.download(server.base + "/slow/model.gguf", to: dest, cancel: cancel) }
        canceller.join()
        #expect(e?.kind == .cancelled, "\(e?.message ?? "")")
        let kept = size(dest + ".part")
        #expect(!exists(dest) && kept > 0 && kept < model.count)
        // The next download resumes where the cancelled one stopped.
        #expect(try Downloader.download(server.base + "/plain/model.gguf", to: dest).resumedFrom == Int64(kept))
        #expect(try fileBytes(dest) == model)
    }

    @Test func cancelledBeforeTheFirstByte() throws {
        let cancel = DownloadCancellation()
        cancel.cancel()
        let e = leapError { try Downloader.download(server.base + "/plain/model.gguf", to: dest, cancel: cancel) }
        #expect(e?.kind == .cancelled)
        #expect(!exists(dest) && !exists(dest + ".part"))
    }

    @Test func secondDownloadOfTheSameFileIsBusy() throws {
        try Downloader.makeDirectories(parentOf: dest)
        let fd = open(dest + ".part", O_RDWR | O_CREAT, 0o644)
        defer { close(fd) }
        #expect(flock(fd, LOCK_EX) == 0)
        let e = leapError { try Downloader.download(server.base + "/plain/model.gguf", to: dest) }
        #expect(e?.kind == .busy, "\(e?.message ?? "")")
        #expect(!exists(dest))
    }

    @Test func missingLibcurl() throws {
        var options = DownloadOptions()
        options.library = CurlLibrary.load(soname: "libcurl-absent-for-this-test.so.4")
        let e = leapError { try Downloader.download(server.base + "/plain/model.gguf", to: dest, options: options) }
        #expect(e?.kind == .unsupported)
        #expect(e?.message.contains("downloading needs libcurl-absent-for-this-test.so.4 (libcurl)") == true, "\(e?.message ?? "")")
        #expect(e?.message.contains("apt-get install libcurl4") == true)
        #expect(!exists(dest) && !exists(dest + ".part"))
    }

    @Test func fetchIntoMemoryWithLimit() throws {
        #expect(try Downloader.fetch(server.base + "/plain/model.gguf", maxBytes: 1 << 22) == model)
        let e = leapError { _ = try Downloader.fetch(server.base + "/plain/model.gguf", maxBytes: 1000) }
        #expect(e?.kind == .format && e?.message.contains("larger than 1000 bytes") == true, "\(e?.message ?? "")")
    }
}

/// A pthread running `body`, joined with `join()`.
final class Thread {
    private var thread = pthread_t()
    private let box: Box
    private final class Box { let body: () -> Void; init(_ b: @escaping () -> Void) { body = b } }

    init(_ body: @escaping () -> Void) {
        box = Box(body)
        let arg = Unmanaged.passRetained(box).toOpaque()
        pthread_create(&thread, nil, { p in
            let b = Unmanaged<Box>.fromOpaque(p!).takeRetainedValue()
            b.body()
            return nil
        }, arg)
    }

    func join() { pthread_join(thread, nil) }
}
