// The files tests read: the repository's fixtures and real models, found from this file's path.
import Glibc
import LeapCore

/// <repo>
public let repoDir: String = {
    var parts = String(#filePath).split(separator: "/", omittingEmptySubsequences: false)
    parts.removeLast(3)  // Tests/LeapTestFiles/TestFiles.swift
    return parts.joined(separator: "/")
}()

/// <repo>/Tests/Fixtures
public let fixturesRoot = repoDir + "/Tests/Fixtures"

/// <repo>/Tests/Fixtures/<area>
public func fixturesDir(_ area: String) -> String { fixturesRoot + "/" + area }

/// The real models (scripts/fetch-models.sh): $LEAP_MODELS_DIR or <repo>/models.
public let realModelsDir: String = getenv("LEAP_MODELS_DIR").map { String(cString: $0) } ?? repoDir + "/models"

/// A file's bytes, or nil when it cannot be read.
public func readBytes(_ path: String) -> [UInt8]? { readFile(path) }

/// A file as UTF-8 text, or nil when it cannot be read.
public func readText(_ path: String) -> String? { readBytes(path).map { String(decoding: $0, as: UTF8.self) } }

/// A file of little-endian float32 values, or nil when it cannot be read.
public func readFloats(_ path: String) -> [Float]? {
    guard let b = readBytes(path) else { return nil }
    return b.withUnsafeBytes { raw in
        (0..<(b.count / 4)).map { Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 4 * $0, as: UInt32.self))) }
    }
}

/// A fixture that is not there: the repository is incomplete or a generator was not run.
public struct MissingFile: Error, CustomStringConvertible {
    public let path: String
    public var description: String { "cannot read \(path)" }
}

/// A file's bytes; throws MissingFile when it cannot be read.
public func fileBytes(_ path: String) throws -> [UInt8] {
    guard let bytes = readBytes(path) else { throw MissingFile(path: path) }
    return bytes
}
