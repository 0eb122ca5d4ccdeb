#include "hybrid_engine/string_table_view.hpp"

#include <stdexcept>
#include <string>
#include <vector>

#include "hybrid_engine/offsets.hpp"

namespace hybrid_engine {

StringTableView::StringTableView(const char* bytes, std::size_t n_bytes, const int64_t* offsets,
                                 std::size_t n, const uint64_t* slots, std::size_t n_slots)
    : bytes_(bytes), n_bytes_(n_bytes), offsets_(offsets), n_(n), slots_(slots), n_slots_(n_slots) {
    if (n_slots < 2 || (n_slots & (n_slots - 1)) != 0) {
        throw std::invalid_argument("vocab_slots must hold a power of two >= 2 of slots, got " +
                                    std::to_string(n_slots));
    }
    if (n > 0x7ffffffeULL || n > n_slots / 2) {
        throw std::invalid_argument("vocab_slots has " + std::to_string(n_slots) + " slots for " +
                                    std::to_string(n) + " terms; a table is at most half full");
    }
}

bool StringTableView::key(std::size_t id, std::string_view& out) const noexcept {
    const int64_t begin = offsets_[id];
    const int64_t end = offsets_[id + 1];
    if (begin < 0 || end < begin || static_cast<uint64_t>(end) > n_bytes_) return false;
    out = std::string_view(bytes_ + begin, static_cast<std::size_t>(end - begin));
    return true;
}

int32_t StringTableView::find(std::string_view key) const noexcept {
    const uint64_t h = StringTable::hash(key);
    const uint64_t tag = h & StringTable::kTagMask;
    const std::size_t mask = n_slots_ - 1;
    std::size_t slot = h & mask;
    for (std::size_t probe = 0; probe < n_slots_; ++probe, slot = (slot + 1) & mask) {
        const uint64_t entry = slots_[slot];
        if (entry == 0) return -1;
        // id + 1 in the low half: 0 there (a corrupt slot) wraps to an id past every key.
        const uint64_t id = static_cast<uint32_t>(static_cast<uint32_t>(entry) - 1);
        std::string_view stored;
        if ((entry & StringTable::kTagMask) == tag && id < n_ && this->key(id, stored) &&
            stored == key) {
            return static_cast<int32_t>(id);
        }
    }
    return -1;
}

void StringTableView::verify() const {
    check_offsets(offsets_, n_, n_bytes_, "vocab_offsets", "vocab_bytes");
    std::vector<bool> seen(n_, false);
    std::size_t filled = 0;
    for (std::size_t slot = 0; slot < n_slots_; ++slot) {
        const uint64_t entry = slots_[slot];
        if (entry == 0) continue;
        const uint64_t id = static_cast<uint32_t>(static_cast<uint32_t>(entry) - 1);
        if (id >= n_) {
            throw std::invalid_argument("vocab_slots: slot " + std::to_string(slot) +
                                        " holds no term id below " + std::to_string(n_));
        }
        if (seen[id]) {
            throw std::invalid_argument("vocab_slots holds term " + std::to_string(id) +
                                        " twice (again at slot " + std::to_string(slot) + ")");
        }
        seen[id] = true;
        ++filled;
    }
    if (filled != n_) {
        throw std::invalid_argument("vocab_slots holds " + std::to_string(filled) + " of the " +
                                    std::to_string(n_) + " terms");
    }
    for (std::size_t id = 0; id < n_; ++id) {
        std::string_view term;
        key(id, term);  // within the arena: the offsets are checked
        const int32_t found = find(term);
        if (found != static_cast<int32_t>(id)) {
            throw std::invalid_argument(
                found >= 0 ? "vocabulary holds term " + std::to_string(id) + " twice (as term " +
                                 std::to_string(found) + ")"
                           : "vocab_slots does not lead to term " + std::to_string(id) +
                                 " from its hash: the table is not the vocabulary's");
        }
    }
}

}  // namespace hybrid_engine
