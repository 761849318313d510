import Core
import Foundation
import Testing

@testable import Policy

/// `PolicySource.loadDirectory`: which files are read, and why one could not be.
@Suite struct DirectoryTests {
    final class Dir {
        let path = NSTemporaryDirectory() + "tv-policy-dir-\(getpid())-\(UUID().uuidString.prefix(8))"
        init() throws { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
        deinit { try? FileManager.default.removeItem(atPath: path) }
        func write(_ name: String, _ text: String) throws {
            try text.write(toFile: path + "/" + name, atomically: false, encoding: .utf8)
        }
    }

    @Test func dotFilesAreSkippedLikeRunParts() throws {
        let d = try Dir()
        try d.write("10-base.rules", "default allow\nblock port 25\n")
        try d.write(".#10-base.rules", "this is an editor lock file, not a rule\n")
        try d.write(".hidden.rules", "bogus\n")
        try d.write("notes.txt", "bogus\n")
        let sources = try PolicySource.loadDirectory(d.path)
        #expect(sources.map(\.name) == [d.path + "/10-base.rules"])
        #expect(!PolicyParser.parse(sources).hasErrors)
    }

    @Test func cannotReadSaysWhy() throws {
        let d = try Dir()
        try d.write("10-base.rules", "default allow\n")
        try FileManager.default.createSymbolicLink(atPath: d.path + "/20-gone.rules", withDestinationPath: d.path + "/nowhere")
        #expect {
            try PolicySource.loadDirectory(d.path)
        } throws: { error in
            "\(error)" == "\(d.path)/20-gone.rules: cannot read the file: No such file or directory"
        }
        try FileManager.default.removeItem(atPath: d.path + "/20-gone.rules")
        try FileManager.default.createDirectory(atPath: d.path + "/30-dir.rules", withIntermediateDirectories: false)
        #expect {
            try PolicySource.loadDirectory(d.path)
        } throws: { error in
            "\(error)" == "\(d.path)/30-dir.rules: cannot read the file: Is a directory"
        }
        try FileManager.default.removeItem(atPath: d.path + "/30-dir.rules")
        if geteuid() != 0 {  // root reads any file
            try d.write("40-private.rules", "default allow\n")
            chmod(d.path + "/40-private.rules", 0)
            #expect {
                try PolicySource.loadDirectory(d.path)
            } throws: { error in
                "\(error)" == "\(d.path)/40-private.rules: cannot read the file: Permission denied"
            }
        }
    }

    /// Nothing to enforce is worth a warning (not an error): an empty directory, or files with
    /// neither rules nor a default.
    @Test func emptyPoliciesWarn() throws {
        let d = try Dir()
        let empty = try PolicyParser.parse(directory: d.path)
        #expect(!empty.hasErrors && empty.rules.isEmpty)
        #expect(empty.warnings.map(\.description)
            == ["\(d.path): warning: no *.rules files; every flow gets the built-in default (allow outbound, block inbound)"])

        try d.write("10-base.rules", "# everything is commented out\n# block port 25\n")
        let blank = try PolicyParser.parse(directory: d.path)
        #expect(!blank.hasErrors)
        #expect(blank.warnings.map(\.description) == ["\(d.path)/10-base.rules:1:1: warning: no rules and no 'default' line in the file; "
            + "every flow gets the built-in default (allow outbound, block inbound)"])
        try d.write("20-more.rules", "\n")
        #expect(try PolicyParser.parse(directory: d.path).warnings.map(\.message)
            == ["no rules and no 'default' line in any of the 2 files; every flow gets the built-in default (allow outbound, block inbound)"])

        try d.write("20-more.rules", "default allow\ndefault in block\n")
        #expect(try PolicyParser.parse(directory: d.path).diagnostics.isEmpty)  // explicit defaults say it all
    }
}
