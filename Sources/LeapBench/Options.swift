// The benchmarks' command-line options: `--name value` anywhere after the subcommand's arguments.

/// The integer after `name`, or `def` when the option is absent or not an integer.
func intOption(_ args: [String], _ name: String, _ def: Int) -> Int {
    if let i = args.firstIndex(of: name), i + 1 < args.count, let v = Int(args[i + 1]) { return v }
    return def
}

/// The text after `name`, or nil when the option is absent.
func stringOption(_ args: [String], _ name: String) -> String? {
    if let i = args.firstIndex(of: name), i + 1 < args.count { return args[i + 1] }
    return nil
}
