import CLeap
import Glibc
import LeapCore
import LeapJSON
import LeapAudio
import LeapImage
import LeapMessages

// leap_message_*: a handle around a `ChatMessage` value.

final class MessageBox: HandleBox {
    var message: ChatMessage
    init(_ message: ChatMessage) {
        self.message = message
        super.init(kind: .message)
    }
}

func borrowMessage(_ p: OpaquePointer?, _ name: StaticString = "message") throws -> MessageBox {
    try Handle.borrow(p, MessageBox.self, kind: .message, name)
}

func role(from c: leap_role) throws -> ChatMessageRole {
    switch c {
    case LEAP_ROLE_USER: return .user
    case LEAP_ROLE_SYSTEM: return .system
    case LEAP_ROLE_ASSISTANT: return .assistant
    case LEAP_ROLE_TOOL: return .tool
    default: throw LeapError.invalidArgument("role \(c.rawValue) is not a leap_role value")
    }
}

func cRole(_ r: ChatMessageRole) -> leap_role {
    switch r {
    case .user: return LEAP_ROLE_USER
    case .system: return LEAP_ROLE_SYSTEM
    case .assistant: return LEAP_ROLE_ASSISTANT
    case .tool: return LEAP_ROLE_TOOL
    }
}

private func part(_ m: MessageBox, _ index: Int) throws -> ChatMessageContent {
    guard index >= 0, index < m.message.content.count else {
        throw LeapError.invalidArgument("part index \(index) is out of range (the message has \(m.message.content.count) parts)")
    }
    return m.message.content[index]
}

func validSampleRate(_ rate: Int32) throws -> Int {
    guard rate > 0, rate <= 1_000_000 else { throw LeapError.invalidArgument("sample_rate must be in 1...1000000, got \(rate)") }
    return Int(rate)
}

@c @implementation
public func leap_role_string(_ role: leap_role) -> UnsafePointer<CChar>? {
    let s: StaticString
    switch role {
    case LEAP_ROLE_USER: s = "user"
    case LEAP_ROLE_SYSTEM: s = "system"
    case LEAP_ROLE_ASSISTANT: s = "assistant"
    case LEAP_ROLE_TOOL: s = "tool"
    default: return nil
    }
    return UnsafeRawPointer(s.utf8Start).assumingMemoryBound(to: CChar.self)
}

@c @implementation
public func leap_message_create(_ r: leap_role, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> leap_status {
    ffi {
        let out = try required(out, "out_message")
        out.pointee = nil
        out.pointee = Handle.retain(MessageBox(ChatMessage(role: try role(from: r), content: [])))
    }
}

@c @implementation
public func leap_message_copy(_ m: OpaquePointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> leap_status {
    ffi {
        let out = try required(out, "out_copy")
        out.pointee = nil
        out.pointee = Handle.retain(MessageBox(try borrowMessage(m).message))
    }
}

@c @implementation
public func leap_message_free(_ m: OpaquePointer?) {
    Handle.release(m, kind: .message)
}

@c @implementation
public func leap_message_from_json(_ json: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> leap_status {
    ffi {
        let out = try required(out, "out_message")
        out.pointee = nil
        let text = try utf8String(json, "json")
        out.pointee = Handle.retain(MessageBox(try ChatMessage.fromJSON(text)))
    }
}

@c @implementation
public func leap_message_to_json(_ m: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> leap_status {
    ffi {
        let out = try required(out, "out_json")
        out.pointee = nil
        out.pointee = try ownedCString(try borrowMessage(m).message.toJSONString())
    }
}

@c @implementation
public func leap_message_add_text(_ m: OpaquePointer?, _ text: UnsafePointer<CChar>?) -> leap_status {
    ffi {
        let box = try borrowMessage(m)
        box.message.content.append(.text(try utf8String(text, "utf8")))
    }
}

@c @implementation
public func leap_message_add_image_jpeg(_ m: OpaquePointer?, _ data: UnsafeRawPointer?, _ n: Int) -> leap_status {
    ffi {
        let box = try borrowMessage(m)
        let bytes = try array(data?.assumingMemoryBound(to: UInt8.self), n, "jpeg")
        try ContentValidation.checkJPEG(bytes, field: "jpeg")
        box.message.content.append(.image(jpeg: bytes))
    }
}

@c @implementation
public func leap_message_add_image_rgb(_ m: OpaquePointer?, _ rgb: UnsafePointer<UInt8>?, _ width: Int32, _ height: Int32,
                                       _ quality: Int32) -> leap_status {
    ffi {
        let box = try borrowMessage(m)
        guard (1...100).contains(quality) else { throw LeapError.invalidArgument("quality must be in 1...100, got \(quality)") }
        let jpeg = try JPEG.encode(try rgbImage(rgb, width, height), quality: Int(quality))
        box.message.content.append(.image(jpeg: jpeg))
    }
}

@c @implementation
public func leap_message_add_audio_wav(_ m: OpaquePointer?, _ data: UnsafeRawPointer?, _ n: Int) -> leap_status {
    ffi {
        let box = try borrowMessage(m)
        let bytes = try array(data?.assumingMemoryBound(to: UInt8.self), n, "wav")
        try ContentValidation.checkWAV(bytes, field: "wav")
        box.message.content.append(.audio(wav: bytes))
    }
}

@c @implementation
public func leap_message_add_audio_samples(_ m: OpaquePointer?, _ samples: UnsafePointer<Float>?, _ frames: Int,
                                           _ channels: Int32, _ rate: Int32) -> leap_status {
    ffi {
        let box = try borrowMessage(m)
        guard channels >= 1, channels <= 64 else { throw LeapError.invalidArgument("channel_count must be in 1...64, got \(channels)") }
        let sr = try validSampleRate(rate)
        let (total, overflow) = frames.multipliedReportingOverflow(by: Int(channels))
        guard !overflow, frames >= 0 else { throw LeapError.invalidArgument("n_frames \(frames) is too large") }
        let data = try samplesArray(samples, total, "interleaved")
        box.message.content.append(.audio(wav: try encodeWAV(data, channels: Int(channels), sampleRate: sr, encoding: .float32LEAP)))
    }
}

@c @implementation
public func leap_message_add_audio_pcm_f32(_ m: OpaquePointer?, _ samples: UnsafePointer<Float>?, _ n: Int,
                                           _ rate: Int32) -> leap_status {
    ffi {
        let box = try borrowMessage(m)
        let sr = try validSampleRate(rate)
        guard n >= 0 else { throw LeapError.invalidArgument("n_samples must not be negative") }
        box.message.content.append(.audioPCMF32(samples: try samplesArray(samples, n, "samples"), sampleRate: sr))
    }
}

@c @implementation
public func leap_message_set_reasoning(_ m: OpaquePointer?, _ text: UnsafePointer<CChar>?) -> leap_status {
    ffi {
        let box = try borrowMessage(m)
        if text == nil {
            box.message.reasoningContent = nil
        } else {
            let s = try utf8String(text, "utf8")
            box.message.reasoningContent = s.isEmpty ? nil : s
        }
    }
}

@c @implementation
public func leap_message_add_function_call(_ m: OpaquePointer?, _ name: UnsafePointer<CChar>?,
                                           _ args: UnsafePointer<CChar>?) -> leap_status {
    ffi {
        let box = try borrowMessage(m)
        let n = try utf8String(name, "name")
        guard !n.isEmpty else { throw LeapError.invalidArgument("name must not be empty") }
        var arguments = JSONObject()
        if args != nil {
            let text = try utf8String(args, "arguments_json")
            let v: JSONValue
            do { v = try JSONParser.parse(text) } catch let e as LeapError {
                throw LeapError.serialization("arguments_json: \(e.message)")
            }
            guard case .object(let o) = v else { throw LeapError.serialization("arguments_json: expected a JSON object, found \(v.typeName)") }
            arguments = o
        }
        var calls = box.message.functionCalls ?? []
        calls.append(LeapFunctionCall(name: n, arguments: arguments))
        box.message.functionCalls = calls
    }
}

@c @implementation
public func leap_message_role(_ m: OpaquePointer?, _ out: UnsafeMutablePointer<leap_role>?) -> leap_status {
    ffi {
        let out = try required(out, "out_role")
        out.pointee = cRole(try borrowMessage(m).message.role)
    }
}

@c @implementation
public func leap_message_part_count(_ m: OpaquePointer?, _ out: UnsafeMutablePointer<Int>?) -> leap_status {
    ffi {
        let out = try required(out, "out_count")
        out.pointee = try borrowMessage(m).message.content.count
    }
}

@c @implementation
public func leap_message_part_type(_ m: OpaquePointer?, _ index: Int, _ out: UnsafeMutablePointer<leap_content_type>?) -> leap_status {
    ffi {
        let out = try required(out, "out_type")
        switch try part(try borrowMessage(m), index) {
        case .text: out.pointee = LEAP_CONTENT_TEXT
        case .image: out.pointee = LEAP_CONTENT_IMAGE
        case .audio: out.pointee = LEAP_CONTENT_AUDIO
        case .audioPCMF32: out.pointee = LEAP_CONTENT_AUDIO_PCM_F32
        }
    }
}

@c @implementation
public func leap_message_part_text(_ m: OpaquePointer?, _ index: Int, _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> leap_status {
    ffi {
        let out = try required(out, "out_text")
        out.pointee = nil
        guard case .text(let t) = try part(try borrowMessage(m), index) else {
            throw LeapError.invalidArgument("part \(index) is not a text part")
        }
        out.pointee = try ownedCString(t)
    }
}

@c @implementation
public func leap_message_part_data(_ m: OpaquePointer?, _ index: Int, _ out: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?,
                                   _ outSize: UnsafeMutablePointer<Int>?) -> leap_status {
    ffi {
        try returnBuffer(out, "out_data", outSize, "out_size") {
            switch try part(try borrowMessage(m), index) {
            case .image(let b), .audio(let b): return b
            default: throw LeapError.invalidArgument("part \(index) is not an image or audio (WAV) part")
            }
        }
    }
}

@c @implementation
public func leap_message_part_pcm(_ m: OpaquePointer?, _ index: Int, _ out: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>?,
                                  _ outCount: UnsafeMutablePointer<Int>?, _ outRate: UnsafeMutablePointer<Int32>?) -> leap_status {
    ffi {
        let out = try required(out, "out_samples")
        let outCount = try required(outCount, "out_count")
        let outRate = try required(outRate, "out_sample_rate")
        out.pointee = nil
        outCount.pointee = 0
        outRate.pointee = 0
        guard case .audioPCMF32(let samples, let rate) = try part(try borrowMessage(m), index) else {
            throw LeapError.invalidArgument("part \(index) is not an audio_pcm_f32 part")
        }
        out.pointee = try ownedBuffer(samples)
        outCount.pointee = samples.count
        outRate.pointee = Int32(clamping: rate)
    }
}

@c @implementation
public func leap_message_reasoning(_ m: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> leap_status {
    ffi {
        let out = try required(out, "out_text")
        out.pointee = nil
        if let r = try borrowMessage(m).message.reasoningContent { out.pointee = try ownedCString(r) }
    }
}

@c @implementation
public func leap_message_function_call_count(_ m: OpaquePointer?, _ out: UnsafeMutablePointer<Int>?) -> leap_status {
    ffi {
        let out = try required(out, "out_count")
        out.pointee = try borrowMessage(m).message.functionCalls?.count ?? 0
    }
}

@c @implementation
public func leap_message_function_call(_ m: OpaquePointer?, _ index: Int, _ outName: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                                       _ outArgs: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> leap_status {
    ffi {
        let outName = try required(outName, "out_name")
        let outArgs = try required(outArgs, "out_arguments_json")
        outName.pointee = nil
        outArgs.pointee = nil
        let calls = try borrowMessage(m).message.functionCalls ?? []
        guard index >= 0, index < calls.count else {
            throw LeapError.invalidArgument("function call index \(index) is out of range (the message has \(calls.count))")
        }
        let name = try ownedCString(calls[index].name)
        do {
            outArgs.pointee = try ownedCString(JSONValue.object(calls[index].arguments).serialized())
        } catch {
            free(name)
            throw error
        }
        outName.pointee = name
    }
}
