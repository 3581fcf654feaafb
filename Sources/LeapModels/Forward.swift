// The forward pass shared by every architecture, on a batch of up to `maxBatch` tokens:
//
//   h = embed(tokens) [× sqrt(E) for Gemma], or embedding rows given by the caller (encoders)
//   per layer: h += [postNorm](Mixer(RMS(h)))          Mixer = attention or LFM2 short conv (ShortConv.swift)
//              h += [postNorm](down(act(gate·f) ⊙ up·f)),  f = RMS(h)   (LFM2-MoE: routed experts, MoE.swift)
//   logits = output · RMS(h, output_norm) [+ bias]    (only for the rows asked for; a dense head's outputs)
//            [softcapped for Gemma]
//
// What only one architecture does sits in that architecture's file, called here as a hook: the short conv
// (ShortConv.swift), routed experts (MoE.swift), Gemma 3's embedding scale, GELU gate and logit softcap
// (Gemma3.swift).
//
// Numerics follow ggml's CPU path so that results track llama.cpp: activations are quantized to the
// weight's vec_dot type before every matmul exactly as llama.cpp's x86 build does (done by the kernels),
// RMSNorm, RoPE and the softmax exponentials use ggml's arithmetic bit for bit, queries and attention
// probabilities are rounded to F16 when the KV cache is F16, and Gemma's GELU uses ggml's F16 table. Any
// ulp of difference can flip a rounding in the next 8-bit quantization (BENCHMARKS.md, "Accuracy").
import CLeapKernels
import Glibc
import LeapGGUF
import LeapCore
import LeapKernels

/// One matrix product of a fused group: Y[t, r] = W[r] · X[t] for r in 0..<w.rows.
struct MatmulJob {
    var w: WeightMatrix
    var x: UnsafeRawPointer        // [T, xRowBytes] activations in w's vec_dot format
    var xRowBytes: Int
    var y: UnsafeMutablePointer<Float>
    var yStride: Int
}

/// Rows of a forward batch that belong to one sequence: batch rows firstRow..<firstRow+count at positions
/// pos0..<pos0+count of `context`'s KV cache and conv state. A prefill batch is one span; a stepped decode
/// batch has one one-row span per conversation (the matmuls are shared, attention and the conv are not).
struct SequenceSpan {
    let context: InferenceContext
    let firstRow: Int
    let count: Int
    let pos0: Int
}

/// The input of one forward pass: token ids, or embedding rows that take the place of the token embeddings.
enum ForwardInput {
    case tokens(UnsafeBufferPointer<Int32>)   // [T] validated ids
    case embeddings(UnsafePointer<Float>)     // [T, E]
}

extension InferenceContext {
    /// Runs a batch of `T` inputs of this sequence at positions pos0..<pos0+T (see the other `forward`).
    func forward(_ input: ForwardInput, count T: Int, pos0: Int, logitsFrom: Int, into out: UnsafeMutablePointer<Float>,
                 outputHead: Bool = true) {
        forward(input, count: T, spans: [SequenceSpan(context: self, firstRow: 0, count: T, pos0: pos0)],
                logitsFrom: logitsFrom, into: out, outputHead: outputHead)
    }

    /// Runs a batch of `T` inputs on this context's scratch buffers, the rows of each span in its own
    /// sequence's state; writes logits of batch rows `logitsFrom..<T` to `out` ([T - logitsFrom, V]) unless
    /// `outputHead` is false, and keeps each span's last row's final-normed hidden state in its `hiddenOut`.
    /// Every span's context shares this context's model, pool and KV cache type.
    func forward(_ input: ForwardInput, count T: Int, spans: [SequenceSpan], logitsFrom: Int,
                 into out: UnsafeMutablePointer<Float>, outputHead: Bool = true) {
        let E = cfg.nEmbd
        let W = model.weights
        switch input {
        case .tokens(let toks):
            // A tied embedding is the packed output head (ModelWeights.pack); ids were checked on input.
            for t in 0..<T { Kernels.dequantizeRow(W.tokenEmbedding, checkedRow: Int(toks[t]), into: x + t * E) }
            scaleTokenEmbeddings(rows: T)
        case .embeddings(let rows):
            x.update(from: rows, count: T * E)
        }

        for (il, layer) in W.layers.enumerated() {
            rmsNormRows(x, layer.attnNorm, xn, T, E)
            switch layer.mixer {
            case .attention(let a): attention(a, layer: il, T: T, spans: spans)
            case .shortConv(let c): shortConv(c, T: T, spans: spans)
            }
            if let pn = layer.postAttnNorm { rmsNormRows(mix, pn, mix, T, E) }
            lk_add(x, mix, x, Int64(T * E))

            rmsNormRows(x, layer.ffnNorm, xn, T, E)
            switch layer.ffn {
            case .dense(let f): feedForward(f, T: T, from: xn, into: mix)
            case .moe(let m): mixtureOfExperts(m, T: T)
            }
            if let pn = layer.postFFNNorm { rmsNormRows(mix, pn, mix, T, E) }
            lk_add(x, mix, x, Int64(T * E))
        }

        let nOut = T - logitsFrom
        guard nOut > 0 else { return }
        let hLast = x + logitsFrom * E
        rmsNormRows(hLast, W.outputNorm, xn, nOut, E)
        for span in spans {
            let last = span.firstRow + span.count - 1
            if last >= logitsFrom { span.context.hiddenOut.update(from: xn + (last - logitsFrom) * E, count: E) }
        }
        guard outputHead else { return }
        let V = cfg.outputWidth
        let xq = quantize(xn, rows: nOut, for: W.output, buffer: 0)
        jobs[0] = MatmulJob(w: W.output, x: xq.0, xRowBytes: xq.1, y: out, yStride: V)
        runMatmuls(1, T: nOut)
        addRowBias(W.outputBias, out, rows: nOut, V)
        softcapLogits(out, count: nOut * V)
    }

    // MARK: - blocks

    func rmsNormRows(_ src: UnsafeMutablePointer<Float>, _ w: [Float], _ dst: UnsafeMutablePointer<Float>, _ T: Int, _ n: Int) {
        let eps = cfg.rmsEps
        w.withUnsafeBufferPointer { wp in
            forRows(T) { rows in
                for t in rows { lk_rms_norm(src + t * n, wp.baseAddress, dst + t * n, Int64(n), eps) }
            }
        }
    }

    /// Runs `body` over 0..<T, split over the pool for a prefill batch (per-row work between the matmuls
    /// would otherwise leave the other threads idle).
    func forRows(_ T: Int, _ body: (Range<Int>) -> Void) {
        if T >= 8 { pool.parallelFor(T, chunksPerThread: 1, body) } else { body(0..<T) }
    }

    /// src → dst ([T, E] rows): down(act(gate·src) ⊙ up·src).
    func feedForward(_ l: DenseFFNWeights, T: Int, from src: UnsafeMutablePointer<Float>, into dst: UnsafeMutablePointer<Float>) {
        let F = l.gate.rows
        let xg = quantize(src, rows: T, for: l.gate, buffer: 0)
        let xu = l.up.activationType == l.gate.activationType ? xg : quantize(src, rows: T, for: l.up, buffer: 1)
        jobs[0] = MatmulJob(w: l.gate, x: xg.0, xRowBytes: xg.1, y: ffA, yStride: F)
        jobs[1] = MatmulJob(w: l.up, x: xu.0, xRowBytes: xu.1, y: ffB, yStride: F)
        runMatmuls(2, T: T)
        // act(gate) ⊙ up, rows split over the pool (on one thread a visible share of a Gemma prefill)
        let gate = ffA, up = ffB
        forRows(T) { rows in
            let offset = rows.lowerBound * F
            self.gatedActivation(gate + offset, up + offset, count: rows.count * F)
        }
        let xd = quantize(ffA, rows: T, for: l.down, buffer: 0)
        jobs[0] = MatmulJob(w: l.down, x: xd.0, xRowBytes: xd.1, y: dst, yStride: cfg.nEmbd)
        runMatmuls(1, T: T)
    }

    /// gate[i] = act(gate[i]) · up[i] for `count` floats: SiLU, or Gemma's GELU (`geluGate`).
    func gatedActivation(_ gate: UnsafeMutablePointer<Float>, _ up: UnsafeMutablePointer<Float>, count: Int) {
        if let table = geluTable { return geluGate(gate, up, count: count, table: table) }
        lk_silu(gate, gate, Int64(count))
        lk_mul(gate, up, gate, Int64(count))
    }

    /// GQA attention with optional per-head Q/K norm, RoPE, F16 KV cache and sliding window.
    func attention(_ a: AttentionWeights, layer il: Int, T: Int, spans: [SequenceSpan]) {
        let hd = cfg.headDim, H = cfg.nHead, Hkv = a.nHeadKV
        let qDim = H * hd, kvDim = Hkv * hd
        // Q, K and V share a quantized copy of xn when their weights take the same activation format.
        let xq = quantize(xn, rows: T, for: a.q, buffer: 0)
        let xk = a.k.activationType == a.q.activationType ? xq : quantize(xn, rows: T, for: a.k, buffer: 1)
        let xv: (UnsafeRawPointer, Int)
        if a.v.activationType == a.q.activationType {
            xv = xq
        } else if a.v.activationType == a.k.activationType {
            xv = xk
        } else {
            xv = quantize(xn, rows: T, for: a.v, buffer: 2)
        }
        jobs[0] = MatmulJob(w: a.q, x: xq.0, xRowBytes: xq.1, y: qBuf, yStride: qDim)
        jobs[1] = MatmulJob(w: a.k, x: xk.0, xRowBytes: xk.1, y: kBuf, yStride: kvDim)
        jobs[2] = MatmulJob(w: a.v, x: xv.0, xRowBytes: xv.1, y: vBuf, yStride: kvDim)
        runMatmuls(3, T: T)
        addRowBias(a.qBias, qBuf, rows: T, qDim)
        addRowBias(a.kBias, kBuf, rows: T, kvDim)
        addRowBias(a.vBias, vBuf, rows: T, kvDim)

        let sliding = cfg.isSlidingLayer[il]
        let base = sliding ? cfg.ropeBaseSWA : cfg.ropeBase
        let fscale: Float = sliding ? 1 : cfg.ropeFreqScale
        for span in spans {
            forRows(span.count) { rows in
                for i in rows {
                    let t = span.firstRow + i
                    let q = self.qBuf + t * qDim, k = self.kBuf + t * kvDim
                    if let qn = a.qNorm { self.normHeads(q, heads: H, qn) }
                    if let kn = a.kNorm { self.normHeads(k, heads: Hkv, kn) }
                    let pos = Float(span.pos0 + i)
                    self.ropeGGML(q, heads: H, pos: pos, base: base, freqScale: fscale)
                    self.ropeGGML(k, heads: Hkv, pos: pos, base: base, freqScale: fscale)
                }
            }
            span.context.kv.store(slot: a.kvSlot, pos0: span.pos0, n: span.count, k: kBuf + span.firstRow * kvDim,
                                  v: vBuf + span.firstRow * kvDim, stride: kvDim)
        }

        var kqScale = cfg.queryScale
        if cfg.queryPreScaled {
            lk_scale(qBuf, kqScale, qBuf, Int64(T * qDim))
            kqScale = 1
        }
        if kvCacheType == .f16 {  // ggml converts Q to the K cache type before Q·Kᵀ
            lk_f32_to_f16_row(qBuf, halfScratch, Int64(T * qDim))
            lk_f16_to_f32_row(halfScratch, qBuf, Int64(T * qDim))
        }

        // Tasks: (span, query chunk, heads), each span's chunks after the previous span's. One token in an F16
        // cache takes the heads of a KV head together, so that its keys and values are read once for all.
        var taskEnds: [Int] = []   // [spans] exclusive end of each span's tasks
        var chunks: [Int] = []     // [spans] query rows per task
        var headsPer: [Int] = []   // [spans] heads per task
        var total = 0
        for span in spans {
            let chunk = span.count == 1 ? 1 : attnChunk
            let heads = span.count == 1 && kvCacheType == .f16 && H / Hkv <= attnChunk ? H / Hkv : 1
            chunks.append(chunk)
            headsPer.append(heads)
            total += H / heads * ((span.count + chunk - 1) / chunk)
            taskEnds.append(total)
        }
        let window = sliding ? cfg.slidingWindow : 0
        pool.run(tasks: total) { task, thread in
            var s = 0
            while task >= taskEnds[s] { s += 1 }
            let local = task - (s == 0 ? 0 : taskEnds[s - 1])
            let span = spans[s]
            let tasksPerChunk = H / headsPer[s]
            let t0 = (local / tasksPerChunk) * chunks[s]
            self.attendChunk(span, slot: a.kvSlot, head: (local % tasksPerChunk) * headsPer[s], heads: headsPer[s], group: H / Hkv,
                             rows: t0..<min(span.count, t0 + chunks[s]), window: window, kqScale: kqScale, thread: thread)
        }

        let xo = quantize(attnOut, rows: T, for: a.output, buffer: 0)
        jobs[0] = MatmulJob(w: a.output, x: xo.0, xRowBytes: xo.1, y: mix, yStride: cfg.nEmbd)
        runMatmuls(1, T: T)
    }

    /// Attention of heads h..<h + heads for the span's rows `rows` (span-relative; queries in qBuf, output to
    /// attnOut) over the keys of the span's sequence, with the sequence's scratch of pool thread `thread`.
    /// heads > 1 only for one row in an F16 cache, the heads of one KV head: each head is then a score row
    /// (its query at stride headDim), with the operations one head alone gets.
    private func attendChunk(_ span: SequenceSpan, slot: Int, head h: Int, heads: Int, group: Int, rows: Range<Int>,
                             window: Int, kqScale: Float, thread: Int) {
        let hd = cfg.headDim
        let qDim = cfg.nHead * hd
        let seq = span.context
        let kv = seq.kv
        let kvType = kvCacheType.ggmlType
        let eb = kvCacheType.elementBytes
        let kRowBytes = kv.kRowBytes(slot)
        let vRowBytes = kv.vRowBytes
        let ctx = seq.contextSize
        let g = h / group
        let t0 = rows.lowerBound, t1 = rows.upperBound
        let n = heads > 1 ? heads : t1 - t0                    // score rows: the rows, or one row's heads
        let qStride = heads > 1 ? hd : qDim
        let q = qBuf + (span.firstRow + t0) * qDim + h * hd     // [n] rows of stride qStride
        let o = attnOut + (span.firstRow + t0) * qDim + h * hd  // [n] rows of stride qStride
        let pFirst = span.pos0 + t0, pLast = span.pos0 + t1 - 1
        // Key range. P·V runs over a key count padded to a multiple of 16 (zeros in P beyond each row's
        // last key) so that one-token decode and batched prefill sum in the same order: every float
        // kernel keeps its lanes by column mod 16 (or a divisor) and only has tails beyond that.
        // (Padding to llama.cpp's 256 would add P·V work over zeros for nothing.)
        let s0 = window > 0 ? max(0, pFirst - window + 1) / 256 * 256 : 0
        let cols = pLast + 1 - s0
        let scores = seq.attnScores + thread * seq.attnChunk * seq.scoreColumns   // [n, colsPadded]
        if cols > seq.attnTile {
            return attendTiled(span, slot: slot, head: h, heads: heads, kvHead: g, rows: rows, keysFrom: s0, window: window,
                               kqScale: kqScale, scores: scores, thread: thread)
        }
        let colsPadded = min(ctx - s0, (cols + 15) / 16 * 16)
        // One token in an F16 cache: llama.cpp's ggml_vec_dot_f16 order (its tinyBLAS, our lk_matmul order,
        // only runs from 2 tokens), over its KV length padded to 256 (zeros in P beyond the last key).
        let vecDot = span.count == 1 && kvType == Int32(GGMLType.f16.rawValue)
        // S = Q_h · K_gᵀ over keys s0...pLast
        if vecDot {
            lk_matvec_f16_ggml_multi(UnsafeRawPointer(kv.kRow(slot, s0) + g * hd * eb).assumingMemoryBound(to: UInt16.self),
                                     kRowBytes, Int64(hd), Int64(hd), q, Int64(qStride), Int64(n), scores, Int64(colsPadded), 0, Int64(cols))
        } else {
            lk_matmul(kvType, kv.kRow(slot, s0) + g * hd * eb, kRowBytes, Int64(hd),
                      q, qDim * 4, Int64(t1 - t0), scores, Int64(colsPadded), 0, Int64(cols))
        }
        for i in 0..<n {
            let p = span.pos0 + t0 + (heads > 1 ? 0 : i)
            let row = scores + i * colsPadded
            let lo = (window > 0 ? max(0, p - window + 1) : 0) - s0   // first visible key column
            let hi = p - s0                                             // last visible key column
            // llama.cpp's softmax over the whole padded row (masked keys are -inf): its exponentials and
            // summation order, and the inverse of the double sum rounded to float.
            for j in 0..<lo { row[j] = -.infinity }
            let m = lk_scale_max(row + lo, kqScale, Int64(hi - lo + 1))
            for j in (hi + 1)..<colsPadded { row[j] = -.infinity }
            let inv = Float(1 / lk_softmax_exp(row, row, Int64(colsPadded), m))
            lk_scale(row, inv, row, Int64(colsPadded))
            if kvType == Int32(GGMLType.f16.rawValue) {  // ggml rounds P to F16 for P·V
                let hbuf = seq.attnHalf + thread * seq.scoreColumns
                lk_f32_to_f16_row(row, hbuf, Int64(colsPadded))
                lk_f16_to_f32_row(hbuf, row, Int64(colsPadded))
            }
        }
        // O_h = P · V_g  (Vᵀ rows are value dims)
        if vecDot {
            let nKV = min(ctx, (pLast + 1 + 255) / 256 * 256) - s0   // llama.cpp's n_kv from this window start
            lk_matvec_f16_ggml_multi(UnsafeRawPointer(kv.vRow(slot, g * hd) + s0 * eb).assumingMemoryBound(to: UInt16.self),
                                     vRowBytes, Int64(cols), Int64(nKV), scores, Int64(colsPadded), Int64(n), o, Int64(qStride), 0, Int64(hd))
        } else {
            lk_matmul(kvType, kv.vRow(slot, g * hd) + s0 * eb, vRowBytes, Int64(colsPadded),
                      scores, colsPadded * 4, Int64(t1 - t0), o, Int64(qDim), 0, Int64(hd))
        }
    }

    /// attendChunk for rows that see more than `attnTile` keys: the keys from `keysFrom` on in tiles of
    /// attnTile, with an online softmax (running max m and sum l per row; O rescaled by e^(m_old - m_new) when
    /// a tile raises the max) and O / l at the end. Scratch: one tile of scores and two [rows, headDim]
    /// accumulators per thread. P is rounded to F16 for an F16 cache as in the one-pass path, but unnormalized,
    /// and the sums run per tile: results differ from the one-pass softmax in the last bits.
    private func attendTiled(_ span: SequenceSpan, slot: Int, head h: Int, heads: Int, kvHead g: Int, rows: Range<Int>,
                             keysFrom s0: Int, window: Int, kqScale: Float, scores: UnsafeMutablePointer<Float>, thread: Int) {
        let hd = cfg.headDim
        let qDim = cfg.nHead * hd
        let seq = span.context
        let kv = seq.kv
        let kvType = kvCacheType.ggmlType
        let eb = kvCacheType.elementBytes
        let isF16 = kvType == Int32(GGMLType.f16.rawValue)
        let ctx = seq.contextSize
        let tile = seq.attnTile
        let oneRowF16 = isF16 && rows.count == 1
        let t0 = rows.lowerBound
        let n = heads > 1 ? heads : rows.count               // score rows: the rows, or one row's heads
        let qStride = heads > 1 ? hd : qDim
        let q = qBuf + (span.firstRow + t0) * qDim + h * hd   // [n] rows of stride qStride
        let acc = seq.attnAccum + thread * 2 * seq.attnChunk * hd   // [n, hd] O so far
        let tileOut = acc + seq.attnChunk * hd                      // [n, hd] this tile's P·V
        let pLast = span.pos0 + rows.upperBound - 1
        withUnsafeTemporaryAllocation(of: Float.self, capacity: n) { m in
            withUnsafeTemporaryAllocation(of: Double.self, capacity: n) { l in
                for i in 0..<n { m[i] = -.infinity; l[i] = 0 }
                for i in 0..<(n * hd) { acc[i] = 0 }
                var k0 = s0
                while k0 <= pLast {
                    let cols = min(tile, pLast + 1 - k0)
                    let colsPadded = min(ctx - k0, (cols + 15) / 16 * 16)
                    // One query row in an F16 cache: the one-token kernel (lk_matmul's F16 order is for batches).
                    if oneRowF16 {
                        lk_matvec_f16_ggml_multi(UnsafeRawPointer(kv.kRow(slot, k0) + g * hd * eb).assumingMemoryBound(to: UInt16.self),
                                                 kv.kRowBytes(slot), Int64(hd), Int64(hd), q, Int64(qStride), Int64(n), scores,
                                                 Int64(colsPadded), 0, Int64(cols))
                    } else {
                        lk_matmul(kvType, kv.kRow(slot, k0) + g * hd * eb, kv.kRowBytes(slot), Int64(hd),
                                  q, qDim * 4, Int64(n), scores, Int64(colsPadded), 0, Int64(cols))
                    }
                    for i in 0..<n {
                        let p = span.pos0 + t0 + (heads > 1 ? 0 : i)
                        let row = scores + i * colsPadded
                        let lo = max(0, (window > 0 ? max(0, p - window + 1) : 0) - k0)  // first visible column
                        let hi = min(cols - 1, p - k0)                                    // last visible column
                        guard lo <= hi else {  // no visible key in this tile
                            for j in 0..<colsPadded { row[j] = 0 }
                            continue
                        }
                        for j in 0..<lo { row[j] = -.infinity }
                        let tileMax = lk_scale_max(row + lo, kqScale, Int64(hi - lo + 1))
                        for j in (hi + 1)..<colsPadded { row[j] = -.infinity }
                        let mNew = max(m[i], tileMax)
                        let sum = lk_softmax_exp(row, row, Int64(colsPadded), mNew)
                        if isF16 {
                            let hbuf = seq.attnHalf + thread * seq.scoreColumns
                            lk_f32_to_f16_row(row, hbuf, Int64(colsPadded))
                            lk_f16_to_f32_row(hbuf, row, Int64(colsPadded))
                        }
                        if m[i] > -.infinity && mNew > m[i] {
                            let factor = expf(m[i] - mNew)
                            l[i] *= Double(factor)
                            lk_scale(acc + i * hd, factor, acc + i * hd, Int64(hd))
                        }
                        m[i] = mNew
                        l[i] += sum
                    }
                    if oneRowF16 {
                        lk_matvec_f16_ggml_multi(UnsafeRawPointer(kv.vRow(slot, g * hd) + k0 * eb).assumingMemoryBound(to: UInt16.self),
                                                 kv.vRowBytes, Int64(colsPadded), Int64(colsPadded), scores, Int64(colsPadded),
                                                 Int64(n), tileOut, Int64(hd), 0, Int64(hd))
                    } else {
                        lk_matmul(kvType, kv.vRow(slot, g * hd) + k0 * eb, kv.vRowBytes, Int64(colsPadded),
                                  scores, colsPadded * 4, Int64(n), tileOut, Int64(hd), 0, Int64(hd))
                    }
                    lk_add(acc, tileOut, acc, Int64(n * hd))
                    k0 += cols
                }
                let o = attnOut + (span.firstRow + t0) * qDim + h * hd   // [n] rows of stride qStride
                for i in 0..<n { lk_scale(acc + i * hd, Float(1 / l[i]), o + i * qStride, Int64(hd)) }
            }
        }
    }

    /// RMSNorm of each of `heads` consecutive heads of x ([heads, headDim]) in place, with weights [headDim].
    func normHeads(_ x: UnsafeMutablePointer<Float>, heads: Int, _ weights: [Float]) {
        let hd = cfg.headDim
        weights.withUnsafeBufferPointer { w in
            for h in 0..<heads { lk_rms_norm(x + h * hd, w.baseAddress, x + h * hd, Int64(hd), cfg.rmsEps) }
        }
    }

    /// y[t] += bias for T rows of n floats (Q/K/V biases, added in F32 after the matmul like ggml_add).
    func addRowBias(_ bias: [Float]?, _ y: UnsafeMutablePointer<Float>, rows T: Int, _ n: Int) {
        guard let bias else { return }
        bias.withUnsafeBufferPointer { b in
            for t in 0..<T { lk_add(y + t * n, b.baseAddress, y + t * n, Int64(n)) }
        }
    }

    /// RoPE with ggml's angle recurrence (θ_0 = pos, θ_{i+1} = θ_i · base^(-2/n_rot) in float, cosf/sinf),
    /// and its rotation arithmetic (lk_rope_rotate), so that Q and K rotate bit for bit as in llama.cpp, also
    /// deep in the context. Llama 3 frequency factors
    /// divide θ_i before the frequency scale, in ggml's order: freqScale · (θ_i / factor_i); YaRN blends
    /// that with θ_i / factor_i by its ramp and scales cos/sin (RopeScaling.swift).
    func ropeGGML(_ x: UnsafeMutablePointer<Float>, heads: Int, pos: Float, base: Float, freqScale: Float) {
        let hd = cfg.headDim, nRot = cfg.nRot, half = nRot / 2
        let thetaScale = powf(base, -2.0 / Float(nRot))
        let factors = model.weights.ropeFreqFactors  // [half] when present (checked at load)
        let yarn = cfg.ropeYaRN
        withUnsafeTemporaryAllocation(of: Float.self, capacity: 2 * half) { cs in
            var theta = pos
            for i in 0..<half {
                var extrap = theta
                if let factors { extrap = theta / factors[i] }
                var a = freqScale * extrap
                var m: Float = 1
                if let yarn {
                    let mix = yarn.ramp(i) * yarn.extFactor
                    a = a * (1 - mix) + extrap * mix
                    m = yarn.mscale
                }
                cs[2 * i] = cosf(a) * m
                cs[2 * i + 1] = sinf(a) * m
                theta *= thetaScale
            }
            lk_rope_rotate(x, Int64(heads), Int64(hd), Int64(nRot), cfg.ropeNeox ? Int32(LK_ROPE_NEOX) : Int32(LK_ROPE_NORM), cs.baseAddress)
        }
    }

    // MARK: - matmul plumbing

    /// Converts T rows of w.cols floats to w's activation format in act buffer `buffer`.
    func quantize(_ src: UnsafeMutablePointer<Float>, rows T: Int, for w: WeightMatrix, buffer: Int) -> (UnsafeRawPointer, Int) {
        let act = lk_activation_type(Int32(w.type.rawValue))
        let rb = Int(lk_row_bytes(act, Int64(w.cols)))
        let dst = actBuffers[buffer]
        let cols = w.cols
        // ggml multiplies F16 / BF16 weights with activations converted to F16 / BF16 (their vec_dot_type):
        // round them alike (the kernels take the rounded values as floats).
        let toHalf = w.type == .f16
        let toBF16 = w.type == .bf16
        func prepare(_ t: Int) {
            if toBF16 {
                return lk_round_bf16_row(src + t * cols, (dst + t * rb).assumingMemoryBound(to: Float.self), Int64(cols))
            }
            guard toHalf else { return lk_quantize_row(act, src + t * cols, dst + t * rb, Int64(cols)) }
            withUnsafeTemporaryAllocation(of: UInt16.self, capacity: cols) { h in
                lk_f32_to_f16_row(src + t * cols, h.baseAddress, Int64(cols))
                lk_f16_to_f32_row(h.baseAddress, (dst + t * rb).assumingMemoryBound(to: Float.self), Int64(cols))
            }
        }
        if T >= 8 {
            pool.parallelFor(T, chunksPerThread: 1) { r in for t in r { prepare(t) } }
        } else {
            for t in 0..<T { prepare(t) }
        }
        return (UnsafeRawPointer(dst), rb)
    }

    /// Runs jobs[0..<count] as one pool dispatch, each split into 16-row-aligned chunks.
    /// Decode uses one chunk per thread: each lk_matmul call prepares the activation once and streams its
    /// rows in four long runs, so larger chunks are cheaper (fewer chunks per thread decode faster in
    /// `leap-bench model`); the pool still hands a late worker's chunk to the caller.
    func runMatmuls(_ count: Int, T: Int) {
        let threads = pool.threadCount
        let perThread = T == 1 ? 1 : 2
        var chunkRows: [Int] = []  // [count] rows per task of job j (a multiple of 16)
        var taskEnds: [Int] = []   // [count] exclusive end of job j's tasks
        var total = 0
        for j in 0..<count {
            let rows = jobs[j].w.rows
            var c = (rows + threads * perThread - 1) / (threads * perThread)
            c = max(16, (c + 15) / 16 * 16)
            total += (rows + c - 1) / c
            chunkRows.append(c)
            taskEnds.append(total)
        }
        let jobs = self.jobs
        pool.run(tasks: total) { task, _ in
            var j = 0
            while task >= taskEnds[j] { j += 1 }
            let start = j == 0 ? 0 : taskEnds[j - 1]
            let c = chunkRows[j]
            let job = jobs[j]
            let r0 = (task - start) * c
            let r1 = min(job.w.rows, r0 + c)
            lk_matmul_tensor(Int32(job.w.type.rawValue), job.w.llamaLayout, job.w.data, job.w.rowBytes, Int64(job.w.cols),
                             job.x, job.xRowBytes, Int64(T), job.y, Int64(job.yStride), Int64(r0), Int64(r1))
        }
    }
}
