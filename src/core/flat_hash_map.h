#pragma once
// A small open-addressing hash map from 64-bit hashes to values, for per-sample
// hot paths (series tables) where std::unordered_map's node allocations and
// pointer chasing cost more than the work around them.
//
// Keys are already-mixed 64-bit hashes; key 0 is reserved (remapped to 1 by
// callers via FlatHashMap::NonZero). Linear probing, power-of-two capacity,
// load factor <= 0.5. No erase. Thread-compatible.

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace gpucanary {

template <typename V>
class FlatHashMap {
 public:
  static std::uint64_t NonZero(std::uint64_t h) { return h == 0 ? 1 : h; }

  // Returns the value for `key` (REQUIRES: key != 0), inserting a
  // value-initialised one if absent; `inserted` tells which.
  V& FindOrInsert(std::uint64_t key, bool& inserted) {
    if ((size_ + 1) * 2 > slots_.size()) Grow();
    std::size_t mask = slots_.size() - 1;
    std::size_t i = static_cast<std::size_t>(key) & mask;
    while (slots_[i].key != 0) {
      if (slots_[i].key == key) {
        inserted = false;
        return slots_[i].value;
      }
      i = (i + 1) & mask;
    }
    slots_[i].key = key;
    slots_[i].value = V{};
    ++size_;
    inserted = true;
    return slots_[i].value;
  }

  // Returns the value for `key` or nullptr.
  const V* Find(std::uint64_t key) const {
    if (slots_.empty()) return nullptr;
    std::size_t mask = slots_.size() - 1;
    std::size_t i = static_cast<std::size_t>(key) & mask;
    while (slots_[i].key != 0) {
      if (slots_[i].key == key) return &slots_[i].value;
      i = (i + 1) & mask;
    }
    return nullptr;
  }

  // Makes room for `n` entries without rehashing.
  void Reserve(std::size_t n) {
    std::size_t want = 64;
    while (want < n * 2) want *= 2;
    if (want > slots_.size()) Rehash(want);
  }

  std::size_t size() const { return size_; }
  void Clear() {
    slots_.clear();
    size_ = 0;
  }

 private:
  struct Slot {
    std::uint64_t key = 0;
    V value{};
  };

  void Grow() { Rehash(slots_.empty() ? 64 : slots_.size() * 2); }

  void Rehash(std::size_t capacity) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(capacity, Slot{});
    std::size_t mask = slots_.size() - 1;
    for (Slot& s : old) {
      if (s.key == 0) continue;
      std::size_t i = static_cast<std::size_t>(s.key) & mask;
      while (slots_[i].key != 0) i = (i + 1) & mask;
      slots_[i] = std::move(s);
    }
  }

  std::vector<Slot> slots_;
  std::size_t size_ = 0;
};

}  // namespace gpucanary
