import Core

extension StringProtocol {
    var trimmingSpaces: Substring {
        let s = self[...].drop(while: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" })
        var e = s.endIndex
        while e > s.startIndex, let c = Optional(s[s.index(before: e)]), c == " " || c == "\t" || c == "\n" || c == "\r" {
            e = s.index(before: e)
        }
        return Substring(s[s.startIndex..<e])
    }
}
