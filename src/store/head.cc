#include "store/head.h"

#include <algorithm>
#include <utility>

#include "core/status.h"

namespace gpucanary::store {

HeadSeries& Head::Create(SeriesRef ref, const model::Labels& labels) {
  if (HeadSeries* existing = Find(ref); existing != nullptr) return *existing;
  next_ref_ = std::max(next_ref_, ref + 1);
  published_next_ref_.store(next_ref_, std::memory_order_release);
  auto owned = std::make_unique<HeadSeries>();
  HeadSeries& s = *owned;
  s.ref = ref;
  s.labels = InternLabels(symbols_, labels);
  s.hash = model::LabelsHash(labels);
  series_.emplace(ref, std::move(owned));
  ++live_series_;
  if (!bulk_load_) Index(s);
  return s;
}

void Head::Index(const HeadSeries& s) {
  by_hash_[s.hash].push_back(s.ref);
  postings_.Add(s.ref, s.labels);
  // Postings and Match need sorted lists. The store hands out growing refs,
  // so this appends; only recovery has smaller ones, and it loads in bulk.
  if (live_refs_.empty() || live_refs_.back() < s.ref) {
    live_refs_.push_back(s.ref);
  } else {
    live_refs_.insert(std::lower_bound(live_refs_.begin(), live_refs_.end(), s.ref), s.ref);
  }
}

void Head::EndBulkLoad() {
  bulk_load_ = false;
  RebuildIndex();
}

void Head::RebuildIndex() {
  ++index_builds_;
  postings_.Clear();
  live_refs_.clear();
  by_hash_.clear();
  std::vector<const HeadSeries*> sorted;
  sorted.reserve(series_.size());
  for (const auto& [ref, s] : series_) sorted.push_back(s.get());
  std::sort(sorted.begin(), sorted.end(),
            [](const HeadSeries* a, const HeadSeries* b) { return a->ref < b->ref; });
  live_refs_.reserve(sorted.size());
  by_hash_.reserve(sorted.size());
  // In ref order: postings append, and each hash's refs are sorted.
  for (const HeadSeries* s : sorted) {
    live_refs_.push_back(s->ref);
    by_hash_[s->hash].push_back(s->ref);
    postings_.Add(s->ref, s->labels);
  }
}

SeriesRef Head::Lookup(const model::Labels& labels, std::uint64_t hash) const {
  GC_CHECK(!bulk_load_, "Head::Lookup during a bulk load (the index is not built yet)");
  auto it = by_hash_.find(hash);
  if (it == by_hash_.end()) return 0;
  for (SeriesRef ref : it->second) {
    if (ExpandLabels(symbols_, series_.at(ref)->labels) == labels) return ref;
  }
  return 0;
}

std::vector<std::uint64_t> Head::Match(const std::vector<model::Matcher>& matchers) const {
  GC_CHECK(!bulk_load_, "Head::Match during a bulk load (the index is not built yet)");
  return postings_.Match(
      symbols_, matchers,
      [&](std::uint64_t ref) -> const SymLabels& { return series_.at(ref)->labels; }, live_refs_);
}

std::vector<SeriesRef> Head::SortedRefs() const {
  if (!bulk_load_) return live_refs_;
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
