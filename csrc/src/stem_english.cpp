// Snowball English ("Porter2") stemmer, written from the published algorithm as revised in
// Snowball 3.0 (extra R1 prefixes up to "inter", "ogist", the "-ying" and "proceed/exceed/succeed"
// rules in Step 1b, no undoubling after a word-initial a/e/o). The reference is libstemmer as
// shipped in PyStemmer; tests/test_stemmer.py compares the two on hundreds of thousands of words.
//
// Snowball works on characters (code points): lengths, "next" and "hop" count characters and
// any character outside 'aeiouy' is a non-vowel. ASCII words, the common case, are stemmed in
// place in a byte string; other words are decoded to UTF-32 first and re-encoded afterwards.
#include "hybrid_engine/stem_english.hpp"

#include <cstddef>
#include <string>
#include <string_view>

#include "hybrid_engine/analyzer.hpp"
#include "hybrid_engine/unicode.hpp"

namespace hybrid_engine {

namespace {

constexpr bool is_vowel(char32_t c) noexcept {
    return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u' || c == 'y';
}

// Vowels plus 'w', 'x' and 'Y' (a consonant y marked by the prelude).
constexpr bool is_vowel_wxy(char32_t c) noexcept {
    return is_vowel(c) || c == 'w' || c == 'x' || c == 'Y';
}

constexpr bool is_valid_li(char32_t c) noexcept {
    switch (c) {
        case 'c':
        case 'd':
        case 'e':
        case 'g':
        case 'h':
        case 'k':
        case 'm':
        case 'n':
        case 'r':
        case 't':
            return true;
        default:
            return false;
    }
}

struct Rule {
    std::string_view suffix;
    std::string_view replacement;
};

// Step 2 and 3 suffixes, longest first within a shared ending so the first match is the
// longest one (Snowball's `among` picks the longest matching suffix).
constexpr Rule kStep2[] = {
    {"ization", "ize"}, {"ational", "ate"}, {"fulness", "ful"}, {"ousness", "ous"},
    {"iveness", "ive"}, {"tional", "tion"}, {"biliti", "ble"},  {"lessli", "less"},
    {"entli", "ent"},   {"ation", "ate"},   {"alism", "al"},    {"aliti", "al"},
    {"ousli", "ous"},   {"iviti", "ive"},   {"fulli", "ful"},   {"ogist", "og"},
    {"enci", "ence"},   {"anci", "ance"},   {"abli", "able"},   {"izer", "ize"},
    {"ator", "ate"},    {"alli", "al"},     {"bli", "ble"},     {"ogi", "og"},
    {"li", ""},
};

constexpr Rule kStep3[] = {
    {"ational", "ate"}, {"tional", "tion"}, {"alize", "al"}, {"icate", "ic"}, {"iciti", "ic"},
    {"ative", ""},      {"ical", "ic"},     {"ness", ""},    {"ful", ""},
};

constexpr std::string_view kStep4[] = {
    "ement", "ance", "ence", "able", "ible", "ment", "ant", "ent", "ism",
    "ate",   "iti",  "ous",  "ive",  "ize",  "ion",  "al",  "er",  "ic",
};

constexpr std::string_view kRegionPrefixes[] = {"gener", "commun", "arsen", "past", "univers",
                                                "later", "emerg",  "organ", "inter"};

struct Exception {
    std::string_view word;
    std::string_view stem;
};

// Whole words with a fixed stem (an empty stem means the word is kept as it is).
constexpr Exception kExceptions[] = {
    {"skis", "ski"},  {"skies", "sky"},   {"idly", "idl"},  {"gently", "gentl"},
    {"ugly", "ugli"}, {"early", "earli"}, {"only", "onli"}, {"singly", "singl"},
    {"sky", ""},      {"news", ""},       {"howe", ""},     {"atlas", ""},
    {"cosmos", ""},   {"bias", ""},       {"andes", ""},
};

// The algorithm over a mutable word of code units that are each one character: `std::string`
// for ASCII words, `std::u32string` for the others. Positions are character offsets.
template <class Str>
class Porter2 {
public:
    explicit Porter2(Str& word) : w_(word) {}

    void run() {
        prelude();
        mark_regions();
        step_1a();
        step_1b();
        step_1c();
        step_2();
        step_3();
        step_4();
        step_5();
        if (y_found_) {
            for (auto& c : w_) {
                if (c == 'Y') c = 'y';
            }
        }
    }

private:
    std::size_t size() const { return w_.size(); }

    // Whether the characters ending at `end` spell `s`.
    bool ends_with_at(std::size_t end, std::string_view s) const {
        if (s.size() > end) return false;
        const std::size_t start = end - s.size();
        for (std::size_t i = 0; i < s.size(); ++i) {
            if (w_[start + i] != static_cast<unsigned char>(s[i])) return false;
        }
        return true;
    }
    bool ends_with(std::string_view s) const { return ends_with_at(size(), s); }
    // Whether the characters before `end` are exactly `s`.
    bool equals_prefix(std::size_t end, std::string_view s) const {
        return end == s.size() && ends_with_at(end, s);
    }

    void replace_tail(std::size_t from, std::string_view s) {
        w_.resize(from);
        for (char c : s) w_.push_back(static_cast<unsigned char>(c));
    }

    bool has_vowel_before(std::size_t end) const {
        for (std::size_t i = 0; i < end; ++i) {
            if (is_vowel(w_[i])) return true;
        }
        return false;
    }

    // A short syllable ends at `end`: non-vowel (not w, x, Y) after a vowel after a non-vowel,
    // or a vowel then a non-vowel at the start of the word, or "past".
    bool short_syllable_at(std::size_t end) const {
        if (end >= 3 && !is_vowel_wxy(w_[end - 1]) && is_vowel(w_[end - 2]) &&
            !is_vowel(w_[end - 3])) {
            return true;
        }
        if (end == 2 && !is_vowel(w_[1]) && is_vowel(w_[0])) return true;
        return ends_with_at(end, "past");
    }

    void prelude() {
        if (!w_.empty() && w_[0] == '\'') w_.erase(0, 1);
        if (!w_.empty() && w_[0] == 'y') {
            w_[0] = 'Y';
            y_found_ = true;
        }
        for (std::size_t i = 0; i + 1 < size(); ++i) {
            if (is_vowel(w_[i]) && w_[i + 1] == 'y') {
                w_[i + 1] = 'Y';
                y_found_ = true;
            }
        }
    }

    // Position after the first non-vowel that follows a vowel, searching from `from`.
    std::size_t region_after(std::size_t from) const {
        std::size_t i = from;
        while (i < size() && !is_vowel(w_[i])) ++i;
        while (i < size() && is_vowel(w_[i])) ++i;
        return i < size() ? i + 1 : size();
    }

    void mark_regions() {
        p1_ = region_after(0);
        for (std::string_view prefix : kRegionPrefixes) {
            if (size() >= prefix.size() && ends_with_at(prefix.size(), prefix)) {
                p1_ = prefix.size();
                break;
            }
        }
        p2_ = region_after(p1_);
    }

    bool in_r1(std::size_t pos) const { return pos >= p1_; }
    bool in_r2(std::size_t pos) const { return pos >= p2_; }

    void step_1a() {
        if (ends_with("'s'")) {
            w_.resize(size() - 3);
        } else if (ends_with("'s")) {
            w_.resize(size() - 2);
        } else if (ends_with("'")) {
            w_.resize(size() - 1);
        }
        if (ends_with("sses")) {
            replace_tail(size() - 2, "");
        } else if (ends_with("ied") || ends_with("ies")) {
            const std::size_t stem = size() - 3;
            replace_tail(stem, stem >= 2 ? "i" : "ie");
        } else if (ends_with("ss") || ends_with("us")) {
            // kept
        } else if (ends_with("s")) {
            // The letter before the s does not count: "gas" stays, "gaps" -> "gap".
            if (size() >= 2 && has_vowel_before(size() - 2)) w_.resize(size() - 1);
        }
    }

    void step_1b() {
        std::size_t suffix_len = 0;
        if (ends_with("eedly") || ends_with("eed")) {
            const std::size_t stem = size() - (ends_with("eed") ? 3 : 5);
            if (equals_prefix(stem, "proc") || equals_prefix(stem, "exc") ||
                equals_prefix(stem, "succ")) {
                return;
            }
            if (in_r1(stem)) replace_tail(stem, "ee");
            return;
        }
        if (ends_with("ingly") || ends_with("edly")) {
            suffix_len = ends_with("ingly") ? 5 : 4;
        } else if (ends_with("ing")) {
            const std::size_t stem = size() - 3;
            // "dying" -> "die", "vying" -> "vie".
            if (stem == 2 && w_[1] == 'y' && !is_vowel(w_[0])) {
                replace_tail(1, "ie");
                return;
            }
            for (std::string_view kept : {"inn", "out", "cann", "herr", "earr", "even"}) {
                if (equals_prefix(stem, kept)) return;
            }
            suffix_len = 3;
        } else if (ends_with("ed")) {
            suffix_len = 2;
        } else {
            return;
        }
        const std::size_t stem = size() - suffix_len;
        if (!has_vowel_before(stem)) return;
        w_.resize(stem);
        if (ends_with("at") || ends_with("bl") || ends_with("iz")) {
            w_.push_back('e');
            return;
        }
        const std::size_t n = size();
        if (n >= 2 && w_[n - 1] == w_[n - 2]) {
            switch (w_[n - 1]) {
                case 'b':
                case 'd':
                case 'f':
                case 'g':
                case 'm':
                case 'n':
                case 'p':
                case 'r':
                case 't':
                    // Undouble ("hopp" -> "hop"), except after a word-initial a, e or o ("add").
                    if (!(n == 3 && (w_[0] == 'a' || w_[0] == 'e' || w_[0] == 'o'))) {
                        w_.pop_back();
                    }
                    return;
                default:
                    break;
            }
        }
        if (n == p1_ && short_syllable_at(n)) w_.push_back('e');
    }

    void step_1c() {
        const std::size_t n = size();
        if (n >= 3 && (w_[n - 1] == 'y' || w_[n - 1] == 'Y') && !is_vowel(w_[n - 2])) {
            w_[n - 1] = 'i';
        }
    }

    template <std::size_t N>
    const Rule* longest_rule(const Rule (&rules)[N]) const {
        for (const Rule& rule : rules) {
            if (ends_with(rule.suffix)) return &rule;
        }
        return nullptr;
    }

    void step_2() {
        const Rule* rule = longest_rule(kStep2);
        if (rule == nullptr) return;
        const std::size_t stem = size() - rule->suffix.size();
        if (!in_r1(stem)) return;
        if (rule->suffix == "ogi") {
            if (stem == 0 || w_[stem - 1] != 'l') return;
        } else if (rule->suffix == "li") {
            if (stem == 0 || !is_valid_li(w_[stem - 1])) return;
        }
        replace_tail(stem, rule->replacement);
    }

    void step_3() {
        const Rule* rule = longest_rule(kStep3);
        if (rule == nullptr) return;
        const std::size_t stem = size() - rule->suffix.size();
        if (!in_r1(stem)) return;
        if (rule->suffix == "ative" && !in_r2(stem)) return;
        replace_tail(stem, rule->replacement);
    }

    void step_4() {
        for (std::string_view suffix : kStep4) {
            if (!ends_with(suffix)) continue;
            const std::size_t stem = size() - suffix.size();
            if (!in_r2(stem)) return;
            if (suffix == "ion" && (stem == 0 || (w_[stem - 1] != 's' && w_[stem - 1] != 't'))) {
                return;
            }
            w_.resize(stem);
            return;
        }
    }

    void step_5() {
        const std::size_t n = size();
        if (n == 0) return;
        const std::size_t stem = n - 1;
        if (w_[stem] == 'e') {
            if (in_r2(stem) || (in_r1(stem) && !short_syllable_at(stem))) w_.resize(stem);
        } else if (w_[stem] == 'l') {
            if (in_r2(stem) && stem >= 1 && w_[stem - 1] == 'l') w_.resize(stem);
        }
    }

    Str& w_;
    std::size_t p1_ = 0;
    std::size_t p2_ = 0;
    bool y_found_ = false;
};

// Code points of `word`; an ill-formed byte becomes U+DC00 + byte so it round-trips.
std::u32string decode(std::string_view word) {
    std::u32string out;
    out.reserve(word.size());
    const auto* p = reinterpret_cast<const unsigned char*>(word.data());
    std::size_t i = 0;
    while (i < word.size()) {
        char32_t cp = 0;
        const int len = unicode::decode_utf8(p + i, word.size() - i, cp);
        if (len == 0) {
            out.push_back(0xDC00 + p[i]);
            ++i;
        } else {
            out.push_back(cp);
            i += static_cast<std::size_t>(len);
        }
    }
    return out;
}

void encode(const std::u32string& word, std::string& out) {
    out.clear();
    char buf[4];
    for (char32_t cp : word) {
        if (cp >= 0xDC80 && cp <= 0xDCFF) {
            out.push_back(static_cast<char>(cp - 0xDC00));
        } else {
            out.append(buf, static_cast<std::size_t>(unicode::encode_utf8(cp, buf)));
        }
    }
}

}  // namespace

void stem_english_into(std::string_view word, std::string& out) {
    for (const Exception& e : kExceptions) {
        if (word == e.word) {
            out.assign(e.stem.empty() ? e.word : e.stem);
            return;
        }
    }
    bool ascii = true;
    std::size_t chars = 0;
    for (char c : word) {
        const auto b = static_cast<unsigned char>(c);
        ascii &= b < 0x80;
        chars += (b & 0xC0) != 0x80;
    }
    out.assign(word);
    if (chars < 3) return;
    if (ascii) {
        Porter2<std::string>(out).run();
        return;
    }
    std::u32string wide = decode(word);
    Porter2<std::u32string>(wide).run();
    encode(wide, out);
}

std::string stem_english(std::string_view word) {
    std::string out;
    stem_english_into(word, out);
    return out;
}

}  // namespace hybrid_engine
