import Glibc
import LeapMessages

/// Message JSON decoding: any bytes; a decoded message must encode and decode to the same message.
package let fuzzMessage: FuzzTarget = (
    seeds: [
        Array(#"{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/4AAQ"}},{"type":"input_audio","input_audio":{"data":"UklGRiQAAABXQVZF","format":"wav"}},{"type":"audio_pcm_f32","samples":[0.5,-1],"sampleRate":16000}],"reasoning_content":"r","tool_calls":[{"index":0,"id":"call_0","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]}"#.utf8),
        Array(#"{"role":"assistant","content":"plain"}"#.utf8),
    ],
    run: { bytes in
        guard let text = String(validating: bytes, as: UTF8.self), let m = try? ChatMessage.fromJSON(text) else { return }
        guard let again = try? ChatMessage.fromJSON(m.toJSONString()), again == m else {
            fuzzFailure("message round trip mismatch for input \(text)")
        }
    }
)
