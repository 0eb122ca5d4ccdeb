// An insert-only hash table from byte strings to dense ids.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hybrid_engine {

/// Maps distinct byte strings to dense ids 0, 1, 2, ... in insertion order.
///
/// Keys live back to back in one byte arena (`bytes()`, delimited by `offsets()`), which is
/// also the on-disk vocabulary layout, and so does the open-addressing slot array (`slots()`):
/// a saved BM25 index keeps all three, and `StringTableView` looks keys up in them in place.
/// Lookups never allocate. Const members are safe to call from many threads at once as long as
/// no thread inserts.
class StringTable {
public:
    /// The high 32 bits of a slot: those of its key's `hash`.
    static constexpr uint64_t kTagMask = 0xFFFFFFFF00000000ULL;

    StringTable();

    /// Rebuilds a table from an arena of `n_bytes` and its `n + 1` offsets (as returned by
    /// `bytes()` and `offsets()`). Throws std::invalid_argument, before reading the arena, if
    /// the offsets do not rise (or stay) from 0 to `n_bytes`; and if a key occurs twice.
    static StringTable from_arena(const char* bytes, std::size_t n_bytes, const int64_t* offsets,
                                  std::size_t n);

    /// Id of `key`, or -1 when absent.
    int32_t find(std::string_view key) const noexcept;

    /// Id of `key`, inserting it with the next id when absent.
    int32_t insert(std::string_view key);

    /// Number of keys.
    std::size_t size() const noexcept { return offsets_.size() - 1; }

    /// Key with id `id` (0 <= id < size()).
    std::string_view key(int32_t id) const noexcept {
        return std::string_view(bytes_.data() + offsets_[id],
                                static_cast<std::size_t>(offsets_[id + 1] - offsets_[id]));
    }

    const std::string& bytes() const noexcept { return bytes_; }
    const std::vector<int64_t>& offsets() const noexcept { return offsets_; }

    /// The slots: key k with id i sits in the first slot from `hash(k) & (size - 1)` on
    /// (linear probing, wrapping) that holds `(hash(k) & kTagMask) | (i + 1)`; 0 is an empty
    /// slot. The size is a power of two >= 16, at least twice the number of keys.
    const std::vector<uint64_t>& slots() const noexcept { return slots_; }

    /// The hash of `key`. Saved indexes hold slots placed by it (`slots()`): changing it
    /// changes the BM25 format (hybrid_engine/lexical/bm25_format.py), which must bump its
    /// version.
    static uint64_t hash(std::string_view key) noexcept;

private:
    void grow();

    // Most mismatches are rejected on the tag, without touching the key arena.
    static uint64_t slot_entry(uint64_t hash, int32_t id) noexcept {
        return (hash & kTagMask) | static_cast<uint32_t>(id + 1);
    }

    std::string bytes_;
    std::vector<int64_t> offsets_;
    std::vector<uint64_t> slots_;
};

}  // namespace hybrid_engine
