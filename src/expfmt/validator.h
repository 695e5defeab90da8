#pragma once
// Rules of an exposition that span lines, checked as entries stream by:
//
// OpenMetrics 1.0 (the conformance suite's semantics):
//   - metric families: metadata (TYPE, HELP, UNIT) at most once each, before the
//     family's samples; sample names must fit the family type's suffixes
//     (counter: _total, _created; histogram: _bucket, _count, _sum, _created; ...);
//     family names must not clash with another family's sample names;
//   - grouping: a family's samples are contiguous, and within a family the
//     samples of one metric (label set) are contiguous; timestamps never go
//     backwards within a metric, and a metric either always or never has them;
//   - values: counters, histogram buckets/_count/_sum and summary _count/_sum
//     are neither NaN nor negative; histogram buckets are in increasing `le`,
//     cumulative, with a +Inf bucket equal to _count; _sum and _count come
//     together, and _sum is absent when a bucket is negative; quantiles lie in
//     [0, 1]; info values are 1 and stateset values 0 or 1;
//   - exemplars only on counter _total and histogram _bucket samples, with at
//     most 128 code points of labels;
//   - the input ends with "# EOF".
//
// One relaxation, for recorded telemetry (docs/contracts.md §4): when every sample of a
// family carries a timestamp, the family and its metrics may reappear later
// ("time-blocked" recordings: each tick writes every series once). Ordering is
// then enforced per metric by timestamp instead of by position.
//
// Prometheus text 0.0.4 is checked the way Prometheus's scrape parser accepts
// it: only per-series timestamp order (an older sample would be dropped by the
// TSDB) is an error; a repeated series without timestamps is counted as a
// duplicate (Prometheus keeps the first and drops the rest).
//
// Thread-compatible.

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/flat_hash_map.h"
#include "core/string_map.h"
#include "expfmt/types.h"

namespace gpucanary::expfmt {

struct ExpositionStats {
  std::uint64_t families = 0;
  std::uint64_t series = 0;  // distinct name + label set (empty-valued labels dropped)
  std::uint64_t samples = 0;
  std::uint64_t timestamped_samples = 0;
  std::uint64_t duplicate_samples = 0;  // 0.0.4: same series again without a timestamp
  std::int64_t min_timestamp_ms = 0;    // valid when timestamped_samples > 0
  std::int64_t max_timestamp_ms = 0;
};

// A rule that the input broke. `line` is the line the problem belongs to when it
// differs from the entry just fed (e.g. a histogram found incomplete at its end).
struct Violation {
  std::string message;
  std::uint64_t line = 0;  // 0: the current line
};

// Order-independent hash of a label set; labels with empty values are skipped
// (Prometheus drops them). `skip` names one label to leave out (may be empty).
std::uint64_t HashLabels(const std::vector<model::LabelView>& labels, std::string_view skip);
// The hash of one label (a term of HashLabels' sum).
std::uint64_t HashLabel(const model::LabelView& label);
std::uint64_t HashSeries(std::string_view name, const std::vector<model::LabelView>& labels);

class Validator {
 public:
  explicit Validator(Format format);

  // Each returns true when the entry is acceptable; otherwise fills `v`.
  // `line` is the entry's line number (for errors reported later).
  bool OnMetadata(const MetadataView& m, std::uint64_t line, Violation& v);
  bool OnSample(const SampleView& s, std::uint64_t line, Violation& v);
  // At the end of input. `eof_seen`: the OpenMetrics "# EOF" was read.
  bool OnEnd(bool eof_seen, Violation& v);

  // Problems found late about earlier lines (an incomplete histogram point is
  // only known when the next point or family starts). Callers drain this after
  // every On* call; each Violation names its line.
  bool has_deferred() const { return !deferred_.empty(); }
  std::vector<Violation> TakeDeferred();

  const ExpositionStats& stats() const { return stats_; }

  // Family of the sample accepted last (valid after OnSample returned true).
  std::string_view current_family() const;
  model::MetricType current_type() const;

 private:
  struct PointState {
    bool open = false;
    std::int64_t ts = kNoTimestamp;
    std::uint64_t line = 0;
    double last_le = 0;
    double last_bucket = 0;
    bool any_bucket = false;
    bool inf_bucket = false;
    double inf_value = 0;
    bool negative_bucket = false;
    bool has_count = false;
    bool has_sum = false;
    double count = 0;
    double sum = 0;
  };
  struct GroupState {
    bool used = false;
    bool timestamped = false;
    std::int64_t last_ts = kNoTimestamp;
  };
  struct Family {
    std::string name;
    model::MetricType type = model::MetricType::kUnknown;
    bool has_help = false;
    bool has_type = false;
    bool has_unit = false;
    bool has_samples = false;
    bool all_timestamped = true;
    std::string unit;
    std::unordered_map<std::uint64_t, GroupState> groups;
    std::uint64_t current_group = 0;
    bool has_current_group = false;
    GroupState* current_state = nullptr;
    PointState point;
  };
  struct SeriesState {
    std::int64_t last_ts = kNoTimestamp;
  };

  int ResolveFamily(const SampleView& s, std::string_view& suffix, Violation& v);
  int NewFamily(std::string_view name, Violation& v);
  // The family metadata line `m` belongs to, switched to; -1 with `v` set
  // when it may not come here.
  int FamilyForMetadata(const MetadataView& m, Violation& v);
  // A # TYPE line's effect on family `index`; false with `v` set.
  bool OnType(int index, model::MetricType type, Violation& v);
  // A # UNIT line's effect on `f`; false with `v` set.
  bool OnUnit(Family& f, std::string_view unit, Violation& v);
  bool RegisterSampleNames(int family, Violation& v);
  bool CheckSampleValue(Family& f, std::string_view suffix, const SampleView& s, Violation& v);
  bool CheckGroup(Family& f, std::string_view suffix, const SampleView& s,
                  std::uint64_t labels_hash, std::uint64_t line, Violation& v);
  bool AddToPoint(Family& f, std::string_view suffix, const SampleView& s, std::uint64_t line,
                  Violation& v);
  void ClosePoint(Family& f);
  void SwitchTo(int family);
  bool TrackSeries(const SampleView& s, std::uint64_t labels_hash, Violation& v);
  // HashLabels(s.labels, {}), cached by the raw label block.
  std::uint64_t LabelsHash(const SampleView& s);

  Format format_;
  std::vector<Family> families_;
  int current_ = -1;
  // Lookups by string_view allocate nothing.
  StringMap<int> family_by_name_;
  StringMap<int> family_by_sample_name_;
  FlatHashMap<SeriesState> series_;
  static constexpr std::size_t kLabelHashCacheSize = 1 << 14;
  FlatHashMap<std::uint64_t> label_hash_cache_;
  ExpositionStats stats_;
  std::vector<Violation> deferred_;
};

}  // namespace gpucanary::expfmt
