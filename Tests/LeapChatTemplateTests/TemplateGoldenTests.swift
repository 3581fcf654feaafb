// Chat templates rendered byte-identically to Python jinja2 (goldens from scripts/fixtures/make_template_goldens.py).
import LeapChatTemplate
import LeapCore
import LeapJSON
import Glibc
import LeapTestFiles
import Testing

let templatesDir = fixturesDir("templates")

func readJSON(_ path: String) throws -> JSONValue { try JSONParser.parse(String(decoding: try fileBytes(path), as: UTF8.self)) }

/// Where two renderings diverge, with a little context, for readable failures.
func firstDifference(_ got: String, _ want: String) -> String {
    let g = Array(got.unicodeScalars), w = Array(want.unicodeScalars)
    var i = 0
    while i < g.count && i < w.count && g[i] == w[i] { i += 1 }
    func excerpt(_ a: [Unicode.Scalar]) -> String {
        var v = String.UnicodeScalarView()
        v.append(contentsOf: a[max(0, i - 30)..<min(a.count, i + 40)])
        return String(v).debugDescription
    }
    return "first difference at scalar \(i): got \(excerpt(g)) want \(excerpt(w))"
}

/// The `strftime_now` instant pinned by the golden script.
let fixedTime = 1721952000

let templateNames: [String] = {
    guard let d = opendir(templatesDir + "/jinja") else { return [] }
    defer { closedir(d) }
    var names: [String] = []
    while let e = readdir(d) {
        let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        if name.hasSuffix(".jinja") { names.append(String(name.dropLast(6))) }
    }
    return names.sorted()
}()

@Test func fixturesPresent() {
    #expect(templateNames.count >= 40, "templates in \(templatesDir)/jinja")
}

/// Every conversation of contexts.json rendered with one template, compared with jinja2's output (or the fact
/// that jinja2 raised).
@Test(arguments: templateNames)
func templateMatchesJinja2(_ name: String) throws {
    let source = String(decoding: try fileBytes(templatesDir + "/jinja/\(name).jinja"), as: UTF8.self)
    let contexts = try #require(try readJSON(templatesDir + "/contexts.json").arrayValue)
    let goldens = try #require(try readJSON(templatesDir + "/goldens/\(name).json").objectValue)
    let template: ChatTemplate
    do {
        template = try ChatTemplate(source: source, fixedTime: fixedTime)
    } catch {
        // jinja2 failing to compile shows up as the same error on every case.
        let allFail = goldens.allSatisfy { $0.value["error"] != nil }
        #expect(allFail, "\(name): parse failed (\(error)) but jinja2 compiled it")
        print("\(name): \(allFail ? goldens.count : 0)/\(goldens.count) (template rejected like jinja2)")
        return
    }
    var passed = 0
    for c in contexts {
        let caseName = try #require(c["name"]?.stringValue)
        let context = try #require(c["context"]?.objectValue)
        let golden = try #require(goldens[caseName])
        let result: Result<String, Error> = Result { try template.render(context: context) }
        switch (result, golden["output"]?.stringValue, golden["error"]?.stringValue) {
        case (.success(let got), let want?, _):
            #expect(got == want, "\(name) / \(caseName): \(firstDifference(got, want))")
            if got == want { passed += 1 }
        case (.failure(let e), nil, _?):
            #expect((e as? LeapError)?.kind == .format)
            passed += 1
        case (.success, nil, let err):
            Issue.record("\(name) / \(caseName): rendered, but jinja2 raised \(err ?? "?")")
        case (.failure(let e), _, _):
            Issue.record("\(name) / \(caseName): \(e)")
        }
    }
    print("\(name): \(passed)/\(contexts.count)")
}

/// Small templates, one language feature each, against jinja2.
@Test func languageSnippetsMatchJinja2() throws {
    let doc = try readJSON(templatesDir + "/snippets.json")
    let context = try #require(doc["context"]?.objectValue)
    let cases = try #require(doc["cases"]?.arrayValue)
    var passed = 0
    for c in cases {
        let source = try #require(c["template"]?.stringValue)
        let result: Result<String, Error> = Result { try ChatTemplate(source: source).render(context: context) }
        switch (result, c["output"]?.stringValue) {
        case (.success(let got), let want?):
            #expect(got == want, "template: \(source): \(firstDifference(got, want))")
            if got == want { passed += 1 }
        case (.failure(let e), nil):
            let message = (e as? LeapError).map { "\($0.kind): \($0.message)" } ?? "\(e)"
            #expect((e as? LeapError)?.kind == .format, "\(source): \(message)")
            #expect(message.contains("template"), "error names the template position: \(message)")
            passed += 1
        case (.success(let got), nil):
            Issue.record("template: \(source) rendered \(got.debugDescription) but jinja2 raised \(c["error"]?.stringValue ?? "")")
        case (.failure(let e), _?):
            Issue.record("template: \(source) failed: \(e)")
        }
    }
    print("snippets: \(passed)/\(cases.count)")
}
