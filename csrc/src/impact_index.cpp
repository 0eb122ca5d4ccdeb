#include "hybrid_engine/impact_index.hpp"

#include <limits>
#include <stdexcept>
#include <string>

#include "hybrid_engine/offsets.hpp"

namespace hybrid_engine {

namespace {

/// Every int32 term id is below this.
constexpr std::size_t kMaxTerms = std::size_t{1} << 31;

}  // namespace

ImpactIndexArrays invert_impacts(const int64_t* doc_offsets, std::size_t n_docs,
                                 const int32_t* terms, const uint8_t* impacts,
                                 std::size_t n_entries, std::size_t n_terms) {
    if (n_docs > static_cast<std::size_t>(std::numeric_limits<int32_t>::max())) {
        throw std::invalid_argument("at most 2^31 - 1 documents fit an impact index, got " +
                                    std::to_string(n_docs));
    }
    if (n_terms > kMaxTerms) {
        throw std::invalid_argument("n_terms must be at most 2^31 (term ids are int32), got " +
                                    std::to_string(n_terms));
    }
    check_offsets(doc_offsets, n_docs, n_entries, "doc_offsets", "terms");
    for (std::size_t d = 0; d < n_docs; ++d) {
        for (int64_t i = doc_offsets[d]; i < doc_offsets[d + 1]; ++i) {
            if (terms[i] < 0 || static_cast<std::size_t>(terms[i]) >= n_terms) {
                throw std::invalid_argument(
                    "document " + std::to_string(d) + " has term id " + std::to_string(terms[i]) +
                    ", outside the vocabulary [0, " + std::to_string(n_terms) + ")");
            }
        }
    }
    ImpactIndexArrays out;
    out.doc_freqs.assign(n_terms, 0);
    // Last document seen with each term: a repeat within one document is an error.
    std::vector<int32_t> last_doc(n_terms, -1);
    for (std::size_t d = 0; d < n_docs; ++d) {
        for (int64_t i = doc_offsets[d]; i < doc_offsets[d + 1]; ++i) {
            const int32_t term = terms[i];
            if (last_doc[term] == static_cast<int32_t>(d)) {
                throw std::invalid_argument("document " + std::to_string(d) + " repeats term id " +
                                            std::to_string(term) +
                                            "; give each term once per document");
            }
            last_doc[term] = static_cast<int32_t>(d);
            out.doc_freqs[term] += impacts[i] != 0;
        }
    }
    out.posting_offsets.assign(n_terms + 1, 0);
    for (std::size_t t = 0; t < n_terms; ++t) {
        out.posting_offsets[t + 1] = out.posting_offsets[t] + out.doc_freqs[t];
    }
    const auto n_postings = static_cast<std::size_t>(out.posting_offsets[n_terms]);
    out.doc_ids.resize(n_postings);
    out.impacts.resize(n_postings);
    // Documents in ascending order, so each term's doc ids ascend.
    std::vector<int64_t> cursor(out.posting_offsets.begin(), out.posting_offsets.end() - 1);
    for (std::size_t d = 0; d < n_docs; ++d) {
        for (int64_t i = doc_offsets[d]; i < doc_offsets[d + 1]; ++i) {
            if (impacts[i] == 0) continue;
            const int64_t slot = cursor[terms[i]]++;
            out.doc_ids[slot] = static_cast<int32_t>(d);
            out.impacts[slot] = impacts[i];
        }
    }
    return out;
}

}  // namespace hybrid_engine
