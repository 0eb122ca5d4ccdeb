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
};

/// Accumulates documents, then inverts them once.
///
/// `add` analyses a batch of documents on up to `num_threads` threads; documents get ids in
/// the order they are added across all batches. `finish` inverts and compresses; the builder
/// is left empty and reusable. Not safe to call from several threads at once; both members
/// hold no Python state and are meant to run with the GIL released.
class IndexBuilder {
public:
    /// Throws std::invalid_argument for a bad analyzer config or num_threads == 0.
    IndexBuilder(AnalyzerConfig config, unsigned num_threads);

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

    Analyzer analyzer_;
    unsigned num_threads_;
    StringTable words_;                // every distinct word split_words has produced
    std::vector<int32_t> word_terms_;  // word id -> term id, -1 when the word is dropped
    StringTable terms_;
    // Per document, its distinct terms and their frequencies, documents back to back.
    std::vector<int64_t> doc_offsets_;
    std::vector<int32_t> doc_terms_;
    std::vector<uint32_t> doc_tfs_;
    std::vector<int32_t> doc_lengths_;
};

}  // namespace hybrid_engine
