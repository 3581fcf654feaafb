// Global functions: jinja2's range/namespace/dict and transformers' raise_exception/strftime_now.
import Glibc

enum Globals {
    static let names: Set<String> = ["range", "namespace", "dict", "joiner", "raise_exception", "strftime_now"]
    /// The sandbox refuses ranges longer than this (jinja2's MAX_RANGE).
    static let maxRange = 100_000

    static func call(_ name: String, _ args: [Value], _ kwargs: [(String, Value)], _ interp: Interpreter) throws -> Value {
        switch name {
        case "range":
            guard kwargs.isEmpty else { throw TemplateFailure("range() takes no keyword arguments") }
            let ints = try args.map { a -> Int in
                guard let i = a.indexValue else {
                    throw TemplateFailure("'\(a.pythonTypeName)' object cannot be interpreted as an integer")
                }
                return i
            }
            var start = 0, stop = 0, stride = 1
            switch ints.count {
            case 1: stop = ints[0]
            case 2: start = ints[0]; stop = ints[1]
            case 3: start = ints[0]; stop = ints[1]; stride = ints[2]
            default: throw TemplateFailure("range expected 1 to 3 arguments, got \(ints.count)")
            }
            if stride == 0 { throw TemplateFailure("range() arg 3 must not be zero") }
            let count = stride > 0 ? (stop > start ? (stop - start - 1) / stride + 1 : 0)
                : (start > stop ? (start - stop - 1) / (-stride) + 1 : 0)
            if count > maxRange {
                throw TemplateFailure("Range too big. The sandbox blocks ranges larger than MAX_RANGE (\(maxRange)).")
            }
            try interp.step(count)
            return .range(start: start, stop: stop, step: stride, items: (0..<count).map { .int(start + $0 * stride) })
        case "namespace", "dict":
            var d = PyDict()
            for a in args {
                guard case .dict(let m) = a else {
                    throw TemplateFailure("\(name)() positional argument must be a mapping")
                }
                for e in m.entries { d[e.key] = e.value }
            }
            for (k, v) in kwargs { d[.string(k)] = v }
            return name == "dict" ? try interp.bounded(.dict(d)) : .namespace(Namespace(d))
        case "joiner":
            let a = try Arguments("joiner", ["sep"], args, kwargs)
            return .callable(.joiner(Joiner(a[0]?.str ?? ", ")))
        case "raise_exception":
            throw TemplateFailure(args.first?.str ?? "raise_exception called")
        case "strftime_now":
            guard let f = args.first, case .string(let fmt) = f else {
                throw TemplateFailure("strftime_now() takes a format string")
            }
            var tmv = tm()
            if let fixed = interp.limits.fixedTime {
                var t = time_t(fixed)
                gmtime_r(&t, &tmv)
            } else {
                var now = time(nil)
                localtime_r(&now, &tmv)
            }
            var buf = [CChar](repeating: 0, count: 512)
            let n = strftime(&buf, buf.count, fmt, &tmv)
            return .string(n == 0 ? "" : String(cString: buf))
        default:
            throw TemplateFailure("'\(name)' is not callable")
        }
    }
}
