// Lookups in a StringTable's arrays held elsewhere: a loaded index's, memory-mapped or not.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "hybrid_engine/string_table.hpp"

namespace hybrid_engine {

/// A read-only view of the arena, offsets and slots of a `StringTable` (`bytes()`, `offsets()`,
/// `slots()`) that live in memory it does not own, e.g. the arrays of an index file mapped
/// into memory: opening one costs O(1) whatever the number of keys, where
/// `StringTable::from_arena` inserts every key again.
///
/// Lookups are memory-safe on arrays of any content, without a pass over them: a probe stops
/// after `n_slots` slots, and a slot whose id is not below `n`, or whose key range does not lie
/// within the arena, is skipped. So a corrupt table can only make a key not found (or found
/// under a wrong id); `verify` checks that it is exactly a table `StringTable` would build.
///
/// The memory must stay valid and unchanged while the view (or a copy) is used. Const members
/// are safe to call from many threads at once.
class StringTableView {
public:
    /// A view of `n` keys: `offsets` has `n + 1` entries cutting `bytes` (`n_bytes` of them),
    /// `slots` has `n_slots`. Throws std::invalid_argument, reading none of the arrays, unless
    /// `n_slots` is a power of two >= 2 and >= 2 n (a table is at most half full), and n fits
    /// the ids (n <= 2^31 - 2).
    StringTableView(const char* bytes, std::size_t n_bytes, const int64_t* offsets, std::size_t n,
                    const uint64_t* slots, std::size_t n_slots);

    /// Id of `key`, or -1 when absent. At most `n_slots` probes.
    int32_t find(std::string_view key) const noexcept;

    /// Throws std::invalid_argument unless the arrays are a table that `StringTable` builds
    /// from the arena: the offsets rise from 0 to `n_bytes`, every non-empty slot holds an id
    /// below `n`, each id sits in exactly one slot, and `find` of every key gives its own id
    /// (so no key occurs twice). Reads every array once: O(n + n_slots).
    void verify() const;

    /// Number of keys.
    std::size_t size() const noexcept { return n_; }

private:
    /// Key `id`, or false when its range does not lie within the arena (id < n).
    bool key(std::size_t id, std::string_view& out) const noexcept;

    const char* bytes_;
    std::size_t n_bytes_;
    const int64_t* offsets_;
    std::size_t n_;
    const uint64_t* slots_;
    std::size_t n_slots_;
};

}  // namespace hybrid_engine
