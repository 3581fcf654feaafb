import Glibc
import LeapCore
import LeapGGUF

// Companion files of multimodal models (LEAP §2.9-2.11, §3.15): the vision / audio projector (`mmproj`),
// the audio decoder (vocoder) and the audio tokenizer that sit next to the language model GGUF.
//
// Companions are found (given or detected next to the model), validated and reported
// (`leap_model_companion_path`); ModelLoader then loads them: the projector as the vision or audio encoder
// (MediaEncoders), the audio decoder and audio tokenizer together as speech output (SpeechOutputModel). A
// detected companion that fails to load leaves a text model; an image or audio part the model cannot take
// fails with `.unsupported` naming the part and the projector (`projectorSummary`).

/// A kind of companion file (the C layer maps `leap_companion_kind` to it).
package enum CompanionKind: CaseIterable, Sendable {
    case mmproj
    case audioDecoder
    case audioTokenizer

    package var name: String {
        switch self {
        case .mmproj: return "mmproj"
        case .audioDecoder: return "audio decoder"
        case .audioTokenizer: return "audio tokenizer"
        }
    }
}

/// The companion files a runner was loaded with (given or detected, all validated).
package struct CompanionFiles: Sendable, Equatable {
    package var mmproj: String?
    package var audioDecoder: String?
    package var audioTokenizer: String?
    /// Auto-detected files left out because they failed validation, one message each (kind, path, cause):
    /// a stray or broken file next to a text model does not stop it from loading. Explicit paths still fail.
    package var skipped: [String] = []

    package init(mmproj: String? = nil, audioDecoder: String? = nil, audioTokenizer: String? = nil, skipped: [String] = []) {
        self.mmproj = mmproj
        self.audioDecoder = audioDecoder
        self.audioTokenizer = audioTokenizer
        self.skipped = skipped
    }

    package subscript(kind: CompanionKind) -> String? {
        get {
            switch kind {
            case .mmproj: return mmproj
            case .audioDecoder: return audioDecoder
            case .audioTokenizer: return audioTokenizer
            }
        }
        set {
            switch kind {
            case .mmproj: mmproj = newValue
            case .audioDecoder: audioDecoder = newValue
            case .audioTokenizer: audioTokenizer = newValue
            }
        }
    }

    /// The companions of the model at `modelPath`: the explicit paths of `options`, then (when
    /// `autoDetectCompanionFiles`) files found next to the model for the kinds left unset. Every one is
    /// checked (see `validate`): an explicit path that fails throws; a detected file that fails is left out
    /// and named in `skipped`.
    package static func resolve(modelPath: String, options: RunnerOptions) throws -> CompanionFiles {
        var files = CompanionFiles(mmproj: options.mmprojPath, audioDecoder: options.audioDecoderPath,
                                   audioTokenizer: options.audioTokenizerPath)
        for kind in CompanionKind.allCases {
            if let path = files[kind] { try validate(kind, path) }
        }
        if options.autoDetectCompanionFiles {
            let found = detect(nextTo: modelPath)
            for kind in CompanionKind.allCases where files[kind] == nil {
                guard let path = found[kind] else { continue }
                do {
                    try validate(kind, path)
                    files[kind] = path
                } catch let e as LeapError {
                    files.skipped.append("detected \(kind.name) '\(path)' left out: \(e.message)")
                }
            }
        }
        return files
    }

    /// LEAP's auto-detection in the model's directory: `mmproj*.gguf` is the projector; a `.gguf` or
    /// `.bin` file whose name contains "audio" and "decoder", or LFM2.5-Audio's `vocoder*.gguf`, is the audio
    /// decoder; LFM2.5-Audio's `tokenizer*.gguf` is the audio tokenizer (names compared without case).
    ///
    /// A folder may hold several models with their companions, so candidates are matched to the model by
    /// its file-name stem (`matchRank`): the first candidate, by rank then by name (byte order, so the choice
    /// does not depend on the directory order), wins. A candidate that names no part of the stem is taken
    /// only when it is the one candidate of its kind (a folder for one model whose files are named apart).
    package static func detect(nextTo modelPath: String) -> CompanionFiles {
        // The folder is found on bytes: a file name starting with a combining mark makes one Character
        // with the "/" before it, and a Character search would scan the folder above.
        let path = Array(modelPath.utf8)
        let cut = (path.lastIndex(of: UInt8(ascii: "/")) ?? -1) + 1
        let prefix = String(decoding: path[..<cut], as: UTF8.self)
        let modelName = String(decoding: path[cut...], as: UTF8.self)
        var candidates: [CompanionKind: [String]] = [:]
        for name in directoryEntries(prefix.isEmpty ? "." : prefix).sorted(by: { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) })
        where !name.utf8.elementsEqual(modelName.utf8) && isRegularFile(prefix + name) {
            let lower = String(name.lowercased())
            if lower.hasPrefix("mmproj") {
                if lower.hasSuffix(".gguf") { candidates[.mmproj, default: []].append(name) }
            } else if lower.contains("audio"), lower.contains("decoder"), lower.hasSuffix(".gguf") || lower.hasSuffix(".bin") {
                candidates[.audioDecoder, default: []].append(name)
            } else if lower.hasPrefix("vocoder"), lower.hasSuffix(".gguf") {
                candidates[.audioDecoder, default: []].append(name)   // LFM2.5-Audio's vocoder-*.gguf
            } else if lower.hasPrefix("tokenizer"), lower.hasSuffix(".gguf") {
                candidates[.audioTokenizer, default: []].append(name)  // LFM2.5-Audio's tokenizer-*.gguf
            }
        }
        var found = CompanionFiles()
        for (kind, names) in candidates {
            let ranked = names.map { (name: $0, rank: matchRank($0, model: modelName)) }
            // Stable: among equal ranks the byte order of the names stays.
            let best = ranked.enumerated().min { ($0.element.rank, $0.offset) < ($1.element.rank, $1.offset) }?.element
            if let best, best.rank < 2 || names.count == 1 { found[kind] = prefix + best.name }
        }
        return found
    }

    /// How well companion `name` matches model file `model` (lower is better): 0 when it contains the model's
    /// whole stem (`mmproj-LFM2-VL-450M-Q8_0.gguf` for `LFM2-VL-450M-Q8_0.gguf`), 1 when it contains the stem
    /// without its quantization tag (`mmproj-LFM2-VL-450M-F16.gguf`), 2 otherwise. Compared without case.
    package static func matchRank(_ name: String, model: String) -> Int {
        let candidate = String(name.lowercased())
        let stem = withoutExtension(String(model.lowercased()))
        if !stem.isEmpty && candidate.contains(stem) { return 0 }
        let base = withoutQuantizationTag(stem)
        return !base.isEmpty && candidate.contains(base) ? 1 : 2
    }

    private static func withoutExtension(_ name: String) -> String {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return name }
        return String(name[..<dot])
    }

    /// The stem without its trailing quantization tag: `lfm2-vl-450m-q8_0` -> `lfm2-vl-450m`, likewise
    /// `.q4_k_m`, `-f16`, `_bf16`, `-iq4_xs`. The tag is the last separated part that reads q<digit>...,
    /// iq<digit>..., f16, f32, bf16 or fp16, followed only by parts of one or two characters (`_k_m`, `_0`).
    package static func withoutQuantizationTag(_ stem: String) -> String {
        let bytes = Array(stem.utf8)
        func isSeparator(_ c: UInt8) -> Bool { c == UInt8(ascii: "-") || c == UInt8(ascii: "_") || c == UInt8(ascii: ".") }
        var end = bytes.count
        var start = end
        while start > 0 {
            start = (bytes[..<end].lastIndex(where: isSeparator) ?? -1) + 1
            let part = bytes[start..<end]
            if start > 0 && isQuantizationHead(Array(part)) { return String(decoding: bytes[..<(start - 1)], as: UTF8.self) }
            guard part.count <= 2, start > 0 else { break }
            end = start - 1
        }
        return stem
    }

    /// q<digit>..., iq<digit>..., f16, f32, bf16, fp16.
    private static func isQuantizationHead(_ t: [UInt8]) -> Bool {
        func digit(_ i: Int) -> Bool { i < t.count && t[i] >= UInt8(ascii: "0") && t[i] <= UInt8(ascii: "9") }
        let s = String(decoding: t, as: UTF8.self)
        if ["f16", "f32", "bf16", "fp16"].contains(s) { return true }
        if s.hasPrefix("iq") { return digit(2) }
        return s.hasPrefix("q") && digit(1)
    }

    /// A companion must be a readable GGUF file; a projector must say so (`general.architecture` "clip",
    /// as llama.cpp writes them), which catches a language model given by mistake. Audio decoders and
    /// tokenizers not named `.gguf` (LEAP also takes `.bin` decoders, whose format is the decoder's own)
    /// only need to be readable regular files.
    package static func validate(_ kind: CompanionKind, _ path: String) throws {
        if kind != .mmproj && !path.lowercased().hasSuffix(".gguf") {
            let fd = open(path, O_RDONLY)
            guard fd >= 0 else { throw LeapError(.io, "\(kind.name): cannot open '\(path)': \(String(cString: strerror(errno)))") }
            defer { close(fd) }
            var st = stat()
            guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, st.st_size > 0 else {
                throw LeapError(.modelLoading, "\(kind.name): '\(path)' is not a non-empty regular file")
            }
            return
        }
        let file: GGUFFile
        do {
            file = try GGUFFile(path: path)
        } catch let e as LeapError {
            throw LeapError(e.kind == .io ? .io : .modelLoading, "\(kind.name): \(e.message)")
        }
        guard kind == .mmproj else { return }
        let arch = try? file.optionalString("general.architecture")
        guard arch == "clip" else {
            let found = arch.map { "\"\($0)\"" } ?? "missing"
            throw LeapError(.modelLoading, "mmproj: '\(path)' is not a multimodal projector (general.architecture is \(found), expected \"clip\")")
        }
    }

    static func directoryEntries(_ dir: String) -> [String] {
        guard let d = opendir(dir) else { return [] }
        defer { closedir(d) }
        var names: [String] = []
        while let e = readdir(d) {
            let name = withUnsafePointer(to: &e.pointee.d_name) {
                String(cString: UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self))
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    static func isRegularFile(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG
    }
}
