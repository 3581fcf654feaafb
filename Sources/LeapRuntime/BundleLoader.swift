import Glibc
import LeapBundles
import LeapCore
import LeapDownload

// Loading a LEAP model bundle: the manifest (a path or an http(s) URL) names the model and its companions,
// whose URLs are downloaded into the cache folder (BundleCache.swift); its sampling parameters become the
// model's defaults and its number_of_decoding_threads the thread count. Nothing in the cache is used on
// trust: a file already there is used only when it has the manifest's size and SHA-256 (each when given)
// and looks like what its key names (BundleFileChecks.swift); anything else is downloaded again. A local
// manifest may name any local file the process can read: whoever writes the manifest chooses the files.

/// How to fetch and load a bundle.
package struct BundleLoadOptions {
    /// The cache root; nil = `BundleCache.defaultDirectory()`.
    package var cacheDirectory: String?
    /// The caller's load options: a thread count, context size or chat template set here wins over the
    /// manifest's. The companion paths are the manifest's.
    package var runner = RunnerOptions()
    package var download = DownloadOptions()
    package var cancel: DownloadCancellation?
    /// Progress of each downloaded file (its cache file name, bytes so far, total when known), on the
    /// calling thread.
    package var progress: ((_ file: String, _ done: Int64, _ total: Int64?) -> Void)?
    package init() {}
}

/// A bundle's files on this machine.
package struct BundleFiles: Equatable, Sendable {
    package var manifest: BundleManifest
    package var modelPath: String
    package var mmprojPath: String?
    package var audioDecoderPath: String?
    package var audioTokenizerPath: String?
    /// The Jinja source of the manifest's chat template (inline, or read from its file).
    package var chatTemplate: String?
    /// The files this call downloaded (cache paths), in manifest order.
    package var downloaded: [String] = []
    /// The cached GGUF files (the model and its companions, downloaded now or earlier) that no SHA-256 of
    /// the manifest vouches for.
    package var unpinnedCacheFiles: [String] = []
}

package enum BundleFetcher {
    /// Reads the manifest at `source` and makes every file it names local, downloading the URLs. Errors
    /// name the manifest, its key and the file: `.io` (unreadable manifest or file, failed download),
    /// `.format` / `.unsupported` (bad manifest), `.cancelled`, `.unsupported` (a URL and no libcurl).
    package static func fetch(_ source: String, options: BundleLoadOptions = BundleLoadOptions()) throws -> BundleFiles {
        var createdFolder: String? = nil
        do {
            return try fetch(source, options: options, createdFolder: &createdFolder)
        } catch {
            // A failed fetch leaves no new empty cache folder (rmdir only removes an empty one; a .part stays).
            if let createdFolder { rmdir(createdFolder) }
            throw error
        }
    }

    private static func fetch(_ source: String, options: BundleLoadOptions, createdFolder: inout String?) throws -> BundleFiles {
        let location = try BundleLocation.source(source)
        let manifest: BundleManifest
        do {
            manifest = try BundleManifest.parse(try readManifest(location, options: options))
        } catch let e as LeapError where e.kind == .format || e.kind == .unsupported {
            throw LeapError(e.kind, "\(source): \(e.message)")
        }
        var cacheFolder: String? = nil
        func folder() throws -> String {
            if let cacheFolder { return cacheFolder }
            var root = try options.cacheDirectory ?? BundleCache.defaultDirectory()
            while root.count > 1 && root.hasSuffix("/") { root.removeLast() }
            let f = root + "/" + BundleCache.folderName(forManifest: location)
            cacheFolder = f
            if access(f, F_OK) != 0 { createdFolder = f }
            return f
        }
        var local: [String: String] = [:]
        var urlOfCacheFile: [String: String] = [:]
        var downloaded: [String] = []
        var unpinned: [String] = []
        for (key, ref) in manifest.files {
            let name = "load_time_parameters.\(key)"
            let resolved: BundleLocation
            do {
                resolved = try location.resolve(ref.location)
            } catch let e as LeapError {
                throw LeapError(e.kind, "\(source): \(name): \(e.message)")
            }
            switch resolved {
            case .path(let path):
                guard access(path, R_OK) == 0 else {
                    throw LeapError.io("\(source): \(name) names '\(path)', which cannot be read: \(String(cString: strerror(errno)))")
                }
                local[key] = path
            case .url(let url):
                let fileName = BundleCache.fileName(forURL: url)
                let path = try folder() + "/" + fileName
                if let other = urlOfCacheFile[fileName], other != url {
                    throw LeapError.format("\(source): \(name) (\(url)) and \(other) would both be cached as '\(fileName)'")
                }
                urlOfCacheFile[fileName] = url
                let check = BundleFileChecks.check(forKey: key)
                if let problem = CachedFile.problem(at: path, sha256: ref.sha256, size: ref.size, check: check) {
                    if exists(path) {
                        Log.warning("\(source): \(name): the cached '\(path)' is not used: \(problem); downloading it again")
                    }
                    let progress = options.progress
                    let report = try Downloader.download(
                        url, to: path, sha256: ref.sha256, size: ref.size, check: check, options: options.download,
                        cancel: options.cancel, progress: progress.map { p in { p(fileName, $0, $1) } })
                    if !report.foundComplete { downloaded.append(path) }
                } else {
                    Log.info("\(source): \(name) is in the cache: '\(path)'")
                }
                if ref.sha256 == nil && key != "chat_template" { unpinned.append(path) }
                local[key] = path
            }
        }
        guard let modelPath = local["model"] else { throw LeapError(.internal, "bundle without a model path") }
        var files = BundleFiles(manifest: manifest, modelPath: modelPath)
        files.mmprojPath = local["multimodal_projector"]
        files.audioDecoderPath = local["audio_decoder"]
        files.audioTokenizerPath = local["audio_tokenizer"]
        files.downloaded = downloaded
        files.unpinnedCacheFiles = unpinned
        switch manifest.chatTemplate {
        case .source(let s): files.chatTemplate = s
        case .file: files.chatTemplate = try local["chat_template"].map { try readText($0, limit: BundleManifest.maxBytes, what: "chat template") }
        case nil: break
        }
        return files
    }

    private static func readManifest(_ location: BundleLocation, options: BundleLoadOptions) throws -> [UInt8] {
        switch location {
        case .url(let url):
            return try Downloader.fetch(url, maxBytes: BundleManifest.maxBytes, options: options.download, cancel: options.cancel)
        case .path(let path):
            return Array(try readText(path, limit: BundleManifest.maxBytes, what: "bundle manifest").utf8)
        }
    }

    /// A small UTF-8 text file.
    static func readText(_ path: String, limit: Int, what: String) throws -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw LeapError.io("cannot open the \(what) '\(path)': \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw LeapError.io("cannot read the \(what) '\(path)': \(String(cString: strerror(errno)))") }
            if n == 0 { break }
            bytes.append(contentsOf: chunk[0..<n])
            guard bytes.count <= limit else { throw LeapError.format("the \(what) '\(path)' is larger than \(limit) bytes") }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw LeapError.format("the \(what) '\(path)' is not valid UTF-8")
        }
        return text
    }

    private static func exists(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0
    }
}

extension ModelRunner {
    /// Loads the bundle at `source` (LEAP `loadModelFromManifestUrl`): fetches its files, then loads the
    /// model with the manifest's companions (no auto-detection: the manifest says which files belong),
    /// chat template, sampling defaults and thread count, each unless `options.runner` sets its own.
    package static func load(bundle source: String, options: BundleLoadOptions = BundleLoadOptions()) throws -> ModelRunner {
        let files = try BundleFetcher.fetch(source, options: options)
        do {
            return try load(files: files, options: options.runner)
        } catch {
            BundleFileChecks.dropRefusedFiles(files)
            throw error
        }
    }

    package static func load(files: BundleFiles, options caller: RunnerOptions) throws -> ModelRunner {
        var o = caller
        o.mmprojPath = files.mmprojPath
        o.audioDecoderPath = files.audioDecoderPath
        o.audioTokenizerPath = files.audioTokenizerPath
        o.autoDetectCompanionFiles = false
        o.threads = caller.threads ?? files.manifest.decodingThreads
        o.chatTemplate = caller.chatTemplate ?? files.chatTemplate
        o.defaultSampling = files.manifest.sampling
        return try load(path: files.modelPath, options: o)
    }
}
