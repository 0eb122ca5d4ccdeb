// Builds a compressed inverted index from raw document texts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "hybrid_engine/analyzer.hpp"
#include "hybrid_engine/string_table.hpp"

namespace hybrid_engine {

/// The arrays of a finished inverted index (layouts in postings.hpp).
struct InvertedIndexArrays {
    /// Terms, UTF-8, back to back; term t is vocab_bytes[vocab_offsets[t], vocab_offsets[t + 1]).
    std::string vocab_bytes;
    std::vector<int64_t> vocab_offsets;
    /// The vocabulary's hash table (`StringTable::slots()`), saved with the index.
    std::vector<uint64_t> vocab_slots;
    /// Number of documents containing each term (>= 1).
    std::vector<int32_t> doc_freqs;
    /// Postings of term t are postings[posting_offsets[t], posting_offsets[t + 1]).
    std::vector<int64_t> posting_offsets;
    std::vector<uint8_t> postings;
    /// Number of indexed terms (after stopwords) of each document.
    std::vector<int32_t> doc_lengths;
    /// Only for a builder made with `positions`: where each posting's term occurs in its
    /// document, layout in postings.hpp; term t's are positions[position_offsets[t],
    /// position_offsets[t + 1]). Empty otherwise.
    std::vector<int64_t> position_offsets;
    std::vector<uint8_t> positions;
};

/// Accumulates documents, then inverts them once.
///
/// `add` analyses a batch of documents on up to `num_threads` threads; documents get ids in
/// the order they are added across all batches. `finish` inverts and compresses; the builder
/// is left empty and reusable. Not safe to call from several threads at once; both members
/// hold no Python state and are meant to run with the GIL released.
///
/// With `positions`, the index also records where each term occurs in each document (for
/// phrase queries): a position is the ordinal of the term among the document's indexed terms
/// (0 for the first; words the analyzer drops take none), so positions are those of the
/// analyzer's token stream (`Analyzer::analyze`). It costs 4 bytes per token while building.
class IndexBuilder {
public:
    /// Throws std::invalid_argument for a bad analyzer config or num_threads == 0.
    IndexBuilder(AnalyzerConfig config, unsigned num_threads, bool positions = false);

    /// Analyses and appends `texts`. Throws std::length_error past 2^31 - 1 documents.
    void add(const std::vector<std::string>& texts);

    std::size_t num_documents() const noexcept { return doc_lengths_.size(); }

    InvertedIndexArrays finish();

    /// The terms indexed so far, by term id.
    const StringTable& terms() const noexcept { return terms_; }

    /// `finish` with every term `t` replaced by `targets[t]`, a term of `vocabulary`, or
    /// dropped where `targets[t]` is -1: a document's frequency of a new term is the sum of
    /// those of its old terms, its length counts only the terms kept. This is how a language
    /// analyzer outside C++ stems and stops the words after indexing them
    /// (hybrid_engine/lexical/word_terms.py). Throws std::invalid_argument, leaving the builder
    /// as it was, unless `targets` has one entry per term, each -1 or an id of `vocabulary`.
    InvertedIndexArrays finish_mapped(const std::vector<int32_t>& targets, StringTable vocabulary);

private:
    struct Shard;  // one thread's share of a batch
    void tokenize_shard(const std::vector<std::string>& texts, Shard& shard) const;
    void count_shard(Shard& shard) const;
    void write_positions(InvertedIndexArrays& out) const;
    void map_document(std::size_t d, const std::vector<int32_t>& targets, int64_t& out,
                      int64_t& out_position, int64_t& read_position, std::vector<uint64_t>& keys,
                      std::vector<uint32_t>& dropped);

    Analyzer analyzer_;
    unsigned num_threads_;
    bool positions_;
    StringTable words_;                // every distinct word split_words has produced
    std::vector<int32_t> word_terms_;  // word id -> term id, -1 when the word is dropped
    StringTable terms_;
    // Per document, its distinct terms and their frequencies, documents back to back.
    std::vector<int64_t> doc_offsets_;
    std::vector<int32_t> doc_terms_;
    std::vector<uint32_t> doc_tfs_;
    std::vector<int32_t> doc_lengths_;
    // With positions_: each entry's tf positions, ascending, entries back to back.
    std::vector<uint32_t> doc_positions_;
};

}  // namespace hybrid_engine
