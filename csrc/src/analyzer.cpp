// Analyzer: configuration checks, Unicode word splitting, per-word normalisation.
#include "hybrid_engine/analyzer.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hybrid_engine/stem_english.hpp"
#include "hybrid_engine/unicode.hpp"

namespace hybrid_engine {

namespace {

// ASCII fast path: bytes below 0x80 never touch the Unicode tables.
struct AsciiTables {
    std::array<bool, 128> word{};
    std::array<char, 128> lower{};
};

constexpr AsciiTables make_ascii_tables() {
    AsciiTables t;
    for (int c = 0; c < 128; ++c) {
        const bool upper = c >= 'A' && c <= 'Z';
        t.word[c] = upper || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
        t.lower[c] = static_cast<char>(upper ? c + ('a' - 'A') : c);
    }
    return t;
}

constexpr AsciiTables kAscii = make_ascii_tables();

std::string quoted(const std::string& s) { return "'" + s + "'"; }

std::size_t count_code_points(std::string_view s) noexcept {
    std::size_t n = 0;
    for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    return n;
}

// Splits one text; the state of a pending CJK run lives here rather than in the Analyzer.
class Splitter {
public:
    Splitter(const AnalyzerConfig& config, std::string& word,
             void (*emit)(void* ctx, std::string_view word), void* ctx)
        : lowercase_(config.lowercase),
          strip_accents_(config.strip_accents),
          bigrams_(config.cjk == "bigram"),
          word_(word),
          emit_(emit),
          ctx_(ctx) {}

    void run(std::string_view text) {
        word_.clear();
        const auto* p = reinterpret_cast<const unsigned char*>(text.data());
        const std::size_t n = text.size();
        std::size_t i = 0;
        while (i < n) {
            const unsigned char b = p[i];
            if (b < 0x80) {
                if (kAscii.word[b]) {
                    end_cjk_run();
                    word_.push_back(lowercase_ ? kAscii.lower[b] : static_cast<char>(b));
                } else {
                    end_word();
                    end_cjk_run();
                }
                ++i;
                continue;
            }
            char32_t cp = 0;
            const int len = unicode::decode_utf8(p + i, n - i, cp);
            if (len == 0) {  // ill-formed UTF-8: one byte of separator, then resynchronise
                end_word();
                end_cjk_run();
                ++i;
                continue;
            }
            add(cp, text.substr(i, static_cast<std::size_t>(len)));
            i += static_cast<std::size_t>(len);
        }
        end_word();
        end_cjk_run();
    }

private:
    void add(char32_t cp, std::string_view bytes) {
        std::uint8_t flags = unicode::flags(cp);
        if (!(flags & unicode::kWord)) {
            end_word();
            end_cjk_run();
            return;
        }
        if (flags & unicode::kCjk) {
            end_word();
            add_cjk(bytes);
            return;
        }
        end_cjk_run();
        if (lowercase_ && (flags & unicode::kHasLower)) {
            cp = unicode::to_lower(cp);
            flags = unicode::flags(cp);
        }
        if (strip_accents_) {
            if (flags & unicode::kDropMark) return;
            if (flags & unicode::kHasBase) cp = unicode::to_base(cp);
        }
        char buf[4];
        word_.append(buf, static_cast<std::size_t>(unicode::encode_utf8(cp, buf)));
    }

    void add_cjk(std::string_view bytes) {
        if (!bigrams_) {
            emit_(ctx_, bytes);
            return;
        }
        if (run_length_ > 0) {
            std::array<char, 8> pair{};
            std::copy(prev_.begin(), prev_.begin() + prev_len_, pair.begin());
            std::copy(bytes.begin(), bytes.end(), pair.begin() + prev_len_);
            emit_(ctx_, std::string_view(pair.data(), prev_len_ + bytes.size()));
        }
        std::copy(bytes.begin(), bytes.end(), prev_.begin());
        prev_len_ = bytes.size();
        ++run_length_;
    }

    // A CJK run of one character is a unigram; longer runs already produced their bigrams.
    void end_cjk_run() {
        if (run_length_ == 1) emit_(ctx_, std::string_view(prev_.data(), prev_len_));
        run_length_ = 0;
    }

    void end_word() {
        if (word_.empty()) return;
        emit_(ctx_, word_);
        word_.clear();
    }

    const bool lowercase_;
    const bool strip_accents_;
    const bool bigrams_;
    std::string& word_;
    void (*emit_)(void* ctx, std::string_view word);
    void* ctx_;
    std::array<char, 4> prev_{};
    std::size_t prev_len_ = 0;
    std::size_t run_length_ = 0;
};

}  // namespace

Analyzer::Analyzer(AnalyzerConfig config) : config_(std::move(config)) {
    if (config_.stemmer != "english" && config_.stemmer != "none") {
        throw std::invalid_argument("stemmer must be 'english' or 'none', got " +
                                    quoted(config_.stemmer));
    }
    if (config_.cjk != "unigram" && config_.cjk != "bigram") {
        throw std::invalid_argument("cjk must be 'unigram' or 'bigram', got " +
                                    quoted(config_.cjk));
    }
    if (config_.min_token_length < 1) {
        throw std::invalid_argument("min_token_length must be at least 1, got " +
                                    std::to_string(config_.min_token_length));
    }
    if (config_.max_token_length < config_.min_token_length) {
        throw std::invalid_argument("max_token_length must be at least min_token_length (" +
                                    std::to_string(config_.min_token_length) + "), got " +
                                    std::to_string(config_.max_token_length));
    }
}

void Analyzer::split_words_impl(std::string_view text, std::string& scratch,
                                void (*emit)(void* ctx, std::string_view word), void* ctx) const {
    Splitter(config_, scratch, emit, ctx).run(text);
}

bool Analyzer::normalize_word(std::string_view word, std::string& out) const {
    const std::size_t length = count_code_points(word);
    if (length > config_.max_token_length || length == 0) return false;
    if (length < config_.min_token_length) {
        // CJK tokens (one character, or two in bigram mode) are exempt from the minimum.
        char32_t cp = 0;
        const auto* p = reinterpret_cast<const unsigned char*>(word.data());
        if (unicode::decode_utf8(p, word.size(), cp) == 0 ||
            !(unicode::flags(cp) & unicode::kCjk)) {
            return false;
        }
    }
    if (config_.stopwords && word.size() <= 5) {
        if (config_.lowercase) {
            if (is_english_stopword(word)) return false;
        } else {
            // Stopwords match case-insensitively even when the terms keep their case.
            std::array<char, 5> folded{};
            for (std::size_t i = 0; i < word.size(); ++i) {
                const auto b = static_cast<unsigned char>(word[i]);
                folded[i] = b < 0x80 ? kAscii.lower[b] : word[i];
            }
            if (is_english_stopword(std::string_view(folded.data(), word.size()))) return false;
        }
    }
    if (config_.stemmer == "english") {
        stem_english_into(word, out);
    } else {
        out.assign(word);
    }
    return true;
}

std::vector<std::string> Analyzer::analyze(std::string_view text) const {
    std::vector<std::string> terms;
    std::string scratch;
    std::string term;
    split_words(text, scratch, [&](std::string_view word) {
        if (normalize_word(word, term)) terms.push_back(term);
    });
    return terms;
}

}  // namespace hybrid_engine
