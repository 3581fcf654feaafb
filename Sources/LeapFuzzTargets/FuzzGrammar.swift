import Glibc
import LeapGrammar
import LeapJSON

/// A small vocabulary for mask checks: single bytes and a few JSON pieces; the last id is EOG.
private let fuzzVocab: TokenVocabularyIndex = {
    var tokens: [[UInt8]] = (0..<256).map { [UInt8($0)] }
    for s in ["{\"", "\":", "\", \"", "\"}", "true", "null", "12", "\n  ", "\\u00e9", "é", "😀", "]}"] { tokens.append(Array(s.utf8)) }
    tokens.append([])
    return TokenVocabularyIndex(tokens: tokens, endOfGeneration: [tokens.count - 1])
}()

private let grammarSeeds: [(String, String)] = [
    (#"{"type":"object","properties":{"a":{"type":"string","maxLength":3},"b":{"type":"array","items":{"type":"integer","minimum":-5,"maximum":120}},"c":{"enum":["x",1,null,{"k":[true]}]}},"required":["a"]}"#,
     #"{"a":"h\u00e9","b":[-5,17],"c":{"k":[true]}}"#),
    (##"{"$defs":{"n":{"type":"object","properties":{"v":{"type":["number","null"],"minimum":0.5,"maximum":9},"kids":{"type":"array","items":{"$ref":"#/$defs/n"},"maxItems":2}}}},"$ref":"#/$defs/n"}"##,
     #"{"v":1.25,"kids":[{"v":null},{}]}"#),
    (#"{"anyOf":[{"type":"string","minLength":2},{"type":"object","additionalProperties":{"type":"boolean"}}],"nullable":true}"#,
     #"{"x": true, "y": false}"#),
    ("{}", #"[1, {"a": "\ud83d\ude00"}, -0.5e+12]"#),
]

/// JSON-schema grammar: input = schema text, a 0x00 byte, then bytes fed to the matcher (a seed schema
/// when the text does not compile; bytes the matcher refuses are skipped). The schema must compile or
/// throw; the matcher must never trap; a document the matcher accepts completely must
/// parse as JSON (barring duplicate free-form keys, a documented limitation); every token the mask
/// allows must be accepted.
package let fuzzGrammar: FuzzTarget = (
    seeds: grammarSeeds.map { Array($0.0.utf8) + [0] + Array($0.1.utf8) },
    run: { bytes in
        let split = bytes.firstIndex(of: 0) ?? bytes.count
        var schemaText = String(decoding: bytes[0..<split], as: UTF8.self)
        var grammar = try? JSONSchemaGrammar(schemaText: schemaText).grammar
        if grammar == nil {
            // Keep fuzzing the matcher: a seed schema picked by the input, the bytes as the document.
            schemaText = grammarSeeds[Int(bytes.first ?? 0) % grammarSeeds.count].0
            grammar = try? JSONSchemaGrammar(schemaText: schemaText).grammar
        }
        guard let grammar else { return }
        let m = grammar.makeMatcher()
        var fed: [UInt8] = []
        for b in bytes.dropFirst(split + 1) where m.accept(b) { fed.append(b) }
        if m.canEnd {
            do {
                _ = try JSONParser.parse(bytes: fed)
            } catch {
                if !"\(error)".contains("duplicate key") {
                    fuzzFailure("grammar accepted invalid JSON \(String(decoding: fed, as: UTF8.self)) for schema \(schemaText): \(error)")
                }
            }
        }
        let mask = fuzzVocab.mask(for: m)
        for id in mask.allowedIDs where !fuzzVocab.acceptToken(id, matcher: m.clone()) {
            fuzzFailure("mask allowed token \(id) that the matcher rejects (schema \(schemaText))")
        }
        // The shortest completion must complete.
        let rest = m.shortestCompletion()
        if !m.accept(rest) || !m.canEnd {
            fuzzFailure("shortest completion failed for schema \(schemaText) after \(String(decoding: fed, as: UTF8.self))")
        }
    }
)
