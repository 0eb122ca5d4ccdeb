#include "hybrid_engine/query_encoder.hpp"

#include <string>
#include <utility>

namespace hybrid_engine {

QueryEncoder::QueryEncoder(AnalyzerConfig config, StringTableView vocabulary)
    : analyzer_(std::move(config)), vocabulary_(vocabulary) {}

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

}  // namespace hybrid_engine
