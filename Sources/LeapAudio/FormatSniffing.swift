// Recognises common non-WAV audio (and a few other) formats by their leading bytes, so that a rejection
// can say what the data is ("MP3 (ID3 tag)") instead of only what it is not.

/// The name of the format `bytes` starts with, or nil when no known signature matches.
/// RIFF/WAVE itself is not reported here (the WAV parser handles RIFF, RIFX and RF64).
func sniffNonWAVFormat(_ bytes: UnsafeRawBufferPointer) -> String? {
    func starts(_ s: String, at offset: Int = 0) -> Bool {
        let u = Array(s.utf8)
        guard bytes.count >= offset + u.count else { return false }
        for (i, c) in u.enumerated() where bytes[offset + i] != c { return false }
        return true
    }
    let n = bytes.count
    if starts("ID3") { return "MP3 (ID3 tag)" }
    if starts("fLaC") { return "FLAC" }
    if starts("OggS") {
        // The first page's packet names the codec.
        if starts("OpusHead", at: 28) { return "Ogg Opus" }
        if starts("vorbis", at: 29) { return "Ogg Vorbis" }
        if starts("FLAC", at: 29) { return "Ogg FLAC" }
        return "Ogg"
    }
    if starts("ftyp", at: 4) {
        var brand = ""
        if n >= 12 { brand = String(decoding: (8..<12).map { bytes[$0] }, as: UTF8.self) }
        return "MP4/M4A (AAC or ALAC; ftyp brand '\(printable(brand))')"
    }
    if starts("FORM"), n >= 12 {
        if starts("AIFF", at: 8) { return "AIFF" }
        if starts("AIFC", at: 8) { return "AIFF-C" }
    }
    if starts("caff") { return "Apple CAF" }
    if starts(".snd") { return "Sun/NeXT AU" }
    if starts("#!AMR") { return "AMR" }
    if starts("MThd") { return "MIDI" }
    if starts("wvpk") { return "WavPack" }
    if starts("MAC ") { return "Monkey's Audio" }
    if starts("TTA1") { return "True Audio (TTA)" }
    if starts("MPCK") || starts("MP+") { return "Musepack" }
    if starts("FWS") || starts("CWS") { return "Flash (SWF)" }
    if starts("%PDF") { return "PDF" }
    if starts("PK\u{3}\u{4}") { return "ZIP archive" }
    if starts("\u{89}PNG") { return "PNG image" }
    if starts("GIF8") { return "GIF image" }
    if n >= 3, bytes[0] == 0xFF, bytes[1] == 0xD8, bytes[2] == 0xFF { return "JPEG image" }
    if n >= 4, bytes[0] == 0x1A, bytes[1] == 0x45, bytes[2] == 0xDF, bytes[3] == 0xA3 { return "Matroska/WebM" }
    if n >= 4, bytes[0] == 0x30, bytes[1] == 0x26, bytes[2] == 0xB2, bytes[3] == 0x75 { return "ASF/WMA" }
    if n >= 2, bytes[0] == 0xFF, bytes[1] & 0xF6 == 0xF0 { return "AAC (ADTS)" }
    if n >= 2, bytes[0] == 0xFF, bytes[1] & 0xE0 == 0xE0, bytes[1] & 0x06 != 0 {
        // MPEG audio frame sync; the layer bits tell MP3 from MP2/MP1.
        switch (bytes[1] >> 1) & 0x3 {
        case 1: return "MP3 (MPEG audio frame sync)"
        case 2: return "MP2 (MPEG audio frame sync)"
        default: return "MP1 (MPEG audio frame sync)"
        }
    }
    if starts("RIFF"), n >= 12, !starts("WAVE", at: 8) {
        let form = String(decoding: (8..<12).map { bytes[$0] }, as: UTF8.self)
        switch form {
        case "AVI ": return "AVI (RIFF form 'AVI ')"
        case "WEBP": return "WebP image (RIFF form 'WEBP')"
        case "RMID": return "RIFF MIDI (RIFF form 'RMID')"
        default: return "RIFF form '\(printable(form))' (not 'WAVE')"
        }
    }
    return nil
}

/// The bytes of a four-character code as text, with non-printable bytes as \xNN.
func printable(_ s: String) -> String {
    var out = ""
    for b in s.utf8 { out += (32...126).contains(b) ? String(UnicodeScalar(b)) : "\\x" + hex2(b) }
    return out
}

func printableFourCC(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> String {
    var out = ""
    for i in offset..<min(offset + 4, bytes.count) {
        let b = bytes[i]
        out += (32...126).contains(b) ? String(UnicodeScalar(b)) : "\\x" + hex2(b)
    }
    return out
}

func hex2(_ b: UInt8) -> String {
    let digits = Array("0123456789abcdef")
    return String(digits[Int(b >> 4)]) + String(digits[Int(b & 0xF)])
}

/// Up to `count` leading bytes as hex ("52 49 46 46").
func hexPrefix(_ bytes: UnsafeRawBufferPointer, count: Int = 8) -> String {
    (0..<min(count, bytes.count)).map { hex2(bytes[$0]) }.joined(separator: " ")
}
