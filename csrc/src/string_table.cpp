#include "hybrid_engine/string_table.hpp"

#include <cstring>
#include <stdexcept>
#include <string>

#include "hybrid_engine/offsets.hpp"

namespace hybrid_engine {

StringTable::StringTable() : offsets_{0}, slots_(16, 0) {}

uint64_t StringTable::hash(std::string_view key) noexcept {
    // FNV-1a on 8-byte words with a final avalanche: short keys (words) dominate.
    uint64_t h = 0xcbf29ce484222325ULL ^ key.size();
    std::size_t i = 0;
    for (; i + 8 <= key.size(); i += 8) {
        uint64_t w;
        std::memcpy(&w, key.data() + i, 8);
        h = (h ^ w) * 0x100000001b3ULL;
        h ^= h >> 29;
    }
    uint64_t tail = 0;
    if (i < key.size()) std::memcpy(&tail, key.data() + i, key.size() - i);
    h = (h ^ tail) * 0x9e3779b97f4a7c15ULL;
    h ^= h >> 32;
    h *= 0xd6e8feb86659fd93ULL;
    h ^= h >> 32;
    return h;
}

int32_t StringTable::find(std::string_view key) const noexcept {
    const uint64_t h = hash(key);
    const uint64_t tag = h & kTagMask;
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t slot = h & mask;; slot = (slot + 1) & mask) {
        const uint64_t entry = slots_[slot];
        if (entry == 0) return -1;
        const auto id = static_cast<int32_t>(static_cast<uint32_t>(entry) - 1);
        if ((entry & kTagMask) == tag && this->key(id) == key) return id;
    }
}

int32_t StringTable::insert(std::string_view key) {
    const uint64_t h = hash(key);
    const uint64_t tag = h & kTagMask;
    const std::size_t mask = slots_.size() - 1;
    std::size_t slot = h & mask;
    for (;; slot = (slot + 1) & mask) {
        const uint64_t entry = slots_[slot];
        if (entry == 0) break;
        const auto id = static_cast<int32_t>(static_cast<uint32_t>(entry) - 1);
        if ((entry & kTagMask) == tag && this->key(id) == key) return id;
    }
    if (size() >= 0x7ffffffeULL) throw std::length_error("StringTable: more than 2^31 - 2 keys");
    const auto id = static_cast<int32_t>(size());
    bytes_.append(key.data(), key.size());
    offsets_.push_back(static_cast<int64_t>(bytes_.size()));
    slots_[slot] = slot_entry(h, id);
    if (2 * size() > slots_.size()) grow();  // load factor <= 1/2
    return id;
}

void StringTable::grow() {
    std::vector<uint64_t> slots(slots_.size() * 2, 0);
    const std::size_t mask = slots.size() - 1;
    for (const uint64_t entry : slots_) {
        if (entry == 0) continue;
        const auto id = static_cast<int32_t>(static_cast<uint32_t>(entry) - 1);
        std::size_t slot = hash(key(id)) & mask;
        while (slots[slot] != 0) slot = (slot + 1) & mask;
        slots[slot] = entry;
    }
    slots_.swap(slots);
}

StringTable StringTable::from_arena(const char* bytes, std::size_t n_bytes, const int64_t* offsets,
                                    std::size_t n) {
    check_offsets(offsets, n, n_bytes, "vocab_offsets", "vocab_bytes");
    StringTable table;
    std::size_t capacity = 16;
    while (capacity < 2 * n + 2) capacity *= 2;
    table.slots_.assign(capacity, 0);
    table.bytes_.reserve(n_bytes);
    table.offsets_.reserve(n + 1);
    for (std::size_t i = 0; i < n; ++i) {
        const std::string_view key(bytes + offsets[i],
                                   static_cast<std::size_t>(offsets[i + 1] - offsets[i]));
        if (table.insert(key) != static_cast<int32_t>(i)) {
            throw std::invalid_argument("vocabulary holds the term '" + std::string(key) +
                                        "' twice");
        }
    }
    return table;
}

}  // namespace hybrid_engine
