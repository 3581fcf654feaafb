// A streaming polyphase FIR stage: output k is the band-limited input evaluated at time k * M / L input
// samples (zero phase: no delay to compensate, the first output is aligned with the first input).
//
// Two kernels: with an exact phase table of modest size, outputs are computed 8 at a time from
// per-group coefficient matrices (`BlockTable`, one vector FMA per input sample); otherwise (interpolated
// phases) one dot product per output.
import CLeapMediaKernels

/// Coefficients of groups of `group` consecutive outputs over the union of their windows.
final class BlockTable: @unchecked Sendable {
    let coefficients: UnsafeMutablePointer<Float>  // [patterns, window, group]
    let advance: [UInt32]                            // input advance after a group, per pattern
    let group = Int(LK_POLYBLOCK_GROUP)              // outputs per group
    let patterns: Int
    let window: Int                                  // multiple of 4

    /// Largest table built (floats); beyond it the dot-product kernel is used.
    static let maxSize = 1 << 20

    init?(table: PolyphaseTable, numerator m: Int, denominator l: Int) {
        let group = self.group
        // The phase pattern of a group repeats every lcm(L, group) outputs.
        var gcd = group, a = l
        while a != 0 { (gcd, a) = (a, gcd % a) }
        let patterns = l / gcd
        // q(k) = floor(k M / L): window start of output k relative to output 0's.
        func q(_ k: Int) -> Int { k * m / l }
        var span = 0
        for p in 0..<patterns { span = max(span, q(group * p + group - 1) - q(group * p)) }
        let used = 2 * table.halfLength  // the table's rows are zero padded beyond this
        let window = (used + span + 3) / 4 * 4
        guard patterns * window * group <= BlockTable.maxSize,
              m.multipliedReportingOverflow(by: group * patterns + group).overflow == false else {
            return nil
        }
        let c = allocateAlignedFloats(patterns * window * group)
        c.initialize(repeating: 0, count: patterns * window * group)
        var advance: [UInt32] = []
        for p in 0..<patterns {
            let k0 = group * p
            for j in 0..<group {
                let offset = q(k0 + j) - q(k0)
                let row = (k0 + j) * m % l
                for t in 0..<used {
                    c[(p * window + offset + t) * group + j] = table.coefficients[row * table.taps + t]
                }
            }
            advance.append(UInt32(q(k0 + group) - q(k0)))
        }
        self.coefficients = c
        self.advance = advance
        self.patterns = patterns
        self.window = window
    }

    deinit { coefficients.deallocate() }
}

final class PolyphaseStage {
    let table: PolyphaseTable
    let block: BlockTable?
    var filter: lk_polyphase
    let stepNumerator: Int    // M
    let stepDenominator: Int  // L
    let buffer = SampleQueue() // pending input; the next output's window starts at sample `position`
    var position = 0
    var phase: UInt32 = 0     // dot kernel: phase of the next output; block kernel: pattern of the next group

    let design: PolyphaseDesign  // keeps the table and block storage alive (the C kernel points into them)

    init(design: PolyphaseDesign) {
        let table = design.table, m = design.numerator, l = design.denominator
        self.design = design
        self.table = table
        self.stepNumerator = m
        self.stepDenominator = l
        self.block = design.block
        self.filter = lk_polyphase(
            table: UnsafePointer(table.coefficients), taps: table.taps, L: UInt32(l), step_r: UInt32(m % l),
            step_q: m / l, interp_p: UInt32(design.interpolatedRows))
        // The window of output 0 starts halfLength - 1 samples before input 0: those are silence.
        buffer.appendZeros(table.halfLength - 1)
    }

    /// Input samples each output (or group of outputs, block kernel) reads.
    var windowLength: Int { block?.window ?? table.taps }

    /// An upper bound of the outputs `available` more input samples can produce.
    func maxOutputs(available: Int) -> Int { (available * stepDenominator / stepNumerator + 2) / 16 * 16 + 32 }

    /// Runs on what the previous stage appended to `buffer`.
    func received(into out: SampleQueue, limit: Int = Int.max) { run(into: out, limit: limit) }

    /// Produces what the buffered input allows, at most `limit` outputs (the block kernel computes whole
    /// groups; outputs past `limit` are dropped, which only happens at the end of a stream).
    private func run(into out: SampleQueue, limit: Int) {
        let capacity = min(limit, maxOutputs(available: buffer.count - position))
        if capacity <= 0 { return }
        let group = block?.group ?? 1
        let slots = (capacity + group - 1) / group * group
        let dest = out.reserve(slots)
        let x = buffer.samples, available = buffer.count
        var pos = position, ph = phase
        var produced = 0
        if let block {
            block.advance.withUnsafeBufferPointer { adv in
                produced = block.group * lk_audio_polyblock_run(
                    block.coefficients, block.window, UInt32(block.patterns), adv.baseAddress, x,
                    available, &pos, &ph, dest, slots / block.group)
            }
        } else {
            produced = withUnsafePointer(to: filter) { f in
                lk_audio_polyphase_run(f, x, available, &pos, &ph, dest, capacity)
            }
        }
        out.commit(min(produced, capacity))
        phase = ph
        // Drop input no later window needs.
        let drop = min(pos, available)
        buffer.drop(drop)
        position = pos - drop
    }

    /// Ends the stream (input followed by silence) and produces exactly `count` more outputs.
    func finish(producing count: Int, into out: SampleQueue) {
        var remaining = count
        while remaining > 0 {
            let need = windowLength + (remaining + 16) * (stepNumerator / stepDenominator + 1)
            buffer.appendZeros(need)
            let before = out.count
            run(into: out, limit: remaining)
            remaining -= out.count - before
        }
    }
}
