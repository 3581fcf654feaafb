// Models whose Q4_0 / Q8_0 matrices are packed at load (the 8-row layout): the same logits as the
// row layout, loaded from a file or from memory, once or twice from the same GGUFFile.
import Glibc
import LeapCore
import LeapGGUF
import LeapKernels
import LeapModels
import Testing

private func promptLogits(_ model: LanguageModel) throws -> [Float] {
    let ctx = try model.makeContext(contextSize: 32)
    try ctx.eval(tokens: [1, 5, 9, 2, 7, 3, 11, 4])
    try ctx.eval(tokens: [6])
    return Array(try ctx.logits())
}

/// On each path that packs (AVX2 and AVX-512).
@Test(arguments: [("lfm2-tiny-q4_0-16l", KernelISA.avx2), ("lfm2-tiny-q4_0-16l", .avx512), ("lfm2-tiny-q8_0", .avx2),
                  ("lfm2-tiny-q8_0", .avx512)])
func packedModelsGiveTheRowLayoutsLogits(_ name: String, _ isa: KernelISA) throws {
    let path = modelFixturesDir + "/\(name).gguf"
    guard isa.isAvailable else { return }
    // Loaded on the scalar path nothing is packed; run on this path it is the row layout's products.
    let plain = try #require(KernelISA.scalar.withThreadSelection { try LanguageModel.load(path: path, threads: 1) })
    let rowLayout = try #require(try isa.withThreadSelection { try promptLogits(plain) })
    try isa.withThreadSelection {
        let fromFile = try LanguageModel.load(path: path, threads: 1)
        #expect(fromFile.packed.byteCount > 0, "\(name): nothing packed")
        #expect(try promptLogits(fromFile) == rowLayout, "\(name): packed logits differ (mapped file)")
        // From memory (whose bytes must stay intact for a second model of the same file).
        let fd = open(path, O_RDONLY)
        defer { close(fd) }
        var st = stat()
        fstat(fd, &st)
        var bytes = [UInt8](repeating: 0, count: Int(st.st_size))
        #expect(read(fd, &bytes, bytes.count) == bytes.count)
        let file = try GGUFFile(bytes: bytes)
        let first = try LanguageModel.load(file: file, threads: 1), second = try LanguageModel.load(file: file, threads: 1)
        #expect(try promptLogits(first) == rowLayout && promptLogits(second) == rowLayout, "\(name): from memory")
    }
}
