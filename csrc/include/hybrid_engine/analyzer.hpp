// Text analysis: Unicode word splitting, case and accent folding, stopwords, stemming.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace hybrid_engine {

/// Settings of an Analyzer. Every field is recorded in a saved index, so a query is always
/// analysed exactly as the documents were.
struct AnalyzerConfig {
    /// Fold case with the Unicode simple lowercase mapping.
    bool lowercase = true;
    /// Remove diacritics from Latin, Greek and Cyrillic letters (NFKD base letter: "é" -> "e").
    bool strip_accents = true;
    /// Drop English stopwords (Lucene's classic 33-word English list), matched before stemming.
    bool stopwords = true;
    /// "english" (Snowball English, also known as Porter2) or "none".
    std::string stemmer = "english";
    /// Words of fewer code points are dropped; CJK ideographs, kana and Hangul syllables are
    /// exempt (each is a token of its own). 2 matches the common `\w\w+` token pattern.
    std::size_t min_token_length = 2;
    /// Words of more code points are dropped (they are almost always junk: hashes, base64).
    std::size_t max_token_length = 64;
    /// How CJK runs are split: "unigram" (one token per character) or "bigram" (overlapping
    /// pairs; a lone character stays a unigram).
    std::string cjk = "unigram";
};

/// Splits UTF-8 text into index terms.
///
/// Analysis has two stages so callers can cache the second one per distinct word:
///   1. `split_words`: word boundaries (a word is a maximal run of Unicode letters, marks,
///      digits and underscore; CJK characters are split as configured), lowercasing and
///      accent stripping. Anything else (punctuation, symbols, emoji, NUL, controls,
///      whitespace) separates words. Invalid UTF-8 bytes separate words too; they never throw.
///   2. `normalize_word`: length limits, stopwords, stemming of one word from stage 1.
/// `analyze` composes both. An Analyzer is immutable after construction; all const members
/// are safe to call from many threads at once.
class Analyzer {
public:
    /// Throws std::invalid_argument naming the bad field and its allowed values.
    explicit Analyzer(AnalyzerConfig config);

    const AnalyzerConfig& config() const noexcept { return config_; }

    /// Calls `sink(std::string_view word)` for every word of `text`, in order. The view is
    /// valid only during the call. `scratch` is reused working memory (pass the same string
    /// for many calls to avoid allocations).
    template <class Sink>
    void split_words(std::string_view text, std::string& scratch, Sink&& sink) const;

    /// Final term for one word produced by `split_words`, written to `out`; returns false when
    /// the word is dropped (too short, too long, or a stopword).
    bool normalize_word(std::string_view word, std::string& out) const;

    /// Terms of `text` in order (duplicates kept).
    std::vector<std::string> analyze(std::string_view text) const;

private:
    // Non-template core of split_words: calls emit(ctx, word) once per word, in order.
    void split_words_impl(std::string_view text, std::string& scratch,
                          void (*emit)(void* ctx, std::string_view word), void* ctx) const;

    AnalyzerConfig config_;
};

template <class Sink>
void Analyzer::split_words(std::string_view text, std::string& scratch, Sink&& sink) const {
    using SinkT = std::remove_reference_t<Sink>;
    split_words_impl(
        text, scratch, [](void* ctx, std::string_view word) { (*static_cast<SinkT*>(ctx))(word); },
        static_cast<void*>(&sink));
}

/// Snowball English stemmer (Porter2) of one lowercase UTF-8 word; equal to the reference
/// Snowball implementation (as shipped in PyStemmer/libstemmer) for every input.
std::string stem_english(std::string_view word);

/// Whether `word` (lowercase) is in Lucene's classic English stopword list.
bool is_english_stopword(std::string_view word) noexcept;

}  // namespace hybrid_engine
