import Runtime
#if canImport(Glibc)
import Core
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The capture directory: file naming, listing and retention (`tunnelctl capture list`, `prune`).
public enum CaptureFiles {
    /// File name for a sequence: `capture-000042.pcap`.
    public static func fileName(sequence: UInt32) -> String {
        let digits = String(sequence)
        return "capture-" + String(repeating: "0", count: max(0, 6 - digits.count)) + digits + ".pcap"
    }

    /// The sequence in a capture file name, nil for any other name.
    public static func sequence(fromFileName name: String) -> UInt32? {
        guard name.hasPrefix("capture-"), name.hasSuffix(".pcap") else { return nil }
        let digits = name.dropFirst("capture-".count).dropLast(".pcap".count)
        guard digits.count >= 6, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return UInt32(digits)
    }

    /// Capture files in `directory`, oldest (lowest sequence) first. With `scan`, each file is
    /// read to fill in packet count and first/last packet times (a file that cannot be read is
    /// listed without them). A missing directory lists as empty.
    public static func list(directory: String, scan: Bool = false) throws(CaptureError) -> [CaptureFileInfo] {
        let names: [String]
        do { names = try Sys.directoryEntries(directory) } catch where error.errno == ENOENT {
            return []
        } catch {
            throw .system(error)
        }
        var files: [CaptureFileInfo] = []
        for name in names {
            guard let sequence = sequence(fromFileName: name) else { continue }
            let path = directory.hasSuffix("/") ? directory + name : "\(directory)/\(name)"
            guard let st = Sys.statIfPresent(path) else { continue }  // removed meanwhile
            var info = CaptureFileInfo(
                sequence: sequence, path: path, size: Int(st.st_size),
                modifiedNanoseconds: UInt64(st.st_mtim.tv_sec) &* 1_000_000_000 &+ UInt64(st.st_mtim.tv_nsec))
            if scan, let input = try? PcapInput(path: path) {
                var count = 0
                while let packet = input.next() {
                    if count == 0 { info.firstPacketNanoseconds = packet.timestampNanoseconds }
                    info.lastPacketNanoseconds = packet.timestampNanoseconds
                    count += 1
                }
                info.packetCount = count
            }
            files.append(info)
        }
        return files.sorted { $0.sequence < $1.sequence }
    }

    /// The next unused sequence in `directory` (one past the highest; 1 for an empty directory).
    public static func nextSequence(directory: String) throws(CaptureError) -> UInt32 {
        (try list(directory: directory).last?.sequence).map { $0 &+ 1 } ?? 1
    }

    /// The files `request` says are due, oldest first (pure): last modified before
    /// `request.olderThan`, then the oldest until the rest fit `request.maxTotalBytes`. The file
    /// `keeping` (the one being written) is never due; with `keepNewest` neither is the newest
    /// (a caller that cannot know which file tunneld writes, e.g. `tunnelctl prune`).
    public static func due(_ files: [CaptureFileInfo], _ request: CapturePruneRequest, keeping: UInt32?, keepNewest: Bool) -> [CaptureFileInfo] {
        let sorted = files.sorted { $0.sequence < $1.sequence }
        let newest = keepNewest ? sorted.last?.sequence : nil
        var total = sorted.reduce(Int64(0)) { $0 + Int64($1.size) }
        var out: [CaptureFileInfo] = []
        for file in sorted where file.sequence != keeping && file.sequence != newest {
            let modifiedMs = Int64(file.modifiedNanoseconds / 1_000_000)
            let tooOld = request.olderThan.map { modifiedMs < $0 } ?? false
            let overBudget = request.maxTotalBytes.map { total > $0 } ?? false
            guard tooOld || overBudget else { continue }
            total -= Int64(file.size)
            out.append(file)
        }
        return out
    }

    /// The one capture-file pruner (tunneld's schedule, the capture poller and `tunnelctl prune`
    /// all call it): deletes — or with `request.dryRun` only counts — the files `due` names, then
    /// the `.flows` indexes whose pcap file is gone.
    public static func prune(directory: String, _ request: CapturePruneRequest, keeping: UInt32? = nil,
                             keepNewest: Bool = false) throws(CaptureError) -> CapturePruneResult {
        let victims = due(try list(directory: directory), request, keeping: keeping, keepNewest: keepNewest)
        var result = CapturePruneResult.none
        for file in victims {
            if !request.dryRun {
                do { try Sys.unlinkIfPresent(file.path) } catch { throw .system(error) }
            }
            result.files += 1
            result.bytes += Int64(file.size)
            result.removedSequences.append(file.sequence)
        }
        if !request.dryRun && result.files > 0 { CaptureFlowIndex.removeOrphans(directory: directory) }
        return result
    }
}
