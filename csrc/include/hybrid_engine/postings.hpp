// The compressed postings layout shared by the builder and the scorers.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hybrid_engine {

/// Postings of one term are a byte run of (doc-id gap, term frequency) pairs, each a LEB128
/// varint (7 bits per byte, high bit set = more bytes follow). Doc ids ascend; the first gap
/// is the first doc id itself, every later gap is >= 1; term frequencies are >= 1. The numba
/// kernels (hybrid_engine/lexical/_postings_decode.py, _kernels.py) decode the same layout.
///
/// Positions of one term (an index built with positions) are a byte run of varints too: for
/// each of its postings, in the postings' order, its term frequency's positions ascending, the
/// first as it is and each later one as the gap (>= 1) from the one before
/// (hybrid_engine/lexical/_phrase.py decodes them).

/// Bytes that write_varint uses for `value`.
inline std::size_t varint_size(uint32_t value) noexcept {
    std::size_t size = 1;
    while (value >= 0x80) {
        value >>= 7;
        ++size;
    }
    return size;
}

/// Writes `value` at `out`; returns the position after it.
inline uint8_t* write_varint(uint8_t* out, uint32_t value) noexcept {
    while (value >= 0x80) {
        *out++ = static_cast<uint8_t>(value | 0x80);
        value >>= 7;
    }
    *out++ = static_cast<uint8_t>(value);
    return out;
}

}  // namespace hybrid_engine
