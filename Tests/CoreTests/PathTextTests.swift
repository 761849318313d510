import Core
import Foundation
import Testing

/// `PathText` gives what Foundation's NSString path methods gave (the binaries no longer link them).
@Suite struct PathTextTests {
    static let paths = ["/etc/tunnelvision/tunneld.conf", "tunneld.conf", "/tunneld.conf", "/", "", "conf/x.conf", "./x.conf",
                        "/etc/tv/", "/run/tunnelvision/live.ring", "../a/b", "a/b//", "/a"]

    @Test func directoryIsDeletingLastPathComponent() {
        for p in Self.paths {
            #expect(PathText.directory(of: p) == (p as NSString).deletingLastPathComponent, "\(p)")
        }
    }

    @Test func lastComponentIsLastPathComponent() {
        for p in Self.paths {
            #expect(PathText.lastComponent(of: p) == (p as NSString).lastPathComponent, "\(p)")
        }
    }
}
