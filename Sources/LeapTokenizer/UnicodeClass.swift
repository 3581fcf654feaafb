// Codepoint classes for the pre-tokenizers, with llama.cpp's definitions (src/unicode.cpp):
//   \p{L}, \p{N}, \p{P}, \p{M}, \p{S}  = Unicode general category L*, N*, P*, M*, S*
//   \s                                 = the Unicode White_Space property (not Python's str.isspace)
// llama.cpp's tables are Unicode 15.1; characters assigned later count as unassigned there, so we filter
// Swift's (newer) properties by age to classify every codepoint the same way.

/// Bit flags of one codepoint.
enum CodepointClass {
    static let letter: UInt8 = 1
    static let number: UInt8 = 2
    static let whitespace: UInt8 = 4
    static let punctuation: UInt8 = 8
    static let mark: UInt8 = 16
    static let symbol: UInt8 = 32
}

/// Flags computed from Swift's Unicode properties (slow: ~90 ns); use `codepointFlags` instead.
private func computeFlags(_ cp: UInt32) -> UInt8 {
    guard let scalar = Unicode.Scalar(cp) else { return 0 }  // surrogates: category Cs, no flags
    let p = scalar.properties
    if let age = p.age, (age.major, age.minor) > (15, 1) { return 0 }
    var f: UInt8
    switch p.generalCategory {
    case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter:
        f = CodepointClass.letter
    case .decimalNumber, .letterNumber, .otherNumber:
        f = CodepointClass.number
    case .nonspacingMark, .spacingMark, .enclosingMark:
        f = CodepointClass.mark
    case .connectorPunctuation, .dashPunctuation, .openPunctuation, .closePunctuation,
        .initialPunctuation, .finalPunctuation, .otherPunctuation:
        f = CodepointClass.punctuation
    case .mathSymbol, .currencySymbol, .modifierSymbol, .otherSymbol:
        f = CodepointClass.symbol
    default:
        f = 0
    }
    if p.isWhitespace { f |= CodepointClass.whitespace }
    return f
}

/// Planes 0 and 1 (BMP + emoji etc.) precomputed once, at first use (part of the tokenizer's load time in
/// `leap-bench tokenizer`); rarer planes are computed on demand.
private let tableCount = 0x20000
nonisolated(unsafe) private let flagsTable: UnsafeMutablePointer<UInt8> = {
    let t = UnsafeMutablePointer<UInt8>.allocate(capacity: tableCount)
    for cp in 0..<tableCount { t[cp] = computeFlags(UInt32(cp)) }
    return t
}()

@inline(__always)
func codepointFlags(_ cp: UInt32) -> UInt8 {
    if cp < UInt32(tableCount) { return flagsTable[Int(cp)] }
    return computeFlags(cp)
}

/// llama.cpp decodes UTF-8 leniently (unicode_cpts_from_utf8): the lead byte alone decides the length,
/// continuation bytes must be 10xxxxxx, overlong forms and surrogates are accepted as-is, and every byte
/// that cannot start a sequence becomes U+FFFD. Returns the codepoint and the bytes consumed.
@inline(__always)
func decodeLenientUTF8(_ p: UnsafeBufferPointer<UInt8>, _ i: Int) -> (cp: UInt32, length: Int) {
    let n = p.count
    let b0 = UInt32(p[i])
    if b0 < 0x80 { return (b0, 1) }
    if b0 & 0x40 == 0 { return (0xFFFD, 1) }
    @inline(__always) func cont(_ k: Int) -> UInt32? {
        let b = p[i + k]
        return b & 0xC0 == 0x80 ? UInt32(b & 0x3F) : nil
    }
    if b0 & 0x20 == 0 {
        guard i + 1 < n, let c1 = cont(1) else { return (0xFFFD, 1) }
        return (((b0 & 0x1F) << 6) | c1, 2)
    }
    if b0 & 0x10 == 0 {
        guard i + 2 < n, let c1 = cont(1), let c2 = cont(2) else { return (0xFFFD, 1) }
        return (((b0 & 0x0F) << 12) | (c1 << 6) | c2, 3)
    }
    if b0 & 0x08 == 0 {
        guard i + 3 < n, let c1 = cont(1), let c2 = cont(2), let c3 = cont(3) else { return (0xFFFD, 1) }
        return (((b0 & 0x07) << 18) | (c1 << 12) | (c2 << 6) | c3, 4)
    }
    return (0xFFFD, 1)
}

/// Appends the UTF-8 encoding of `cp` (codepoints above U+10FFFF, which llama.cpp rejects, become U+FFFD).
@inline(__always)
func appendUTF8(_ cp: UInt32, to out: inout [UInt8]) {
    switch cp {
    case 0..<0x80:
        out.append(UInt8(cp))
    case 0x80..<0x800:
        out.append(UInt8(0xC0 | (cp >> 6)))
        out.append(UInt8(0x80 | (cp & 0x3F)))
    case 0x800..<0x10000:
        out.append(UInt8(0xE0 | (cp >> 12)))
        out.append(UInt8(0x80 | ((cp >> 6) & 0x3F)))
        out.append(UInt8(0x80 | (cp & 0x3F)))
    case 0x10000...0x10FFFF:
        out.append(UInt8(0xF0 | (cp >> 18)))
        out.append(UInt8(0x80 | ((cp >> 12) & 0x3F)))
        out.append(UInt8(0x80 | ((cp >> 6) & 0x3F)))
        out.append(UInt8(0x80 | (cp & 0x3F)))
    default:
        out.append(contentsOf: [0xEF, 0xBF, 0xBD])
    }
}

/// The byte length of the UTF-8 sequence that `lead` starts, from its high nibble (llama.cpp's
/// unicode_len_utf8: continuation bytes count as 1).
@inline(__always)
func utf8LengthFromLead(_ lead: UInt8) -> Int {
    switch lead >> 4 {
    case 0xC, 0xD: return 2
    case 0xE: return 3
    case 0xF: return 4
    default: return 1
    }
}

/// Lowercase for the contraction rules: they only compare against ASCII letters, and the only
/// codepoints whose lowercase is an ASCII letter are the ASCII capitals (U+212A KELVIN SIGN → k is not
/// one of s/t/r/e/v/m/l/d).
@inline(__always)
func asciiLower(_ cp: UInt32) -> UInt32 {
    (cp >= 0x41 && cp <= 0x5A) ? cp + 0x20 : cp
}
