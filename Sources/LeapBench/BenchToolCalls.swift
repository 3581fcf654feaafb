// leap-bench toolcalls: what routing and tool-call parsing cost per generated token (they run inside the
// generation loop, so they must stay far below a token's compute time).
import Glibc
import LeapToolCalls

private func seconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}

/// Best of `runs` wall times of `body`.
private func best(_ runs: Int, _ body: () -> Void) -> Double {
    var b = Double.infinity
    for _ in 0..<runs {
        let t0 = seconds()
        body()
        b = min(b, seconds() - t0)
    }
    return b
}

func benchToolCalls(_ arguments: [String]) {
    // A turn: reasoning, prose with '<' characters, a tool call, more prose; cut into ~4-byte "tokens".
    let turn = "<think>The user wants the weather in Paris; I should call get_weather with a < b checks.</think>"
        + "Let me check that for you <b>now</b>.<|tool_call_start|>[get_weather(city=\"Paris\", unit=\"celsius\", days=3, "
        + "options={\"hourly\": True, \"alerts\": [\"wind\", \"rain\"]})]<|tool_call_end|>Here is the forecast: café ☀️ 21.5°C."
    let bytes = Array(turn.utf8)
    var pieces: [[UInt8]] = []
    var i = 0
    while i < bytes.count {
        pieces.append(Array(bytes[i..<min(bytes.count, i + 4)]))
        i += 4
    }
    let turns = 2_000
    var events = 0
    let t = best(5) {
        for _ in 0..<turns {
            var router = ResponseStreamProcessor()
            for p in pieces { events += router.feed(p, isSpecial: false).count }
            events += router.finish().events.count
        }
    }
    let tokens = Double(turns * pieces.count)
    print("router: \(Int(tokens / t)) pieces/s, \(Int(t / tokens * 1e9)) ns per piece (\(pieces.count)-piece turn with think block, markers split across pieces, one call; \(events > 0 ? "ok" : "no events"))")

    // Parser throughput on a large body (many calls with nested arguments).
    let call = "get_weather(city=\"Paris \\\"center\\\"\", unit='celsius', days=3, ratio=0.25, tags=[\"a\", \"b\"], opts={\"k\": [1, 2, None, True]})"
    let body = "[" + Array(repeating: call, count: 2_000).joined(separator: ", ") + "]"
    let lfm = LFMFunctionCallParser()
    var parsedCalls = 0
    let tp = best(5) { parsedCalls = (try? lfm.parse(body))?.count ?? -1 }
    print("lfm parse: \(Int(Double(body.utf8.count) / tp / 1e6)) MB/s (\(parsedCalls) calls, \(body.utf8.count / 1000) kB body)")
    let calls = (try? lfm.parse(body)) ?? []
    var dumped = ""
    let td = best(5) { dumped = lfm.dump(calls) }
    print("lfm dump: \(Int(Double(dumped.utf8.count) / td / 1e6)) MB/s")
    let hermes = HermesFunctionCallParser()
    let hermesText = hermes.dump(calls)
    var hermesCalls = 0
    let th = best(5) { hermesCalls = (try? hermes.parseText(hermesText))?.count ?? -1 }
    print("hermes parse: \(Int(Double(hermesText.utf8.count) / th / 1e6)) MB/s (\(hermesCalls) calls)")
}
