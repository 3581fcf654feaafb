import Testing
import LeapCore
import LeapGGUF
import LeapModels
import LeapPromptCache
import LeapTestFiles

// The reader accepts only an intact snapshot of this model and build: every truncation, every flipped bit
// sampled, another model's or build's snapshot and foreign files are refused with a format error.

private func sampleSnapshot(_ name: String = "lfm2-tiny-f32", positions: Int = 12) throws -> ([UInt8], ModelIdentity, ContextStateShape) {
    let (file, model) = try loadTinyFile(name)
    let identity = ModelIdentity(file: file)
    let ctx = try model.makeContext(contextSize: 32)
    let toks = tokens(positions, seed: 11, vocab: model.config.nVocab)
    try ctx.eval(tokens: toks)
    let state = try ctx.captureState(positions: positions)
    let bytes = SnapshotFormat.encode(PromptSnapshot(units: toks.map { .token($0) }, state: state), identity: identity)
    return (bytes, identity, state.shape)
}

@Test func anIntactSnapshotRoundTrips() throws {
    let (bytes, identity, shape) = try sampleSnapshot()
    let s = try SnapshotFormat.decode(bytes, identity: identity, shape: shape)
    #expect(s.units.count == 12)
    #expect(SnapshotFormat.encode(s, identity: identity) == bytes)
}

@Test func everyTruncationIsRefused() throws {
    let (bytes, identity, shape) = try sampleSnapshot(positions: 3)
    for n in 0..<bytes.count {
        #expect(throws: LeapError.self) { try SnapshotFormat.decode(Array(bytes[0..<n]), identity: identity, shape: shape) }
    }
    #expect(throws: LeapError.self) { try SnapshotFormat.decode(bytes + [0], identity: identity, shape: shape) }
}

@Test func flippedBitsAreRefused() throws {
    let (bytes, identity, shape) = try sampleSnapshot()
    // Every bit of the header, and one bit of every 61st byte of the payload (a prime stride crosses every
    // section at varying offsets).
    var offsets = Array(0..<SnapshotFormat.headerSize)
    offsets += stride(from: SnapshotFormat.headerSize, to: bytes.count, by: 61)
    offsets.append(bytes.count - 1)
    for o in offsets {
        for bit in (o < SnapshotFormat.headerSize ? 0..<8 : (o % 8)..<(o % 8 + 1)) {
            var damaged = bytes
            damaged[o] ^= UInt8(1 << bit)
            #expect(throws: LeapError.self, "byte \(o) bit \(bit)") { try SnapshotFormat.decode(damaged, identity: identity, shape: shape) }
        }
    }
}

@Test func anotherModelsOrBuildsSnapshotIsRefused() throws {
    let (bytes, _, shape) = try sampleSnapshot("lfm2-tiny-f32")
    let (otherFile, _) = try loadTinyFile("lfm2-tiny-q8_0")   // the same shape, other weights
    let other = ModelIdentity(file: otherFile)
    do {
        _ = try SnapshotFormat.decode(bytes, identity: other, shape: shape)
        Issue.record("another model's snapshot was accepted")
    } catch let e as LeapError {
        #expect(e.kind == .format)
        #expect(e.message.contains("another model"))
    }
    let (file, _) = try loadTinyFile("lfm2-tiny-f32")
    let mine = ModelIdentity(file: file)
    let otherBuild = ModelIdentity(model: mine.model, kernelPath: mine.kernelPath, buildID: ModelIdentity.kernelBuildID + [1])
    let otherPath = ModelIdentity(model: mine.model, kernelPath: mine.kernelPath + "x", buildID: ModelIdentity.kernelBuildID)
    #expect(otherBuild.full != mine.full && otherPath.full != mine.full)
    #expect(throws: LeapError.self) { try SnapshotFormat.decode(bytes, identity: otherBuild, shape: shape) }
    #expect(throws: LeapError.self) { try SnapshotFormat.decode(bytes, identity: otherPath, shape: shape) }
    #expect(throws: LeapError.self) {
        var s = shape
        s.kvCacheType = .f32
        return try SnapshotFormat.decode(bytes, identity: mine, shape: s)
    }
}

@Test func foreignFilesAreRefused() throws {
    let (_, identity, shape) = try sampleSnapshot()
    let gguf = readBytes(modelFixturesDir + "/lfm2-tiny-f32.gguf") ?? []
    #expect(!gguf.isEmpty)
    let foreign: [[UInt8]] = [[], Array("LEAPSNAP".utf8), [UInt8](repeating: 0, count: 4096), gguf,
                              Array("LEAPSNAP".utf8) + [UInt8](repeating: 0xff, count: 200)]
    for f in foreign {
        #expect(throws: LeapError.self) { try SnapshotFormat.decode(f, identity: identity, shape: shape) }
    }
    #expect(ModelIdentity.kernelBuildID.count >= 8, "the binary has a GNU build-id")
}
