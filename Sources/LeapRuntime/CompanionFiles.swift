import Glibc
import LeapCore
import LeapGGUF

// Companion files of multimodal models (LEAP §2.9-2.11, §3.15): the vision / audio projector (`mmproj`),
// the audio decoder (vocoder) and the audio tokenizer that sit next to the language model GGUF.
//
// This engine has no vision or audio encoder and no audio decoder yet, so companions are found,
// validated and reported, but not used: the model loads and chats as a text model, and an image or audio
// part in a prompt fails with `.unsupported` naming the part and the companion (see Generation).

/// A kind of companion file (raw values are the C enum `leap_companion_kind`).
package enum CompanionKind: Int32, CaseIterable, Sendable {
    case mmproj = 0
    case audioDecoder = 1
    case audioTokenizer = 2

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

    package init(mmproj: String? = nil, audioDecoder: String? = nil, audioTokenizer: String? = nil) {
        self.mmproj = mmproj
        self.audioDecoder = audioDecoder
        self.audioTokenizer = audioTokenizer
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
    /// checked (see `validate`).
    package static func resolve(modelPath: String, options: RunnerOptions) throws -> CompanionFiles {
        var files = CompanionFiles(mmproj: options.mmprojPath, audioDecoder: options.audioDecoderPath,
                                   audioTokenizer: options.audioTokenizerPath)
        if options.autoDetectCompanionFiles {
            let found = detect(nextTo: modelPath)
            for kind in CompanionKind.allCases where files[kind] == nil { files[kind] = found[kind] }
        }
        for kind in CompanionKind.allCases {
            if let path = files[kind] { try validate(kind, path) }
        }
        return files
    }

    /// LEAP's auto-detection in the model's directory: `mmproj*.gguf` is the projector; a `.gguf` or
    /// `.bin` file whose name contains "audio" and "decoder" is the audio decoder (names compared without
    /// case). Audio tokenizers are not detected (LEAP does not either): give their path. When several files
    /// match, the first by name (byte order) wins, so the choice does not depend on the directory order.
    package static func detect(nextTo modelPath: String) -> CompanionFiles {
        let slash = modelPath.lastIndex(of: "/")
        let prefix = slash.map { String(modelPath[...$0]) } ?? ""
        let modelName = slash.map { String(modelPath[modelPath.index(after: $0)...]) } ?? modelPath
        var found = CompanionFiles()
        for name in directoryEntries(prefix.isEmpty ? "." : prefix).sorted(by: { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) })
        where name != modelName && isRegularFile(prefix + name) {
            let lower = String(name.lowercased())
            if lower.hasPrefix("mmproj") {
                if found.mmproj == nil && lower.hasSuffix(".gguf") { found.mmproj = prefix + name }
            } else if found.audioDecoder == nil, lower.contains("audio"), lower.contains("decoder"),
                      lower.hasSuffix(".gguf") || lower.hasSuffix(".bin") {
                found.audioDecoder = prefix + name
            }
        }
        return found
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
