import Testing
import LeapSpeech

private let speechFrame = AudioFrame(codes: [1, 2, 3, 4, 5, 6, 7, 8])
private let endFrame = AudioFrame(codes: [Int32](repeating: 2048, count: 8))

@Test func modeFromSystemPrompt() {
    #expect(SpeechOutputMode.forSystemPrompt("Perform ASR.") == .textOnly)
    #expect(SpeechOutputMode.forSystemPrompt(" Respond with interleaved text and audio.\n") == .interleaved)
    #expect(SpeechOutputMode.forSystemPrompt("Perform TTS. Use the UK female voice.") == .sequential)
    #expect(SpeechOutputMode.forSystemPrompt("You are a helpful assistant.") == nil)
    #expect(SpeechOutputMode.forSystemPrompt(nil) == nil)
    #expect(SpeechConfig(systemPrompt: "You are a helpful assistant.").mode == .textOnly)
    #expect(SpeechConfig(systemPrompt: "Perform ASR.", override: .interleaved).mode == .interleaved)
    // the runner's audio sampling
    #expect(SpeechConfig(mode: .interleaved).audioSampling == AudioSamplingParams(temperature: 0.8, topK: 4))
    #expect(SpeechConfig(mode: .sequential).audioSampling == AudioSamplingParams(temperature: 0.8, topK: 64))
}

@Test func textOnlyNeverSpeaks() {
    var t = SpeechTurn(SpeechConfig(mode: .textOnly))
    for tok: Int32 in [128, 130, 50, 60] {
        #expect(t.acceptText(tok) == .feed)
        #expect(t.next == .text)
    }
    #expect(t.acceptText(7) == .endOfTurn)
    #expect(t.next == .done)
}

@Test func sequentialSpeaksFromAudioStartToEndOfAudio() {
    var t = SpeechTurn(SpeechConfig(mode: .sequential))
    #expect(t.acceptText(130) == .feed)            // <|text_end|> does nothing in this mode
    #expect(t.next == .text)
    #expect(t.acceptText(128) == .feed)
    #expect(t.next == .audio)
    for _ in 0..<30 { t.acceptAudio(speechFrame); #expect(t.next == .audio) }
    t.acceptAudio(endFrame)
    #expect(t.next == .text)
    #expect(t.acceptText(7) == .endOfTurn)
    #expect(t.next == .done)
}

@Test func interleavedAlternatesBlocksThenSpeaksAfterTextEnd() {
    var t = SpeechTurn(SpeechConfig(mode: .interleaved))
    var trace: [SpeechTurn.Next] = []
    for _ in 0..<2 {
        for _ in 0..<6 { trace.append(t.next); _ = t.acceptText(50) }
        for _ in 0..<12 { trace.append(t.next); t.acceptAudio(speechFrame) }
    }
    #expect(trace == ([SpeechTurn.Next](repeating: .text, count: 6) + [SpeechTurn.Next](repeating: .audio, count: 12)) + ([SpeechTurn.Next](repeating: .text, count: 6) + [SpeechTurn.Next](repeating: .audio, count: 12)))
    // An end of audio inside a block goes back to text and the block's count runs on (liquid-audio and the
    // runner alike): after 3 of 12 frames, 9 text tokens follow before the next audio block.
    _ = (0..<6).map { _ in t.acceptText(50) }
    #expect(t.next == .audio)
    t.acceptAudio(speechFrame); t.acceptAudio(speechFrame); t.acceptAudio(endFrame)
    #expect(t.next == .text)
    for _ in 0..<8 { _ = t.acceptText(50); #expect(t.next == .text) }
    _ = t.acceptText(50)
    #expect(t.next == .audio)
    // <|text_end|>: audio until the end of audio, however long
    for _ in 0..<12 { t.acceptAudio(speechFrame) }
    #expect(t.next == .text)
    for _ in 0..<5 { _ = t.acceptText(50) }
    #expect(t.acceptText(130) == .feed)
    #expect(t.next == .audio)
    for _ in 0..<40 { t.acceptAudio(speechFrame); #expect(t.next == .audio) }
    t.acceptAudio(endFrame)
    #expect(t.next == .text)
    // after <|text_end|>, liquid-audio goes back to audio after every text token
    #expect(t.acceptText(60) == .feed)
    #expect(t.next == .audio)
    t.acceptAudio(endFrame)
    #expect(t.acceptText(7) == .endOfTurn)
    #expect(t.next == .done)
}
