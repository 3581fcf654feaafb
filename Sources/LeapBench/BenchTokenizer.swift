import Glibc
import LeapCore
import LeapGGUF
import LeapTokenizer

/// Tokenization throughput on ~1 MB of multilingual text, and llama.cpp's on the same text when
/// llama-cpp-python is installed (scripts/bench_tokenizer_llamacpp.py, run with $LEAP_LLAMA_PYTHON, else python3).
///   leap-bench tokenizer [model-or-vocab.gguf ...]   (default: the test models in $LEAP_MODELS_DIR or ./models)
func benchTokenizer(_ args: [String]) {
    var paths = args
    if paths.isEmpty {
        let dir = getenv("LEAP_MODELS_DIR").map { String(cString: $0) } ?? "models"
        paths = ["SmolLM2-135M-Instruct.Q4_1.gguf", "gemma-3-270m-q4_k_m.gguf"].map { dir + "/" + $0 }
            .filter { access($0, R_OK) == 0 }
    }
    if paths.isEmpty { print("tokenizer: no model files given or found (set LEAP_MODELS_DIR)"); return }
    let text = benchText(bytes: 1 << 20)
    let textPath = "/tmp/leap-bench-tokenizer-\(getpid()).txt"
    if let f = fopen(textPath, "wb") {
        _ = text.withUnsafeBufferPointer { fwrite($0.baseAddress, 1, $0.count, f) }
        fclose(f)
    }
    defer { unlink(textPath) }
    let haveLlamaCpp = system("'\(llamaPython)' -c 'import llama_cpp' >/dev/null 2>&1") == 0
    for path in paths {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        let t0 = clockSeconds()
        let tok: Tokenizer
        var phases = ""
        do {
            let f = try GGUFFile(path: path)
            let t1 = clockSeconds()
            let v = try TokenizerVocabulary(gguf: f)
            let t2 = clockSeconds()
            tok = try Tokenizer(vocabulary: v)
            phases = "open \(fmt((t1 - t0) * 1e3, 1)) + metadata \(fmt((t2 - t1) * 1e3, 1)) + build \(fmt((clockSeconds() - t2) * 1e3, 1)) ms"
        } catch { print("tokenizer \(name): \(error)"); continue }
        let load = clockSeconds() - t0
        var best = Double.infinity
        var count = 0
        for _ in 0..<3 {
            let t = clockSeconds()
            count = tok.tokenize(text, addSpecial: false, parseSpecial: false).count
            best = min(best, clockSeconds() - t)
        }
        let mbps = Double(text.count) / best / 1e6
        print("leap tokenize \(name): \(fmt(mbps)) MB/s, \(fmt(Double(count) / best / 1e6, 3)) M tokens/s (\(count) tokens, \(fmt(best * 1e3, 1)) ms best of 3; load \(fmt(load * 1e3, 1)) ms = \(phases), \(tok.vocabularySize)-token vocab)")
        var detokBest = Double.infinity
        let ids = tok.tokenize(text, addSpecial: false, parseSpecial: false)
        for _ in 0..<3 {
            let t = clockSeconds()
            _ = try? tok.detokenize(ids, special: false)
            detokBest = min(detokBest, clockSeconds() - t)
        }
        print("leap detokenize \(name): \(fmt(Double(text.count) / detokBest / 1e6)) MB/s")
        if haveLlamaCpp {
            fflush(stdout)
            let idsPath = textPath + ".ids"
            _ = system("'\(llamaPython)' '\(repoScript("bench_tokenizer_llamacpp.py"))' '\(path)' '\(textPath)' 3 '\(idsPath)' 2>/dev/null | grep -v n_ctx")
            if let data = readFile(idsPath) {
                let theirs = data.withUnsafeBytes { Array($0.bindMemory(to: Int32.self)) }
                print("same ids as llama.cpp on the 1 MiB text: \(theirs == ids ? "yes" : "NO (\(theirs.count) vs \(ids.count) ids)")")
            }
            unlink(idsPath)
        }
    }
    if !haveLlamaCpp { print("(llama-cpp-python not importable by \(llamaPython): no llama.cpp figures; set LEAP_LLAMA_PYTHON)") }
}

/// Deterministic ~`bytes` of mixed text: Zipf-distributed words from English-like, Cyrillic, Greek, Arabic,
/// Devanagari, CJK and Hangul inventories, numbers, punctuation, code lines, emoji and odd whitespace.
func benchText(bytes: Int) -> [UInt8] {
    var state: UInt64 = 0x1234_5678
    func next() -> UInt64 {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return state >> 33
    }
    func pick<T>(_ a: [T]) -> T { a[Int(next() % UInt64(a.count))] }
    let latin = ["th", "e", "qu", "ick", "br", "own", "fo", "x", "ju", "mp", "s", "ov", "er", "la", "zy", "do", "g", "in", "ing", "tion", "al", "re", "con", "st", "an", "pro", "ment"]
    let cyrillic = ["при", "вет", "мир", "ска", "зал", "ный", "ого", "ть", "ся", "ко", "ро"]
    let greek = ["κα", "λη", "μέ", "ρα", "κό", "σμε", "νι", "κά"]
    let arabic = ["مر", "حبا", "بال", "عا", "لم", "كي", "ف", "حا", "لك"]
    let hindi = ["नम", "स्ते", "दु", "नि", "या", "हिं", "दी", "पा", "ठ", "क्ष"]
    let hangul = ["안", "녕", "하", "세", "요", "한", "국", "어"]
    let emoji = ["😀", "🦙", "👍🏽", "🇫🇷", "👨‍👩‍👧", "❤️", "🎉"]
    let code = ["for (int i = 0; i < n; i++) {\n\tsum += a[i];\n}\n", "def f(x):\n    return x ** 2\n", "{\"key\": [1, 2, 3]}\n"]
    // A dictionary of words; text draws from it with a Zipf-like skew so that words repeat as in prose.
    var words: [String] = []
    for i in 0..<6000 {
        let syll: [String]
        switch i % 10 {
        case 0...4: syll = latin
        case 5: syll = cyrillic
        case 6: syll = greek
        case 7: syll = arabic
        case 8: syll = hindi
        default: syll = hangul
        }
        var w = ""
        for _ in 0..<(1 + Int(next() % 4)) { w += pick(syll) }
        if i % 10 < 5 && next() % 5 == 0 { w = w.prefix(1).uppercased() + w.dropFirst() }
        words.append(w)
    }
    var out: [UInt8] = []
    out.reserveCapacity(bytes + 256)
    while out.count < bytes {
        let r = next() % 100
        var piece: String
        switch r {
        case 0..<80:
            let u = Double(next() % 1_000_000) / 1_000_000
            piece = words[min(words.count - 1, Int(Double(words.count) * u * u * u))]
        case 80..<84:
            var s = ""
            for _ in 0..<(1 + Int(next() % 4)) { s.unicodeScalars.append(Unicode.Scalar(UInt32(0x4E00 + next() % 3000)) ?? "x") }
            piece = s
        case 84..<88: piece = String(next() % 100_000)
        case 88..<93: piece = pick([",", ".", "!", "?", ":", ";", "'s", "'re", "-", "(", ")", "\""])
        case 93..<95: piece = pick(emoji)
        case 95..<97: piece = pick(code)
        default: piece = pick(["\n", "\n\n", "\t", "  ", "\r\n"])
        }
        out.append(contentsOf: piece.utf8)
        out.append(0x20)
    }
    return out
}

private func fmt(_ x: Double, _ digits: Int = 2) -> String {
    var p = 1.0
    for _ in 0..<digits { p *= 10 }
    return "\((x * p).rounded() / p)"
}
