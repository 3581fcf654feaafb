import Glibc
import LeapBundles
import LeapCore
import LeapDownload
import LeapRuntime
import LeapTestFiles
import Testing

/// Bundles whose cache holds planted, stale or damaged files, and servers whose bodies are not the files:
/// a cached file is used only when it is what the manifest names, and a body that is not a model never
/// stays in the cache.
@Suite struct BundleCacheTrustTests {
    let dir = TempDir()
    let server: TestServer
    let model: [UInt8]
    let other: [UInt8]

    init() throws {
        model = try fileBytes(fixtureModel)
        other = try fileBytes(fixturesDir("models") + "/lfm2-tiny-f32.gguf")
        try Downloader.makeDirectories(parentOf: dir.path + "/LFM2-Tiny-GGUF/x")
        try writeFile(dir.path + "/LFM2-Tiny-GGUF/lfm2-tiny-q8_0.gguf", model)
        try writeFile(dir.path + "/LFM2-Tiny-GGUF/Q8_0.json", Array(#"{"load_time_parameters": {"model": "lfm2-tiny-q8_0.gguf"}}"#.utf8))
        server = try TestServer(root: dir.path)
    }

    var cache: String { dir.path + "/cache" }
    /// The manifest written by `manifest(...)`, and where its model is cached.
    var manifestPath: String { dir.path + "/local/LFM2-Tiny-GGUF/Q8_0.json" }
    var cached: String { cache + "/LFM2-Tiny-Q8_0/lfm2-tiny-q8_0.gguf" }
    var sha: String { SHA256.hex(SHA256.hash(model)) }

    func options() -> BundleLoadOptions {
        var o = BundleLoadOptions()
        o.cacheDirectory = cache
        return o
    }

    /// A local manifest whose model is the fixture served in `mode`, with the checksum and size when given.
    func manifest(mode: String = "plain", sha256: String? = nil, size: Int? = nil) throws {
        let url = "\(server.base)/\(mode)/LFM2-Tiny-GGUF/lfm2-tiny-q8_0.gguf"
        var entry = "\"\(url)\""
        if sha256 != nil || size != nil {
            entry = "{\"url\": \"\(url)\"" + (sha256.map { ", \"sha256\": \"\($0)\"" } ?? "") + (size.map { ", \"size\": \($0)" } ?? "") + "}"
        }
        try Downloader.makeDirectories(parentOf: manifestPath)
        try writeFile(manifestPath, Array("{\"load_time_parameters\": {\"model\": \(entry)}}".utf8))
    }

    func plant(_ bytes: [UInt8]) throws {
        try Downloader.makeDirectories(parentOf: cached)
        try writeFile(cached, bytes)
    }

    // MARK: a cached file against the manifest

    @Test func aCachedFileWithAnotherChecksumIsDownloadedAgain() throws {
        try manifest(sha256: sha, size: model.count)
        try plant(other)   // another model, another size
        var files = try BundleFetcher.fetch(manifestPath, options: options())
        #expect(files.downloaded == [cached])
        #expect(try fileBytes(cached) == model)
        // The file that hashed right has a record of its identity and hash; the next load trusts it.
        var st = stat()
        stat(cached, &st)
        let record = "leap-verified 1 \(st.st_dev) \(st.st_ino) \(st.st_size) \(st.st_mtim.tv_sec) \(st.st_mtim.tv_nsec) \(sha)\n"
        #expect(try fileBytes(cache + "/LFM2-Tiny-Q8_0/.lfm2-tiny-q8_0.gguf.verified") == Array(record.utf8))
        let before = try server.requests().count
        files = try BundleFetcher.fetch(manifestPath, options: options())
        #expect(files.downloaded.isEmpty)
        #expect(try server.requests().count == before)
        // The same size, one byte changed (a clock tick later): the record no longer describes the file,
        // which hashes wrong and is downloaded again.
        usleep(20_000)
        var damaged = model
        damaged[damaged.count / 2] ^= 1
        try plant(damaged)
        files = try BundleFetcher.fetch(manifestPath, options: options())
        #expect(files.downloaded == [cached])
        #expect(try fileBytes(cached) == model)
    }

    @Test func aCachedFileOfAnotherSizeOrNotAModelIsDownloadedAgain() throws {
        try manifest(size: model.count)
        try plant(other)
        #expect(try BundleFetcher.fetch(manifestPath, options: options()).downloaded == [cached])
        #expect(try fileBytes(cached) == model)
        // Without a size or checksum in the manifest, a cached file must still be a GGUF file.
        try manifest()
        try plant([UInt8](repeating: 0, count: model.count))
        #expect(try BundleFetcher.fetch(manifestPath, options: options()).downloaded == [cached])
        #expect(try fileBytes(cached) == model)
    }

    @Test func aCachedLinkIsReplacedNotFollowed() throws {
        try manifest()
        let victim = dir.path + "/elsewhere.gguf"
        try writeFile(victim, other)
        try Downloader.makeDirectories(parentOf: cached)
        #expect(symlink(victim, cached) == 0)
        let files = try BundleFetcher.fetch(manifestPath, options: options())
        #expect(files.downloaded == [cached])
        var st = stat()
        #expect(lstat(cached, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG)
        #expect(try fileBytes(cached) == model)
        #expect(try fileBytes(victim) == other, "the link's target is untouched")
    }

    @Test func aManifestFromAnotherHostHasItsOwnFolder() throws {
        // The same server under two host names: the same path layout, two origins, two folders.
        let first = try BundleFetcher.fetch("http://127.0.0.1:\(server.port)/plain/LFM2-Tiny-GGUF/Q8_0.json", options: options())
        let second = try BundleFetcher.fetch("http://localhost:\(server.port)/plain/LFM2-Tiny-GGUF/Q8_0.json", options: options())
        #expect(first.modelPath == cache + "/LFM2-Tiny-Q8_0@http-127.0.0.1:\(server.port)/lfm2-tiny-q8_0.gguf")
        #expect(second.modelPath == cache + "/LFM2-Tiny-Q8_0@http-localhost:\(server.port)/lfm2-tiny-q8_0.gguf")
        #expect(first.downloaded == [first.modelPath] && second.downloaded == [second.modelPath])
    }

    // MARK: bodies that are not the file

    @Test func anEmptyAnswerToAResumeDoesNotPromoteThePart() throws {
        try manifest(mode: "empty200")
        try Downloader.makeDirectories(parentOf: cached)
        try writeFile(cached + ".part", Array(model[0..<(model.count / 2)]))
        let e = leapError { _ = try BundleFetcher.fetch(manifestPath, options: options()) }
        #expect(e?.kind == .io && e?.message.contains("not usable: it is empty") == true, "\(e?.message ?? "")")
        #expect(!exists(cached) && !exists(cached + ".part"))
        // The next load downloads the file again, whole.
        try manifest()
        _ = try ModelRunner.load(bundle: manifestPath, options: options())
        #expect(try fileBytes(cached) == model)
    }

    @Test func aGzipOrZeroBodyIsNeverCached() throws {
        try manifest(mode: "gzip")
        let e = leapError { _ = try BundleFetcher.fetch(manifestPath, options: options()) }
        #expect(e?.kind == .io && e?.message.contains("Content-Encoding: gzip") == true, "\(e?.message ?? "")")
        #expect(!exists(cached) && !exists(cached + ".part"))
        try manifest(mode: "zeros")
        let f = leapError { _ = try BundleFetcher.fetch(manifestPath, options: options()) }
        #expect(f?.kind == .io && f?.message.contains("it is not a GGUF file: it starts with 00 00 00 00 00 00 00 00 (zeros)") == true, "\(f?.message ?? "")")
        #expect(!exists(cached) && !exists(cached + ".part"))
    }

    @Test func aFileCutShortWithoutALengthIsDroppedWhenTheLoadRefusesIt() throws {
        // nolength+dropalways: half the file, then the connection closes, with no Content-Length to tell
        // that anything is missing. It starts like a model, so it is cached; the load refuses it.
        try manifest(mode: "nolength+dropalways")
        let e = leapError { _ = try ModelRunner.load(bundle: manifestPath, options: options()) }
        #expect(e != nil)
        #expect(!exists(cached), "the refused file is removed from the cache")
        try manifest()
        _ = try ModelRunner.load(bundle: manifestPath, options: options())
        #expect(try fileBytes(cached) == model)
    }
}
