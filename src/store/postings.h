#pragma once
// The inverted label index shared by the head and sealed segments: interned
// label strings (Symbols) and, for every label name and value, the sorted
// list of series ids that carry it (Postings). Thread-compatible.

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model/labels.h"
#include "model/matcher.h"

namespace gpucanary::store {

// Interned strings: each distinct label name or value is stored once and
// named by a 32-bit id. Ids are never reused.
class Symbols {
 public:
  std::uint32_t Intern(std::string_view s);
  // The id of `s`, or kNone.
  std::uint32_t Find(std::string_view s) const;
  std::string_view Get(std::uint32_t id) const { return strings_[id]; }
  std::size_t size() const { return strings_.size(); }

  static constexpr std::uint32_t kNone = 0xffffffffu;

 private:
  std::deque<std::string> strings_;  // stable addresses for the map's keys
  std::unordered_map<std::string_view, std::uint32_t> ids_;
};

// A label set as interned (name, value) id pairs, sorted by name.
using SymLabels = std::vector<std::uint32_t>;

SymLabels InternLabels(Symbols& symbols, const model::Labels& labels);
model::Labels ExpandLabels(const Symbols& symbols, const SymLabels& labels);

class Postings {
 public:
  // Adds `id` to the list of each of its labels, keeping the lists sorted:
  // O(1) per label when ids come in increasing order (a segment index, the
  // head's new series), an insertion (linear in the list) otherwise. An id
  // already in a list is not added again.
  void Add(std::uint64_t id, const SymLabels& labels);
  void Clear() { lists_.clear(); }

  // Ids of the series whose labels satisfy every matcher, sorted. `labels_of`
  // gives a candidate's label set (for matchers the postings cannot decide).
  std::vector<std::uint64_t> Match(const Symbols& symbols,
                                   const std::vector<model::Matcher>& matchers,
                                   const std::function<const SymLabels&(std::uint64_t)>& labels_of,
                                   const std::vector<std::uint64_t>& all_ids) const;

  // Label name id -> value id -> ids.
  const std::unordered_map<std::uint32_t,
                           std::unordered_map<std::uint32_t, std::vector<std::uint64_t>>>&
  lists() const {
    return lists_;
  }

 private:
  std::unordered_map<std::uint32_t, std::unordered_map<std::uint32_t, std::vector<std::uint64_t>>>
      lists_;
};

// The value of label `name` in `labels`, "" when absent.
std::string_view SymLabelValue(const Symbols& symbols, const SymLabels& labels,
                               std::string_view name);

}  // namespace gpucanary::store
