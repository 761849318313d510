import Foundation
import Testing

@testable import Runtime

/// `Sys.fixed` prints what `String(format: "%.Nf")` printed (tunnelctl no longer links that).
@Suite struct FixedFormatTests {
    @Test func agreesWithStringFormat() {
        var rng = SystemRandomNumberGenerator()
        var values: [Double] = [0, 0.05, 0.15, 0.25, 0.35, 1.45, 2.5, 999.95, 1e9, -0.05, 123_456.789, .greatestFiniteMagnitude]
        values += (0..<5000).map { _ in Double.random(in: 0..<10_000, using: &rng) }
        for v in values {
            for digits in [0, 1, 3] {
                #expect(Sys.fixed(v, digits: digits) == String(format: "%.\(digits)f", v), "\(v) \(digits)")
            }
        }
    }
}
