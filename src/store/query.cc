// Reading (docs/storage-format.md, "Reading"), as Prometheus's
// tsdb/head_read.go and querier do it: Query picks series through the
// postings of the sealed segments and the head, and returns their chunks in
// the range undecoded; Select, SeriesIn, LabelNames and LabelValues are built
// on it; QueryResult decodes as the caller iterates.

#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>

#include "core/mutex.h"
#include "store/bits.h"
#include "store/store_impl.h"

namespace gpucanary::store {
namespace {

constexpr std::size_t kMaxLoadedIndexes = 8;

bool Overlaps(const ChunkLoc& c, std::int64_t mint, std::int64_t maxt) {
  return c.maxt >= mint && c.mint <= maxt;
}

// An interned label set's hash, each string's hash seeding the next one's
// (collisions are resolved by comparing the strings, so this need not match
// LabelsHash).
std::uint64_t SymLabelsHash(const Symbols& symbols, const SymLabels& sym) {
  std::uint64_t h = 0;
  for (std::uint32_t id : sym) {
    const std::string_view text = symbols.Get(id);
    h = XXH3_64bits_withSeed(text.data(), text.size(), h);
  }
  return h;
}

// The ids of a sealed segment's series that match every matcher.
std::vector<std::uint64_t> MatchingIds(const SegmentIndex& idx,
                                       const std::vector<model::Matcher>& matchers) {
  return idx.postings.Match(
      idx.symbols, matchers, [&](std::uint64_t id) -> const SymLabels& { return idx.labels[id]; },
      idx.all_ids);
}

}  // namespace

// Query's series, one entry per label set across segments and the head.
// Merges one series' chunks from several sources (segments and the head,
// each with its own symbol table) into one SeriesData. Label sets are
// compared and hashed as interned strings; a set is expanded into Labels
// once, when its series is first seen.
class QueryBuilder {
 public:
  SeriesData& Entry(const Symbols& symbols, const SymLabels& sym) {
    const std::uint64_t hash = SymLabelsHash(symbols, sym);
    auto [it, inserted] = first_.try_emplace(hash, out_.size());
    if (!inserted) {
      for (std::size_t i = it->second; i != kNoSlot; i = next_[i]) {
        if (Same(out_[i].labels, symbols, sym)) return out_[i];
      }
      next_.push_back(it->second);  // a hash collision: chained in front
      it->second = out_.size();
    } else {
      next_.push_back(kNoSlot);
    }
    out_.emplace_back();
    out_.back().labels = ExpandLabels(symbols, sym);
    return out_.back();
  }

  // The series sorted by labels (a permutation is sorted, then each entry
  // moved once).
  std::vector<SeriesData> Take() {
    std::vector<std::uint32_t> order(out_.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::uint32_t>(i);
    std::sort(order.begin(), order.end(),
              [&](std::uint32_t a, std::uint32_t b) { return out_[a].labels < out_[b].labels; });
    std::vector<SeriesData> sorted;
    sorted.reserve(out_.size());
    for (std::uint32_t i : order) sorted.push_back(std::move(out_[i]));
    return sorted;
  }

 private:
  static constexpr std::size_t kNoSlot = ~std::size_t{0};

  static bool Same(const model::Labels& labels, const Symbols& symbols, const SymLabels& sym) {
    if (labels.size() * 2 != sym.size()) return false;
    for (std::size_t i = 0; i < labels.size(); ++i) {
      if (labels[i].name != symbols.Get(sym[2 * i]) ||
          labels[i].value != symbols.Get(sym[2 * i + 1])) {
        return false;
      }
    }
    return true;
  }

  std::vector<SeriesData> out_;
  std::vector<std::size_t> next_;  // per entry: the next with the same hash
  std::unordered_map<std::uint64_t, std::size_t> first_;
};

Result<QueryResult> Store::Impl::Query(const std::vector<model::Matcher>& matchers,
                                       std::int64_t mint, std::int64_t maxt) const {
  ReaderMutexLock lock(mu_);
  QueryResult result;
  result.mint = mint;
  result.maxt = maxt;
  QueryBuilder builder;
  if (Status s = QuerySealed(matchers, builder, result); !s.ok()) return Error(s);
  TrimIndexCache();
  if (Status s = QueryHead(matchers, builder, result); !s.ok()) return Error(s);
  result.series = builder.Take();
  return result;
}

// A sealed segment's index, loaded on demand, now the most recently used.
Result<std::shared_ptr<const SegmentIndex>> Store::Impl::IndexOf(const SealedSegment& seg) const {
  auto index = seg.Index();
  if (!index) return index;
  MutexLock cache(cache_mu_);
  std::erase_if(index_lru_, [&](const LoadedIndex& l) { return l.segment == &seg; });
  index_lru_.push_back({&seg, std::chrono::steady_clock::now()});
  return index;
}

// The sealed segments' chunks in [result.mint, result.maxt], through each
// segment's index (loaded on demand, most recently used last in index_lru_).
Status Store::Impl::QuerySealed(const std::vector<model::Matcher>& matchers, QueryBuilder& builder,
                                QueryResult& result) const {
  const std::int64_t mint = result.mint;
  const std::int64_t maxt = result.maxt;
  for (const auto& seg : sealed_) {
    if (seg->maxt() < mint || seg->mint() > maxt) continue;
    auto index = IndexOf(*seg);
    if (!index) return index.error();
    result.keep_alive.push_back(seg->mapping());
    const SegmentIndex& idx = **index;
    const auto ids = MatchingIds(idx, matchers);
    for (std::uint64_t id : ids) {
      SeriesData* entry = nullptr;
      for (const ChunkLoc& c : idx.chunks[id]) {
        if (!Overlaps(c, mint, maxt)) continue;
        if (!seg->Intact(c)) {  // damaged on disk: no data, never invented values
          damaged_chunks_skipped_.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
        auto bytes = seg->Chunk(c);
        if (!bytes) return bytes.error();
        if (entry == nullptr) entry = &builder.Entry(idx.symbols, idx.labels[id]);
        entry->chunks.push_back({*bytes, c.mint, c.maxt});
      }
    }
  }
  return Status::Ok();
}

// Label sets already visited, compared as interned strings (each source has
// its own symbol table); what it points to stays valid while the visit holds
// the reader lock and the segments' indexes.
class SeenSeries {
 public:
  // True the first time a label set is offered.
  bool Insert(const Symbols& symbols, const SymLabels& sym) {
    const std::uint64_t h = SymLabelsHash(symbols, sym);
    auto [first, last] = seen_.equal_range(h);
    for (auto it = first; it != last; ++it) {
      if (Same(*it->second.first, *it->second.second, symbols, sym)) return false;
    }
    seen_.emplace(h, std::pair{&symbols, &sym});
    return true;
  }

 private:
  static bool Same(const Symbols& a_symbols, const SymLabels& a, const Symbols& b_symbols,
                   const SymLabels& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (a_symbols.Get(a[i]) != b_symbols.Get(b[i])) return false;
    }
    return true;
  }
  std::unordered_multimap<std::uint64_t, std::pair<const Symbols*, const SymLabels*>> seen_;
};

Status Store::Impl::VisitSeries(const std::vector<model::Matcher>& matchers, std::int64_t mint,
                                std::int64_t maxt, const LabelVisitor& fn) const {
  ReaderMutexLock lock(mu_);
  SeenSeries seen;
  std::vector<std::shared_ptr<const SegmentIndex>> held;
  for (const auto& seg : sealed_) {
    if (seg->maxt() < mint || seg->mint() > maxt) continue;
    auto index = IndexOf(*seg);
    if (!index) return index.error();
    held.push_back(*index);
    const SegmentIndex& idx = **index;
    const auto ids = MatchingIds(idx, matchers);
    for (std::uint64_t id : ids) {
      const bool has_data =
          std::any_of(idx.chunks[id].begin(), idx.chunks[id].end(),
                      [&](const ChunkLoc& c) { return Overlaps(c, mint, maxt) && seg->Intact(c); });
      if (has_data && seen.Insert(idx.symbols, idx.labels[id])) fn(idx.symbols, idx.labels[id]);
    }
  }
  TrimIndexCache();
  for (std::uint64_t ref : head_.Match(matchers)) {
    const HeadSeries& s = head_.at(ref);
    const bool has_data = std::any_of(s.active_chunks.begin(), s.active_chunks.end(),
                                      [&](const ChunkLoc& c) { return Overlaps(c, mint, maxt); }) ||
                          (!s.open.empty() && s.open.maxt() >= mint && s.open.mint() <= maxt);
    if (has_data && seen.Insert(head_.symbols(), s.labels)) fn(head_.symbols(), s.labels);
  }
  return Status::Ok();
}

// The head's chunks in the active segment (through its mapping) and a copy
// of each open chunk that overlaps [result.mint, result.maxt].
Status Store::Impl::QueryHead(const std::vector<model::Matcher>& matchers, QueryBuilder& builder,
                              QueryResult& result) const {
  const std::int64_t mint = result.mint;
  const std::int64_t maxt = result.maxt;
  result.keep_alive.push_back(active_.mapping());
  for (std::uint64_t ref : head_.Match(matchers)) {
    const HeadSeries& s = head_.at(ref);
    SeriesData* entry = nullptr;
    for (const ChunkLoc& c : s.active_chunks) {
      if (!Overlaps(c, mint, maxt)) continue;
      if (c.offset + c.length > active_.size()) {
        return Status(StatusCode::kInternal, "chunk past the active segment's end");
      }
      if (entry == nullptr) entry = &builder.Entry(head_.symbols(), s.labels);
      entry->chunks.push_back(
          {std::string_view(active_.mapping()->data() + c.offset, c.length), c.mint, c.maxt});
    }
    if (s.open.empty() || s.open.maxt() < mint || s.open.mint() > maxt) continue;
    if (entry == nullptr) entry = &builder.Entry(head_.symbols(), s.labels);
    entry->open_stream = s.open.Snapshot();
    entry->open_samples = s.open.size();
  }
  return Status::Ok();
}

void Store::Impl::TrimIndexCache() const {
  MutexLock cache(cache_mu_);
  // An index not read for index_idle_ms is released too (issue 22's soak:
  // each sealed segment's index stayed loaded after the reads moved on, so
  // the heap grew at every segment rotation).
  const auto idle_since =
      std::chrono::steady_clock::now() - std::chrono::milliseconds(options_.index_idle_ms);
  while (!index_lru_.empty() &&
         (index_lru_.size() > kMaxLoadedIndexes || index_lru_.front().used < idle_since)) {
    index_lru_.front().segment->ReleaseIndex();
    index_lru_.erase(index_lru_.begin());
  }
}

// --- The read API over Query.

Result<QueryResult> Store::Query(const std::vector<model::Matcher>& matchers, std::int64_t mint,
                                 std::int64_t maxt) const {
  return impl_->Query(matchers, mint, maxt);
}

Result<std::vector<SeriesSamples>> Store::Select(const std::vector<model::Matcher>& matchers,
                                                 std::int64_t mint, std::int64_t maxt) const {
  auto q = impl_->Query(matchers, mint, maxt);
  if (!q) return Error(q.error());
  std::vector<SeriesSamples> out;
  out.reserve(q->series.size());
  for (SeriesData& s : q->series) {
    SeriesSamples ss;
    if (Status st = q->Collect(s, ss.samples); !st.ok()) return Error(st);
    if (ss.samples.empty()) continue;
    ss.labels = std::move(s.labels);
    out.push_back(std::move(ss));
  }
  return out;
}

Result<std::vector<model::Labels>> Store::SeriesIn(const std::vector<model::Matcher>& matchers,
                                                   std::int64_t mint, std::int64_t maxt) const {
  std::vector<model::Labels> out;
  Status s = impl_->VisitSeries(matchers, mint, maxt, [&](const Symbols& sy, const SymLabels& l) {
    out.push_back(ExpandLabels(sy, l));
  });
  if (!s.ok()) return Error(s);
  std::sort(out.begin(), out.end());
  return out;
}

Status Store::ForEachSeries(const std::vector<model::Matcher>& matchers, std::int64_t mint,
                            std::int64_t maxt,
                            const std::function<void(const model::Labels&)>& fn) const {
  model::Labels labels;  // reused: its strings keep their capacity
  return impl_->VisitSeries(matchers, mint, maxt, [&](const Symbols& sy, const SymLabels& l) {
    labels.resize(l.size() / 2);
    for (std::size_t i = 0; i < labels.size(); ++i) {
      labels[i].name.assign(sy.Get(l[2 * i]));
      labels[i].value.assign(sy.Get(l[2 * i + 1]));
    }
    fn(labels);
  });
}

Result<std::vector<std::string>> Store::LabelNames(std::int64_t mint, std::int64_t maxt) const {
  std::set<std::string, std::less<>> names;
  Status s = impl_->VisitSeries({}, mint, maxt, [&](const Symbols& sy, const SymLabels& l) {
    for (std::size_t i = 0; i < l.size(); i += 2) {
      const std::string_view name = sy.Get(l[i]);
      if (names.find(name) == names.end()) names.emplace(name);
    }
  });
  if (!s.ok()) return Error(s);
  return std::vector<std::string>(names.begin(), names.end());
}

Result<std::vector<std::string>> Store::LabelValues(std::string_view name, std::int64_t mint,
                                                    std::int64_t maxt) const {
  std::set<std::string, std::less<>> values;
  Status s = impl_->VisitSeries({}, mint, maxt, [&](const Symbols& sy, const SymLabels& l) {
    for (std::size_t i = 0; i < l.size(); i += 2) {
      if (sy.Get(l[i]) != name) continue;
      const std::string_view v = sy.Get(l[i + 1]);
      if (!v.empty() && values.find(v) == values.end()) values.emplace(v);
    }
  });
  if (!s.ok()) return Error(s);
  return std::vector<std::string>(values.begin(), values.end());
}

// --- QueryResult.

Status QueryResult::ForEach(const SeriesData& s,
                            const std::function<void(std::span<const Sample>)>& fn) const {
  // Grown, never shrunk: decoding into it costs no allocation or zeroing.
  thread_local std::vector<Sample> scratch;
  std::int64_t last = std::numeric_limits<std::int64_t>::min();
  auto emit = [&](const Sample* begin, const Sample* end) {
    const Sample* lo = std::lower_bound(begin, end, std::max(mint, last + 1),
                                        [](const Sample& a, std::int64_t t) { return a.t < t; });
    const Sample* hi =
        std::upper_bound(lo, end, maxt, [](std::int64_t t, const Sample& a) { return t < a.t; });
    if (lo == hi) return;
    fn(std::span<const Sample>(lo, static_cast<std::size_t>(hi - lo)));
    last = (hi - 1)->t;
  };
  for (const ChunkView& c : s.chunks) {
    if (c.maxt <= last) continue;
    const std::size_t n = ChunkSampleCount(c.bytes);
    if (n == 0) return Status(StatusCode::kParseError, "chunk: bad sample count");
    if (scratch.size() < n) scratch.resize(n);
    if (Status st = DecodeChunkTo(c.bytes, std::span<Sample>(scratch.data(), n)); !st.ok()) {
      return st;
    }
    emit(scratch.data(), scratch.data() + n);
  }
  if (s.open_samples > 0) {
    scratch.clear();
    OpenChunk::DecodeStream(s.open_stream, s.open_samples, scratch);
    emit(scratch.data(), scratch.data() + scratch.size());
  }
  return Status::Ok();
}

Status QueryResult::Collect(const SeriesData& s, std::vector<Sample>& out) const {
  std::size_t total = s.open_samples;
  for (const ChunkView& c : s.chunks) {
    std::size_t pos = 0;
    std::uint64_t n = 0;
    if (GetVarint(c.bytes, pos, n))
      total += static_cast<std::size_t>(std::min<std::uint64_t>(n, 1u << 20));
  }
  out.reserve(out.size() + total);
  return ForEach(
      s, [&](std::span<const Sample> run) { out.insert(out.end(), run.begin(), run.end()); });
}

}  // namespace gpucanary::store
