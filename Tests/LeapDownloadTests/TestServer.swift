import Glibc
import LeapCore
import LeapDownload
import LeapJSON
import LeapTestFiles

let fixtureModel = fixturesDir("models") + "/lfm2-tiny-q8_0.gguf"

/// scripts/bundle_test_server.py serving `root` on a loopback port, stopped when released.
final class TestServer {
    let pid: pid_t
    let port: Int
    var base: String { "http://127.0.0.1:\(port)" }

    init(root: String) throws {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw LeapError.io("pipe failed") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
        posix_spawn_file_actions_addclose(&actions, fds[0])
        let args = ["python3", repoDir + "/scripts/bundle_test_server.py", root]
        var argv: [UnsafeMutablePointer<CChar>?] = args.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var child: pid_t = 0
        let rc = posix_spawnp(&child, "python3", &actions, nil, &argv, environ)
        close(fds[1])
        guard rc == 0 else {
            close(fds[0])
            throw LeapError.io("cannot start python3: \(String(cString: strerror(rc)))")
        }
        pid = child
        // First line: "PORT <n>".
        var line: [UInt8] = []
        var c: UInt8 = 0
        while read(fds[0], &c, 1) == 1 && c != 10 { line.append(c) }
        close(fds[0])
        let text = String(decoding: line, as: UTF8.self)
        guard text.hasPrefix("PORT "), let p = Int(text.dropFirst(5)) else {
            kill(child, SIGKILL)
            var status: Int32 = 0
            waitpid(child, &status, 0)
            throw LeapError.io("the test server did not start (\(text))")
        }
        port = p
    }

    deinit {
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }

    /// The requests served so far: (path, Range header).
    func requests() throws -> [(path: String, range: String?)] {
        let body = try Downloader.fetch(base + "/_log", maxBytes: 1 << 20)
        let log = try JSONParser.parse(bytes: body)
        return (log.arrayValue ?? []).map { ($0["path"]?.stringValue ?? "", $0["range"]?.stringValue) }
    }
}

/// A fresh folder under /tmp, removed with everything in it when released.
final class TempDir {
    let path: String
    init() {
        var template = Array("/tmp/leap-download-test-XXXXXX".utf8CString)
        path = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
    }
    deinit { removeTree(path) }
}

func removeTree(_ path: String) {
    var st = stat()
    guard lstat(path, &st) == 0 else { return }
    if (st.st_mode & S_IFMT) == S_IFDIR, let d = opendir(path) {
        var names: [String] = []
        while let e = readdir(d) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        closedir(d)
        for n in names { removeTree(path + "/" + n) }
        rmdir(path)
    } else {
        unlink(path)
    }
}

func writeFile(_ path: String, _ bytes: [UInt8]) throws {
    guard let f = fopen(path, "wb") else { throw LeapError(.io, "cannot create \(path)") }
    defer { fclose(f) }
    guard fwrite(bytes, 1, bytes.count, f) == bytes.count else { throw LeapError(.io, "cannot write \(path)") }
}

func exists(_ path: String) -> Bool {
    var st = stat()
    return lstat(path, &st) == 0
}

func size(_ path: String) -> Int {
    var st = stat()
    return stat(path, &st) == 0 ? Int(st.st_size) : -1
}

/// Runs `body` and returns the LeapError it throws (nil when it does not throw one).
func leapError(_ body: () throws -> Void) -> LeapError? {
    do {
        try body()
        return nil
    } catch let e as LeapError {
        return e
    } catch {
        return LeapError(.internal, "\(error)")
    }
}
