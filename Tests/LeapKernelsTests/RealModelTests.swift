// Matvec on real weights against the float reference (the weights dequantized; dequantization itself is
// checked against gguf-py's goldens in FixtureTests and LeapGGUFTests).
import CLeapKernels
import Glibc
import LeapGGUF
import LeapKernels
import LeapTestFiles
import Testing

let modelsDir: String? = access(realModelsDir + "/SmolLM2-135M-Instruct.Q4_1.gguf", R_OK) == 0 ? realModelsDir : nil

let realModelFiles = ["SmolLM2-135M-Instruct.Q4_1.gguf", "gemma-3-270m-q4_k_m.gguf"]

@Test(.enabled(if: modelsDir != nil, "models not found: set LEAP_MODELS_DIR (skipping real-model kernel tests)"),
      arguments: realModelFiles)
func realTensorsMultiplyCorrectly(_ name: String) throws {
    let file = try GGUFFile(path: try #require(modelsDir) + "/" + name)
    let pool = try ThreadPool(threads: 2)
    var rng = Rng(31)
    var checkedMatvec = Set<GGMLType>()
    for info in file.tensors where info.nDims == 2 {
        let w = try WeightMatrix(file: file, tensor: info)
        let rows = min(w.rows, 64) // the first rows of every tensor
        if checkedMatvec.insert(w.type).inserted {
            // matvec over the first `rows` rows on real weights against the float reference
            var ref = [Float](repeating: .nan, count: rows * w.cols)
            try file.dequantizeRows(info, 0..<rows, into: &ref)
            let sub = try WeightMatrix(type: w.type, rows: rows, cols: w.cols, data: w.data)
            let x = randomActivations(w.cols, rng: &rng)
            var y = [Float](repeating: .nan, count: rows)
            Kernels.matvec(sub, x: x, y: &y, pool: pool)
            for r in 0..<rows {
                let wr = ref[(r * w.cols)..<((r + 1) * w.cols)]
                let exact = zip(wr, x).reduce(0.0) { $0 + Double($1.0) * Double($1.1) }
                let scale = zip(wr, x).reduce(0.0) { $0 + abs(Double($1.0) * Double($1.1)) }
                // 8-bit activations: a few per mille of Σ|w·x| at most on real weights
                #expect(abs(Double(y[r]) - exact) <= 0.01 * scale + 1e-6, "\(info.name) row \(r): \(y[r]) vs \(exact)")
            }
        }
    }
    #expect(!checkedMatvec.isEmpty)
}
