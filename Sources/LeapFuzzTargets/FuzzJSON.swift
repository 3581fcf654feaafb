import Glibc
import LeapJSON

/// JSON parser: any bytes; a parsed value must serialize and re-parse to the same value.
package let fuzzJSON: FuzzTarget = (
    seeds: [
        Array(#"{"role":"user","content":[{"type":"text","text":"h\u00e9\n"}],"n":[1,-2.5e3,true,null]}"#.utf8),
        Array(#"[[[[{"a":{"b":[]}}]]]]"#.utf8),
        Array(#""\ud83d\ude00""#.utf8),
    ],
    run: { bytes in
        guard let v = try? JSONParser.parse(bytes: bytes) else { return }
        let again = try? JSONParser.parse(v.serialized())
        if again != v {
            fuzzFailure("JSON round trip mismatch for input \(bytes)")
        }
    }
)
