/// The one error type every libleap module throws.
///
/// `kind` decides the C `leap_status` (and the Python exception class); `message` is what a user reads,
/// so it names the field, value or position that was wrong and what was expected.
package struct LeapError: Error, Equatable, CustomStringConvertible, Sendable {
    package enum Kind: Int32, Sendable {
        // Raw values are the C `leap_status` codes (append only).
        case invalidArgument = 1
        case io = 2
        case format = 3
        case unsupported = 4
        case serialization = 5
        case audioFormat = 6
        case modelLoading = 7
        case generation = 8
        case promptExceedsContext = 9
        case functionCallParsing = 10
        case cancelled = 11
        case busy = 12
        case outOfMemory = 13
        case bufferTooSmall = 14
        case `internal` = 100
    }

    package var kind: Kind
    package var message: String

    package init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    package var description: String { message }

    package static func invalidArgument(_ m: String) -> LeapError { LeapError(.invalidArgument, m) }
    package static func io(_ m: String) -> LeapError { LeapError(.io, m) }
    package static func format(_ m: String) -> LeapError { LeapError(.format, m) }
    package static func unsupported(_ m: String) -> LeapError { LeapError(.unsupported, m) }
    package static func serialization(_ m: String) -> LeapError { LeapError(.serialization, m) }
    package static func audioFormat(_ m: String) -> LeapError { LeapError(.audioFormat, m) }
    package static func modelLoading(_ m: String) -> LeapError { LeapError(.modelLoading, m) }
    package static func generation(_ m: String) -> LeapError { LeapError(.generation, m) }
}
