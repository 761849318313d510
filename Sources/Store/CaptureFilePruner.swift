import Core
import Runtime
#if canImport(Glibc)
import Glibc
#endif

/// Retention for the pcap files in `StateDirectory/capture/` (DESIGN.md §7–8): files named
/// `capture-NNNNNN.pcap` (sequence in the name). Files last modified before the age cut-off go
/// first, then the oldest (lowest sequence) until the rest fit the byte limit. The newest file
/// is never deleted: it may be the one the daemon is writing.
///
/// This is the `capture` hook `Pruner.run` takes; it works on names and `stat` only, so it
/// needs nothing from the capture module (which writes the files).
public enum CaptureFilePruner {
    /// One capture file as seen in the directory.
    public struct File: Equatable, Sendable {
        /// Sequence from the name.
        public var sequence: UInt64
        /// Full path.
        public var path: String
        /// Size in bytes.
        public var size: Int64
        /// Last modification, Unix epoch ms (≈ its newest packet).
        public var modifiedMs: Int64
    }

    /// The sequence in `capture-NNNNNN.pcap` (at least one digit), nil for any other name.
    public static func sequence(fromFileName name: String) -> UInt64? {
        guard name.hasPrefix("capture-"), name.hasSuffix(".pcap") else { return nil }
        let digits = name.dropFirst("capture-".count).dropLast(".pcap".count)
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return UInt64(digits)
    }

    /// Capture files in `directory`, lowest sequence first; a missing directory is empty.
    public static func list(directory: String) throws -> [File] {
        let names: [String]
        do { names = try Sys.directoryEntries(directory) } catch where error.errno == ENOENT {
            return []
        } catch {
            throw StoreError.system(error)
        }
        var files: [File] = []
        for name in names {
            guard let seq = sequence(fromFileName: name) else { continue }
            let path = directory.hasSuffix("/") ? directory + name : directory + "/" + name
            guard let st = Sys.statIfPresent(path), (st.st_mode & S_IFMT) == S_IFREG else { continue }
            files.append(File(sequence: seq, path: path, size: Int64(st.st_size),
                              modifiedMs: Int64(st.st_mtim.tv_sec) * 1000 + Int64(st.st_mtim.tv_nsec) / 1_000_000))
        }
        return files.sorted { $0.sequence < $1.sequence }
    }

    /// The files `request` says are due, oldest first (pure: no I/O).
    public static func due(_ files: [File], _ request: CapturePruneRequest) -> [File] {
        guard let newest = files.map(\.sequence).max() else { return [] }
        var total = files.reduce(Int64(0)) { $0 + $1.size }
        var out: [File] = []
        for f in files.sorted(by: { $0.sequence < $1.sequence }) where f.sequence != newest {
            let tooOld = request.olderThan.map { f.modifiedMs < $0 } ?? false
            let overBudget = request.maxTotalBytes.map { total > $0 } ?? false
            guard tooOld || overBudget else { continue }
            total -= f.size
            out.append(f)
        }
        return out
    }

    /// Deletes (or with `request.dryRun` only counts) the due files in `directory`.
    public static func prune(directory: String, _ request: CapturePruneRequest) throws -> CapturePruneResult {
        let victims = due(try list(directory: directory), request)
        var result = CapturePruneResult(files: 0, bytes: 0)
        for f in victims {
            if !request.dryRun {
                do {
                    _ = try Sys.call("unlink(\(f.path))") { unlink(f.path) }
                } catch where error.errno == ENOENT {
                    continue
                } catch {
                    throw StoreError.system(error)
                }
            }
            result.files += 1
            result.bytes += f.size
        }
        return result
    }
}
