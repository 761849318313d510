/// "Did you mean …?" for every error that names an unknown word: rule keywords, protocols,
/// config keys, peer names, commands, settings. The one edit distance of the project.
public enum DidYouMean {
    /// The candidate closest to `word` (case-insensitive Levenshtein distance ≤ 2, or ≤ 3 for
    /// words longer than 8 characters, and less than the word's length), or nil. Ties go to the earlier candidate.
    public static func closest(_ word: some StringProtocol, among candidates: some Sequence<String>) -> String? {
        let w = Array(word.lowercased().unicodeScalars)
        guard w.count <= 64 else { return nil }  // a pasted blob is no typo of a keyword
        let limit = w.count > 8 ? 3 : 2
        var best: (String, Int)?
        for c in candidates {
            let d = distance(w, Array(c.lowercased().unicodeScalars))
            // `d < w.count`: a word that shares nothing with the candidate is not a typo of it.
            if d <= limit, d < w.count, d < (best?.1 ?? Int.max) { best = (c, d) }
        }
        return best?.0
    }

    /// `, did you mean 'x'?` or "" (appended to a message).
    public static func suffix(_ word: some StringProtocol, _ candidates: some Sequence<String>) -> String {
        guard let m = closest(word, among: candidates), m != String(word) else { return "" }
        return ", did you mean '\(m)'?"
    }

    /// Levenshtein distance.
    public static func distance<T: Equatable>(_ a: [T], _ b: [T]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var prev = Array(0...b.count)
        var cur = prev
        for i in 1...a.count {
            cur[0] = i
            for j in 1...b.count {
                cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&prev, &cur)
        }
        return prev[b.count]
    }
}
