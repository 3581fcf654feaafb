import Glibc
import LeapGGUF

/// GGUF open time (mmap + header/metadata parse) and reference dequantization throughput.
///   leap-bench gguf [model.gguf ...]   (default: the test models in $LEAP_MODELS_DIR or ./models)
func benchGGUF(_ args: [String]) {
    var paths = args
    if paths.isEmpty {
        let dir = getenv("LEAP_MODELS_DIR").map { String(cString: $0) } ?? "models"
        paths = ["SmolLM2-135M-Instruct.Q4_1.gguf", "gemma-3-270m-q4_k_m.gguf"].map { dir + "/" + $0 }
            .filter { access($0, R_OK) == 0 }
    }
    if paths.isEmpty { print("gguf: no model files given or found (set LEAP_MODELS_DIR)"); return }
    for path in paths {
        // Open: best of 5 (page cache warm after the first).
        // Wall time and this thread's CPU time (the latter is less disturbed by other processes).
        var best = Double.infinity, first = 0.0, bestCPU = Double.infinity
        var file: GGUFFile? = nil
        for i in 0..<5 {
            file = nil
            let t0 = clockSeconds(), c0 = threadCPUSeconds()
            do { file = try GGUFFile(path: path) } catch { print("gguf open \(path): \(error)"); break }
            let dt = clockSeconds() - t0
            if i == 0 { first = dt }
            best = min(best, dt)
            bestCPU = min(bestCPU, threadCPUSeconds() - c0)
        }
        guard let f = file else { continue }
        let name = path.split(separator: "/").last.map(String.init) ?? path
        let vocab = (try? f.optionalStringArray("tokenizer.ggml.tokens"))??.count ?? 0
        print("gguf open \(name): \(String(format2(best * 1e3))) ms best, \(String(format2(first * 1e3))) ms first, \(String(format2(bestCPU * 1e3))) ms CPU (\(f.metadata.count) keys, \(vocab)-token vocab, \(f.tensors.count) tensors, \(f.fileSize / 1_000_000) MB)")
        // Reference dequantization throughput per type, over up to 64 MB of weights of that type.
        var byType: [GGMLType: [GGUFTensorInfo]] = [:]
        for t in f.tensors { byType[t.type, default: []].append(t) }
        for (type, tensors) in byType.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            var bytes = 0, elements = 0
            let t0 = clockSeconds()
            for t in tensors where bytes < 64 << 20 {
                let rows = min(t.rowCount, max(1, (64 << 20) / max(1, t.rowBytes)))
                var out = [Float](repeating: 0, count: rows * t.rowLength)
                out.withUnsafeMutableBufferPointer { try? f.dequantizeRows(t, 0..<rows, into: $0.baseAddress!) }
                bytes += rows * t.rowBytes
                elements += rows * t.rowLength
            }
            let dt = clockSeconds() - t0
            print("gguf dequantize \(type.name) (reference, scalar): \(String(format2(Double(elements) / dt / 1e6))) Melem/s, \(String(format2(Double(bytes) / dt / 1e9))) GB/s of weights")
        }
    }
}

private func format2(_ x: Double) -> String {
    let r = (x * 100).rounded() / 100
    return "\(r)"
}

private func threadCPUSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}
