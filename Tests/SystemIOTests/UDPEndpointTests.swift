import Core
import Glibc
import Packet
import Testing

@testable import SystemIO

@Suite struct UDPEndpointTests {
    @Test(arguments: ["192.0.2.1:51820", "[fd99::1]:51820", "0.0.0.0:1", "[::]:65535", "[::ffff:192.0.2.1]:1"])
    func parsesPrintsAndRoundTripsSockaddr(text: String) throws {
        let e = try #require(Endpoint(text))
        #expect(e.description == text)
        var (storage, length) = e.sockaddrStorage
        #expect(Int(length) == (e.address.isIPv6 ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size))
        let back = withUnsafeBytes(of: &storage) { Endpoint(sockaddr: $0.baseAddress!) }
        #expect(back == e)
    }

    @Test func sockaddrIsNetworkOrder() throws {
        let e = try #require(Endpoint("10.1.2.3:258"))
        var (storage, _) = e.sockaddrStorage
        let sin = withUnsafeBytes(of: &storage) { $0.loadUnaligned(as: sockaddr_in.self) }
        #expect(sin.sin_family == sa_family_t(AF_INET))
        #expect(withUnsafeBytes(of: sin.sin_port) { Array($0) } == [1, 2])
        #expect(withUnsafeBytes(of: sin.sin_addr) { Array($0) } == [10, 1, 2, 3])
    }

    @Test(arguments: ["", "1.2.3.4", "1.2.3.4:", "1.2.3.4:65536", "fd99::1:80", "[fd99::1]", "[fd99::1]80", "[1.2.3.4]:80", "x:1"])
    func rejects(text: String) {
        #expect(Endpoint(text) == nil)
    }

    @Test func otherFamiliesAreNotEndpoints() {
        var storage = sockaddr_storage()
        storage.ss_family = sa_family_t(AF_UNIX)
        #expect(withUnsafeBytes(of: &storage) { Endpoint(sockaddr: $0.baseAddress!) } == nil)
    }
}
