import Glibc
import LeapJSON

func clockSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}

/// JSON parse and serialize throughput on a chat-history-like document.
func benchJSON(_ args: [String]) {
    var items: [String] = []
    for i in 0..<2000 {
        items.append(#"{"role":"user","content":[{"type":"text","text":"message \#(i): héllo wörld, \"quoted\" \\ text\n"}],"n":\#(i),"x":\#(Double(i) * 0.25)}"#)
    }
    let doc = "[" + items.joined(separator: ",") + "]"
    let bytes = Array(doc.utf8)
    var value = JSONValue.null
    let reps = 20
    var t0 = clockSeconds()
    for _ in 0..<reps { value = (try? JSONParser.parse(bytes: bytes)) ?? .null }
    let parse = clockSeconds() - t0
    t0 = clockSeconds()
    var total = 0
    for _ in 0..<reps { total += value.serialized().utf8.count }
    let write = clockSeconds() - t0
    let mb = Double(bytes.count * reps) / 1e6
    print("json parse: \(Int(mb / parse)) MB/s (\(bytes.count) bytes x \(reps))")
    print("json serialize: \(Int(Double(total) / 1e6 / write)) MB/s")
}
