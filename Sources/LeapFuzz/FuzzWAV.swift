// Fuzz target for the WAV decoder and the model input path: any bytes must give samples or a LeapError,
// never a crash or an out-of-bounds read.
import LeapAudio

func fuzzWAV(_ data: [UInt8]) {
    guard let audio = try? decodeWAV(data) else { return }
    // Decoded output must honour the contract the rest of the engine relies on.
    if audio.channels < 1 || audio.samples.count != audio.frameCount * audio.channels { fatalError("bad PCMAudio shape") }
    if audio.samples.contains(where: { !($0 >= -1 && $0 <= 1) }) { fatalError("sample outside [-1, 1]") }
    // Keep the resampling work bounded: only short mono inputs go through the full input path.
    if audio.channels == 1 && audio.samples.count <= 4_096 {
        _ = try? loadWAV(data)
    }
}
