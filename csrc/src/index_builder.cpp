#include "hybrid_engine/index_builder.hpp"

#include <algorithm>
#include <exception>
#include <limits>
#include <stdexcept>
#include <thread>
#include <utility>

#include "hybrid_engine/postings.hpp"

namespace hybrid_engine {

namespace {

constexpr std::size_t kDocsPerThreadMin = 1024;  // smaller batches are not worth a thread

/// Runs fn(i) for i in [0, n) on n threads (inline when n == 1); rethrows the first error.
template <class Fn>
void run_parallel(std::size_t n, Fn&& fn) {
    if (n == 1) {
        fn(std::size_t{0});
        return;
    }
    std::vector<std::exception_ptr> errors(n);
    std::vector<std::thread> threads;
    threads.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
        threads.emplace_back([&, i] {
            try {
                fn(i);
            } catch (...) {
                errors[i] = std::current_exception();
            }
        });
    }
    for (auto& thread : threads) thread.join();
    for (auto& error : errors) {
        if (error) std::rethrow_exception(error);
    }
}

}  // namespace

struct IndexBuilder::Shard {
    std::size_t begin = 0;
    std::size_t end = 0;
    // Tokenize phase: a code per word occurrence, >= 0 for a known word id, -(j + 1) for the
    // shard's j-th new word.
    std::vector<int32_t> codes;
    std::vector<int64_t> code_offsets;
    StringTable new_words;
    std::vector<std::string> new_word_norms;
    std::vector<uint8_t> new_word_kept;
    std::vector<int32_t> new_word_terms;  // filled by the serial merge
    // Count phase: distinct terms and frequencies per document.
    std::vector<int64_t> doc_offsets;
    std::vector<int32_t> terms;
    std::vector<uint32_t> tfs;
    std::vector<int32_t> lengths;
    std::vector<uint32_t> positions;  // with positions_: each entry's, ascending
};

namespace {

/// (term, position) packed so that sorting orders by term, then position.
inline uint64_t term_position(int32_t term, uint32_t position) noexcept {
    return (static_cast<uint64_t>(static_cast<uint32_t>(term)) << 32) | position;
}
inline int32_t key_term(uint64_t key) noexcept { return static_cast<int32_t>(key >> 32); }
inline uint32_t key_position(uint64_t key) noexcept { return static_cast<uint32_t>(key); }

/// Appends the entries of one document's sorted (term, position) `keys` to `terms`, `tfs`
/// and `positions`.
void append_entries(const std::vector<uint64_t>& keys, std::vector<int32_t>& terms,
                    std::vector<uint32_t>& tfs, std::vector<uint32_t>& positions) {
    for (std::size_t i = 0; i < keys.size();) {
        std::size_t j = i;
        while (j < keys.size() && key_term(keys[j]) == key_term(keys[i])) {
            positions.push_back(key_position(keys[j]));
            ++j;
        }
        terms.push_back(key_term(keys[i]));
        tfs.push_back(static_cast<uint32_t>(j - i));
        i = j;
    }
}

}  // namespace

IndexBuilder::IndexBuilder(AnalyzerConfig config, unsigned num_threads, bool positions)
    : analyzer_(std::move(config)),
      num_threads_(num_threads),
      positions_(positions),
      doc_offsets_{0} {
    if (num_threads == 0) throw std::invalid_argument("num_threads must be >= 1, got 0");
}

void IndexBuilder::tokenize_shard(const std::vector<std::string>& texts, Shard& shard) const {
    std::string scratch;
    shard.code_offsets.assign(1, 0);
    for (std::size_t d = shard.begin; d < shard.end; ++d) {
        analyzer_.split_words(texts[d], scratch, [&](std::string_view word) {
            const int32_t known = words_.find(word);
            shard.codes.push_back(known >= 0 ? known : -(shard.new_words.insert(word) + 1));
        });
        shard.code_offsets.push_back(static_cast<int64_t>(shard.codes.size()));
    }
    const std::size_t n_new = shard.new_words.size();
    shard.new_word_norms.resize(n_new);
    shard.new_word_kept.resize(n_new);
    for (std::size_t j = 0; j < n_new; ++j) {
        shard.new_word_kept[j] = analyzer_.normalize_word(
            shard.new_words.key(static_cast<int32_t>(j)), shard.new_word_norms[j]);
    }
}

void IndexBuilder::count_shard(Shard& shard) const {
    std::vector<int32_t> doc_terms;
    std::vector<uint64_t> keys;
    shard.doc_offsets.assign(1, 0);
    const std::size_t n_docs = shard.end - shard.begin;
    for (std::size_t d = 0; d < n_docs; ++d) {
        doc_terms.clear();
        for (int64_t i = shard.code_offsets[d]; i < shard.code_offsets[d + 1]; ++i) {
            const int32_t code = shard.codes[i];
            const int32_t term = code >= 0 ? word_terms_[code] : shard.new_word_terms[-code - 1];
            if (term >= 0) doc_terms.push_back(term);
        }
        if (doc_terms.size() > static_cast<std::size_t>(std::numeric_limits<int32_t>::max())) {
            throw std::length_error("a document has more than 2^31 - 1 terms");
        }
        shard.lengths.push_back(static_cast<int32_t>(doc_terms.size()));
        if (positions_) {
            keys.clear();
            for (std::size_t p = 0; p < doc_terms.size(); ++p) {
                keys.push_back(term_position(doc_terms[p], static_cast<uint32_t>(p)));
            }
            std::sort(keys.begin(), keys.end());
            append_entries(keys, shard.terms, shard.tfs, shard.positions);
            shard.doc_offsets.push_back(static_cast<int64_t>(shard.terms.size()));
            continue;
        }
        std::sort(doc_terms.begin(), doc_terms.end());
        for (std::size_t i = 0; i < doc_terms.size();) {
            std::size_t j = i + 1;
            while (j < doc_terms.size() && doc_terms[j] == doc_terms[i]) ++j;
            shard.terms.push_back(doc_terms[i]);
            shard.tfs.push_back(static_cast<uint32_t>(j - i));
            i = j;
        }
        shard.doc_offsets.push_back(static_cast<int64_t>(shard.terms.size()));
    }
    shard.codes = {};
}

void IndexBuilder::add(const std::vector<std::string>& texts) {
    if (texts.empty()) return;
    if (num_documents() + texts.size() >
        static_cast<std::size_t>(std::numeric_limits<int32_t>::max())) {
        throw std::length_error("an index holds at most 2^31 - 1 documents");
    }
    const std::size_t n_shards = std::max<std::size_t>(
        1, std::min<std::size_t>(num_threads_, texts.size() / kDocsPerThreadMin));
    std::vector<Shard> shards(n_shards);
    for (std::size_t s = 0; s < n_shards; ++s) {
        shards[s].begin = texts.size() * s / n_shards;
        shards[s].end = texts.size() * (s + 1) / n_shards;
    }
    run_parallel(n_shards, [&](std::size_t s) { tokenize_shard(texts, shards[s]); });

    // Serial merge of new words: ids are assigned in document order, so the index does not
    // depend on the number of threads.
    for (Shard& shard : shards) {
        const std::size_t n_new = shard.new_words.size();
        shard.new_word_terms.resize(n_new);
        for (std::size_t j = 0; j < n_new; ++j) {
            const int32_t word = words_.insert(shard.new_words.key(static_cast<int32_t>(j)));
            if (static_cast<std::size_t>(word) == word_terms_.size()) {
                word_terms_.push_back(
                    shard.new_word_kept[j] ? terms_.insert(shard.new_word_norms[j]) : -1);
            }
            shard.new_word_terms[j] = word_terms_[word];
        }
        shard.new_words = StringTable();
        shard.new_word_norms = {};
    }

    run_parallel(n_shards, [&](std::size_t s) { count_shard(shards[s]); });

    for (Shard& shard : shards) {
        const int64_t base = static_cast<int64_t>(doc_terms_.size());
        for (std::size_t d = 1; d < shard.doc_offsets.size(); ++d) {
            doc_offsets_.push_back(base + shard.doc_offsets[d]);
        }
        doc_terms_.insert(doc_terms_.end(), shard.terms.begin(), shard.terms.end());
        doc_tfs_.insert(doc_tfs_.end(), shard.tfs.begin(), shard.tfs.end());
        doc_lengths_.insert(doc_lengths_.end(), shard.lengths.begin(), shard.lengths.end());
        doc_positions_.insert(doc_positions_.end(), shard.positions.begin(), shard.positions.end());
    }
}

InvertedIndexArrays IndexBuilder::finish_mapped(const std::vector<int32_t>& targets,
                                                StringTable vocabulary) {
    const auto n_new = static_cast<int64_t>(vocabulary.size());
    if (targets.size() != terms_.size()) {
        throw std::invalid_argument("targets must have one entry per term (" +
                                    std::to_string(terms_.size()) + "), got " +
                                    std::to_string(targets.size()));
    }
    for (const int32_t target : targets) {
        if (target < -1 || target >= n_new) {
            throw std::invalid_argument("a target is " + std::to_string(target) +
                                        ", outside -1 .. " + std::to_string(n_new - 1));
        }
    }
    if (positions_) {
        int64_t out = 0;
        int64_t out_position = 0;
        int64_t read_position = 0;
        std::vector<uint64_t> keys;
        std::vector<uint32_t> dropped;
        for (std::size_t d = 0; d + 1 < doc_offsets_.size(); ++d) {
            map_document(d, targets, out, out_position, read_position, keys, dropped);
        }
        doc_offsets_.back() = out;
        doc_terms_.resize(static_cast<std::size_t>(out));
        doc_tfs_.resize(static_cast<std::size_t>(out));
        doc_positions_.resize(static_cast<std::size_t>(out_position));
        terms_ = std::move(vocabulary);
        return finish();
    }
    // Per document, its entries mapped in place: `slot[t]` is where the document's entry
    // for new term t is, valid when `owner[t]` is the document.
    std::vector<int64_t> slot(static_cast<std::size_t>(n_new), 0);
    std::vector<int64_t> owner(static_cast<std::size_t>(n_new), -1);
    int64_t out = 0;
    for (std::size_t d = 0; d + 1 < doc_offsets_.size(); ++d) {
        const int64_t begin = doc_offsets_[d];
        const int64_t end = doc_offsets_[d + 1];
        doc_offsets_[d] = out;
        int64_t dropped = 0;
        for (int64_t i = begin; i < end; ++i) {
            const int32_t target = targets[static_cast<std::size_t>(doc_terms_[i])];
            if (target < 0) {
                dropped += doc_tfs_[i];
                continue;
            }
            if (owner[target] == static_cast<int64_t>(d)) {
                doc_tfs_[slot[target]] += doc_tfs_[i];
                continue;
            }
            owner[target] = static_cast<int64_t>(d);
            slot[target] = out;
            doc_terms_[out] = target;
            doc_tfs_[out] = doc_tfs_[i];
            ++out;
        }
        doc_lengths_[d] -= static_cast<int32_t>(dropped);
    }
    doc_offsets_.back() = out;
    doc_terms_.resize(static_cast<std::size_t>(out));
    doc_tfs_.resize(static_cast<std::size_t>(out));
    terms_ = std::move(vocabulary);
    return finish();
}

void IndexBuilder::map_document(std::size_t d, const std::vector<int32_t>& targets, int64_t& out,
                                int64_t& out_position, int64_t& read_position,
                                std::vector<uint64_t>& keys, std::vector<uint32_t>& dropped) {
    // The document's occurrences as (new term, position), positions renumbered over the
    // terms kept, then written back in place: never past what was read, since mapping only
    // merges and drops.
    keys.clear();
    dropped.clear();
    const int64_t begin = doc_offsets_[d];
    const int64_t end = doc_offsets_[d + 1];
    doc_offsets_[d] = out;
    for (int64_t i = begin; i < end; ++i) {
        const int32_t target = targets[static_cast<std::size_t>(doc_terms_[i])];
        for (uint32_t j = 0; j < doc_tfs_[i]; ++j) {
            const uint32_t position = doc_positions_[static_cast<std::size_t>(read_position++)];
            if (target < 0) {
                dropped.push_back(position);
            } else {
                keys.push_back(term_position(target, position));
            }
        }
    }
    std::sort(dropped.begin(), dropped.end());
    for (uint64_t& key : keys) {
        const uint32_t position = key_position(key);
        const auto before = std::lower_bound(dropped.begin(), dropped.end(), position);
        key = term_position(key_term(key),
                            position - static_cast<uint32_t>(before - dropped.begin()));
    }
    std::sort(keys.begin(), keys.end());
    doc_lengths_[d] -= static_cast<int32_t>(dropped.size());
    for (std::size_t i = 0; i < keys.size();) {
        std::size_t j = i;
        while (j < keys.size() && key_term(keys[j]) == key_term(keys[i])) {
            doc_positions_[static_cast<std::size_t>(out_position++)] = key_position(keys[j]);
            ++j;
        }
        doc_terms_[static_cast<std::size_t>(out)] = key_term(keys[i]);
        doc_tfs_[static_cast<std::size_t>(out)] = static_cast<uint32_t>(j - i);
        ++out;
        i = j;
    }
}

InvertedIndexArrays IndexBuilder::finish() {
    InvertedIndexArrays out;
    const std::size_t n_terms = terms_.size();
    const std::size_t n_docs = num_documents();

    // Pass 1: document frequencies and the encoded size of each term's postings.
    out.doc_freqs.assign(n_terms, 0);
    std::vector<int64_t> sizes(n_terms, 0);
    std::vector<uint32_t> last_doc(n_terms, 0);
    for (std::size_t d = 0; d < n_docs; ++d) {
        for (int64_t i = doc_offsets_[d]; i < doc_offsets_[d + 1]; ++i) {
            const int32_t t = doc_terms_[i];
            const auto doc = static_cast<uint32_t>(d);
            sizes[t] +=
                static_cast<int64_t>(varint_size(doc - last_doc[t]) + varint_size(doc_tfs_[i]));
            last_doc[t] = doc;
            ++out.doc_freqs[t];
        }
    }
    out.posting_offsets.assign(n_terms + 1, 0);
    for (std::size_t t = 0; t < n_terms; ++t) {
        out.posting_offsets[t + 1] = out.posting_offsets[t] + sizes[t];
    }

    // Pass 2: write each posting in place, documents in ascending order.
    out.postings.resize(static_cast<std::size_t>(out.posting_offsets[n_terms]));
    std::vector<uint8_t*> cursor(n_terms);
    for (std::size_t t = 0; t < n_terms; ++t)
        cursor[t] = out.postings.data() + out.posting_offsets[t];
    std::fill(last_doc.begin(), last_doc.end(), 0);
    for (std::size_t d = 0; d < n_docs; ++d) {
        for (int64_t i = doc_offsets_[d]; i < doc_offsets_[d + 1]; ++i) {
            const int32_t t = doc_terms_[i];
            const auto doc = static_cast<uint32_t>(d);
            cursor[t] = write_varint(cursor[t], doc - last_doc[t]);
            cursor[t] = write_varint(cursor[t], doc_tfs_[i]);
            last_doc[t] = doc;
        }
    }

    if (positions_) write_positions(out);
    out.vocab_bytes = terms_.bytes();
    out.vocab_offsets = terms_.offsets();
    out.vocab_slots = terms_.slots();
    out.doc_lengths = std::move(doc_lengths_);
    *this = IndexBuilder(analyzer_.config(), num_threads_, positions_);
    return out;
}

void IndexBuilder::write_positions(InvertedIndexArrays& out) const {
    const std::size_t n_terms = terms_.size();
    const std::size_t n_docs = num_documents();
    // Pass 1: the encoded size of each term's positions; pass 2: each written in place, in
    // the order of the term's postings (documents ascending).
    std::vector<int64_t> sizes(n_terms, 0);
    std::size_t read = 0;
    for (std::size_t d = 0; d < n_docs; ++d) {
        for (int64_t i = doc_offsets_[d]; i < doc_offsets_[d + 1]; ++i) {
            uint32_t last = 0;
            for (uint32_t j = 0; j < doc_tfs_[i]; ++j, ++read) {
                sizes[doc_terms_[i]] +=
                    static_cast<int64_t>(varint_size(doc_positions_[read] - last));
                last = doc_positions_[read];
            }
        }
    }
    out.position_offsets.assign(n_terms + 1, 0);
    for (std::size_t t = 0; t < n_terms; ++t) {
        out.position_offsets[t + 1] = out.position_offsets[t] + sizes[t];
    }
    out.positions.resize(static_cast<std::size_t>(out.position_offsets[n_terms]));
    std::vector<uint8_t*> cursor(n_terms);
    for (std::size_t t = 0; t < n_terms; ++t) {
        cursor[t] = out.positions.data() + out.position_offsets[t];
    }
    read = 0;
    for (std::size_t d = 0; d < n_docs; ++d) {
        for (int64_t i = doc_offsets_[d]; i < doc_offsets_[d + 1]; ++i) {
            uint8_t*& at = cursor[doc_terms_[i]];
            uint32_t last = 0;
            for (uint32_t j = 0; j < doc_tfs_[i]; ++j, ++read) {
                at = write_varint(at, doc_positions_[read] - last);
                last = doc_positions_[read];
            }
        }
    }
}

}  // namespace hybrid_engine
