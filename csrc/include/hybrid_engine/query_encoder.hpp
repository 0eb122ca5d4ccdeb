// Turns query texts into weighted term ids of a fixed vocabulary.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hybrid_engine/analyzer.hpp"
#include "hybrid_engine/string_table.hpp"

namespace hybrid_engine {

/// Queries as CSR: query q has terms[offsets[q], offsets[q + 1]) with the matching weights.
struct EncodedQueries {
    std::vector<int32_t> terms;
    std::vector<float> weights;  // how often the term occurs in the query (>= 1)
    std::vector<int64_t> offsets;
};

/// Analyses queries exactly as the indexed documents were and maps terms to ids.
///
/// Terms absent from the vocabulary are dropped, so a query can encode to no terms at all.
/// A term repeated in a query appears once, weighted by its count, and terms keep the order of
/// their first occurrence. Immutable; const members are safe from many threads at once.
class QueryEncoder {
public:
    QueryEncoder(AnalyzerConfig config, StringTable vocabulary);

    /// Throws std::invalid_argument naming the first query that is empty or whitespace only.
    EncodedQueries encode(const std::vector<std::string>& queries) const;

    const StringTable& vocabulary() const noexcept { return vocabulary_; }

private:
    Analyzer analyzer_;
    StringTable vocabulary_;
};

/// Whether `text` holds nothing but Unicode White_Space characters (true when empty).
bool is_blank(std::string_view text) noexcept;

}  // namespace hybrid_engine
