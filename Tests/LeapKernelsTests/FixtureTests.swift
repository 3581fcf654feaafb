// Dequantization and Q8_0 activation quantization against goldens from gguf-py (scripts/fixtures/make_kernel_fixtures.py).
import CLeapKernels
import LeapGGUF
import LeapKernels
import LeapTestFiles
import Testing

struct FixtureEntry {
    let name: String
    let type: GGMLType
    let count: Int
    let source: String
}

let fixtureIndex: [FixtureEntry] = {
    guard let b = readBytes(kernelFixtures + "/index.txt") else { return [] }
    return String(decoding: b, as: UTF8.self).split(separator: "\n").compactMap { line in
        let f = line.split(separator: " ")
        guard f.count >= 4, let id = UInt32(f[1]), let t = GGMLType(rawValue: id), let n = Int(f[2]) else { return nil }
        return FixtureEntry(name: String(f[0]), type: t, count: n, source: String(f[3]))
    }
}()

@Test func fixtureIndexCoversEveryWeightType() {
    let randomTypes = Set(fixtureIndex.filter { $0.source == "random" }.map(\.type))
    #expect(randomTypes == Set(weightTypes))
    // real-model rows are included for the types of the test models (when the generator found them)
    #expect(fixtureIndex.filter { $0.name.hasPrefix("real_") }.count >= 5)
}

@Test(arguments: fixtureIndex.filter { $0.name.hasPrefix("random_") || $0.name.hasPrefix("real_") }.map(\.name))
func dequantizeMatchesGGUFPy(_ name: String) throws {
    let entry = try #require(fixtureIndex.first { $0.name == name })
    let raw = try #require(readBytes("\(kernelFixtures)/\(name).bin"))
    let want = try #require(readFloats("\(kernelFixtures)/\(name).f32"))
    #expect(raw.count == entry.count / entry.type.blockSize * entry.type.blockBytes)
    #expect(want.count == entry.count)
    for isa in KernelISA.allCases where isa.isAvailable {
        let got = isa.withThreadSelection { dequantizeAll(entry.type, raw, count: entry.count) } ?? []
        let mismatches = (0..<want.count).filter { got[$0].bitPattern != want[$0].bitPattern }
        #expect(mismatches.isEmpty, "\(name) [\(isa.name)]: \(mismatches.count) values differ, first at \(mismatches.first ?? -1)")
    }
}

/// Activation quantizers against llama.cpp's own (scripts/fixtures/make_activation_goldens.py): bit-identical
/// blocks on every path, ties included, or matmul inputs would differ from llama.cpp's.
@Test(arguments: [(GGMLType.q8_0, "q8_0"), (.q8_1, "q8_1"), (.q8_K, "q8_K")])
func activationQuantizationMatchesLlamaCpp(type: GGMLType, name: String) throws {
    let x = try #require(readFloats(kernelFixtures + "/act_input.f32"))
    let want = try #require(readBytes(kernelFixtures + "/act_\(name).bin"))
    for isa in KernelISA.allCases where isa.isAvailable {
        var got = [UInt8](repeating: 0, count: want.count)
        isa.withThreadSelection {
            lk_quantize_row(Int32(type.rawValue), x, &got, Int64(x.count))
        }
        let firstDiff = (0..<want.count).first { got[$0] != want[$0] }
        #expect(firstDiff == nil, "[\(isa.name)] \(name) differs from llama.cpp at byte \(firstDiff ?? -1)")
    }
}
