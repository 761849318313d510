import Core
import Testing
@testable import Config

/// `Store`, `StorePassFile` and `GatewayName` (issue 19) as the config parser reads them.
@Suite struct SharedStoreConfigTests {
    @Test func defaultsAndForms() throws {
        let plain = try parse(minimalInterface)
        #expect(plain.interface.store == .local && plain.interface.gatewayName == nil)
        let url = "postgresql://tunnelvision@db.example/tunnelvision?sslmode=verify-full"
        let c = try parse(minimalInterface + "Store = \(url)\nGatewayName = gw-fra-1\nStorePassFile = /etc/tunnelvision/pgpass\n")
        #expect(c.interface.store == .postgresql(conninfo: url))
        #expect(c.interface.gatewayName == "gw-fra-1")
        #expect(c.interface.store.conninfo(passFile: c.interface.storePassFile) == url + "&passfile=/etc/tunnelvision/pgpass")
        let kv = try parse(minimalInterface + "Store = host=/run/pg dbname=tv user=tv\n")
        #expect(kv.interface.store == .postgresql(conninfo: "host=/run/pg dbname=tv user=tv"))
        #expect(kv.interface.store.conninfo(passFile: "/a b/p'f") == "host=/run/pg dbname=tv user=tv passfile='/a b/p\\'f'")
        #expect(try parse(minimalInterface + "Store = local\n").interface.store == .local)
        #expect(try parse(minimalInterface + "Store = sqlite\n").interface.store == .local, "sqlite alone: this router's state.db")
        #expect(try parse(minimalInterface + "Store = sqlite:/var/lib/tv/shared.db\n").interface.store == .sqlite(path: "/var/lib/tv/shared.db"))
        #expect(try parse(minimalInterface + "Store = sqlite:///var/lib/tv/shared.db\n").interface.store == .sqlite(path: "/var/lib/tv/shared.db"))
        #expect(SharedStoreSetting.sqlite(path: "/x.db").text == "sqlite:/x.db" && SharedStoreSetting.sqlite(path: "/x.db").isShared)
        #expect(!SharedStoreSetting.local.isShared)
    }

    @Test func aPasswordInTheConfigIsRefused() {
        let hint = "remove it; put it in a libpq password file named by StorePassFile (or PGPASSFILE)"
        #expect(errors(minimalInterface + "Store = postgresql://tv:secret@db/tv\n") == ["etc/tunneld.conf:4: Store: holds a password; \(hint)"])
        #expect(errors(minimalInterface + "Store = postgres://db/tv?password=secret\n").first?.contains("holds a password") == true)
        #expect(errors(minimalInterface + "Store = host=db password=secret\n").first?.contains("holds a password") == true)
        #expect(errors(minimalInterface + "Store = sqlite:shared.db\n") == [
            "etc/tunneld.conf:4: Store: 'sqlite:shared.db' names no absolute file; write e.g. sqlite:/var/lib/tunnelvision/shared.db"])
        #expect(errors(minimalInterface + "Store = mysql\n").first?.hasPrefix("etc/tunneld.conf:4: Store: 'mysql' is not a store; write local") == true)
        #expect(errors(minimalInterface + "GatewayName = gw fra\n") == [
            "etc/tunneld.conf:4: GatewayName: 'gw fra' is not a gateway name; use 1 to 64 of A-Z a-z 0-9 _ . - (e.g. gw-fra-1)"])
    }
}
