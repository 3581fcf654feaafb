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
    private let vocabTable: BytesTable  // every token text → id
    private let specials: SpecialTokenMatcher
    /// SentencePiece: every character that some token has right before U+2581 (nil: do not cut fragments).
    private let spmCharsBeforeSpaceMark: Set<UInt32>?
    /// Pieces of all tokens (specials rendered), back to back: token i is pieceArena[pieceStart[i]..<pieceStart[i + 1]].
    private let pieceArena: [UInt8]
    private let pieceStart: [Int]  // [n + 1]

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

        // Text → id over the whole vocabulary (later duplicates win, like llama.cpp's token_to_id).
        var textTable = BytesTable(capacity: n)
        for id in stride(from: n - 1, through: 0, by: -1) { textTable.insertIfAbsent(texts[id], Int32(id)) }
        vocabTable = textTable

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
            bpe = BPEModel(tokenCount: n, vocab: textTable, merges: merges)
            spm = SPMModel()
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
            let table = textTable
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
        // llama.cpp takes the first match in hash order; we take the first text of the list (which picks
        // what llama.cpp picks on the vocabularies we test: <|eot_id|> over <|end_of_text|> etc.).
        func firstPresent(_ candidates: [String]) -> Int32? {
            candidates.lazy.compactMap { textTable.find(Array($0.utf8)) }.first
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
            if let id = textTable.find(Array(t.utf8)) {
                eog.insert(id)
                markControl(id)
            }
        }
        for t in ["<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"] {
            if let id = textTable.find(Array(t.utf8)) { attrs[Int(id)] = .userDefined }
        }
        for id in [eosID, eot, eom] { if let id { eog.insert(id) } }
        let eogText = Set(eog.map { String(decoding: texts[Int($0)], as: UTF8.self) })
        if (eogText.contains("<|return|>") || eogText.contains("<|flush|>")) && eogText.contains("<|end|>")
            && (eogText.contains("<|call|>") || eogText.contains("<|calls|>")),
            let end = textTable.find(Array("<|end|>".utf8))
        {
            eog.remove(end)
            attrs[Int(end)] = .userDefined
        }
        if eogText.contains("<|tool_response>") || eogText.contains("<|plamo:eos|>"),
            let s = textTable.find(Array("</s>".utf8)), eog.contains(s)
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
        var arena: [UInt8] = []
        var starts = [0]
        starts.reserveCapacity(n + 1)
        for i in 0..<n {
            Tokenizer.appendPiece(texts[i], attrs[i], kind, to: &arena)
            starts.append(arena.count)
        }
        pieceArena = arena
        pieceStart = starts

        // Phi-3 strips the whitespace after its special tokens (llama.cpp keys this on general.name).
        let name = (v.modelName ?? "").lowercased()
        if name.contains("phi-3") || name.contains("phi3") {
            for id in specialIDs { attrs[Int(id)].insert(.rstrip) }
            if let s = textTable.find(Array("</s>".utf8)) { attrs[Int(s)].insert(.rstrip) }
            for t in ["<unk>", "<s>", "<|endoftext|>"] {
                if let s = textTable.find(Array(t.utf8)) { attrs[Int(s)].remove(.rstrip) }
            }
        }
        specials = SpecialTokenMatcher(ids: specialIDs, texts: texts, attributes: attrs)
        spmCharsBeforeSpaceMark = kind == .sentencePiece ? charactersBeforeSpaceMark(texts) : nil
        self.texts = texts
        self.attributes = attrs
    }

    /// Appends the bytes a token stands for when rendered (specials included).
    private static func appendPiece(_ text: [UInt8], _ a: TokenAttributes, _ kind: Kind, to out: inout [UInt8]) {
        if !a.isDisjoint(with: [.unknown, .control, .userDefined]) {
            out.append(contentsOf: text)
        } else if a.contains(.normal) {
            switch kind {
            case .sentencePiece:
                // U+2581 (E2 96 81) → space.
                var i = 0
                while i < text.count {
                    if text[i] == 0xE2 && i + 2 < text.count && text[i + 1] == 0x96 && text[i + 2] == 0x81 {
                        out.append(0x20)
                        i += 3
                    } else {
                        out.append(text[i])
                        i += 1
                    }
                }
            case .bytePairEncoding:
                decodeByteLevelText(text, into: &out)
            }
        } else if a.contains(.byte) {
            // "<0xNN>": the two hex digits after "<0x" (parsed like strtol: stops at a non-digit).
            var value = 0
            for c in text.dropFirst(3).prefix(2) {
                guard let d = hexValue(c) else { break }
                value = value * 16 + d
            }
            out.append(UInt8(value))
        }
    }

    package func isEndOfGeneration(_ id: Int32) -> Bool { eogSet.contains(id) }

    package func isControl(_ id: Int32) -> Bool {
        id >= 0 && Int(id) < texts.count && attributes[Int(id)].contains(.control)
    }

    // MARK: tokenize

    /// Token ids of `text` (any bytes; invalid UTF-8 is handled like llama.cpp: U+FFFD per bad byte for
    /// byte-level BPE, byte tokens for SentencePiece). Positions are 32-bit inside: callers keep texts
    /// below 256 MiB (the C API checks).
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
        var session = SPMSession()
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
                escaped.withUnsafeBufferPointer { e in encodeSPMFragment(e, &session, &out) }
                previousWasSpecial = false
            }
        }
        if addSpecial && addEOS, let eos = eosID { out.append(eos) }
    }

    /// Per-call state of SentencePiece: scratch buffers and a cache of chunks already encoded.
    private struct SPMSession {
        var scratch = SPMScratch()
        var cache = WordCache()
    }

    /// Encodes one escaped fragment. Merges never cross a position where no vocabulary token contains the
    /// two characters around it, so the fragment is cut before each U+2581 whose preceding character never
    /// precedes U+2581 inside a token: the pieces merge independently (same result as the whole) and repeat
    /// like words, so they are cached.
    private func encodeSPMFragment(_ e: UnsafeBufferPointer<UInt8>, _ s: inout SPMSession, _ out: inout [Int32]) {
        guard let beforeMark = spmCharsBeforeSpaceMark, String(validating: e, as: UTF8.self) != nil else {
            spm.encode(e, vocab: vocabTable, scores: scores, &s.scratch, &out)
            return
        }
        var start = 0
        var i = 1
        let n = e.count
        while i + 2 < n {
            if e[i] == 0xE2 && e[i + 1] == 0x96 && e[i + 2] == 0x81 {
                var j = i - 1
                while j > start && e[j] & 0xC0 == 0x80 { j -= 1 }
                let previous = decodeLenientUTF8(e, j).cp
                if !beforeMark.contains(previous) {
                    encodeSPMChunk(UnsafeBufferPointer(rebasing: e[start..<i]), &s, &out)
                    start = i
                }
                i += 3
            } else {
                i += 1
            }
        }
        encodeSPMChunk(UnsafeBufferPointer(rebasing: e[start..<n]), &s, &out)
    }

    private func encodeSPMChunk(_ chunk: UnsafeBufferPointer<UInt8>, _ s: inout SPMSession, _ out: inout [Int32]) {
        if chunk.isEmpty { return }
        if s.cache.lookup(chunk, &out) { return }
        let before = out.count
        spm.encode(chunk, vocab: vocabTable, scores: scores, &s.scratch, &out)
        s.cache.insert(chunk, out[before...])
    }

    /// Per-call state of byte-level BPE: scratch buffers and a cache of words already encoded.
    private struct BPESession {
        var codepoints = CodepointText()
        var offsets: [Int] = []
        var nextOffsets: [Int] = []
        var normalized: [UInt8] = []
        var spelled: [UInt8] = []
        var scratch = BPEScratch()
        var cache = WordCache()
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
        if preTokenizer.ignoreMerges {
            s.spelled.removeAll(keepingCapacity: true)
            ByteLevel.encode(word, into: &s.spelled)
            if let id = s.spelled.withUnsafeBufferPointer({ vocabTable.find($0) }) {
                out.append(id)
                return
            }
        }
        if word.count == 1 {
            bpe.encodeWord(word, &s.scratch, &out)
            return
        }
        if s.cache.lookup(word, &out) { return }
        let before = out.count
        bpe.encodeWord(word, &s.scratch, &out)
        s.cache.insert(word, out[before...])
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
        return Array(pieceArena[pieceStart[i]..<pieceStart[i + 1]])
    }

    /// The text of a token sequence (llama_detokenize with remove_special = false): the pieces joined,
    /// the leading space of the first piece dropped when the vocabulary adds a space prefix, and
    /// clean_up_tokenization_spaces applied where the vocabulary asks for it.
    package func detokenize(_ ids: [Int32], special: Bool) throws -> [UInt8] {
        var text: [UInt8] = []
        var removeSpace = addSpacePrefix
        text.reserveCapacity(ids.count * 4)
        for id in ids {
            let i = try checked(id)
            if !special && !attributes[i].isDisjoint(with: [.unknown, .control]) {
                removeSpace = false
                continue
            }
            var from = pieceStart[i]
            let to = pieceStart[i + 1]
            if from == to {
                removeSpace = false
                continue
            }
            if removeSpace && pieceArena[from] == 0x20 { from += 1 }
            removeSpace = false
            text.append(contentsOf: pieceArena[from..<to])
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
func decodeByteLevelText(_ text: [UInt8], into out: inout [UInt8]) {
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

/// Every character found right before U+2581 inside a token text, or nil when a text is not valid UTF-8
/// (then characters cannot be told apart reliably and fragments are not cut).
private func charactersBeforeSpaceMark(_ texts: [[UInt8]]) -> Set<UInt32>? {
    var set = Set<UInt32>()
    for t in texts {
        guard t.count > 3, t.dropFirst().contains(0xE2) else { continue }
        let ok = t.withUnsafeBufferPointer { p -> Bool in
            guard String(validating: p, as: UTF8.self) != nil else { return false }
            var i = 0
            var previous: UInt32? = nil
            while i < p.count {
                let (cp, n) = decodeLenientUTF8(p, i)
                if cp == 0x2581, let prev = previous { set.insert(prev) }
                previous = cp
                i += n
            }
            return true
        }
        if !ok { return nil }
    }
    return set
}

/// Token ids of words already encoded in one tokenize call.
struct WordCache {
    private var table = BytesTable(capacity: 1024)
    private var ranges: [(start: Int, count: Int)] = []
    private var ids: [Int32] = []

    func lookup(_ word: UnsafeBufferPointer<UInt8>, _ out: inout [Int32]) -> Bool {
        guard let c = table.find(word) else { return false }
        let r = ranges[Int(c)]
        out.append(contentsOf: ids[r.start..<(r.start + r.count)])
        return true
    }

    mutating func insert(_ word: UnsafeBufferPointer<UInt8>, _ tokens: ArraySlice<Int32>) {
        table.insertIfAbsent(word, Int32(ranges.count))
        ranges.append((ids.count, tokens.count))
        ids.append(contentsOf: tokens)
    }
}
