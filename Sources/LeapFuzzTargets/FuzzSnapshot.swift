// Fuzz target for the prompt cache's snapshot reader: any bytes must decode to a state that passes its own
// checks and re-encodes to the same bytes, or give a LeapError; never a crash or an out-of-bounds read.
// An input whose first byte is odd has its checksums recomputed first, so that mutations reach the
// structural checks behind them (a random mutation almost never keeps a checksum valid).
import LeapCore
import LeapModels
import LeapPromptCache

/// The shape and identity every fuzz snapshot is read for: two attention layers, one conv layer, E = 4.
private let fuzzShape = ContextStateShape(kvCacheType: .f16, kvDims: [8, 4], convLayers: 1, convRows: 2, embeddingLength: 4)
private let fuzzIdentity = ModelIdentity(model: [UInt8](repeating: 7, count: 32), kernelPath: "fuzz", buildID: [1, 2, 3])

private func fuzzSeedSnapshot(tokens: [Int32], mediaRows: Int) -> [UInt8] {
    var units = tokens.map { PrefixUnit.token($0) }
    var inputs = tokens
    for r in 0..<mediaRows {
        units.append(.media(digest: [UInt8](repeating: UInt8(r), count: 32), row: r))
        inputs.append(InferenceContext.embeddingInput)
    }
    let n = units.count
    let kvBytes = (try? fuzzShape.kvBytes(positions: n)) ?? 0
    let state = ContextState(shape: fuzzShape, positions: n, inputs: inputs,
                             embeddingRows: (0..<(mediaRows * 4)).map { Float($0) * 0.25 },
                             kv: (0..<kvBytes).map { UInt8(truncatingIfNeeded: $0 &* 31) },
                             conv: (0..<fuzzShape.convFloats).map { Float($0) - 3 })
    return [0] + SnapshotFormat.encode(PromptSnapshot(units: units, state: state), identity: fuzzIdentity)
}

package let fuzzSnapshot: FuzzTarget = (
    seeds: [
        fuzzSeedSnapshot(tokens: [], mediaRows: 0),
        fuzzSeedSnapshot(tokens: [1], mediaRows: 0),
        fuzzSeedSnapshot(tokens: [5, 900, 3], mediaRows: 0),
        fuzzSeedSnapshot(tokens: [2, 4], mediaRows: 2),
        [1] + Array(fuzzSeedSnapshot(tokens: [9, 8, 7], mediaRows: 1).dropFirst()),
    ],
    run: { bytes in fuzzSnapshotOne(bytes) }
)

func fuzzSnapshotOne(_ input: [UInt8]) {
    guard let mode = input.first else { return }
    var bytes = Array(input.dropFirst())
    if mode & 1 == 1 { bytes = SnapshotFormat.resealed(bytes) }
    guard let s = try? SnapshotFormat.decode(bytes, identity: fuzzIdentity, shape: fuzzShape) else { return }
    do {
        try s.state.validate()
    } catch {
        fuzzFailure("a decoded snapshot fails its own checks: \(error)")
    }
    if s.units.count != s.state.positions { fuzzFailure("a decoded snapshot has \(s.units.count) units for \(s.state.positions) positions") }
    if SnapshotFormat.encode(s, identity: fuzzIdentity) != bytes { fuzzFailure("a decoded snapshot does not re-encode to its bytes") }
}
