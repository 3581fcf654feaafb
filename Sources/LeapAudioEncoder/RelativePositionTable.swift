// RelativePositionTable: NeMo's RelPositionalEncoding for n frames: 2n − 1 rows for the relative positions
// n − 1, n − 2, ..., −(n − 1) (row r holds position n − 1 − r), interleaved sinusoids
//     pe[r, 2i] = sin(p · 10000^(−2i/d)),  pe[r, 2i + 1] = cos(p · 10000^(−2i/d)).
// Computed in float as PyTorch does (exp of a float product, then float angle), no scaling, no dropout.
import Glibc

enum RelativePositionTable {
    static func rowCount(frames n: Int) -> Int { 2 * n - 1 }

    static func fill(frames n: Int, modelDim d: Int, into pe: UnsafeMutablePointer<Float>) {  // [2n − 1, d]
        let scale = Float(-(log(10000.0) / Double(d)))
        let frequencies = (0..<(d / 2)).map { i in expf(Float(2 * i) * scale) }
        for r in 0..<rowCount(frames: n) {
            let p = Float(n - 1 - r)
            let row = pe + r * d
            for i in 0..<(d / 2) {
                let angle = p * frequencies[i]
                row[2 * i] = sinf(angle)
                row[2 * i + 1] = cosf(angle)
            }
        }
    }
}
