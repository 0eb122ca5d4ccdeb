// Checks of CSR offset arrays, done before anything is read through them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace hybrid_engine {

/// Throws std::invalid_argument unless the `n + 1` entries of `offsets` rise (or stay) from 0
/// to `n_items`, so that every range [offsets[i], offsets[i + 1]) lies within an array of
/// `n_items` items. Reads only `offsets[0..n]`; `what` and `items` name the offsets and the
/// array they cut in the message (say "doc_offsets" and "terms").
inline void check_offsets(const int64_t* offsets, std::size_t n, std::size_t n_items,
                          const char* what, const char* items) {
    if (offsets[0] != 0) {
        throw std::invalid_argument(std::string(what) + " must start at 0, got " +
                                    std::to_string(offsets[0]));
    }
    for (std::size_t i = 0; i < n; ++i) {
        if (offsets[i + 1] < offsets[i]) {
            throw std::invalid_argument(
                std::string(what) + " must not decrease: entry " + std::to_string(i + 1) + " (" +
                std::to_string(offsets[i + 1]) + ") is below entry " + std::to_string(i) + " (" +
                std::to_string(offsets[i]) + ")");
        }
    }
    if (offsets[n] != static_cast<int64_t>(n_items)) {
        throw std::invalid_argument(std::string(what) + " must end at len(" + items + ") (" +
                                    std::to_string(n_items) + "), got " +
                                    std::to_string(offsets[n]));
    }
}

}  // namespace hybrid_engine
