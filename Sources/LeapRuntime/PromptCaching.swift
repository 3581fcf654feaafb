import Glibc
import LeapCore
import LeapMessages
import LeapModels
import LeapPromptCache
import LeapToolCalls

// Conversations and saved prompt state: the prompt cache's keys (a prompt's units up to the first generated
// audio frame, which is not content-addressed), where a turn's prompt is snapshotted, and the explicit
// save / restore of a conversation's evaluated positions.
//
// Where a turn is snapshotted: at the end of the part of the prompt that the next turn (or the next launch
// of the app) will share, i.e. the common prefix of this prompt and the prompt of the history without the
// new message (the system prompt and tools on the first turn, the whole previous exchange later; on a first turn
// without history, what the template writes before the message's text, which stateless clients with the same
// system prompt or none share from one request to the next). The
// prompt is evaluated up to there, the state is copied (memory LRU), the rest is evaluated, and the file is
// written by the cache's background thread. Two more snapshots go to memory only (Generation's
// rememberInMemory): the prompt but its last position, and at the end of the turn the prompt with the
// answer's evaluated tokens. A turn evaluates its prompt in the same parts whether the prefix comes from
// the cache or not (up to the snapshot, the rest but its last position, the last position alone, as a
// request repeating the prompt evaluates it after restoring the rest), so a run that restores a snapshot
// continues bit for bit as the run that computed it (and, on the scalar kernel path, as a run without a
// cache: there a batch's split does not change its results).

extension PromptUnit {
    /// The cache's unit, nil for a generated audio frame.
    var prefixUnit: PrefixUnit? {
        switch self {
        case .token(let t): return .token(t)
        case .media(let key, let row): return .media(digest: key.digest, row: row)
        case .generatedAudio: return nil
        }
    }

    init(_ u: PrefixUnit) {
        switch u {
        case .token(let t): self = .token(t)
        case .media(let digest, let row): self = .media(MediaKey(digest: digest), row: row)
        }
    }
}

/// The cacheable units of `units`: those before the first generated audio frame.
func prefixUnits(_ units: ArraySlice<PromptUnit>) -> [PrefixUnit] {
    var out: [PrefixUnit] = []
    out.reserveCapacity(units.count)
    for u in units {
        guard let p = u.prefixUnit else { break }
        out.append(p)
    }
    return out
}

extension Conversation {
    /// Positions of `prompt` shared with the prompt of `history` alone (see the file comment), or, when the
    /// history is empty, with the prompt of a `role` message without content (the template's text before the
    /// first message: its default system prompt, the tools, the role's header); 0 when that does not render.
    func sharedPrefixLength(of prompt: Prompt, history: [ChatMessage], role: ChatMessageRole, functions: [LeapFunction],
                            options: GenerationOptions, prepared: [MediaKey: any PreparedMedia]) -> Int {
        let reference = history.isEmpty ? [ChatMessage(role: role, text: "")] : history
        guard let (earlier, _) = try? PromptBuilder(runner: runner).prompt(
            for: reference, tools: functions, options: options, prepare: { key, _ in
                guard let m = prepared[key] else { throw LeapError(.internal, "a media part of the history was not prepared") }
                return m
            }) else { return 0 }
        var n = 0
        while n < earlier.units.count && n < prompt.units.count && earlier.units[n] == prompt.units[n] { n += 1 }
        return n
    }

    /// Writes the conversation's evaluated positions (KV cache, conv state, their prompt units) to `path`
    /// (atomically: a temporary file next to it, renamed). The history is not saved (see `loadState`).
    /// Throws LeapError(.busy) while generating, (.invalidArgument) when nothing was evaluated yet,
    /// (.unsupported) for a model that cannot save state, (.io) when the file cannot be written.
    package func saveState(to path: String) throws {
        try whileIdle {
            guard let identity = runner.stateIdentity else { throw LeapError(.unsupported, "this model cannot save its state") }
            guard let session else {
                throw LeapError(.invalidArgument, "nothing to save: the conversation has not evaluated a prompt yet")
            }
            guard session.stateShape != nil else { throw LeapError(.unsupported, "this model cannot save its state") }
            let units = prefixUnits(sessionUnits[...])
            let state = try session.captureState(positions: units.count)
            let bytes = SnapshotFormat.encode(PromptSnapshot(units: units, state: state), identity: identity)
            try DiskStore.writeFileAtomically(bytes, to: path, via: path + ".tmp-" + DiskStore.temporarySuffix())
        }
    }

    /// Restores positions saved by `saveState` (by this model, with this build of the kernels): the next
    /// turn reuses them as far as its prompt starts with them, as if this conversation had evaluated them.
    /// The history is not changed: restore into a conversation whose history renders to a prompt that
    /// starts with the saved positions (e.g. one created from the exported history). Throws LeapError(.io)
    /// when the file cannot be read, (.format) when it is not a state of this model and build (damaged,
    /// truncated, another model), (.busy) while generating. On a throw the conversation is unchanged.
    package func loadState(from path: String) throws {
        try whileIdle {
            guard let identity = runner.stateIdentity else { throw LeapError(.unsupported, "this model cannot restore a saved state") }
            let target = try session ?? runner.model.makeSession(contextSize: runner.contextSize)
            guard let shape = target.stateShape else { throw LeapError(.unsupported, "this model cannot restore a saved state") }
            let limit = try SnapshotFormat.maxFileBytes(shape: shape, positions: runner.contextSize)
            // The caller names the file, so a link is followed; a FIFO or a folder is refused, never waited on.
            let bytes: [UInt8]
            switch readRegularFile(path, limit: limit, followLinks: true) {
            case .success(let b): bytes = b
            case .failure(.tooLarge):
                throw LeapError(.format, "\(path) is larger than any saved state of this model's \(runner.contextSize)-position context (\(limit) bytes)")
            case .failure(.notRegularFile):
                throw LeapError(.io, "cannot read the saved state \(path): it is not a regular file")
            case .failure(.system(let e)):
                throw LeapError(.io, "cannot read the saved state \(path): \(String(cString: strerror(e)))")
            }
            let snapshot: PromptSnapshot
            do {
                snapshot = try SnapshotFormat.decode(bytes, identity: identity, shape: shape)
            } catch let e as LeapError {
                throw LeapError(.format, "\(path): \(e.message)")
            }
            try target.restoreState(snapshot.state)
            session = target
            sessionUnits = snapshot.units.map(PromptUnit.init)
        }
    }
}
