// A streaming polyphase FIR stage: output k is the band-limited input evaluated at time k * M / L input
// samples (zero phase: no delay to compensate, the first output is aligned with the first input).
import CLeapKernels

struct PolyphaseStage {
    let table: PolyphaseTable
    var filter: lk_polyphase
    let stepNumerator: Int    // M
    let stepDenominator: Int  // L
    var buffer: [Float]       // pending input; the next output's window starts at buffer[position]
    var position = 0
    var phase: UInt32 = 0

    init(table: PolyphaseTable, numerator m: Int, denominator l: Int, interpolatedRows: Int) {
        self.table = table
        self.stepNumerator = m
        self.stepDenominator = l
        self.filter = lk_polyphase(
            table: UnsafePointer(table.coefficients), taps: table.taps, L: UInt32(l), step_r: UInt32(m % l),
            step_q: m / l, interp_p: UInt32(interpolatedRows))
        // The window of output 0 starts halfLength - 1 samples before input 0: those are silence.
        self.buffer = [Float](repeating: 0, count: table.halfLength - 1)
    }

    /// An upper bound of the outputs `available` more input samples can produce.
    func maxOutputs(available: Int) -> Int { available * stepDenominator / stepNumerator + 2 }

    mutating func process(_ input: UnsafeBufferPointer<Float>, into out: inout [Float], limit: Int = Int.max) {
        buffer.append(contentsOf: input)
        run(into: &out, limit: limit)
    }

    private mutating func run(into out: inout [Float], limit: Int) {
        let capacity = min(limit, maxOutputs(available: buffer.count - position))
        if capacity <= 0 { return }
        let start = out.count
        out.append(contentsOf: repeatElement(0, count: capacity))
        var pos = position, ph = phase
        let produced = buffer.withUnsafeBufferPointer { x in
            out.withUnsafeMutableBufferPointer { o in
                withUnsafePointer(to: filter) { f in
                    lk_audio_polyphase_run(f, x.baseAddress, x.count, &pos, &ph, o.baseAddress! + start, capacity)
                }
            }
        }
        out.removeLast(capacity - produced)
        position = pos
        phase = ph
        // Drop input no later window needs.
        let drop = min(position, buffer.count)
        buffer.removeFirst(drop)
        position -= drop
    }

    /// Ends the stream (input followed by silence) and produces exactly `count` more outputs.
    mutating func finish(producing count: Int, into out: inout [Float]) {
        var remaining = count
        while remaining > 0 {
            let need = table.taps + (remaining + 1) * (stepNumerator / stepDenominator + 1)
            buffer.append(contentsOf: repeatElement(0, count: need))
            let before = out.count
            run(into: &out, limit: remaining)
            remaining -= out.count - before
        }
    }
}
