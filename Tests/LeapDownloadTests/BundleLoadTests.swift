import Glibc
import LeapBundles
import LeapCore
import LeapDownload
import LeapMessages
import LeapRuntime
import LeapTestFiles
import Testing

/// Bundles end to end: a manifest served by the loopback server names the tiny LFM2 fixture; loading it
/// downloads the model into `{cache}/{model}-{quant}@{scheme}-{host}`, applies the manifest's defaults, and generates the
/// same text as the fixture loaded directly.
@Suite struct BundleLoadTests {
    let dir = TempDir()
    let server: TestServer
    static let template = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"

    init() throws {
        try Downloader.makeDirectories(parentOf: dir.path + "/LFM2-Tiny-GGUF/x")
        try writeFile(dir.path + "/LFM2-Tiny-GGUF/lfm2-tiny-q8_0.gguf", try fileBytes(fixtureModel))
        try writeFile(dir.path + "/LFM2-Tiny-GGUF/template.jinja", Array(Self.template.utf8))
        try writeFile(dir.path + "/LFM2-Tiny-GGUF/Q8_0.json", Array("""
        {"schema_version": "1.0.0", "inference_type": "llama.cpp/text-to-text",
         "load_time_parameters": {"model": "lfm2-tiny-q8_0.gguf", "chat_template": "template.jinja"},
         "generation_time_parameters": {"sampling_parameters": {"temperature": 0.0, "top_k": 7, "min_p": 0.0,
            "repetition_penalty": 1.0}, "number_of_decoding_threads": 1}}
        """.utf8))
        server = try TestServer(root: dir.path)
    }

    var cache: String { dir.path + "/cache" }
    /// The folder suffix of manifests from the loopback server.
    var origin: String { "@http-127.0.0.1:\(server.port)" }

    func options() -> BundleLoadOptions {
        var o = BundleLoadOptions()
        o.cacheDirectory = cache
        return o
    }

    static func greedyText(_ runner: ModelRunner) throws -> String {
        let conv = runner.createConversation(systemPrompt: nil)
        var o = GenerationOptions()
        o.maxTokens = 12
        o.rngSeed = 1
        let g = try conv.generate(ChatMessage(role: .user, content: [.text("Hello there")]), options: o)
        var text = ""
        while let e = try g.next() { if case .chunk(let t) = e { text += t } }
        return text
    }

    @Test func manifestFromURLDownloadsIntoTheCacheAndGenerates() throws {
        var o = options()
        var progress: [String: (Int64, Int64?)] = [:]
        o.progress = { progress[$0] = ($1, $2) }
        let runner = try ModelRunner.load(bundle: server.base + "/etag/LFM2-Tiny-GGUF/Q8_0.json", options: o)
        let cached = cache + "/LFM2-Tiny-Q8_0\(origin)/lfm2-tiny-q8_0.gguf"
        #expect(try fileBytes(cached) == fileBytes(fixtureModel))
        #expect(try fileBytes(cache + "/LFM2-Tiny-Q8_0\(origin)/template.jinja") == Array(Self.template.utf8))
        let n = Int64(size(fixtureModel))
        #expect(progress["lfm2-tiny-q8_0.gguf"].map { $0.0 == n && $0.1 == n } == true)
        // The manifest's defaults, the template file and the thread count reached the model.
        #expect(runner.samplingDefaults.temperature == 0 && runner.samplingDefaults.topK == 7)
        #expect(runner.samplingDefaults.minP == 0 && runner.samplingDefaults.repetitionPenalty == 1)
        #expect(runner.templateSource == Self.template)
        #expect(runner.threads == 1)
        // Same text as the fixture loaded from its path with the same template and sampling.
        var direct = RunnerOptions()
        direct.chatTemplate = Self.template
        var sampling = BundleSampling()
        sampling.temperature = 0
        sampling.topK = 7
        sampling.minP = 0
        sampling.repetitionPenalty = 1
        direct.defaultSampling = sampling
        let expected = try Self.greedyText(ModelRunner.load(path: fixtureModel, options: direct))
        #expect(!expected.isEmpty)
        #expect(try Self.greedyText(runner) == expected)

        // A second load uses the cache: only the manifest is requested again.
        let before = try server.requests().count
        let files = try BundleFetcher.fetch(server.base + "/etag/LFM2-Tiny-GGUF/Q8_0.json", options: options())
        #expect(files.downloaded.isEmpty && files.modelPath == cached)
        #expect(try server.requests().dropFirst(before).map(\.path) == ["/etag/LFM2-Tiny-GGUF/Q8_0.json"])
    }

    /// Every companion kind comes from the manifest: LFM2-VL's projector, and LFM2.5-Audio's vocoder and
    /// audio tokenizer (the tiny random-weight fixtures, served through symlinks).
    @Test func companionsFromTheManifest() throws {
        let fixtures = fixturesRoot
        let files = [("vl.gguf", "/vision/lfm2vl-tiny-text-f32.gguf"), ("mmproj-vl.gguf", "/vision/lfm2vl-tiny-mmproj-q8_0.gguf"),
                     ("vocoder.gguf", "/speech/vocoder-tiny.gguf"), ("tokenizer.gguf", "/speech/tokenizer-tiny.gguf"),
                     ("text-f32.gguf", "/models/lfm2-tiny-f32.gguf")]
        for (name, target) in files { #expect(symlink(fixtures + target, dir.path + "/LFM2-Tiny-GGUF/" + name) == 0) }
        try writeFile(dir.path + "/LFM2-Tiny-GGUF/VL.json", Array("""
        {"inference_type": "llama.cpp/image-to-text", "load_time_parameters": {"model": "vl.gguf", "multimodal_projector": "mmproj-vl.gguf"}}
        """.utf8))
        let vl = try ModelRunner.load(bundle: server.base + "/plain/LFM2-Tiny-GGUF/VL.json", options: options())
        #expect(vl.supportsImages && !vl.supportsAudioOutput)
        #expect(vl.companions.mmproj == cache + "/LFM2-Tiny-VL\(origin)/mmproj-vl.gguf")
        try writeFile(dir.path + "/LFM2-Tiny-GGUF/Audio.json", Array("""
        {"inference_type": "llama.cpp/lfm2-audio-v1", "load_time_parameters": {"model": "text-f32.gguf",
         "audio_decoder": "vocoder.gguf", "audio_tokenizer": "tokenizer.gguf"}}
        """.utf8))
        let speaker = try ModelRunner.load(bundle: server.base + "/plain/LFM2-Tiny-GGUF/Audio.json", options: options())
        #expect(speaker.supportsAudioOutput && !speaker.supportsImages)
        #expect(speaker.companions.audioDecoder == cache + "/LFM2-Tiny-Audio\(origin)/vocoder.gguf")
        #expect(speaker.companions.audioTokenizer == cache + "/LFM2-Tiny-Audio\(origin)/tokenizer.gguf")
    }

    @Test func callerSettingsWinOverTheManifest() throws {
        var o = options()
        o.runner.threads = 2
        o.runner.chatTemplate = "{{ messages[0].content }}"
        let files = try BundleFetcher.fetch(server.base + "/plain/LFM2-Tiny-GGUF/Q8_0.json", options: o)
        #expect(files.manifest.decodingThreads == 1)
        let runner = try ModelRunner.load(files: files, options: o.runner)
        #expect(runner.templateSource == "{{ messages[0].content }}")
        #expect(runner.threads == 2)
    }

    @Test func manifestFromAPathWithURLEntries() throws {
        let manifest = dir.path + "/local/LFM2-Tiny-GGUF/Q8_0.json"
        try Downloader.makeDirectories(parentOf: manifest)
        try writeFile(manifest, Array("""
        {"load_time_parameters": {"model": "\(server.base)/plain/LFM2-Tiny-GGUF/lfm2-tiny-q8_0.gguf", "chat_template": "../../LFM2-Tiny-GGUF/template.jinja"}}
        """.utf8))
        let files = try BundleFetcher.fetch(manifest, options: options())
        #expect(files.modelPath == cache + "/LFM2-Tiny-Q8_0/lfm2-tiny-q8_0.gguf")
        #expect(files.downloaded == [files.modelPath])
        #expect(files.chatTemplate == Self.template)
        _ = try ModelRunner.load(files: files, options: RunnerOptions())
    }

    @Test func manifestFromAPathWithLocalFiles() throws {
        let files = try BundleFetcher.fetch(dir.path + "/LFM2-Tiny-GGUF/Q8_0.json", options: options())
        #expect(files.modelPath == dir.path + "/LFM2-Tiny-GGUF/lfm2-tiny-q8_0.gguf")
        #expect(files.downloaded.isEmpty && !exists(cache))
    }

    @Test func failedDownloadLeavesNothingToLoad() throws {
        var o = options()
        o.download.maxAttempts = 1
        let url = server.base + "/dropalways/LFM2-Tiny-GGUF/Q8_0.json"
        // The manifest itself comes through (a drop cuts half of it): refused as JSON, nothing written.
        let e = leapError { _ = try ModelRunner.load(bundle: url, options: o) }
        #expect(e?.kind == .io, "\(e?.message ?? "")")
        #expect(!exists(cache))
        // A manifest whose model is cut: the cache holds only the .part, never the model file.
        let manifest = dir.path + "/cut.json"
        try writeFile(manifest, Array(#"{"load_time_parameters": {"model": "\#(server.base)/dropalways/LFM2-Tiny-GGUF/lfm2-tiny-q8_0.gguf"}}"#.utf8))
        let f = leapError { _ = try ModelRunner.load(bundle: manifest, options: o) }
        #expect(f?.kind == .io && f?.message.contains("the connection was closed") == true, "\(f?.message ?? "")")
        // The cache folder of a manifest at <folder>/cut.json is "<folder>-cut".
        let folder = cache + "/" + BundleCache.folderName(forManifest: .path(manifest))
        #expect(folder.hasSuffix("-cut"))
        #expect(!exists(folder + "/lfm2-tiny-q8_0.gguf") && exists(folder + "/lfm2-tiny-q8_0.gguf.part"))
        // The next load resumes the .part and loads.
        try writeFile(manifest, Array(#"{"load_time_parameters": {"model": "\#(server.base)/plain/LFM2-Tiny-GGUF/lfm2-tiny-q8_0.gguf"}}"#.utf8))
        _ = try ModelRunner.load(bundle: manifest, options: options())
        #expect(try server.requests().last?.range == "bytes=\(size(fixtureModel) / 2)-")
    }

    @Test func errorsNameTheManifestAndTheKey() throws {
        let e = leapError { _ = try BundleFetcher.fetch(server.base + "/missing/LFM2-Tiny-GGUF/Q8_0.json", options: options()) }
        #expect(e?.kind == .io && e?.message.contains("HTTP 404") == true, "\(e?.message ?? "")")
        let manifest = dir.path + "/bad.json"
        try writeFile(manifest, Array(#"{"load_time_parameters": {"model": "nowhere.gguf"}}"#.utf8))
        let f = leapError { _ = try BundleFetcher.fetch(manifest, options: options()) }
        #expect(f?.kind == .io && f?.message.contains("load_time_parameters.model names '\(dir.path)/nowhere.gguf', which cannot be read") == true,
                "\(f?.message ?? "")")
        try writeFile(manifest, Array(#"{"load_time_parameters": {"model": 1}}"#.utf8))
        let g = leapError { _ = try BundleFetcher.fetch(manifest, options: options()) }
        #expect(g?.kind == .format && g?.message.hasPrefix(manifest + ": bundle manifest: load_time_parameters.model must be") == true,
                "\(g?.message ?? "")")
    }
}
