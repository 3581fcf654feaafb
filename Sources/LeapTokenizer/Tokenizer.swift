import LeapCore

// Text ↔ token ids for a GGUF vocabulary, token-exact with llama.cpp (src/llama-vocab.cpp).
//
//   tokenize:   special-token partition → per text fragment: byte-level BPE (pre-tokenizer + merges) or
//               SentencePiece-style merges → ids, with BOS/EOS per the metadata
//   detokenize: token pieces (control tokens hidden unless `special`) → bytes, with clean_up_spaces where
//               the vocabulary asks for it
//
// A Tokenizer is immutable after init and safe to share between threads.

package final class Tokenizer: Sendable {
    package enum Kind: Sendable { case bytePairEncoding, sentencePiece }

    package let kind: Kind
    /// Token texts as stored in the vocabulary (`[EMPTY_<id>]` for empty ones, as llama.cpp names them).
    package let texts: [[UInt8]]
    package let attributes: [TokenAttributes]
    package let scores: [Float]
    package let preTokenizerName: String?

    package let bosID: Int32?
    package let eosID: Int32?
    package let eotID: Int32?
    package let eomID: Int32?
    package let unknownID: Int32?
    package let paddingID: Int32?
    package let separatorID: Int32?
    package let addBOS: Bool
    package let addEOS: Bool
    package let addSpacePrefix: Bool
    /// Whole-sequence detokenization removes spaces before punctuation (clean_up_tokenization_spaces).
    package let cleanSpaces: Bool
    /// Every id that ends generation, ascending.
    package let endOfGenerationIDs: [Int32]

    private let eogSet: Set<Int32>
    private let preTokenizer: PreTokenizer
    private let bpe: BPEModel
    private let spm: SPMModel
    private let vocabTable: BytesTable  // SPM: every token text → id
    private let specials: SpecialTokenMatcher
    /// [n] piece of each token when specials are rendered.
    private let pieces: [[UInt8]]

    package var vocabularySize: Int { texts.count }

    package init(vocabulary v: TokenizerVocabulary) throws {
        let n = v.tokens.count
        guard n > 0 else { throw LeapError.format("tokenizer.ggml.tokens is empty") }
        guard n < Int(Int32.max) else { throw LeapError.format("tokenizer.ggml.tokens has \(n) entries; at most \(Int32.max - 1) are supported") }
        if let t = v.tokenTypes, t.count < n {
            throw LeapError.format("tokenizer.ggml.token_type has \(t.count) entries, expected \(n) (one per token)")
        }
        if let s = v.scores, s.count < n {
            throw LeapError.format("tokenizer.ggml.scores has \(s.count) entries, expected \(n) (one per token)")
        }
        var texts = v.tokens
        for i in 0..<n where texts[i].isEmpty { texts[i] = Array("[EMPTY_\(i)]".utf8) }
        var attrs = (0..<n).map { i in v.tokenTypes.map { TokenAttributes(tokenType: $0[i]) } ?? .normal }
        scores = v.scores.map { Array($0.prefix(n)) } ?? [Float](repeating: 0, count: n)

        // Model type and llama.cpp's defaults for it.
        var bos: Int32?
        var eos: Int32?
        var unk: Int32?
        var addBOS = false
        var addSpacePrefix = false
        switch v.model {
        case "gpt2":
            kind = .bytePairEncoding
            guard let merges = v.merges else {
                throw LeapError.format("tokenizer.ggml.merges is missing (required for tokenizer.ggml.model = gpt2)")
            }
            let pre = try PreTokenizer.named(v.pre)
            preTokenizer = pre
            preTokenizerName = pre.name
            cleanSpaces = pre.cleanSpaces
            addBOS = pre.addBOS
            bos = pre.noBOS ? nil : 11
            eos = 11
            bpe = BPEModel(tokens: texts, merges: merges)
            spm = SPMModel()
            vocabTable = BytesTable()
        case "llama":
            kind = .sentencePiece
            preTokenizer = PreTokenizer(name: "default", rules: [])
            preTokenizerName = nil
            cleanSpaces = false
            addBOS = true
            addSpacePrefix = true
            bos = 1
            eos = 2
            unk = 0
            bpe = BPEModel()
            var table = BytesTable(capacity: n)
            for id in stride(from: n - 1, through: 0, by: -1) { table.insertIfAbsent(texts[id], Int32(id)) }
            vocabTable = table
            var spm = SPMModel()
            spm.byteToken = (0..<256).map { b -> Int32 in
                let hex = Array("0123456789ABCDEF".utf8)
                let name: [UInt8] = Array("<0x".utf8) + [hex[b >> 4], hex[b & 15], UInt8(ascii: ">")]
                return table.find(name) ?? table.find([UInt8(b)]) ?? -1
            }
            self.spm = spm
        default:
            throw LeapError.unsupported(
                "tokenizer.ggml.model = '\(v.model)' is not supported; supported: gpt2 (byte-level BPE), llama (SentencePiece-style BPE)")
        }
        if let p = v.addSpacePrefix { addSpacePrefix = p }

        // Special ids: metadata overrides the defaults; out-of-range ids are ignored as llama.cpp does.
        func special(_ fromMetadata: UInt32?, _ fallback: Int32?) -> Int32? {
            let def = fallback.flatMap { $0 >= 0 && Int($0) < n ? $0 : nil }
            guard let m = fromMetadata else { return def }
            return Int(m) < n ? Int32(m) : def
        }
        bosID = special(v.bosID, bos)
        eosID = special(v.eosID, eos)
        unknownID = special(v.unknownID, unk)
        separatorID = special(v.separatorID, nil)
        paddingID = special(v.paddingID, nil)
        var eot = special(v.eotID, nil)
        var eom = special(v.eomID, nil)
        self.addBOS = v.addBOS ?? addBOS
        self.addEOS = v.addEOS ?? false
        self.addSpacePrefix = addSpacePrefix

        // Tokens recognised by their text (llama.cpp's auto-detection); each found one becomes CONTROL.
        var idOfText = [[UInt8]: Int32]()
        for id in stride(from: n - 1, through: 0, by: -1) { idOfText[texts[id]] = Int32(id) }
        // llama.cpp takes the first match in hash order; we take the first text of the list (which picks
        // what llama.cpp picks on the vocabularies we test: <|eot_id|> over <|end_of_text|> etc.).
        func firstPresent(_ candidates: [String]) -> Int32? {
            candidates.lazy.compactMap { idOfText[Array($0.utf8)] }.first
        }
        func markControl(_ id: Int32?) {
            if let id, !attrs[Int(id)].contains(.control) { attrs[Int(id)].insert(.control) }
        }
        if eot == nil {
            eot = firstPresent(eotTexts)
            markControl(eot)
        }
        if eom == nil {
            eom = firstPresent(["<|eom_id|>"])
            markControl(eom)
        }
        var eog = Set<Int32>()
        for list in fimTexts {
            let id = firstPresent(list.texts)
            markControl(id)
            if list.endsGeneration, let id { eog.insert(id) }
        }
        for t in eogTexts {
            if let id = idOfText[Array(t.utf8)] {
                eog.insert(id)
                markControl(id)
            }
        }
        for t in ["<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"] {
            if let id = idOfText[Array(t.utf8)] { attrs[Int(id)] = .userDefined }
        }
        for id in [eosID, eot, eom] { if let id { eog.insert(id) } }
        let eogText = Set(eog.map { String(decoding: texts[Int($0)], as: UTF8.self) })
        if (eogText.contains("<|return|>") || eogText.contains("<|flush|>")) && eogText.contains("<|end|>")
            && (eogText.contains("<|call|>") || eogText.contains("<|calls|>")),
            let end = idOfText[Array("<|end|>".utf8)]
        {
            eog.remove(end)
            attrs[Int(end)] = .userDefined
        }
        if eogText.contains("<|tool_response>") || eogText.contains("<|plamo:eos|>"),
            let s = idOfText[Array("</s>".utf8)], eog.contains(s)
        {
            eog.remove(s)
            attrs[Int(s)] = .normal
        }
        eotID = eot
        eomID = eom
        eogSet = eog
        endOfGenerationIDs = eog.sorted()

        // Special-token candidates, then their pieces (before the strip attributes, as llama.cpp).
        let specialIDs = (0..<n).filter { !attrs[$0].isDisjoint(with: [.control, .userDefined, .unknown]) }.map { Int32($0) }
        let kind = self.kind
        pieces = (0..<n).map { Tokenizer.piece(texts[$0], attrs[$0], kind) }

        // Phi-3 strips the whitespace after its special tokens (llama.cpp keys this on general.name).
        let name = (v.modelName ?? "").lowercased()
        if name.contains("phi-3") || name.contains("phi3") {
            for id in specialIDs { attrs[Int(id)].insert(.rstrip) }
            if let s = idOfText[Array("</s>".utf8)] { attrs[Int(s)].insert(.rstrip) }
            for t in ["<unk>", "<s>", "<|endoftext|>"] {
                if let s = idOfText[Array(t.utf8)] { attrs[Int(s)].remove(.rstrip) }
            }
        }
        specials = SpecialTokenMatcher(ids: specialIDs, texts: texts, attributes: attrs)
        self.texts = texts
        self.attributes = attrs
    }

    /// The bytes a token stands for when rendered (specials included).
    private static func piece(_ text: [UInt8], _ a: TokenAttributes, _ kind: Kind) -> [UInt8] {
        if !a.isDisjoint(with: [.unknown, .control, .userDefined]) { return text }
        if a.contains(.normal) {
            switch kind {
            case .sentencePiece:
                return replaceAll(text, [0xE2, 0x96, 0x81], with: [0x20])
            case .bytePairEncoding:
                return decodeByteLevelText(text)
            }
        }
        if a.contains(.byte) {
            // "<0xNN>": the two hex digits after "<0x" (parsed like strtol: stops at a non-digit).
            var value = 0
            for c in text.dropFirst(3).prefix(2) {
                guard let d = hexValue(c) else { break }
                value = value * 16 + d
            }
            return [UInt8(value)]
        }
        return []
    }

    package func isEndOfGeneration(_ id: Int32) -> Bool { eogSet.contains(id) }

    package func isControl(_ id: Int32) -> Bool {
        id >= 0 && Int(id) < texts.count && attributes[Int(id)].contains(.control)
    }

    // MARK: tokenize

    /// Token ids of `text` (any bytes; invalid UTF-8 is handled like llama.cpp: U+FFFD per bad byte for
    /// byte-level BPE, byte tokens for SentencePiece).
    package func tokenize(_ text: [UInt8], addSpecial: Bool, parseSpecial: Bool) -> [Int32] {
        var out: [Int32] = []
        out.reserveCapacity(text.count / 3 + 2)
        text.withUnsafeBufferPointer { buf in
            let fragments = specials.partition(buf, parseSpecial: parseSpecial)
            switch kind {
            case .sentencePiece:
                tokenizeSPM(buf, fragments, addSpecial: addSpecial, &out)
            case .bytePairEncoding:
                if addSpecial && addBOS, let bos = bosID { out.append(bos) }
                var session = BPESession()
                for f in fragments {
                    switch f {
                    case .token(let id): out.append(id)
                    case .text(let r): tokenizeBPE(UnsafeBufferPointer(rebasing: buf[r]), &session, &out)
                    }
                }
                if addSpecial && addEOS, let eos = eosID { out.append(eos) }
            }
        }
        return out
    }

    package func tokenize(_ text: String, addSpecial: Bool, parseSpecial: Bool) -> [Int32] {
        tokenize(Array(text.utf8), addSpecial: addSpecial, parseSpecial: parseSpecial)
    }

    private func tokenizeSPM(
        _ buf: UnsafeBufferPointer<UInt8>, _ fragments: [Fragment], addSpecial: Bool, _ out: inout [Int32]
    ) {
        var previousWasSpecial = true  // the first fragment gets the space prefix too
        if addSpecial && addBOS, let bos = bosID { out.append(bos) }
        var scratch = SPMScratch()
        var escaped: [UInt8] = []
        for f in fragments {
            switch f {
            case .token(let id):
                out.append(id)
                previousWasSpecial = true
            case .text(let r):
                escaped.removeAll(keepingCapacity: true)
                if addSpacePrefix && previousWasSpecial { escaped.append(contentsOf: [0xE2, 0x96, 0x81]) }
                for b in buf[r] {
                    if b == 0x20 { escaped.append(contentsOf: [0xE2, 0x96, 0x81]) } else { escaped.append(b) }
                }
                escaped.withUnsafeBufferPointer { e in
                    spm.encode(e, vocab: vocabTable, scores: scores, &scratch, &out)
                }
                previousWasSpecial = false
            }
        }
        if addSpecial && addEOS, let eos = eosID { out.append(eos) }
    }

    /// Per-call state of byte-level BPE: scratch buffers and a cache of words already encoded.
    private struct BPESession {
        var codepoints = CodepointText()
        var offsets: [Int] = []
        var nextOffsets: [Int] = []
        var normalized: [UInt8] = []
        var scratch = BPEScratch()
        var cache = BytesTable(capacity: 1024)
        var cacheRanges: [(start: Int32, count: Int32)] = []
        var cacheIDs: [Int32] = []
    }

    private func tokenizeBPE(_ raw: UnsafeBufferPointer<UInt8>, _ s: inout BPESession, _ out: inout [Int32]) {
        let exact = s.codepoints.reset(raw)
        if !exact {
            // Pieces are cut from the text as llama.cpp re-encodes it (U+FFFD for invalid bytes).
            s.normalized.removeAll(keepingCapacity: true)
            for cp in s.codepoints.cps { appendUTF8(cp, to: &s.normalized) }
        }
        // Pre-tokenize: lengths of pieces in codepoints.
        s.offsets.removeAll(keepingCapacity: true)
        s.offsets.append(s.codepoints.cps.count)
        s.codepoints.cps.withUnsafeBufferPointer { cps in
            s.codepoints.flags.withUnsafeBufferPointer { flags in
                for rule in preTokenizer.rules {
                    s.nextOffsets.removeAll(keepingCapacity: true)
                    var start = 0
                    for len in s.offsets {
                        applySplitRule(rule, cps, flags, start, start + len, &s.nextOffsets)
                        start += len
                    }
                    swap(&s.offsets, &s.nextOffsets)
                }
            }
        }
        // Encode each piece.
        let cps = s.codepoints.cps
        var byteStart = 0
        var cpStart = 0
        let encodeAll = { (bytes: UnsafeBufferPointer<UInt8>, s: inout BPESession, out: inout [Int32]) in
            for len in s.offsets {
                var byteLen = 0
                if exact {
                    // Valid UTF-8: a codepoint's length follows from its lead byte.
                    var k = 0
                    while k < len {
                        byteLen += utf8LengthFromLead(bytes[byteStart + byteLen])
                        k += 1
                    }
                } else {
                    for k in cpStart..<(cpStart + len) {
                        let cp = cps[k]
                        byteLen += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : cp <= 0x10FFFF ? 4 : 3
                    }
                }
                self.encodePiece(UnsafeBufferPointer(rebasing: bytes[byteStart..<(byteStart + byteLen)]), &s, &out)
                byteStart += byteLen
                cpStart += len
            }
        }
        if exact {
            encodeAll(raw, &s, &out)
        } else {
            let normalized = s.normalized
            normalized.withUnsafeBufferPointer { encodeAll($0, &s, &out) }
        }
    }

    @inline(__always)
    private func encodePiece(_ word: UnsafeBufferPointer<UInt8>, _ s: inout BPESession, _ out: inout [Int32]) {
        if word.isEmpty { return }
        if preTokenizer.ignoreMerges, let id = bpe.rawVocab.find(word) {
            out.append(id)
            return
        }
        if word.count == 1 {
            bpe.encodeWord(word, &s.scratch, &out)
            return
        }
        if let c = s.cache.find(word) {
            let r = s.cacheRanges[Int(c)]
            out.append(contentsOf: s.cacheIDs[Int(r.start)..<Int(r.start + r.count)])
            return
        }
        let before = out.count
        bpe.encodeWord(word, &s.scratch, &out)
        s.cache.insertIfAbsent(word, Int32(s.cacheRanges.count))
        s.cacheRanges.append((Int32(s.cacheIDs.count), Int32(out.count - before)))
        s.cacheIDs.append(contentsOf: out[before...])
    }

    // MARK: detokenize

    private func checked(_ id: Int32) throws -> Int {
        guard id >= 0 && Int(id) < texts.count else {
            throw LeapError.invalidArgument("token id \(id) is out of range [0, \(texts.count))")
        }
        return Int(id)
    }

    /// The bytes of one token (llama_token_to_piece with lstrip 0): control and unknown tokens render
    /// only when `special` is true.
    package func piece(_ id: Int32, special: Bool) throws -> [UInt8] {
        let i = try checked(id)
        if !special && !attributes[i].isDisjoint(with: [.unknown, .control]) { return [] }
        return pieces[i]
    }

    /// The text of a token sequence (llama_detokenize with remove_special = false): the pieces joined,
    /// the leading space of the first piece dropped when the vocabulary adds a space prefix, and
    /// clean_up_tokenization_spaces applied where the vocabulary asks for it.
    package func detokenize(_ ids: [Int32], special: Bool) throws -> [UInt8] {
        var text: [UInt8] = []
        var removeSpace = addSpacePrefix
        for id in ids {
            var p = try piece(id, special: special)[...]
            if p.isEmpty { removeSpace = false; continue }
            if removeSpace && p.first == 0x20 { p = p.dropFirst() }
            removeSpace = false
            text.append(contentsOf: p)
        }
        if cleanSpaces { cleanUpSpaces(&text) }
        return text
    }
}

/// llama.cpp's clean_spaces passes, in place: " ?" " !" " ." " ," lose the space; " ' " becomes "'";
/// " 's" " 'm" " 're" " 've" lose the space.
func cleanUpSpaces(_ t: inout [UInt8]) {
    let q = UInt8(ascii: "'")
    let sp = UInt8(ascii: " ")
    // Pass 1: space before ? ! . ,
    var n = t.count
    var total = n > 0 ? 1 : 0
    var i = 1
    while i < n {
        let x = t[i]
        if t[i - 1] == sp && (x == UInt8(ascii: "?") || x == UInt8(ascii: "!") || x == UInt8(ascii: ".") || x == UInt8(ascii: ",")) {
            total -= 1
        }
        t[total] = x
        total += 1
        i += 1
    }
    // Pass 2: single apostrophe between spaces
    n = total
    total = n > 0 ? 1 : 0
    i = 1
    while i < n {
        let x = t[i]
        if x == q && i + 1 < n && t[i - 1] == sp && t[i + 1] == sp {
            total -= 1
            i += 1
            t[i] = 0
        }
        t[total] = x
        total += 1
        i += 1
    }
    // Pass 3: contractions
    n = total
    total = n > 0 ? 1 : 0
    i = 1
    while i < n {
        let x = t[i]
        if t[i - 1] == sp && x == q && i + 1 < n {
            let x1 = t[i + 1]
            if x1 == UInt8(ascii: "t") || x1 == UInt8(ascii: "d") {
            } else if x1 == UInt8(ascii: "s") || x1 == UInt8(ascii: "m") {
                total -= 1
            } else if i + 2 < n {
                let x2 = t[i + 2]
                if (x1 == UInt8(ascii: "r") && x2 == UInt8(ascii: "e")) || (x1 == UInt8(ascii: "v") && x2 == UInt8(ascii: "e")) {
                    total -= 1
                }
            }
        }
        t[total] = x
        total += 1
        i += 1
    }
    t.removeLast(t.count - total)
}

/// A byte-level BPE token text back to bytes; characters outside the table are rendered as llama.cpp
/// does ("[UNK_BYTE_0x<utf8 hex><token text>]").
func decodeByteLevelText(_ text: [UInt8]) -> [UInt8] {
    var out: [UInt8] = []
    text.withUnsafeBufferPointer { p in
        var i = 0
        while i < p.count {
            let (cp, n) = decodeLenientUTF8(p, i)
            if cp < 0x144, case let b = ByteLevel.codepointToByte[Int(cp)], b >= 0, (cp < 0x80) == (n == 1) {
                out.append(UInt8(b))
            } else {
                var utf8: [UInt8] = []
                appendUTF8(cp, to: &utf8)
                out.append(contentsOf: Array("[UNK_BYTE_0x".utf8))
                let hex = Array("0123456789abcdef".utf8)
                for c in utf8 { out.append(hex[Int(c >> 4)]); out.append(hex[Int(c & 15)]) }
                out.append(contentsOf: text)
                out.append(UInt8(ascii: "]"))
            }
            i += n
        }
    }
    return out
}

func replaceAll(_ s: [UInt8], _ pattern: [UInt8], with r: [UInt8]) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(s.count)
    var i = 0
    while i < s.count {
        if i + pattern.count <= s.count && s[i..<(i + pattern.count)].elementsEqual(pattern) {
            out.append(contentsOf: r)
            i += pattern.count
        } else {
            out.append(s[i])
            i += 1
        }
    }
    return out
}

@inline(__always)
func hexValue(_ c: UInt8) -> Int? {
    switch c {
    case 0x30...0x39: return Int(c - 0x30)
    case 0x41...0x46: return Int(c - 0x41 + 10)
    case 0x61...0x66: return Int(c - 0x61 + 10)
    default: return nil
    }
}

private let eotTexts = [
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>", "<EOT>",
    "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>",
]

private let eogTexts = [
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>", "<end_of_turn>",
    "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>",
    "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>", "<｜end▁of▁sentence｜>", "[e~[",
]

/// Fill-in-the-middle tokens: llama.cpp detects them by text and marks them CONTROL; pad/repo/sep end
/// generation.
private let fimTexts: [(texts: [String], endsGeneration: Bool)] = [
    (["<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>", "<|code_prefix|>", "<|prefix|>"], false),
    (["<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>", "<|code_suffix|>", "<|suffix|>"], false),
    (["<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>", "<|code_middle|>", "<|middle|>"], false),
    (["<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"], true),
    (["<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"], true),
    (["<|file_sep|>"], true),
]
