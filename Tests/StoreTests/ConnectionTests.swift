import Core
import Foundation
import Testing
@testable import Store

@Suite struct ConnectionTests {
    @Test func freshStoreHasWALForeignKeysAndIncrementalVacuum() throws {
        let dir = TempDir()
        defer { withExtendedLifetime(dir) {} }
        let store = try StateStore(path: dir.db)
        #expect(try store.connection.scalarText("PRAGMA journal_mode") == "wal")
        #expect(try store.connection.scalarInt("PRAGMA foreign_keys") == 1)
        #expect(try store.connection.scalarInt("PRAGMA synchronous") == 1)  // NORMAL
        #expect(try store.connection.scalarInt("PRAGMA auto_vacuum") == 2)  // INCREMENTAL
        #expect(try store.schemaVersion == Schema.currentVersion)
    }

    @Test func missingDirectoryIsCannotOpenNamingThePath() throws {
        let dir = TempDir()
        defer { withExtendedLifetime(dir) {} }
        let path = dir.path + "/no/such/dir/state.db"
        do {
            _ = try StateStore(path: path)
            Issue.record("opened a store in a missing directory")
        } catch let e as StoreError {
            guard case .cannotOpen(let p, _) = e else { Issue.record("wrong error \(e)"); return }
            #expect(p == path)
            #expect(e.description.contains(path) && e.description.contains("directory exists"))
        }
    }

    @Test func aDirectoryAsThePathIsCannotOpen() throws {
        let dir = TempDir()
        defer { withExtendedLifetime(dir) {} }
        do {
            _ = try StateStore(path: dir.path)
            Issue.record("opened a directory as a store")
        } catch let e as StoreError {
            guard case .cannotOpen(let p, _) = e else { Issue.record("wrong error \(e)"); return }
            #expect(p == dir.path)
        }
    }

    @Test func readOnlyOpenOfAMissingFileSaysSoAndCreatesNothing() throws {
        let dir = TempDir()
        defer { withExtendedLifetime(dir) {} }
        #expect(throws: StoreError.missing(path: dir.db)) { try StateStore(path: dir.db, mode: .readOnly) }
        #expect(!FileManager.default.fileExists(atPath: dir.db))
    }

    @Test func readOnlyOpenOfAnEmptyFileIsMissingNotACrash() throws {
        let dir = TempDir()
        defer { withExtendedLifetime(dir) {} }
        _ = FileManager.default.createFile(atPath: dir.db, contents: Data())
        #expect(throws: StoreError.missing(path: dir.db)) { try StateStore(path: dir.db, mode: .readOnly) }
    }

    @Test func aFileThatIsNotADatabaseIsATypedError() throws {
        let dir = TempDir()
        defer { withExtendedLifetime(dir) {} }
        _ = FileManager.default.createFile(atPath: dir.db, contents: Data(repeating: 0x41, count: 8192))
        for mode in [Connection.Mode.readWrite, .readOnly] {
            do {
                _ = try StateStore(path: dir.db, mode: mode)
                Issue.record("opened garbage as a store")
            } catch let e as StoreError {
                #expect(e == .notADatabase(path: dir.db))
                #expect(e.description.contains(dir.db) && e.description.contains("move it aside"))
            }
        }
    }

    @Test func aMalformedDatabaseIsCorruptOrNotADatabase() throws {
        let dir = TempDir()
        defer { withExtendedLifetime(dir) {} }
        do {
            let store = try StateStore(path: dir.db)
            try Fixtures.insertFlows(store, firstId: 1, count: 2000, at: 0)
            try store.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        }
        // Keep the valid header page, scribble over the b-tree pages behind it.
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: dir.db)))
        #expect(bytes.count > 8192)
        for i in 4096..<bytes.count { bytes[i] = UInt8(truncatingIfNeeded: i &* 31) }
        try Data(bytes).write(to: URL(fileURLWithPath: dir.db))
        try? FileManager.default.removeItem(atPath: dir.db + "-wal")
        try? FileManager.default.removeItem(atPath: dir.db + "-shm")
        do {
            let store = try StateStore(path: dir.db)
            _ = try store.flows()
            Issue.record("read a scribbled store without error")
        } catch let e as StoreError {
            switch e {
            case .corrupt(let p, _, _), .notADatabase(let p): #expect(p == dir.db)
            default: Issue.record("expected corrupt/notADatabase, got \(e)")
            }
            #expect(e.description.contains(dir.db))
        }
    }

    @Test func readOnlyModeRefusesWrites() throws {
        let dir = TempDir()
        defer { withExtendedLifetime(dir) {} }
        _ = try StateStore(path: dir.db)
        let ro = try StateStore(path: dir.db, mode: .readOnly)
        #expect(throws: StoreError.self) { try ro.addMarker(MarkerInput(at: 1, label: "x", kind: .manual)) }
        #expect(try ro.markers().isEmpty)
    }

    @Test func busyWriterGetsATypedBusyErrorAfterItsRetries() throws {
        let dir = TempDir()
        defer { withExtendedLifetime(dir) {} }
        let holder = try StateStore(path: dir.db)
        let other = try StateStore(path: dir.db, busyTimeoutMs: 20)
        other.connection.busyRetries = 1
        try holder.connection.transaction {
            do {
                try other.addMarker(MarkerInput(at: 1, label: "x", kind: .manual))
                Issue.record("wrote while another connection held the write lock")
            } catch let e as StoreError {
                guard case .busy(let p, let op) = e else { Issue.record("wrong error \(e)"); return }
                #expect(p == dir.db && op == "BEGIN IMMEDIATE")
            }
        }
        try other.addMarker(MarkerInput(at: 1, label: "x", kind: .manual))
        #expect(try holder.markers().count == 1)
    }
}
