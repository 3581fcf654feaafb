import CLeap
import Glibc
import LeapCore
import LeapTokenizer

// leap_tokenizer_*: a handle around an immutable `Tokenizer` (usable from several threads at once).

final class TokenizerBox: HandleBox {
    let tokenizer: Tokenizer
    init(_ tokenizer: Tokenizer) {
        self.tokenizer = tokenizer
        super.init(kind: .tokenizer)
    }
}

private func borrowTokenizer(_ p: OpaquePointer?) throws -> Tokenizer {
    try Handle.borrow(p, TokenizerBox.self, kind: .tokenizer, "tokenizer").tokenizer
}

/// A malloc'ed NUL-terminated copy of `bytes` (which may contain NULs), released by `leap_string_free`.
private func ownedBytes(_ bytes: [UInt8]) throws -> UnsafeMutablePointer<CChar> {
    guard let raw = malloc(bytes.count + 1) else {
        throw LeapError(.outOfMemory, "out of memory allocating \(bytes.count + 1) bytes")
    }
    let p = raw.bindMemory(to: CChar.self, capacity: bytes.count + 1)
    bytes.withUnsafeBytes { src in
        if let base = src.baseAddress { memcpy(p, base, bytes.count) }
    }
    p[bytes.count] = 0
    return p
}

@c @implementation
public func leap_tokenizer_load(_ path: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> leap_status {
    ffi {
        let out = try required(out, "out_tokenizer")
        out.pointee = nil
        let path = try utf8String(path, "path")
        out.pointee = Handle.retain(TokenizerBox(try Tokenizer(path: path)))
    }
}

@c @implementation
public func leap_tokenizer_free(_ t: OpaquePointer?) {
    Handle.release(t, kind: .tokenizer)
}

@c @implementation
public func leap_tokenizer_tokenize(
    _ t: OpaquePointer?, _ text: UnsafePointer<CChar>?, _ nBytes: Int, _ addSpecial: Int32, _ parseSpecial: Int32,
    _ outIDs: UnsafeMutablePointer<UnsafeMutablePointer<Int32>?>?, _ outCount: UnsafeMutablePointer<Int>?
) -> leap_status {
    ffi {
        let outIDs = try required(outIDs, "out_ids")
        outIDs.pointee = nil
        let outCount = try required(outCount, "out_count")
        outCount.pointee = 0
        let tok = try borrowTokenizer(t)
        // Positions are 32-bit inside the tokenizer; 256 MiB of text (whose escaped form stays below 2 GiB)
        // is far beyond any context anyway.
        let maxBytes = 1 << 28
        guard nBytes >= 0 && nBytes <= maxBytes else {
            throw LeapError.invalidArgument("text of \(UInt(bitPattern: nBytes)) bytes is too long to tokenize (at most \(maxBytes))")
        }
        var bytes: [UInt8] = []
        if nBytes > 0 {
            let p = try required(text, "text")
            bytes = Array(UnsafeRawBufferPointer(start: p, count: nBytes))
        }
        let ids = tok.tokenize(bytes, addSpecial: addSpecial != 0, parseSpecial: parseSpecial != 0)
        outIDs.pointee = try ownedBuffer(ids)
        outCount.pointee = ids.count
    }
}

@c @implementation
public func leap_tokenizer_detokenize(
    _ t: OpaquePointer?, _ ids: UnsafePointer<Int32>?, _ n: Int, _ special: Int32,
    _ outText: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ outN: UnsafeMutablePointer<Int>?
) -> leap_status {
    ffi {
        let outText = try required(outText, "out_text")
        outText.pointee = nil
        outN?.pointee = 0
        let tok = try borrowTokenizer(t)
        let text = try tok.detokenize(try array(ids, n, "ids"), special: special != 0)
        outText.pointee = try ownedBytes(text)
        outN?.pointee = text.count
    }
}

@c @implementation
public func leap_tokenizer_token_to_piece(
    _ t: OpaquePointer?, _ id: Int32, _ special: Int32,
    _ outPiece: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ outN: UnsafeMutablePointer<Int>?
) -> leap_status {
    ffi {
        let outPiece = try required(outPiece, "out_piece")
        outPiece.pointee = nil
        outN?.pointee = 0
        let piece = try borrowTokenizer(t).piece(id, special: special != 0)
        outPiece.pointee = try ownedBytes(piece)
        outN?.pointee = piece.count
    }
}

@c @implementation
public func leap_tokenizer_vocab_size(_ t: OpaquePointer?, _ out: UnsafeMutablePointer<Int>?) -> leap_status {
    ffi {
        let out = try required(out, "out_size")
        out.pointee = try borrowTokenizer(t).vocabularySize
    }
}

@c @implementation
public func leap_tokenizer_bos_id(_ t: OpaquePointer?, _ out: UnsafeMutablePointer<Int32>?) -> leap_status {
    ffi {
        let out = try required(out, "out_id")
        out.pointee = try borrowTokenizer(t).bosID ?? -1
    }
}

@c @implementation
public func leap_tokenizer_eos_id(_ t: OpaquePointer?, _ out: UnsafeMutablePointer<Int32>?) -> leap_status {
    ffi {
        let out = try required(out, "out_id")
        out.pointee = try borrowTokenizer(t).eosID ?? -1
    }
}

@c @implementation
public func leap_tokenizer_is_eog(_ t: OpaquePointer?, _ id: Int32, _ out: UnsafeMutablePointer<Int32>?) -> leap_status {
    ffi {
        let out = try required(out, "out_is_eog")
        out.pointee = try borrowTokenizer(t).isEndOfGeneration(id) ? 1 : 0
    }
}
