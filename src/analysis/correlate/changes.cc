// The lasting, material, abrupt changes of one series: cpd::Segment cuts it
// into levels, and each level shift is kept or dropped by the tests of
// docs/analysis-method.md, "Change points".

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <vector>

#include "analysis/correlate/correlate_internal.h"
#include "analysis/cpd/cpd.h"

namespace gpucanary::analysis::correlate {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A level (before or after a change) is measured over at least this many
// present buckets.
constexpr std::size_t kMinLevelBuckets = 3;
// A step may take this long to complete (a GPU heating up after its
// cooling worsened); a slope taking longer (diurnal load) is not a step.
constexpr std::int64_t kRampS = 60;
// Present buckets compared on each side of a change to tell a step from a
// slope.
constexpr std::size_t kLocalBuckets = 2;
// The step just around the change must carry at least this share of the
// change between the two segments' levels (diurnal load is a slope).
constexpr double kAbruptShare = 0.5;

// Present values of `x` in [from, to).
std::vector<double> Present(const std::vector<double>& x, std::size_t from, std::size_t to) {
  std::vector<double> out;
  for (std::size_t i = from; i < to && i < x.size(); ++i) {
    if (std::isfinite(x[i])) out.push_back(x[i]);
  }
  return out;
}

// The last (first) `k` present values before (from) index `at`.
std::vector<double> PresentBefore(const std::vector<double>& x, std::size_t at, std::size_t k) {
  std::vector<double> out;
  for (std::size_t i = at; i-- > 0 && out.size() < k;) {
    if (std::isfinite(x[i])) out.push_back(x[i]);
  }
  return out;
}
std::vector<double> PresentFrom(const std::vector<double>& x, std::size_t at, std::size_t k) {
  std::vector<double> out;
  for (std::size_t i = at; i < x.size() && out.size() < k; ++i) {
    if (std::isfinite(x[i])) out.push_back(x[i]);
  }
  return out;
}

// The present buckets a change's levels are measured over.
struct Windows {
  std::vector<double> before;
  std::vector<double> after;
};

// One series' walk over its segments, from the segmentation to the changes.
class ChangeFinder {
 public:
  ChangeFinder(const EntitySeries& series, std::int64_t resolution_s);

  // The changes, in time order.
  std::vector<Change> Find() const;

 private:
  double Center(const std::vector<double>& v) const;
  double Level(std::size_t a, std::size_t b) const { return Center(Present(y_, a, b)); }
  // The shift at segment boundary k: segment k's level against segment k-1's.
  double ShiftAt(std::size_t k) const {
    return Level(bounds_[k], bounds_[k + 1]) - Level(bounds_[k - 1], bounds_[k]);
  }
  std::size_t LastPieceOfRamp(std::size_t first) const;
  std::size_t OnsetPiece(std::size_t first, std::size_t last) const;
  std::optional<Change> Measure(std::size_t first, std::size_t last) const;
  std::optional<Windows> LevelWindows(std::size_t first, std::size_t at,
                                      std::size_t after_from) const;
  bool IsStep(std::size_t at, std::size_t after_from, double delta) const;
  std::size_t OnsetBucket(std::size_t at, std::size_t after_from, double before,
                          double delta) const;
  Change MakeChange(std::size_t bucket, const Windows& windows, double delta) const;

  const EntitySeries& series_;
  const MetricDef& def_;
  bool events_ = false;
  std::vector<double> y_;            // the series, on the log scale for relative metrics
  std::vector<std::size_t> bounds_;  // segment starts, then the end; empty: no change
  std::size_t persist_ = 0;          // kPersistS in buckets, rounded up
  std::size_t ramp_ = 0;             // kRampS in buckets
  std::size_t first_present_ = 0;    // the first bucket with data
};

ChangeFinder::ChangeFinder(const EntitySeries& series, std::int64_t resolution_s)
    : series_(series),
      def_(Metrics()[static_cast<std::size_t>(series.metric)]),
      // Rates and fractions of rare events (XIDs, ECC errors, replays) are
      // mostly zero: their level is the mean, where a median would see none.
      events_(def_.reduce == Reduce::kRate || def_.reduce == Reduce::kNonZeroFraction ||
              def_.reduce == Reduce::kBitFraction),
      // At least the 3 buckets a level is measured over (LevelWindows): at
      // 60 s buckets and coarser (a day folded by a Prometheus, a week
      // from the store) kPersistS alone is 1-2 buckets, and no change
      // could ever pass.
      persist_(std::max<std::size_t>(
          kMinLevelBuckets,
          static_cast<std::size_t>((kPersistS + resolution_s - 1) / resolution_s))),
      ramp_(static_cast<std::size_t>(kRampS / resolution_s)) {
  // Relative metrics are segmented on the log scale, where a 10% step is the
  // same size at any level.
  const std::vector<double>& raw = series.values;
  y_.assign(raw.size(), kNaN);
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (!std::isfinite(raw[i])) continue;
    if (def_.relative) {
      if (raw[i] > 0) y_[i] = std::log(raw[i]);
    } else {
      y_[i] = raw[i];
    }
  }
  // Levels against the sample-to-sample noise: every lasting shift is a
  // candidate, and the floors, the persistence and the step test below keep
  // the ones that matter (docs/analysis-method.md, "Correlation").
  cpd::SegmentOptions segment;
  segment.model = cpd::SegmentOptions::Model::kLevel;
  segment.min_segment = 2;
  const std::vector<std::size_t> cps = cpd::Segment(y_, segment);
  if (cps.empty()) return;  // no segment boundary: no change
  bounds_.push_back(0);
  bounds_.insert(bounds_.end(), cps.begin(), cps.end());
  bounds_.push_back(y_.size());
  while (first_present_ < y_.size() && !std::isfinite(y_[first_present_])) ++first_present_;
}

double ChangeFinder::Center(const std::vector<double>& v) const {
  if (!events_ || v.empty()) return Median(v);
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

std::vector<Change> ChangeFinder::Find() const {
  std::vector<Change> out;
  std::size_t i = 1;
  while (i + 1 < bounds_.size()) {
    const std::size_t first = i;
    const std::size_t last = LastPieceOfRamp(first);
    i = last + 1;
    if (std::optional<Change> c = Measure(first, last)) out.push_back(*c);
  }
  return out;
}

// A step the segmentation cut into short pieces of one direction (a ramp: a
// GPU heating up) is one change, from the level before its first piece to
// the level after its last.
std::size_t ChangeFinder::LastPieceOfRamp(std::size_t first) const {
  const double dir = ShiftAt(first);
  std::size_t last = first;
  while (last + 2 < bounds_.size() && bounds_[last + 1] - bounds_[last] < persist_) {
    const double next = ShiftAt(last + 1);
    if (!(next * dir > 0)) break;
    ++last;
  }
  return last;
}

// The onset: the first piece that carries a fair share of the whole step
// (a small wobble the segmentation cut just before it is not the start).
std::size_t ChangeFinder::OnsetPiece(std::size_t first, std::size_t last) const {
  const double total =
      Level(bounds_[last], bounds_[last + 1]) - Level(bounds_[first - 1], bounds_[first]);
  for (std::size_t k = first; k <= last; ++k) {
    const double piece = ShiftAt(k);
    if (piece * total > 0 && std::fabs(piece) >= 0.25 * std::fabs(total)) return k;
  }
  return first;
}

// The change from the level before piece `first` to the level after piece
// `last`, if it passes every test.
std::optional<Change> ChangeFinder::Measure(std::size_t first, std::size_t last) const {
  const std::size_t at = bounds_[OnsetPiece(first, last)];
  const std::size_t after_from = bounds_[last];
  const std::optional<Windows> windows = LevelWindows(first, at, after_from);
  if (!windows) return std::nullopt;
  const double delta = Center(windows->after) - Center(windows->before);
  if (!IsStep(at, after_from, delta)) return std::nullopt;
  const std::size_t onset_bucket = OnsetBucket(at, after_from, Center(windows->before), delta);
  Change c = MakeChange(onset_bucket, *windows, delta);
  if (std::fabs(c.change) < def_.floor) return std::nullopt;
  return c;
}

// The levels are the medians over kPersistS before the step and kPersistS
// from its end: the new one must hold (not a burst that went away), and
// there must be that much before it (not the first seconds of a recording,
// GPUs warming up from idle). Small steps inside either window do not
// matter. None when either window is short.
std::optional<Windows> ChangeFinder::LevelWindows(std::size_t first, std::size_t at,
                                                  std::size_t after_from) const {
  if (at < first_present_ + persist_ || after_from + persist_ > y_.size()) return std::nullopt;
  // Before: the last kPersistS worth of present buckets, looking back past
  // masked restarts (a node that took two releases in a row) but not past
  // the previous segment's start or 3 x kPersistS.
  const std::size_t lookback =
      std::max(bounds_[first - 1], at > 3 * persist_ ? at - 3 * persist_ : 0);
  Windows w;
  w.before = PresentBefore(y_, at, std::min(persist_, Present(y_, lookback, at).size()));
  w.after = Present(y_, after_from, after_from + persist_);
  if (w.before.size() < kMinLevelBuckets || w.after.size() < kMinLevelBuckets) return std::nullopt;
  return w;
}

// A step, not a slope: most of the change happens within kRampS of its
// start (a GPU heats up in about a minute; diurnal load takes hours).
bool ChangeFinder::IsStep(std::size_t at, std::size_t after_from, double delta) const {
  const double level_before = Center(PresentBefore(y_, at, kLocalBuckets));
  double local = 0;
  for (std::size_t r = 0; r <= ramp_ && after_from + r < y_.size(); ++r) {
    const double step = Center(PresentFrom(y_, after_from + r, kLocalBuckets)) - level_before;
    if (step * delta > local * delta) local = step;
  }
  if (!(local * delta > 0) || std::fabs(local) < kAbruptShare * std::fabs(delta)) return false;
  return true;
}

// Dated by the first present bucket that has moved a quarter of the way:
// a segment the segmentation opened a little early (it may start just
// before a masked restart) does not date the change.
std::size_t ChangeFinder::OnsetBucket(std::size_t at, std::size_t after_from, double before,
                                      double delta) const {
  for (std::size_t k = at; k < after_from + persist_ && k < y_.size(); ++k) {
    if (std::isfinite(y_[k]) && (y_[k] - before) * delta >= 0.25 * delta * delta) return k;
  }
  return at;
}

// The change in the metric's own unit (back from the log scale).
Change ChangeFinder::MakeChange(std::size_t bucket, const Windows& windows, double delta) const {
  Change c;
  c.metric = series_.metric;
  c.bucket = bucket;
  c.before = def_.relative ? std::exp(Center(windows.before)) : Center(windows.before);
  c.after = def_.relative ? std::exp(Center(windows.after)) : Center(windows.after);
  c.change = def_.relative ? std::exp(delta) - 1 : delta;
  c.harmful =
      (def_.better == Better::kHigher && delta < 0) || (def_.better == Better::kLower && delta > 0);
  return c;
}

}  // namespace

double Median(std::vector<double> v) {
  if (v.empty()) return kNaN;
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  double m = v[mid];
  if (v.size() % 2 == 0) {
    m = (m + *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid))) / 2;
  }
  return m;
}

std::vector<Change> DetectChanges(const EntitySeries& series, std::int64_t resolution_s) {
  return ChangeFinder(series, resolution_s).Find();
}

}  // namespace gpucanary::analysis::correlate
