#include "hybrid_engine/query_encoder.hpp"

#include <stdexcept>
#include <string>
#include <utility>

namespace hybrid_engine {

QueryEncoder::QueryEncoder(AnalyzerConfig config, StringTable vocabulary)
    : analyzer_(std::move(config)), vocabulary_(std::move(vocabulary)) {}

EncodedQueries QueryEncoder::encode(const std::vector<std::string>& queries) const {
    EncodedQueries out;
    out.offsets.reserve(queries.size() + 1);
    out.offsets.push_back(0);
    std::string scratch;
    std::string term;
    // Words repeat across a batch: normalise (stem) each distinct word once per call.
    StringTable words;
    std::vector<int32_t> word_terms;  // -1: dropped or not in the vocabulary
    for (std::size_t q = 0; q < queries.size(); ++q) {
        if (is_blank(queries[q])) {
            throw std::invalid_argument("query " + std::to_string(q) +
                                        " is empty or whitespace only; pass text with at least "
                                        "one word");
        }
        const std::size_t begin = out.terms.size();
        analyzer_.split_words(queries[q], scratch, [&](std::string_view word) {
            const int32_t cached = words.find(word);
            int32_t id;
            if (cached >= 0) {
                id = word_terms[cached];
            } else {
                id = analyzer_.normalize_word(word, term) ? vocabulary_.find(term) : -1;
                words.insert(word);
                word_terms.push_back(id);
            }
            if (id < 0) return;
            for (std::size_t i = begin; i < out.terms.size(); ++i) {
                if (out.terms[i] == id) {
                    out.weights[i] += 1.0f;
                    return;
                }
            }
            out.terms.push_back(id);
            out.weights.push_back(1.0f);
        });
        out.offsets.push_back(static_cast<int64_t>(out.terms.size()));
    }
    return out;
}

bool is_blank(std::string_view text) noexcept {
    const auto* p = reinterpret_cast<const unsigned char*>(text.data());
    const auto* end = p + text.size();
    while (p < end) {
        const unsigned char c = *p;
        if (c == ' ' || (c >= '\t' && c <= '\r')) {
            ++p;
            continue;
        }
        if (c == 0xC2 && end - p >= 2 && (p[1] == 0x85 || p[1] == 0xA0)) {  // NEL, NBSP
            p += 2;
            continue;
        }
        if (end - p >= 3) {
            const uint32_t cp = ((c & 0x0Fu) << 12) | ((p[1] & 0x3Fu) << 6) | (p[2] & 0x3Fu);
            const bool three_byte = (c & 0xF0) == 0xE0;
            if (three_byte && (cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
                               cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000)) {
                p += 3;
                continue;
            }
        }
        return false;
    }
    return true;
}

}  // namespace hybrid_engine
