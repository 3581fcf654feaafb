import LeapCore
import LeapJSON

/// Who wrote a message. Raw values are the wire strings.
package enum ChatMessageRole: String, Sendable, CaseIterable {
    case user, system, assistant, tool
}

/// One ordered fragment of a message.
package enum ChatMessageContent: Equatable, Sendable {
    case text(String)
    /// JPEG bytes (validated to start with the SOI marker).
    case image(jpeg: [UInt8])
    /// WAV bytes (validated RIFF/WAVE header); `format` is the wire `input_audio.format`, always "wav".
    case audio(wav: [UInt8])
    /// Mono float PCM in [-1, 1] (LEAP's `AudioPcmF32`; generated audio lands here).
    case audioPCMF32(samples: [Float], sampleRate: Int)

    package var textValue: String? { if case .text(let t) = self { return t } else { return nil } }
}

/// A function call made by the assistant: a name and JSON arguments (an object).
package struct LeapFunctionCall: Equatable, Sendable {
    package var name: String
    package var arguments: JSONObject

    package init(name: String, arguments: JSONObject = JSONObject()) {
        self.name = name
        self.arguments = arguments
    }
}

/// A chat message as the LEAP SDK defines it: role, ordered content parts, optional reasoning content
/// (text the model produced inside `<think>` tags) and optional function calls.
package struct ChatMessage: Equatable, Sendable {
    package var role: ChatMessageRole
    package var content: [ChatMessageContent]
    package var reasoningContent: String?
    package var functionCalls: [LeapFunctionCall]?

    package init(role: ChatMessageRole, content: [ChatMessageContent], reasoningContent: String? = nil,
                 functionCalls: [LeapFunctionCall]? = nil) {
        self.role = role
        self.content = content
        self.reasoningContent = reasoningContent
        self.functionCalls = functionCalls
    }

    package init(role: ChatMessageRole, text: String) {
        self.init(role: role, content: [.text(text)])
    }

    /// All text parts concatenated (what a text-only model sees of this message).
    package var text: String {
        content.compactMap { $0.textValue }.joined()
    }
}
