// Turns query texts into weighted term ids of a fixed vocabulary.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hybrid_engine/analyzer.hpp"
#include "hybrid_engine/string_table_view.hpp"

namespace hybrid_engine {

/// Queries as CSR: query q has terms[offsets[q], offsets[q + 1]) with the matching weights.
struct EncodedQueries {
    std::vector<int32_t> terms;
    std::vector<float> weights;  // how often the term occurs in the query (>= 1)
    std::vector<int64_t> offsets;
};

/// Analyses queries exactly as the indexed documents were and maps terms to ids.
///
/// Terms absent from the vocabulary are dropped, so a query can encode to no terms at all (an
/// empty or blank query always does: it matches nothing).
/// A term repeated in a query appears once, weighted by its count, and terms keep the order of
/// their first occurrence. Immutable; const members are safe from many threads at once. The
/// vocabulary's memory must outlive the encoder (see `StringTableView`).
class QueryEncoder {
public:
    QueryEncoder(AnalyzerConfig config, StringTableView vocabulary);

    /// One CSR row per query, in order: an empty row for a query without an indexed term.
    EncodedQueries encode(const std::vector<std::string>& queries) const;

    const StringTableView& vocabulary() const noexcept { return vocabulary_; }

private:
    Analyzer analyzer_;
    StringTableView vocabulary_;
};

}  // namespace hybrid_engine
