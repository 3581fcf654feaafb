import LeapCore
import LeapMessages

/// How the generated text of one assistant turn is routed.
package struct ResponseStreamOptions: Sendable {
    /// Cuts tool calls out of the text; nil = no parsing (LEAP): tool-call markup is ordinary text.
    package var functionCallParser: (any FunctionCallParser)?
    /// Reasoning goes out as `.text` chunks, wrapped in the think tags (it is still collected as reasoning).
    package var inlineThinkingTags: Bool
    /// The prompt already opened the think block (templates that prefill `<think>`): the first generated
    /// text is reasoning.
    package var startsInReasoning: Bool
    package var thinkStartTag: String
    package var thinkEndTag: String
    /// A tool-call block that does not parse becomes text (its body without the markers) with a warning
    /// in the log, and routing goes on; off (LEAP's behaviour): it is an `.error` and routing stops.
    package var unparsedCallsAsText: Bool

    package init(functionCallParser: (any FunctionCallParser)? = LFMFunctionCallParser(), inlineThinkingTags: Bool = false,
                 startsInReasoning: Bool = false, thinkStartTag: String = "<think>", thinkEndTag: String = "</think>",
                 unparsedCallsAsText: Bool = false) {
        self.functionCallParser = functionCallParser
        self.inlineThinkingTags = inlineThinkingTags
        self.startsInReasoning = startsInReasoning
        self.thinkStartTag = thinkStartTag
        self.thinkEndTag = thinkEndTag
        self.unparsedCallsAsText = unparsedCallsAsText
    }
}

/// One routed piece of the response, in generation order.
package enum ResponseEvent: Equatable, Sendable {
    /// Visible answer text (valid UTF-8, never a split character, never tool-call markup).
    case text(String)
    /// Text inside the think block (only when `inlineThinkingTags` is off).
    case reasoning(String)
    /// The calls of one tool-call block, emitted when its end marker arrives (never empty).
    case functionCalls([LeapFunctionCall])
    /// A tool-call block that does not parse: the error (kind `.functionCallParsing`, its message quotes
    /// the text and the offset) and the offending body. Routing stops after it.
    case error(LeapError, offendingText: String)
}

/// What the turn produced once the stream is finished.
package struct ResponseSummary: Equatable, Sendable {
    /// The answer text without think block, tool-call markup or control tokens, trimmed of surrounding
    /// whitespace. This is what goes into the assistant message, so that chat templates re-render
    /// reasoning and calls from their own fields instead of seeing them twice.
    package var content: String
    /// Everything the model wrote except control tokens (think tags and tool-call markup included);
    /// LEAP's `content[0]`, kept for debugging and for callers that want LEAP's exact behaviour.
    package var rawText: String
    /// The think-block text, trimmed; nil when empty.
    package var reasoning: String?
    /// Every call of the turn, in order.
    package var functionCalls: [LeapFunctionCall]
    /// Set when a tool-call block failed to parse (the stream was stopped there).
    package var error: LeapError?
    /// What was repaired, dropped or kept as text, in order (each also logged as a warning).
    package var notes: [String] = []

    /// The assistant message for the history: `[.text(content)]`, reasoning, calls (nil when none).
    package var assistantMessage: ChatMessage {
        ChatMessage(role: .assistant, content: [.text(content)], reasoningContent: reasoning,
                    functionCalls: functionCalls.isEmpty ? nil : functionCalls)
    }
}

/// Routes the detokenized pieces of one assistant turn into text, reasoning and function-call events.
///
/// The generation loop calls `feed` once per token with the token's bytes and whether it is a single
/// special/control token, then `finish()` once. Rules:
/// - `<think>` … `</think>` is reasoning (`.reasoning` chunks, or `.text` with the tags when
///   `inlineThinkingTags`); whitespace right after `</think>` is dropped (as chat templates `lstrip`).
///   A stray `</think>` outside a think block is dropped. Reasoning keeps what the model wrote:
///   tool-call markers inside it, as text or as special tokens, are reasoning text, never a call.
/// - Between the parser's start and end markers (or a pair of its `alternateMarkers`), text is
///   buffered (never emitted as text) and parsed at the end marker into one `.functionCalls` event;
///   what the parser repaired is logged. A parse failure gives `.error` and stops routing (later input
///   is ignored: the runtime ends the generation with that error, as LEAP does), or, with
///   `unparsedCallsAsText`, the body becomes text and a warning is logged. Whitespace between
///   consecutive tool calls (Hermes puts "\n") is dropped.
/// - Tool-call markup never reaches the text: an end marker outside a block is dropped, and so is a
///   repeat of the block just closed when the model writes it again as text capped with an end marker
///   (`<|tool_call_start|>[f()]<|tool_call_end|>[f()]<|tool_call_end|>`). Text after a block that could
///   still be such a repeat (a prefix of the block's body) is held back until it is decided.
/// - Markers are recognised both as whole special tokens and as plain text split across pieces at any
///   point: a text tail that could still become a marker (an ASCII prefix of one) is held back and
///   flushed as soon as it no longer can. Incomplete UTF-8 sequences are held back too; bytes that
///   cannot form a character become U+FFFD.
/// - Other special tokens (`<|im_end|>`, `<|tool_list_start|>`, ...) are dropped, except the built-in
///   parsers' markers that this turn does not parse (all of them with no parser: LEAP's "no parsing"),
///   which are kept as text.
/// - `finish()`: a tool-call block still open (no end marker) is parsed as if closed; if that fails it is
///   an `.error` (the response was cut inside a call).
package struct ResponseStreamProcessor: Sendable {
    private enum Mode { case text, reasoning, toolCall }
    /// What ended the previous text segment: leading whitespace after it is held back.
    private enum SegmentStart { case none, afterThink, afterToolCall }

    package let options: ResponseStreamOptions
    private let thinkStart: [UInt8]
    private let thinkEnd: [UInt8]
    private let toolStart: [UInt8]?
    private let toolEnd: [UInt8]?
    /// The parser's marker pairs, its own first: a block opened by one is closed by its partner.
    private let blockMarkers: [(start: [UInt8], end: [UInt8])]
    /// Every built-in parser's markers: inside reasoning these are text, whatever form they come in.
    private let toolMarkers: Set<[UInt8]>
    private let passThroughSpecials: Set<[UInt8]>

    private var mode: Mode
    private var pending: [UInt8] = []        // unrouted tail: a possible marker prefix or an incomplete character
    private var body: [UInt8] = []           // the open tool-call block
    private var heldWhitespace: [UInt8] = []
    private var segmentStart = SegmentStart.none
    private var needsInlineOpenTag: Bool
    private var content: [UInt8] = []
    private var reasoning: [UInt8] = []
    private var raw: [UInt8] = []
    private(set) var calls: [LeapFunctionCall] = []
    private var failure: LeapError?
    private var finished = false
    private var out: [ResponseEvent] = []
    /// The end marker of the open block, and whether the block was opened by an alternate marker.
    private var blockEnd: [UInt8] = []
    private var blockIsAlternate = false
    /// The trimmed body of the last block that parsed: text right after it may be its repeat.
    private var lastBody: [UInt8]? = nil
    /// Text after a block held back while it is still a prefix of `lastBody`.
    private var echo: [UInt8]? = nil
    private(set) var notes: [String] = []
    /// A `</think>` came outside a think block (and outside any tool-call block).
    package private(set) var sawStrayThinkEnd = false

    package init(options: ResponseStreamOptions = ResponseStreamOptions()) {
        self.options = options
        thinkStart = Array(options.thinkStartTag.utf8)
        thinkEnd = Array(options.thinkEndTag.utf8)
        toolStart = options.functionCallParser.map { Array($0.startMarker.utf8) }
        toolEnd = options.functionCallParser.map { Array($0.endMarker.utf8) }
        if let parser = options.functionCallParser {
            blockMarkers = ([(parser.startMarker, parser.endMarker)] + parser.alternateMarkers)
                .map { (start: Array($0.0.utf8), end: Array($0.1.utf8)) }
        } else {
            blockMarkers = []
        }
        toolMarkers = Set(FunctionCallParserKind.allCases.flatMap { kind in
            ([(kind.parser.startMarker, kind.parser.endMarker)] + kind.parser.alternateMarkers).flatMap { [Array($0.utf8), Array($1.utf8)] }
        })
        // Tool-call markup this turn does not parse stays visible (it is the model's text, not control).
        passThroughSpecials = toolMarkers.subtracting(blockMarkers.flatMap { [$0.start, $0.end] })
        mode = options.startsInReasoning ? .reasoning : .text
        needsInlineOpenTag = options.startsInReasoning && options.inlineThinkingTags
    }

    /// True once a tool-call block failed to parse; further input is ignored.
    package var hasFailed: Bool { failure != nil }

    /// True once a tool-call block was opened outside the reasoning.
    package private(set) var sawCallBlock = false

    package mutating func feed(_ piece: String, isSpecial: Bool = false) -> [ResponseEvent] {
        feed(Array(piece.utf8), isSpecial: isSpecial)
    }

    /// Routes one token's bytes; returns the events it completes (often none or one).
    package mutating func feed(_ piece: [UInt8], isSpecial: Bool) -> [ResponseEvent] {
        guard failure == nil, !finished else { return [] }
        openInlineTagIfNeeded()
        if isSpecial {
            // A control token ends any textual marker in progress.
            flushPending()
            handleSpecial(piece)
        } else {
            raw += piece
            pending += piece
            scan()
        }
        return takeEvents()
    }

    /// Ends the turn: flushes held-back text, closes an open tool-call block, and summarises.
    package mutating func finish() -> (events: [ResponseEvent], summary: ResponseSummary) {
        if failure == nil && !finished {
            openInlineTagIfNeeded()
            flushPending()
            releaseEcho()
            if mode == .toolCall { closeToolCall(unterminated: true) }
        }
        finished = true
        let r = String(decoding: reasoning, as: UTF8.self).trimmingWhitespace
        let summary = ResponseSummary(content: String(decoding: content, as: UTF8.self).trimmingWhitespace,
                                      rawText: String(decoding: raw, as: UTF8.self),
                                      reasoning: r.isEmpty ? nil : r, functionCalls: calls, error: failure, notes: notes)
        return (takeEvents(), summary)
    }

    // MARK: - Routing

    private mutating func handleSpecial(_ piece: [UInt8]) {
        switch mode {
        case .text:
            if piece == thinkStart { raw += piece; releaseEcho(); enterReasoning(); return }
            if let pair = blockMarkers.first(where: { $0.start == piece }) { raw += piece; enterToolCall(pair); return }
            if blockMarkers.contains(where: { $0.end == piece }) { raw += piece; strayEndMarker(piece); return }
            if piece == thinkEnd { raw += piece; strayThinkEnd(); return }
        case .reasoning:
            if piece == thinkEnd { raw += piece; leaveReasoning(); return }
            // What the model wrote in its reasoning stays there, markers included.
            if toolMarkers.contains(piece) { raw += piece; route(piece[...]); return }
        case .toolCall:
            if piece == blockEnd { raw += piece; closeToolCall(unterminated: false); return }
            return  // control tokens inside a call body are not part of it
        }
        if passThroughSpecials.contains(piece) {
            raw += piece
            route(piece[...])
        }
        // Any other control token is dropped.
    }

    /// The markers that can start in the current mode (text form).
    private var activeMarkers: [[UInt8]] {
        switch mode {
        case .text: return [thinkStart, thinkEnd] + blockMarkers.flatMap { [$0.start, $0.end] }
        case .reasoning: return [thinkEnd]
        case .toolCall: return [blockEnd]
        }
    }

    /// Routes `pending` up to the first marker, acts on the marker, repeats; then holds back a tail that
    /// may still become a marker (or an incomplete character).
    private mutating func scan() {
        while failure == nil {
            let markers = activeMarkers
            if let (index, marker) = firstMarker(in: pending, markers) {
                route(pending[..<index])
                pending.removeFirst(index + marker.count)
                act(on: marker)
                continue
            }
            let hold = markerPrefixSuffixLength(pending, markers)
            let end = hold > 0 ? pending.count - hold : pending.count - incompleteUTF8TailLength(pending)
            route(pending[..<end])
            pending.removeFirst(end)
            return
        }
    }

    private mutating func act(on marker: [UInt8]) {
        switch mode {
        case .text:
            if marker == thinkStart { releaseEcho(); enterReasoning() }
            else if marker == thinkEnd { strayThinkEnd() }
            else if let pair = blockMarkers.first(where: { $0.start == marker }) { enterToolCall(pair) }
            else { strayEndMarker(marker) }
        case .reasoning: leaveReasoning()
        case .toolCall: closeToolCall(unterminated: false)
        }
    }

    /// Routes everything pending, whatever it might have become.
    private mutating func flushPending() {
        route(pending[...])
        pending = []
    }

    private mutating func route(_ bytes: ArraySlice<UInt8>) {
        if bytes.isEmpty { return }
        switch mode {
        case .toolCall:
            body += bytes
        case .reasoning:
            reasoning += bytes
            if options.inlineThinkingTags { emitText(bytes) } else { emit(.reasoning(String(decoding: bytes, as: UTF8.self))) }
        case .text:
            var rest = bytes
            if echo != nil {
                echo! += rest
                if let lastBody, lastBody.starts(with: echo!) { return }
                releaseEcho()
                return
            }
            if segmentStart != .none {
                // Hold leading whitespace until we know what follows it.
                while let b = rest.first, isWhitespace(b) {
                    heldWhitespace.append(b)
                    rest = rest.dropFirst()
                }
                if rest.isEmpty { return }
                if segmentStart == .afterToolCall, let lastBody, lastBody.starts(with: rest.prefix(lastBody.count)) {
                    // Perhaps the model writing the call it just made again: held until that is decided.
                    segmentStart = .none
                    echo = Array(rest)
                    if lastBody.starts(with: echo!) { return }
                    releaseEcho()
                    return
                }
                if segmentStart == .afterToolCall || options.inlineThinkingTags {
                    content += heldWhitespace
                    emitText(heldWhitespace[...])
                }
                heldWhitespace = []
                segmentStart = .none
            }
            content += rest
            emitText(rest)
        }
    }

    /// Text held as a possible repeat of the last call turned out to be text: out it goes, with the
    /// whitespace before it.
    private mutating func releaseEcho() {
        guard let held = echo else { return }
        echo = nil
        lastBody = nil
        let text = heldWhitespace + held
        heldWhitespace = []
        content += text
        emitText(text)
    }

    /// An end marker outside a block is markup, never text. Right after a repeat of the block just
    /// closed, the repeat goes with it.
    private mutating func strayEndMarker(_ marker: [UInt8]) {
        let markerText = String(decoding: marker, as: UTF8.self)
        if let held = echo, held == lastBody {
            echo = nil
            heldWhitespace = []
            segmentStart = .afterToolCall
            note("dropped a repeat of the tool call just made, written as text and ended by \(markerText): "
                 + String(decoding: held, as: UTF8.self))
            return
        }
        releaseEcho()
        note("dropped \(markerText) written outside a tool call")
    }

    private mutating func strayThinkEnd() {
        sawStrayThinkEnd = true
        releaseEcho()
        if options.inlineThinkingTags { emitText(thinkEnd) }  // else dropped
    }

    private mutating func enterReasoning() {
        heldWhitespace = []
        segmentStart = .none
        mode = .reasoning
        if options.inlineThinkingTags { emitText(thinkStart) }
    }

    private mutating func leaveReasoning() {
        mode = .text
        segmentStart = .afterThink
        if options.inlineThinkingTags { emitText(thinkEnd) }
    }

    private mutating func enterToolCall(_ pair: (start: [UInt8], end: [UInt8])) {
        releaseEcho()
        heldWhitespace = []  // whitespace between two calls is layout, not text
        segmentStart = .none
        body = []
        blockEnd = pair.end
        blockIsAlternate = pair.start != toolStart
        sawCallBlock = true
        mode = .toolCall
    }

    /// Parses the open block: its calls, or (when it does not parse) an error or, with
    /// `unparsedCallsAsText`, its body as text.
    private mutating func closeToolCall(unterminated: Bool) {
        let text = String(decoding: body, as: UTF8.self)
        let written = body
        body = []
        mode = .text
        segmentStart = .afterToolCall
        lastBody = nil
        var repairs: [String] = []
        do {
            let parsed = try options.functionCallParser?.parse(text, repairs: &repairs) ?? []
            if blockIsAlternate {
                note("read the block \(String(decoding: blockMarkers.first { $0.end == blockEnd }?.start ?? [], as: UTF8.self))"
                     + "...\(String(decoding: blockEnd, as: UTF8.self)) as a tool call")
            }
            for r in repairs { note("repaired a tool call: " + r) }
            if !parsed.isEmpty {
                calls += parsed
                out.append(.functionCalls(parsed))
            }
            if !unterminated { lastBody = Array(text.trimmingWhitespace.utf8) }
        } catch {
            var e = (error as? LeapError) ?? LeapError(.functionCallParsing, "\(error)")
            if e.kind != .functionCallParsing { e = LeapError(.functionCallParsing, e.message) }
            if unterminated {
                e = LeapError(.functionCallParsing, "unterminated function call (the response ended before "
                              + "\(String(decoding: blockEnd, as: UTF8.self))): \(e.message)")
            }
            guard options.unparsedCallsAsText else {
                fail(e, text)
                return
            }
            note("kept a tool call that does not parse as text: \(e.message)")
            let kept = withoutMarkup(written)
            content += kept
            emitText(kept)
        }
    }

    /// `bytes` without any tool-call marker (the text of a call that did not parse), also those that
    /// removing one forms.
    private func withoutMarkup(_ bytes: [UInt8]) -> [UInt8] {
        var out = bytes
        var removed = true
        while removed {
            removed = false
            for marker in toolMarkers {
                while let i = find(marker, in: out, from: 0) {
                    out.removeSubrange(i..<i + marker.count)
                    removed = true
                }
            }
        }
        return out
    }

    private mutating func note(_ message: String) {
        notes.append(message)
        Log.warning("tool calls: " + message)
    }

    private mutating func fail(_ e: LeapError, _ text: String) {
        failure = e
        pending = []
        out.append(.error(e, offendingText: text))
    }

    private mutating func openInlineTagIfNeeded() {
        if needsInlineOpenTag {
            needsInlineOpenTag = false
            emitText(thinkStart)
        }
    }

    // MARK: - Events

    private mutating func emitText<C: Collection>(_ bytes: C) where C.Element == UInt8 {
        if bytes.isEmpty { return }
        emit(.text(String(decoding: bytes, as: UTF8.self)))
    }

    /// Appends, merging with the previous event of the same kind (one chunk per feed and kind run).
    private mutating func emit(_ e: ResponseEvent) {
        switch (out.last, e) {
        case (.text(let a)?, .text(let b)): out[out.count - 1] = .text(a + b)
        case (.reasoning(let a)?, .reasoning(let b)): out[out.count - 1] = .reasoning(a + b)
        default: out.append(e)
        }
    }

    private mutating func takeEvents() -> [ResponseEvent] {
        defer { out = [] }
        return out
    }
}

// MARK: - Byte helpers

private func isWhitespace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x0A || b == 0x09 || b == 0x0D }

/// The earliest complete marker in `bytes` (the longest one when several start at the same index).
private func firstMarker(in bytes: [UInt8], _ markers: [[UInt8]]) -> (Int, [UInt8])? {
    guard !markers.isEmpty, !bytes.isEmpty else { return nil }
    for i in 0..<bytes.count {
        var best: [UInt8]? = nil
        for m in markers where !m.isEmpty && m.count <= bytes.count - i && m.count > (best?.count ?? 0) {
            if bytes[i] == m[0] && bytes[i..<i + m.count].elementsEqual(m) { best = m }
        }
        if let best { return (i, best) }
    }
    return nil
}

/// The length of the longest suffix of `bytes` that is a proper prefix of a marker.
private func markerPrefixSuffixLength(_ bytes: [UInt8], _ markers: [[UInt8]]) -> Int {
    var best = 0
    for m in markers {
        var k = min(m.count - 1, bytes.count)
        while k > best {
            if bytes[(bytes.count - k)...].elementsEqual(m[..<k]) { best = k; break }
            k -= 1
        }
    }
    return best
}

/// The number of trailing bytes that start a UTF-8 sequence still waiting for continuation bytes.
private func incompleteUTF8TailLength(_ bytes: [UInt8]) -> Int {
    var i = bytes.count - 1
    var continuation = 0
    while i >= 0, continuation < 3, bytes[i] & 0xC0 == 0x80 {
        continuation += 1
        i -= 1
    }
    guard i >= 0 else { return 0 }
    let lead = bytes[i]
    let needed: Int
    switch lead {
    case 0xC2...0xDF: needed = 2
    case 0xE0...0xEF: needed = 3
    case 0xF0...0xF4: needed = 4
    default: return 0  // ASCII or not a lead byte: nothing to wait for
    }
    return continuation + 1 < needed ? continuation + 1 : 0
}

extension String {
    /// Without leading and trailing spaces, tabs and newlines.
    var trimmingWhitespace: String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !" \t\n\r".unicodeScalars.contains($0) }),
              let last = scalars.lastIndex(where: { !" \t\n\r".unicodeScalars.contains($0) }) else { return "" }
        return String(scalars[first...last])
    }
}
