// Lucene's classic English stopword set (also bm25s's and Elasticsearch's `_english_` list).
#include <string_view>

#include "hybrid_engine/analyzer.hpp"

namespace hybrid_engine {

namespace {

// Each length class has few members, so a switch on the length then a handful of 2-5 byte
// compares beats hashing.
constexpr std::string_view kLen2[] = {"an", "as", "at", "be", "by", "if", "in",
                                      "is", "it", "no", "of", "on", "or", "to"};
constexpr std::string_view kLen3[] = {"and", "are", "but", "for", "not", "the", "was"};
constexpr std::string_view kLen4[] = {"into", "such", "that", "then",
                                      "they", "this", "will", "with"};
constexpr std::string_view kLen5[] = {"their", "there", "these"};

template <std::size_t N>
bool contains(const std::string_view (&words)[N], std::string_view word) noexcept {
    for (std::string_view w : words) {
        if (w == word) return true;
    }
    return false;
}

}  // namespace

bool is_english_stopword(std::string_view word) noexcept {
    switch (word.size()) {
        case 1:
            return word[0] == 'a';
        case 2:
            return contains(kLen2, word);
        case 3:
            return contains(kLen3, word);
        case 4:
            return contains(kLen4, word);
        case 5:
            return contains(kLen5, word);
        default:
            return false;
    }
}

}  // namespace hybrid_engine
