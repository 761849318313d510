/// The candidate closest to `word` (case-insensitive Levenshtein distance ≤ 2, or ≤ 3 for words
/// longer than 8 characters), or nil.
func closestMatch(_ word: String, among candidates: [String]) -> String? {
    let w = Array(word.lowercased())
    let limit = w.count > 8 ? 3 : 2
    var best: (String, Int)?
    for c in candidates {
        let d = editDistance(w, Array(c.lowercased()))
        if d <= limit, d < (best?.1 ?? Int.max) { best = (c, d) }
    }
    return best?.0
}

/// Levenshtein distance between two character arrays.
func editDistance(_ a: [Character], _ b: [Character]) -> Int {
    if a.isEmpty { return b.count }
    var prev = Array(0...b.count)
    var cur = prev
    for i in 1...a.count {
        cur[0] = i
        for j in stride(from: 1, through: b.count, by: 1) {
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
        }
        swap(&prev, &cur)
    }
    return prev[b.count]
}
