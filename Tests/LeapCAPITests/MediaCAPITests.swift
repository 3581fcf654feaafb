import CLeap
import Glibc
import LeapCAPI
import LeapRuntime
import LeapRuntimeTestSupport
import Testing

/// leap_model_has_* and leap_model_embed_* over a scripted media encoder (ScriptedMediaEncoder: an image
/// of n bytes is n % 3 + 2 rows of [first byte, row, 0, 1]); the real encoders have their own tests.
@Suite struct MediaCAPITests {
    func model(media: ScriptedMediaEncoder?) -> OpaquePointer {
        retainedModelHandle(makeScriptedRunner(script: ["Hi", "<|im_end|>"], media: media).0)
    }

    func flag(_ f: (OpaquePointer?, UnsafeMutablePointer<Int32>?) -> leap_status, _ m: OpaquePointer) -> Int32 {
        var v: Int32 = -1
        #expect(f(m, &v) == LEAP_OK)
        return v
    }

    @Test func capabilitiesFollowTheProjector() {
        let text = model(media: nil), vision = model(media: ScriptedMediaEncoder(images: true, audio: false))
        defer { leap_model_free(text); leap_model_free(vision) }
        #expect(flag(leap_model_has_vision, text) == 0)
        #expect(flag(leap_model_has_audio_input, text) == 0)
        #expect(flag(leap_model_has_audio_output, text) == 0)
        #expect(flag(leap_model_has_vision, vision) == 1)
        #expect(flag(leap_model_has_audio_input, vision) == 0)
        #expect(leap_model_has_vision(nil, nil) == LEAP_ERR_INVALID_ARGUMENT)
    }

    @Test func embeddingsComeBackAsRowsAndFailuresClearTheOutputs() {
        let media = ScriptedMediaEncoder()
        let m = model(media: media)
        defer { leap_model_free(m) }
        var rows: UnsafeMutablePointer<Float>?
        var n = 0, e = 0
        let jpeg: [UInt8] = [9, 8, 7, 6]   // 4 bytes: 3 rows
        #expect(leap_model_embed_image(m, jpeg, jpeg.count, &rows, &n, &e) == LEAP_OK)
        #expect(n == 3 && e == 4)
        if let rows { #expect(Array(UnsafeBufferPointer(start: rows, count: n * e)) == [9, 0, 0, 1, 9, 1, 0, 1, 9, 2, 0, 1]) }
        leap_buffer_free(rows)
        let samples: [Float] = [0.5, 0.25]  // 2 samples: 3 rows
        #expect(leap_model_embed_audio_pcm(m, samples, samples.count, 16000, &rows, &n, &e) == LEAP_OK)
        #expect(n == 3 && e == 4)
        leap_buffer_free(rows)
        // a refused image: NULL / 0 out, and the error names the cause
        let bad = Array("BAD!".utf8)
        #expect(leap_model_embed_image(m, bad, bad.count, &rows, &n, &e) == LEAP_ERR_FORMAT)
        #expect(rows == nil && n == 0 && e == 0)
        #expect(String(cString: leap_last_error()).contains("not a JPEG"))
        #expect(leap_model_embed_audio_pcm(m, samples, samples.count, 0, &rows, &n, &e) == LEAP_ERR_INVALID_ARGUMENT)
        #expect(leap_model_embed_image(m, jpeg, jpeg.count, nil, &n, &e) == LEAP_ERR_INVALID_ARGUMENT)
        #expect(leap_model_embed_image(m, nil, 4, &rows, &n, &e) == LEAP_ERR_INVALID_ARGUMENT)
        #expect(leap_model_embed_image_rgb(m, [1, 2, 3], 1, 1, &rows, &n, &e) == LEAP_ERR_UNSUPPORTED)  // scripted: no pixel path
        #expect(leap_model_embed_image_rgb(m, [1, 2, 3], 0, 1, &rows, &n, &e) == LEAP_ERR_INVALID_ARGUMENT)
        #expect(leap_model_embed_image_rgb(m, [1, 2, 3], Int32.max, Int32.max, &rows, &n, &e) == LEAP_ERR_INVALID_ARGUMENT)
        #expect(media.encodeCount == 2)
    }

    @Test func aTextModelSaysWhatIsMissing() {
        let m = model(media: nil)
        defer { leap_model_free(m) }
        var rows: UnsafeMutablePointer<Float>?
        var n = 0, e = 0
        let jpeg: [UInt8] = [0xFF, 0xD8, 0xFF]
        #expect(leap_model_embed_image(m, jpeg, jpeg.count, &rows, &n, &e) == LEAP_ERR_UNSUPPORTED)
        #expect(String(cString: leap_last_error()) == "an image needs a vision encoder; this is a text model (no projector: give mmproj_path or put the model's mmproj-*.gguf next to it)")
    }
}
