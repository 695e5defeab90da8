#pragma once
// Change point detection (docs/analysis-method.md, "Change points"): where a
// series' level changes for good. Used by `gpucanary correlate` on every
// service and GPU series of a fleet, and by `gpucanary changepoints` on any
// one series.
//
//   std::vector<double> y = ...;              // NaN = missing sample
//   std::vector<std::size_t> cps = cpd::Segment(y);   // offline, default config
//   // cps[k]: 0-based index of the first sample of segment k+1 (never 0)
//
//   cpd::OnlineDetector online(cpd::OnlineOptions{});
//   for (double v : stream) if (auto c = online.Add(v)) Alert(c->index, c->mean_before, ...);
//
// Conventions shared by every detector here:
//  - A change point is the index of the FIRST sample of the new segment, in
//    the caller's indexing (missing samples included), ascending, unique,
//    never 0 and never past the end.
//  - NaN (and +-Inf) is a missing sample: it is neither a value nor a zero;
//    detection runs on the present samples and their change points are
//    mapped back to the index of the first present sample of each new
//    segment.
//  - Deterministic: the same input gives the same output.
//
// Thread-compatible; the free functions are thread-safe.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace gpucanary::analysis::cpd {

// Offline segmentation. The defaults are THE default configuration: the one
// scored on TCPD (docs/analysis-method.md) and the one `gpucanary
// changepoints` uses; change them only with the figures.
struct SegmentOptions {
  enum class Model : std::uint8_t {
    // Segments are straight lines; the noise is the series' spread around
    // one line through it: a change is what a person looking at the plot
    // calls one. The default, scored on TCPD.
    kLine,
    // Segments are constant levels; the noise is the sample-to-sample
    // spread (robust, from first differences): every lasting shift of level
    // against that noise, however small next to the series' range. For
    // telemetry whose caller keeps only the changes that matter
    // (`gpucanary correlate`, which applies per-metric floors).
    kLevel,
  };
  Model model = Model::kLine;
  // Fewest present samples in a segment (values below 1 count as 1). 5: a
  // segment's slope needs a few samples, and a shorter burst is an outlier,
  // not a regime.
  std::size_t min_segment = 5;
  // Penalty per change point as a multiple of log(n) (n = present samples),
  // on the cost scaled by the series' robust noise estimate.
  double penalty_scale = 0;  // 0: the tuned default, 3 (BIC; see segment.cc)
};

// Exact penalised segmentation (PELT) of `values`; see the conventions above.
// Each segment is a straight line plus noise (a change is a jump in level
// and/or slope; a steady trend is not a change); the noise scale is the
// robust spread of the residuals around one line through the whole series.
// O(n) expected when changes are spread evenly, O(n^2) worst case (few or no
// changes in a long series), for n present samples.
std::vector<std::size_t> Segment(std::span<const double> values,
                                 const SegmentOptions& options = {});

// Online detection, one sample at a time, in O(1) time and memory per sample
// whatever the history's length.
struct OnlineOptions {
  double threshold = 0;     // 0: the tuned default
  std::size_t warmup = 10;  // present samples before the first alarm
};

struct OnlineChange {
  std::size_t index = 0;     // estimated first sample of the new segment
  std::size_t detected = 0;  // the sample that completed the detection
  double mean_before = 0;
  double mean_after = 0;
};

class OnlineDetector {
 public:
  explicit OnlineDetector(const OnlineOptions& options = {});
  // Feeds the next sample (index = number of samples fed before, missing
  // ones included). Returns a change when this sample confirms one; the
  // detector then restarts from the new segment.
  std::optional<OnlineChange> Add(double value);
  std::size_t samples() const { return next_index_; }

 private:
  std::size_t next_index_ = 0;
  // The options, level, scale and CUSUMs: a fixed-size struct (online.cc).
  struct State;
  struct StateDeleter {
    void operator()(State* s) const;
  };
  std::unique_ptr<State, StateDeleter> state_;
};

}  // namespace gpucanary::analysis::cpd
