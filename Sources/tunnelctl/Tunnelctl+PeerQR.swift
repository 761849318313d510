import CQRImage
import Config
import Core
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import WireGuard

/// `tunnelctl peer qr NAME [--png FILE]`: the text of `peer config NAME` as a QR code,
/// so a WireGuard phone app imports the tunnel by scanning it. libqrencode encodes it (8-bit,
/// level L); the terminal gets UTF-8 half blocks (two module rows per line, light modules drawn,
/// as `qrencode -t UTF8` does, for dark terminals), `--png` gets a PNG through libpng.
extension Tunnelctl {
    static let runPeerQR: Command.Body = { opts, console in
        let (configPath, config) = try peerConfig(opts)
        let png = opts[.png]
        let name = try oneName(&opts, "qr")
        let peer = try configuredPeer(name, config)
        let (text, kept) = try clientConfig(peer, configPath, config, privateKey: nil, dns: nil, endpoint: nil, allowedIPs: nil)
        // A phone imports a scanned code as it is: without the private key, or with one that is
        // not this peer's, the tunnel it makes never gets a handshake. Refuse rather than draw it.
        let keyFile = clientKeyDirectory(configPath) + "/\(name).key"
        let remedy = "to get a usable code, either put the client's own private key (base64, one line, mode 0600) in \(keyFile), "
            + "or give the peer a new key pair: 'tunnelctl peer remove \(name)' then 'tunnelctl peer add \(name) --keep-client-key' "
            + "(the old client config stops working)"
        guard kept else {
            throw CLIError.failure("\(name): no QR code: the client's private key is not stored (it was shown once by 'peer add'); \(remedy)")
        }
        if let key = keptClientKey(configPath, name), WireGuardKey(bytes: X25519.publicKey(of: key.bytes)) != peer.publicKey {
            throw CLIError.failure("\(name): no QR code: the private key in \(keyFile) is not the one of its PublicKey in the configuration; \(remedy)")
        }
        let (modules, width) = try qrMatrix(text)
        if let png {
            var error = [CChar](repeating: 0, count: 256)
            let rc = modules.withUnsafeBufferPointer { m in
                tv_qr_write_png(png, m.baseAddress, Int32(width), 8, 4, &error, error.count)
            }
            guard rc == 0 else {
                let message = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                throw CLIError.failure("cannot write \(png): \(message)")
            }
            console.print("\(name): QR code written to \(png) (\(width)x\(width) modules)")
            return .ok
        }
        console.print(qrBlocks(modules, width, margin: 2), terminator: "")
        return .ok
    }

    /// The module matrix (1 = dark), row by row, and its width.
    static func qrMatrix(_ text: String) throws -> ([UInt8], Int) {
        var raw: UnsafeMutablePointer<UInt8>?
        let width = Int(tv_qr_encode(text, &raw))
        guard width > 0, let raw else {
            throw CLIError.failure("cannot make a QR code of the client config (\(text.utf8.count) bytes): errno \(errno)")
        }
        defer { tv_qr_free(raw) }
        return (Array(UnsafeBufferPointer(start: raw, count: width * width)), width)
    }

    /// Half-block rendering: `█` both light, `▀` top light, `▄` bottom light, space both dark.
    static func qrBlocks(_ modules: [UInt8], _ width: Int, margin: Int) -> String {
        let side = width + 2 * margin
        func light(_ x: Int, _ y: Int) -> Bool {
            let mx = x - margin, my = y - margin
            guard mx >= 0, my >= 0, mx < width, my < width else { return true }
            return modules[my * width + mx] == 0
        }
        var out = ""
        var y = 0
        while y < side {
            for x in 0..<side {
                let top = light(x, y), bottom = y + 1 < side ? light(x, y + 1) : false
                out += top && bottom ? "█" : top ? "▀" : bottom ? "▄" : " "
            }
            out += "\n"
            y += 2
        }
        return out
    }
}
