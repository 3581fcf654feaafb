/// The one error type every libleap module throws.
///
/// `kind` decides the C `leap_status` (and the Python exception class); `message` is what a user reads,
/// so it names the field, value or position that was wrong and what was expected.
package struct LeapError: Error, Equatable, CustomStringConvertible, Sendable {
    /// The class of failure. The C layer maps each kind to its `leap_status` code (LeapCAPI's
    /// `leapStatus(_:)`), so a new kind must be given a code there before the library builds.
    package enum Kind: Sendable {
        case invalidArgument
        case io
        case format
        case unsupported
        case serialization
        case audioFormat
        case modelLoading
        case generation
        case promptExceedsContext
        case functionCallParsing
        case cancelled
        case busy
        case outOfMemory
        case bufferTooSmall
        case `internal`
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
