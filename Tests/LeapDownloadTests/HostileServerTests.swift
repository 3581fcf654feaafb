import Glibc
import LeapCore
import LeapDownload
import LeapTestFiles
import Testing

/// The downloader against servers that lie or stall (scripts/bundle_test_server.py's modes) and cache
/// folders with planted files: nothing a server sends beyond the manifest, and nothing found on disk, is
/// taken on trust.
@Suite struct HostileServerTests {
    let dir = TempDir()
    let server: TestServer
    let model: [UInt8]

    init() throws {
        model = try fileBytes(fixtureModel)
        try writeFile(dir.path + "/model.gguf", model)
        server = try TestServer(root: dir.path)
    }

    var dest: String { dir.path + "/cache/sub/model.gguf" }
    var sha: String { SHA256.hex(SHA256.hash(model)) }

    /// A file must start with "GGUF" (the check a bundle gives for its model).
    static let startsWithGGUF: FileCheck = { fd, size in
        var head = [UInt8](repeating: 0, count: 4)
        let n = head.withUnsafeMutableBytes { pread(fd, $0.baseAddress, 4, 0) }
        return n == 4 && head == Array("GGUF".utf8) ? nil : "no GGUF magic (\(size) bytes)"
    }

    // MARK: the manifest's size

    @Test func announcedSizeOtherThanTheManifestsIsRefusedBeforeTheBody() throws {
        // endless: 200 with a Content-Length of 2^40, then bytes without end.
        let e = leapError { try Downloader.download(server.base + "/endless/model.gguf", to: dest, size: Int64(model.count)) }
        #expect(e?.kind == .io)
        #expect(e?.message.contains("the server announced a file of \(1 << 40) bytes but the manifest says \(model.count)") == true, "\(e?.message ?? "")")
        #expect(!exists(dest) && !exists(dest + ".part"))
        // A resume whose Content-Range total is not the manifest's size: refused, the .part untouched.
        try Downloader.makeDirectories(parentOf: dest)
        try writeFile(dest + ".part", Array(model[0..<1000]))
        let f = leapError { try Downloader.download(server.base + "/plain/model.gguf", to: dest, size: Int64(model.count + 5)) }
        #expect(f?.message.contains("the server announced a file of \(model.count) bytes but the manifest says \(model.count + 5)") == true, "\(f?.message ?? "")")
        #expect(try fileBytes(dest + ".part") == Array(model[0..<1000]))
    }

    @Test func endlessBodyStopsAtTheManifestsSize() throws {
        // endless+nolength: no Content-Length to refuse, the file over and over until the client hangs up.
        let e = leapError { try Downloader.download(server.base + "/endless+nolength/model.gguf", to: dest, size: Int64(model.count)) }
        #expect(e?.kind == .io)
        #expect(e?.message.contains("the server sent more than the \(model.count) bytes the manifest says") == true, "\(e?.message ?? "")")
        #expect(!exists(dest) && size(dest + ".part") <= model.count)
    }

    @Test func partLongerThanTheManifestsSizeIsDropped() throws {
        try Downloader.makeDirectories(parentOf: dest)
        try writeFile(dest + ".part", [UInt8](repeating: 7, count: model.count + 100))
        let report = try Downloader.download(server.base + "/plain/model.gguf", to: dest, size: Int64(model.count))
        #expect(report.resumedFrom == 0)
        #expect(try fileBytes(dest) == model)
        // One request, from the first byte: the over-long .part was not offered as a resume.
        #expect(try server.requests().map(\.range) == [nil])
    }

    // MARK: an empty answer to a resume

    @Test func emptyAnswerToAResumeNeverPromotesThePart() throws {
        try Downloader.makeDirectories(parentOf: dest)
        let half = Array(model[0..<(model.count / 2)])
        try writeFile(dest + ".part", half)
        // With the manifest's size: the 200's Content-Length 0 is refused before the body, the .part kept.
        let e = leapError { try Downloader.download(server.base + "/empty200/model.gguf", to: dest, size: Int64(model.count)) }
        #expect(e?.message.contains("announced a file of 0 bytes but the manifest says \(model.count)") == true, "\(e?.message ?? "")")
        #expect(!exists(dest))
        #expect(try fileBytes(dest + ".part") == half)
        // Without it: the 200 restarts the file, which is then empty, and refused by the contents check.
        let f = leapError { try Downloader.download(server.base + "/empty200/model.gguf", to: dest, check: Self.startsWithGGUF) }
        #expect(f?.kind == .io && f?.message.contains("the downloaded file is not usable: no GGUF magic (0 bytes)") == true, "\(f?.message ?? "")")
        #expect(!exists(dest) && !exists(dest + ".part"))
        // The next download starts from scratch and completes.
        #expect(try Downloader.download(server.base + "/plain/model.gguf", to: dest, check: Self.startsWithGGUF).resumedFrom == 0)
        #expect(try fileBytes(dest) == model)
    }

    // MARK: bodies that are not the file

    @Test func encodedOrZeroBodiesAreNotRenamedIntoPlace() throws {
        let e = leapError { try Downloader.download(server.base + "/gzip/model.gguf", to: dest, check: Self.startsWithGGUF) }
        #expect(e?.kind == .io && e?.message.contains("Content-Encoding: gzip") == true, "\(e?.message ?? "")")
        #expect(!exists(dest) && !exists(dest + ".part"))
        let f = leapError { try Downloader.download(server.base + "/zeros/model.gguf", to: dest, check: Self.startsWithGGUF) }
        #expect(f?.kind == .io && f?.message.contains("not usable: no GGUF magic") == true, "\(f?.message ?? "")")
        #expect(!exists(dest) && !exists(dest + ".part"))
    }

    // MARK: a silent server

    @Test func progressThatCancelsIsHeardWhileTheServerSendsNothing() throws {
        let cancel = DownloadCancellation()
        var calls = 0
        var start = timespec(), end = timespec()
        clock_gettime(CLOCK_MONOTONIC, &start)
        // The stall timeout stays at its 30 s default: only the progress callback can end this early.
        let e = leapError {
            try Downloader.download(server.base + "/silent/model.gguf", to: dest, cancel: cancel) { _, _ in
                calls += 1
                cancel.cancel()
            }
        }
        clock_gettime(CLOCK_MONOTONIC, &end)
        let seconds = Double(end.tv_sec - start.tv_sec) + Double(end.tv_nsec - start.tv_nsec) * 1e-9
        #expect(e?.kind == .cancelled, "\(e?.message ?? "")")
        #expect(calls >= 1)
        #expect(seconds < 5, "cancelled after \(seconds) s")
        #expect(!exists(dest) && !exists(dest + ".part"))
    }

    // MARK: planted files

    @Test func aPlantedLinkAtThePartIsNeverWrittenThrough() throws {
        try Downloader.makeDirectories(parentOf: dest)
        let victim = dir.path + "/victim"
        try writeFile(victim, Array("precious".utf8))
        #expect(symlink(victim, dest + ".part") == 0)
        let e = leapError { try Downloader.download(server.base + "/plain/model.gguf", to: dest) }
        #expect(e?.kind == .io && e?.message.contains("is a symbolic link") == true, "\(e?.message ?? "")")
        #expect(try fileBytes(victim) == Array("precious".utf8))
        #expect(!exists(dest))
        // A link to /dev/full, a FIFO: not regular files either.
        unlink(dest + ".part")
        #expect(symlink("/dev/full", dest + ".part") == 0)
        #expect(leapError { try Downloader.download(server.base + "/plain/model.gguf", to: dest) }?.message.contains("is a symbolic link") == true)
        unlink(dest + ".part")
        #expect(mkfifo(dest + ".part", 0o600) == 0)
        let f = leapError { try Downloader.download(server.base + "/plain/model.gguf", to: dest) }
        #expect(f?.kind == .io && f?.message.contains("is not a regular file") == true, "\(f?.message ?? "")")
        #expect(try server.requests().isEmpty, "nothing was requested")
    }

    @Test func createdFoldersAreTheUsersAlone() throws {
        try Downloader.download(server.base + "/plain/model.gguf", to: dest)
        for folder in [dir.path + "/cache", dir.path + "/cache/sub"] {
            var st = stat()
            #expect(stat(folder, &st) == 0 && st.st_mode & 0o777 == 0o700, "\(folder): \(String(st.st_mode & 0o777, radix: 8))")
        }
        var st = stat()
        #expect(stat(dest, &st) == 0 && st.st_mode & 0o077 == 0, "the file is not readable by others")
    }

    // MARK: two processes on one .part

    @Test func aLockedDescriptorOfARenamedPartIsNotCurrent() throws {
        // What a process that opened the .part just before another renamed it holds: a descriptor of the
        // finished file. After its lock it must see that the path names another file now.
        try Downloader.makeDirectories(parentOf: dest)
        try writeFile(dest + ".part", model)
        let fd = open(dest + ".part", O_RDWR)
        defer { close(fd) }
        #expect(PartFile.isCurrent(fd, path: dest + ".part"))
        #expect(rename(dest + ".part", dest) == 0)
        #expect(!PartFile.isCurrent(fd, path: dest + ".part"))
        try writeFile(dest + ".part", [])
        #expect(!PartFile.isCurrent(fd, path: dest + ".part"), "a new .part is another file")
        // Opening and locking again takes the new .part, not the finished file.
        let again = try PartFile.openLocked(dest + ".part", destination: dest)
        defer { close(again) }
        #expect(PartFile.isCurrent(again, path: dest + ".part"))
    }

    @Test func aDestinationCompletedMeanwhileIsNotDownloadedAgain() throws {
        // Another process finished the file while this one waited: under the lock, the destination passes
        // the manifest's checks, so nothing is requested and the file (which others may have mapped) is
        // not touched.
        try Downloader.makeDirectories(parentOf: dest)
        try writeFile(dest, model)
        var before = stat()
        stat(dest, &before)
        let report = try Downloader.download(server.base + "/plain/model.gguf", to: dest, sha256: sha, size: Int64(model.count))
        #expect(report.foundComplete && report.attempts == 0)
        #expect(try server.requests().isEmpty)
        var after = stat()
        stat(dest, &after)
        #expect(after.st_ino == before.st_ino && after.st_mtim.tv_nsec == before.st_mtim.tv_nsec)
        #expect(!exists(dest + ".part"))
        // A destination that does not pass is downloaded again and replaced (written a clock tick later, so
        // that its modification time differs from the one its record holds).
        usleep(20_000)
        try writeFile(dest, Array(model.reversed()))
        let again = try Downloader.download(server.base + "/plain/model.gguf", to: dest, sha256: sha, size: Int64(model.count))
        #expect(!again.foundComplete && again.verifiedSHA256 == sha)
        #expect(try fileBytes(dest) == model)
    }
}
