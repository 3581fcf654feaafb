// The key of a saved prompt prefix: its positions as token ids and media rows (a media row is named by the
// SHA-256 of its part's content and its row index, so a prompt with the same image hits too), hashed with
// the identity of the model and kernels that computed the state.
import LeapCore

/// One position of a cached prefix.
package enum PrefixUnit: Hashable, Sendable {
    case token(Int32)
    /// Row `row` of the media part whose content hashes to `digest` (32 bytes).
    case media(digest: [UInt8], row: Int)

    static let tokenTag: UInt8 = 0
    static let mediaTag: UInt8 = 1

    /// The canonical encoding (hashed for keys, stored in snapshots): token = [0][i32 LE], media = [1][32 bytes
    /// digest][u32 LE row].
    func encode(into out: inout [UInt8]) {
        switch self {
        case .token(let t):
            out.append(Self.tokenTag)
            appendLE(UInt32(bitPattern: t), into: &out)
        case .media(let digest, let row):
            out.append(Self.mediaTag)
            out.append(contentsOf: digest)
            appendLE(UInt32(truncatingIfNeeded: row), into: &out)
        }
    }
}

/// SHA-256 of an identity followed by the units of a prefix, extended unit by unit.
struct PrefixHasher {
    private var sha = SHA256()

    init(identity: [UInt8]) { sha.update(identity) }

    mutating func append(_ unit: PrefixUnit) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(40)
        unit.encode(into: &bytes)
        sha.update(bytes)
    }

    /// The key of the units appended so far, as 64 hex digits (the hasher stays usable).
    var key: String {
        var copy = sha
        return SHA256.hex(copy.finalize())
    }

    /// The keys of `units[0..<n]` for every n in `lengths`.
    static func keys(identity: [UInt8], units: [PrefixUnit], lengths: Set<Int>) -> [Int: String] {
        var out: [Int: String] = [:]
        var h = PrefixHasher(identity: identity)
        if lengths.contains(0) { out[0] = h.key }
        for (i, u) in units.enumerated() {
            h.append(u)
            if lengths.contains(i + 1) { out[i + 1] = h.key }
            if out.count == lengths.count { break }
        }
        return out
    }
}

func appendLE(_ v: UInt32, into out: inout [UInt8]) {
    for s in stride(from: 0, to: 32, by: 8) { out.append(UInt8(truncatingIfNeeded: v >> UInt32(s))) }
}

func appendLE(_ v: UInt64, into out: inout [UInt8]) {
    for s in stride(from: 0, to: 64, by: 8) { out.append(UInt8(truncatingIfNeeded: v >> UInt64(s))) }
}
