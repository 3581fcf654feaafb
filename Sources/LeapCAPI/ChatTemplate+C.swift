import CLeap
import Glibc
import LeapChatTemplate
import LeapCore
import LeapJSON

// leap_chat_template_*: a handle around an immutable, parsed `ChatTemplate` (renderable from any thread).

final class ChatTemplateBox: HandleBox {
    let template: ChatTemplate
    init(_ template: ChatTemplate) {
        self.template = template
        super.init(kind: .template)
    }
}

/// The fallback template as a C string that lives as long as the process.
private let chatMLCString: UnsafeMutablePointer<CChar>? = strdup(ChatTemplate.chatML)

/// Parses a JSON argument and checks its top-level shape.
private func jsonArgument(_ p: UnsafePointer<CChar>?, _ name: StaticString) throws -> JSONValue {
    let text = try utf8String(p, name)
    return try JSONParser.parse(text)
}

@c @implementation
public func leap_chat_template_create(_ source: UnsafePointer<CChar>?,
                                      _ out: UnsafeMutablePointer<OpaquePointer?>?) -> leap_status {
    ffi {
        let out = try required(out, "out_template")
        out.pointee = nil
        let text = try utf8String(source, "source")
        out.pointee = Handle.retain(ChatTemplateBox(try ChatTemplate(source: text)))
    }
}

@c @implementation
public func leap_chat_template_free(_ t: OpaquePointer?) {
    Handle.release(t, kind: .template)
}

@c @implementation
public func leap_chat_template_render(_ t: OpaquePointer?, _ messagesJSON: UnsafePointer<CChar>?,
                                      _ toolsJSON: UnsafePointer<CChar>?, _ addGenerationPrompt: Int32,
                                      _ extraJSON: UnsafePointer<CChar>?,
                                      _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> leap_status {
    ffi {
        let out = try required(out, "out_text")
        out.pointee = nil
        let box = try Handle.borrow(t, ChatTemplateBox.self, kind: .template, "tmpl")
        guard let messages = try jsonArgument(messagesJSON, "messages_json").arrayValue else {
            throw LeapError.invalidArgument("messages_json must be a JSON array of message objects")
        }
        var tools: [JSONValue]? = nil
        if toolsJSON != nil {
            let v = try jsonArgument(toolsJSON, "tools_json")
            guard let a = v.arrayValue else { throw LeapError.invalidArgument("tools_json must be a JSON array (or NULL)") }
            tools = a
        }
        var extra = JSONObject()
        if extraJSON != nil {
            guard let o = try jsonArgument(extraJSON, "extra_json").objectValue else {
                throw LeapError.invalidArgument("extra_json must be a JSON object (or NULL)")
            }
            extra = o
        }
        let text = try box.template.render(messages: messages, tools: tools, addGenerationPrompt: addGenerationPrompt != 0,
                                           bosToken: "", eosToken: "", extra: extra)
        out.pointee = try ownedCString(text)
    }
}

@c @implementation
public func leap_chat_template_chatml() -> UnsafePointer<CChar>? {
    UnsafePointer(chatMLCString)
}
