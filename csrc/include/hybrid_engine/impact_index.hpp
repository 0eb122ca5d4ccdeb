// Inverts doc-major sparse vectors (learned-sparse term impacts) into term-major postings.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace hybrid_engine {

/// Term-major postings with one quantized impact per posting.
///
/// The postings of term t are entries [posting_offsets[t], posting_offsets[t + 1]) of
/// `doc_ids` and `impacts`; doc ids ascend strictly within a term and every impact is >= 1
/// (a zero impact is no posting). `doc_freqs[t]` is the number of postings of term t.
struct ImpactIndexArrays {
    std::vector<int64_t> posting_offsets;
    std::vector<int32_t> doc_freqs;
    std::vector<int32_t> doc_ids;
    std::vector<uint8_t> impacts;
};

/// Inverts `n_docs` sparse documents given as CSR over a vocabulary of `n_terms` terms.
///
/// Document d holds terms terms[doc_offsets[d], doc_offsets[d + 1]) with impacts at the same
/// positions; a document may be empty and its terms may come in any order. Entries with
/// impact 0 are dropped. Runs in O(n_terms + number of entries), holds no Python state.
///
/// `doc_offsets` has `n_docs + 1` entries, `terms` and `impacts` `n_entries`. Throws
/// std::invalid_argument, before reading anything through them and before allocating for
/// `n_terms`, when there are more than 2^31 - 1 documents or 2^31 terms, doc_offsets is not
/// a non-decreasing run from 0 to `n_entries`, or a term id is outside [0, n_terms); and when
/// a term repeats within a document.
ImpactIndexArrays invert_impacts(const int64_t* doc_offsets, std::size_t n_docs,
                                 const int32_t* terms, const uint8_t* impacts,
                                 std::size_t n_entries, std::size_t n_terms);

}  // namespace hybrid_engine
