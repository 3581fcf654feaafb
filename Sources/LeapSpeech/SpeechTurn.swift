// SpeechTurn: which modality an LFM2.5-Audio generation produces next, as a small state machine the runtime's
// token loop drives. It owns no model: the runtime keeps its text sampler and backbone context, a
// SpeakingSession (SpeakingSession.swift) turns hidden states into audio.
//
// API, per generation step:
//
//   var turn = SpeechTurn(config)                      // once per assistant turn
//   loop {
//     switch turn.next {
//     case .text:                                      // "sample a text token (with your usual sampler) and feed it"
//       let t = sampleText(backbone.logits)
//       if turn.acceptText(t) == .endOfTurn { stop }   // <|im_end|> (7): not fed
//       emit text t; backbone.eval(tokens: [t])
//     case .audio:                                     // "run an audio frame"
//       let out = try session.decodeFrame(hidden: backbone.lastHiddenState())   // codes, feedback row, samples
//       turn.acceptAudio(out.frame)
//       emit out.samples
//       backbone.eval(embeddings: out.feedback, outputHead: turn.next == .text)   // text logits only if needed
//     case .done: stop
//     }
//   }
//   emit session.finishTurn()                          // the waveform's last 480 samples
//
// Modes (liquid-audio's generate_sequential / generate_interleaved, token ids of LFM2.5-Audio):
//   textOnly     never audio ("Perform ASR.").
//   sequential   text until <|audio_start|> (128), then audio frames until a frame ends the audio (code 2048
//                in codebook 0; a 2048 in a later codebook does not end it),
//                then text again ("Perform TTS. Use the {US,UK} {male,female} voice.").
//   interleaved  blocks of 6 text tokens and 12 audio frames; <|text_end|> (130) switches to audio for good
//                (a frame that ends the audio goes back to text, and each text token after it back to audio,
//                as liquid-audio does; Liquid's llama.cpp runner stays in text instead). A frame that ends the
//                audio also ends a block early ("Respond with interleaved text and audio.").
//   <|im_end|> (7) ends the turn in every mode.
//
// Audio sampling defaults follow Liquid's llama.cpp runner: temperature 0.8, top-k 4 (interleaved) or 64
// (sequential). liquid-audio's own generate_* default to greedy codes (temperature None); its README uses
// temperature 1.0 / top-k 4 for interleaved chat and 0.8 / 64 for TTS.
import LeapCore

package enum SpeechOutputMode: String, Sendable, CaseIterable {
    case textOnly
    case sequential
    case interleaved

    /// The mode Liquid's runner picks for a system prompt (surrounding whitespace ignored); nil when the
    /// prompt is not one of LFM2.5-Audio's task prompts.
    package static func forSystemPrompt(_ prompt: String?) -> SpeechOutputMode? {
        guard let prompt else { return nil }
        var s = Substring(prompt)
        while let c = s.first, c.isWhitespace { s.removeFirst() }
        while let c = s.last, c.isWhitespace { s.removeLast() }
        switch s {
        case "Perform ASR.": return .textOnly
        case "Respond with interleaved text and audio.": return .interleaved
        case "Perform TTS. Use the US male voice.", "Perform TTS. Use the UK male voice.",
             "Perform TTS. Use the US female voice.", "Perform TTS. Use the UK female voice.":
            return .sequential
        default: return nil
        }
    }
}

package enum SpeechTokens {
    package static let imEnd: Int32 = 7
    package static let audioStart: Int32 = 128
    package static let textEnd: Int32 = 130
}

package struct SpeechConfig: Sendable, Equatable {
    package var mode: SpeechOutputMode
    package var audioSampling: AudioSamplingParams
    package var textTokensPerBlock = 6
    package var audioFramesPerBlock = 12

    /// The runner's defaults for `mode`.
    package init(mode: SpeechOutputMode, seed: UInt64 = 0) {
        self.mode = mode
        audioSampling = AudioSamplingParams(temperature: 0.8, topK: mode == .interleaved ? 4 : 64, seed: seed)
    }

    /// The mode from the system prompt unless `override` is given; an unrecognised prompt gives text only.
    package init(systemPrompt: String?, override: SpeechOutputMode? = nil, seed: UInt64 = 0) {
        self.init(mode: override ?? SpeechOutputMode.forSystemPrompt(systemPrompt) ?? .textOnly, seed: seed)
    }
}

package struct SpeechTurn: Sendable {
    package enum Next: Sendable, Equatable {
        case text    // sample a text token and give it to acceptText
        case audio   // decode an audio frame from the last hidden state and give it to acceptAudio
        case done    // the turn has ended
    }

    package enum TextOutcome: Sendable, Equatable {
        case feed        // emit the token and evaluate it
        case endOfTurn   // <|im_end|>: the turn is over, do not evaluate it
    }

    package let config: SpeechConfig
    package private(set) var next: Next = .text
    private var left: Int            // steps left in the current interleaved block
    private var textDone = false     // interleaved: <|text_end|> was generated

    package init(_ config: SpeechConfig) {
        self.config = config
        left = config.textTokensPerBlock
    }

    package mutating func acceptText(_ token: Int32) -> TextOutcome {
        left -= 1
        if token == SpeechTokens.imEnd {
            next = .done
            return .endOfTurn
        }
        switch config.mode {
        case .textOnly:
            break
        case .sequential:
            if token == SpeechTokens.audioStart { next = .audio }
        case .interleaved:
            if token == SpeechTokens.textEnd { textDone = true }
            if left == 0 || textDone {
                next = .audio
                left = config.audioFramesPerBlock
            }
        }
        return .feed
    }

    package mutating func acceptAudio(_ frame: AudioFrame) {
        left -= 1
        if config.mode == .interleaved && left == 0 && !textDone {
            next = .text
            left = config.textTokensPerBlock
        }
        if frame.isEndOfAudio { next = .text }
    }

    /// Ends the turn early (a token budget, a stop request).
    package mutating func finish() { next = .done }
}
