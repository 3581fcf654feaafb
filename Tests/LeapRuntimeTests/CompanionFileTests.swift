import Glibc
import LeapCore
import LeapMessages
import LeapRuntime
import LeapTestFiles
import Testing

/// Companion files (LEAP §2.9-2.11, §3.15): detection next to the model, explicit paths, validation, and a
/// real (tiny, random-weight) LFM2 model that loads and chats with a projector next to it.
@Suite struct CompanionFileTests {
    /// Tests/Fixtures/models/lfm2-tiny-f32.gguf
    static let tinyModel = fixturesDir("models") + "/lfm2-tiny-f32.gguf"

    /// A fresh directory under /tmp.
    func tempDir() throws -> String {
        var template = Array("/tmp/leap-companions-XXXXXX".utf8CString)
        guard let p = mkdtemp(&template) else { throw LeapError(.io, "mkdtemp failed") }
        return String(cString: p)
    }

    func write(_ path: String, _ bytes: [UInt8]) {
        let f = fopen(path, "wb")
        _ = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, f) }
        fclose(f)
    }

    /// A metadata-only GGUF v3 with general.architecture = arch (the layout of the GGUF spec).
    func gguf(architecture arch: String) -> [UInt8] {
        func u32(_ v: UInt32) -> [UInt8] { withUnsafeBytes(of: v.littleEndian, Array.init) }
        func u64(_ v: UInt64) -> [UInt8] { withUnsafeBytes(of: v.littleEndian, Array.init) }
        func str(_ s: String) -> [UInt8] { u64(UInt64(s.utf8.count)) + Array(s.utf8) }
        return Array("GGUF".utf8) + u32(3) + u64(0) + u64(1) + str("general.architecture") + u32(8) + str(arch)
    }

    /// The model's folder is found on bytes: a model file name starting with a combining mark makes one
    /// Character with the "/" before it, yet that "/" ends the folder (the folder above is not scanned).
    @Test func detectionLooksInTheModelsOwnFolder() throws {
        let dir = try tempDir()
        mkdir(dir + "/models", 0o755)
        write(dir + "/models/\u{301}m.gguf", [1])
        write(dir + "/models/mmproj-m-f16.gguf", [1])
        write(dir + "/mmproj-above.gguf", [1])
        #expect(CompanionFiles.detect(nextTo: dir + "/models/\u{301}m.gguf").mmproj == dir + "/models/mmproj-m-f16.gguf")
    }

    @Test func detectionFollowsLEAPsNamingRules() throws {
        let dir = try tempDir()
        for name in ["model.gguf", "mmproj-model-q8_0.gguf", "MMPROJ-model-f16.gguf", "mmproj-notes.txt",
                     "audio-only.gguf", "decoder-only.bin", "LFM2-Audio-Decoder.BIN",
                     "tokenizer-audio.gguf", "vocoder.txt", "tokenizer.json"] {
            write(dir + "/" + name, [1])
        }
        mkdir(dir + "/mmproj-a-directory.gguf", 0o755)
        let found = CompanionFiles.detect(nextTo: dir + "/model.gguf")
        // Both projectors name the model's stem: byte order decides (upper case first), "MMPROJ-..." wins. The
        // one audio decoder and the one tokenizer*.gguf name no part of it, and are taken as the only
        // candidates of their kinds (vocoder.txt and tokenizer.json are not GGUF files).
        #expect(found == CompanionFiles(mmproj: dir + "/MMPROJ-model-f16.gguf", audioDecoder: dir + "/LFM2-Audio-Decoder.BIN",
                                        audioTokenizer: dir + "/tokenizer-audio.gguf"))
        // LFM2.5-Audio's files: vocoder-*.gguf and tokenizer-*.gguf, matched to their model by its stem.
        let audio = try tempDir()
        for name in ["LFM2.5-Audio-1.5B-Q4_0.gguf", "mmproj-LFM2.5-Audio-1.5B-Q4_0.gguf", "vocoder-LFM2.5-Audio-1.5B-Q4_0.gguf",
                     "tokenizer-LFM2.5-Audio-1.5B-Q4_0.gguf", "vocoder-Other-Model-F16.gguf", "tokenizer-Other-Model-F16.gguf"] {
            write(audio + "/" + name, [1])
        }
        #expect(CompanionFiles.detect(nextTo: audio + "/LFM2.5-Audio-1.5B-Q4_0.gguf")
                == CompanionFiles(mmproj: audio + "/mmproj-LFM2.5-Audio-1.5B-Q4_0.gguf",
                                  audioDecoder: audio + "/vocoder-LFM2.5-Audio-1.5B-Q4_0.gguf",
                                  audioTokenizer: audio + "/tokenizer-LFM2.5-Audio-1.5B-Q4_0.gguf"))
        // The model file itself is never its own companion.
        #expect(CompanionFiles.detect(nextTo: dir + "/mmproj-model-q8_0.gguf").mmproj == dir + "/MMPROJ-model-f16.gguf")
        #expect(CompanionFiles.detect(nextTo: "/nonexistent-dir/model.gguf") == CompanionFiles())
    }

    @Test func explicitPathsWinAndEveryCompanionIsValidated() throws {
        let dir = try tempDir()
        write(dir + "/model.gguf", [1])
        write(dir + "/mmproj-found.gguf", gguf(architecture: "clip"))
        write(dir + "/given.gguf", gguf(architecture: "clip"))
        write(dir + "/llm.gguf", gguf(architecture: "llama"))
        write(dir + "/speaker.gguf", gguf(architecture: "whatever"))
        write(dir + "/decoder.bin", [0, 1, 2])
        write(dir + "/empty.bin", [])
        write(dir + "/garbage.gguf", Array("RIFF....WAVE".utf8))
        let model = dir + "/model.gguf"
        var o = RunnerOptions()
        #expect(try CompanionFiles.resolve(modelPath: model, options: o) == CompanionFiles(mmproj: dir + "/mmproj-found.gguf"))
        o.mmprojPath = dir + "/given.gguf"
        o.audioDecoderPath = dir + "/decoder.bin"
        o.audioTokenizerPath = dir + "/speaker.gguf"
        #expect(try CompanionFiles.resolve(modelPath: model, options: o)
                == CompanionFiles(mmproj: dir + "/given.gguf", audioDecoder: dir + "/decoder.bin", audioTokenizer: dir + "/speaker.gguf"))
        o = RunnerOptions()
        o.autoDetectCompanionFiles = false
        #expect(try CompanionFiles.resolve(modelPath: model, options: o) == CompanionFiles())

        func failure(_ change: (inout RunnerOptions) -> Void) -> LeapError? {
            var o = RunnerOptions()
            o.autoDetectCompanionFiles = false
            change(&o)
            do {
                _ = try CompanionFiles.resolve(modelPath: model, options: o)
                return nil
            } catch let e as LeapError {
                return e
            } catch {
                return nil
            }
        }
        #expect(failure { $0.mmprojPath = dir + "/llm.gguf" }
                == LeapError(.modelLoading, "mmproj: '\(dir)/llm.gguf' is not a multimodal projector (general.architecture is \"llama\", expected \"clip\")"))
        #expect(failure { $0.mmprojPath = dir + "/missing.gguf" }
                == LeapError(.io, "mmproj: cannot open GGUF file '\(dir)/missing.gguf': No such file or directory"))
        #expect(failure { $0.audioDecoderPath = dir + "/missing.bin" }
                == LeapError(.io, "audio decoder: cannot open '\(dir)/missing.bin': No such file or directory"))
        #expect(failure { $0.audioDecoderPath = dir + "/empty.bin" }
                == LeapError(.modelLoading, "audio decoder: '\(dir)/empty.bin' is not a non-empty regular file"))
        let garbage = failure { $0.audioTokenizerPath = dir + "/garbage.gguf" }
        #expect(garbage?.kind == .modelLoading)
        #expect(garbage?.message.hasPrefix("audio tokenizer: \(dir)/garbage.gguf: ") == true)
        // A broken projector found next to the model is left out (and named), the model still loads; given
        // explicitly, the same file fails the load.
        write(dir + "/mmproj-found.gguf", Array("GGUF".utf8))
        let resolved = try CompanionFiles.resolve(modelPath: model, options: RunnerOptions())
        #expect(resolved.mmproj == nil && resolved.skipped.count == 1)
        #expect(resolved.skipped.first?.hasPrefix("detected mmproj '\(dir)/mmproj-found.gguf' left out: mmproj: ") == true)
        #expect(failure { $0.mmprojPath = dir + "/mmproj-found.gguf" }?.kind == .modelLoading)
        // So is a language model named like a projector.
        write(dir + "/mmproj-found.gguf", gguf(architecture: "llama"))
        #expect(try CompanionFiles.resolve(modelPath: model, options: RunnerOptions()).skipped
                == ["detected mmproj '\(dir)/mmproj-found.gguf' left out: mmproj: '\(dir)/mmproj-found.gguf' is not a multimodal projector (general.architecture is \"llama\", expected \"clip\")"])
    }

    @Test func companionsAreMatchedByTheModelsStem() throws {
        let dir = try tempDir()
        for name in ["LFM2-VL-450M-Q8_0.gguf", "LFM2-VL-1.6B-Q4_K_M.gguf", "lfm2-350m.gguf",
                     "mmproj-LFM2-VL-1.6B-F16.gguf", "mmproj-LFM2-VL-450M-F16.gguf", "mmproj-LFM2-VL-450M-Q8_0.gguf",
                     "LFM2.5-Audio-1.5B-Q8_0.gguf", "audio-decoder-LFM2.5-Audio-1.5B-Q8_0.gguf", "audio-decoder-other.gguf"] {
            write(dir + "/" + name, [1])
        }
        func detected(_ model: String) -> CompanionFiles { CompanionFiles.detect(nextTo: dir + "/" + model) }
        // The whole stem (same quantization) first, then the stem without its quantization tag.
        #expect(detected("LFM2-VL-450M-Q8_0.gguf").mmproj == dir + "/mmproj-LFM2-VL-450M-Q8_0.gguf")
        #expect(detected("LFM2-VL-1.6B-Q4_K_M.gguf").mmproj == dir + "/mmproj-LFM2-VL-1.6B-F16.gguf")
        #expect(detected("LFM2.5-Audio-1.5B-Q8_0.gguf").audioDecoder == dir + "/audio-decoder-LFM2.5-Audio-1.5B-Q8_0.gguf")
        // A model none of the candidates names gets none of them (there are several of each kind).
        #expect(detected("lfm2-350m.gguf") == CompanionFiles())
        #expect(CompanionFiles.withoutQuantizationTag("lfm2-vl-1.6b-q4_k_m") == "lfm2-vl-1.6b")
        #expect(CompanionFiles.withoutQuantizationTag("smollm2-135m-instruct.q4_1") == "smollm2-135m-instruct")
        #expect(CompanionFiles.withoutQuantizationTag("gemma-3-270m-it-bf16") == "gemma-3-270m-it")
        #expect(CompanionFiles.withoutQuantizationTag("qwen2-tiny") == "qwen2-tiny")
        #expect(CompanionFiles.withoutQuantizationTag("q8_0") == "q8_0")
    }

    @Test(.enabled(if: access(CompanionFileTests.tinyModel, R_OK) == 0))
    func aTextModelWithAProjectorNextToItLoadsChatsAndRefusesImages() throws {
        let dir = try tempDir()
        let model = dir + "/lfm2-tiny.gguf"
        #expect(symlink(Self.tinyModel, model) == 0)
        write(dir + "/mmproj-lfm2-tiny.gguf", gguf(architecture: "clip"))
        let runner = try ModelRunner.load(path: model)
        #expect(runner.companions == CompanionFiles(mmproj: dir + "/mmproj-lfm2-tiny.gguf"))
        var o = GenerationOptions()
        o.temperature = 0
        o.maxTokens = 3
        let conv = runner.createConversation()
        let g = try conv.generate(ChatMessage(role: .user, text: "Hi"), options: o)
        var reason: GenerationFinishReason?
        while let e = try g.next() { if case .complete(_, let r, _) = e { reason = r } }
        #expect(reason == .maxTokens || reason == .stop)
        let image = ChatMessage(role: .user, content: [.text("What is this?"), .image(jpeg: [0xFF, 0xD8, 0xFF, 0xE0, 0, 0])])
        // An auto-detected projector that can't be used leaves a text model, and says why it was not used.
        #expect(throws: LeapError(.unsupported, "history[2].content[1]: an image part needs a vision encoder; the projector '\(dir)/mmproj-lfm2-tiny.gguf' (mmproj) next to the model could not be used: '\(dir)/mmproj-lfm2-tiny.gguf' has no clip.projector_type (not a projector llama.cpp's converter wrote)")) {
            _ = try conv.generate(image, options: o).next()
        }
        #expect(!conv.isGenerating)
    }
}
