#include "store/head.h"

#include <algorithm>
#include <utility>

namespace gpucanary::store {

HeadSeries& Head::Create(SeriesRef ref, const model::Labels& labels) {
  if (HeadSeries* existing = Find(ref); existing != nullptr) return *existing;
  next_ref_ = std::max(next_ref_, ref + 1);
  published_next_ref_.store(next_ref_, std::memory_order_release);
  auto s = std::make_unique<HeadSeries>();
  s->ref = ref;
  s->labels = InternLabels(symbols_, labels);
  s->hash = model::LabelsHash(labels);
  by_hash_[s->hash].push_back(ref);
  // Refs from recovery may arrive out of order; postings need sorted lists.
  if (!live_refs_.empty() && ref < live_refs_.back()) {
    series_[ref] = std::move(s);
    ++live_series_;
    RebuildIndex();
    return *series_[ref];
  }
  postings_.Add(ref, s->labels);
  live_refs_.push_back(ref);
  series_[ref] = std::move(s);
  ++live_series_;
  return *series_[ref];
}

void Head::RebuildIndex() {
  postings_.Clear();
  live_refs_.clear();
  by_hash_.clear();
  for (const auto& [ref, s] : series_) {
    live_refs_.push_back(ref);
    by_hash_[s->hash].push_back(ref);
  }
  std::sort(live_refs_.begin(), live_refs_.end());
  for (SeriesRef ref : live_refs_) postings_.Add(ref, series_[ref]->labels);
}

SeriesRef Head::Lookup(const model::Labels& labels, std::uint64_t hash) const {
  auto it = by_hash_.find(hash);
  if (it == by_hash_.end()) return 0;
  for (SeriesRef ref : it->second) {
    if (ExpandLabels(symbols_, series_.at(ref)->labels) == labels) return ref;
  }
  return 0;
}

std::vector<std::uint64_t> Head::Match(const std::vector<model::Matcher>& matchers) const {
  return postings_.Match(
      symbols_, matchers,
      [&](std::uint64_t ref) -> const SymLabels& { return series_.at(ref)->labels; }, live_refs_);
}

std::vector<SeriesRef> Head::SortedRefs() const {
  std::vector<SeriesRef> refs;
  refs.reserve(series_.size());
  for (const auto& [ref, s] : series_) refs.push_back(ref);
  std::sort(refs.begin(), refs.end());
  return refs;
}

std::size_t Head::DropIdle(std::int64_t now_ms, std::int64_t idle_ms) {
  std::size_t dropped = 0;
  for (auto it = series_.begin(); it != series_.end();) {
    const HeadSeries& s = *it->second;
    // A series created with no sample yet is left: a writer is about to use it.
    const bool idle = !s.in_active_segment && s.open.empty() && s.last_t != kNoTime &&
                      s.last_t < now_ms - idle_ms;
    if (!idle) {
      ++it;
      continue;
    }
    it = series_.erase(it);
    ++dropped;
  }
  if (dropped > 0) {
    live_series_ -= dropped;
    RebuildIndex();
  }
  return dropped;
}

}  // namespace gpucanary::store
