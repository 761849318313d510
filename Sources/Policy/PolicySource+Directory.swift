import Core
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Runtime
#if canImport(Glibc)
import Glibc
#endif

extension PolicySource {
    /// Reads every `*.rules` file directly in `directory` (not in subdirectories), sorted by the
    /// bytes of their names. Names are given as `directory/file`. Names starting with `.` are
    /// skipped, as run-parts(8) does (editor lock and swap files such as `.#10-base.rules`). This
    /// is the module's only I/O, so that `tunneld` and `tunnelctl` read a policy directory the
    /// same way.
    public static func loadDirectory(_ directory: String) throws -> [PolicySource] {
        guard let st = Sys.statIfPresent(directory) else {
            throw PolicyLoadError(message: "\(directory): no such directory")
        }
        guard st.st_mode & S_IFMT == S_IFDIR else { throw PolicyLoadError(message: "\(directory): not a directory") }
        let names: [String]
        do throws(SystemError) {
            names = try Sys.directoryEntries(directory)
        } catch {
            throw PolicyLoadError(message: "\(directory): cannot list the directory (\(errnoSentence(error.errno)))")
        }
        let prefix = directory.hasSuffix("/") ? directory : directory + "/"
        var out: [PolicySource] = []
        let ruleFiles = names.filter { $0.hasSuffix(".rules") && !$0.hasPrefix(".") }
        for name in ruleFiles.sorted(by: { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }) {
            let path = prefix + name
            let bytes: [UInt8]
            switch readFile(path) {
            case .success(let b): bytes = b
            case .failure(let e):
                throw PolicyLoadError(message: "\(path): cannot read the file: \(errnoSentence(e.code))")
            }
            guard let text = String(data: Data(bytes), encoding: .utf8) else {
                throw PolicyLoadError(message: "\(path): not UTF-8 text")
            }
            out.append(PolicySource(name: path, text: text))
        }
        return out
    }

    struct ReadErrno: Error { var code: Int32 }

    /// The C library's sentence for `code` ("Permission denied"): Runtime's `errnoText`.
    static func errnoSentence(_ code: Int32) -> String { errnoText(code) }

    /// The whole file, or the errno of the call that failed (`EACCES`, `EISDIR`, `ENOENT` for a
    /// dangling link, …).
    static func readFile(_ path: String) -> Result<[UInt8], ReadErrno> {
        do throws(SystemError) {
            return .success(try Sys.readFile(path, limit: .max))
        } catch {
            return .failure(ReadErrno(code: error.errno))
        }
    }
}

/// A policy directory or file that could not be read.
public struct PolicyLoadError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(message: String) { self.message = message }
    public var description: String { message }
}
