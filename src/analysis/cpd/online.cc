// cpd::OnlineDetector: a two-sided CUSUM (Page 1954) on a robustly
// standardised stream, in O(1) time and memory per sample.
//
//   z_t  = clamp((x_t - level) / sigma, -kClip, +kClip)
//   S+_t = max(0, S+_{t-1} + z_t - kDrift)     alarm when S+ > h
//   S-_t = max(0, S-_{t-1} - z_t - kDrift)     alarm when S- > h
//
// (E. S. Page, "Continuous inspection schemes", Biometrika 41, 1954; the
// drift k and threshold h in units of the noise's standard deviation, as in
// D. C. Montgomery, "Introduction to Statistical Quality Control", ch. 9.)
// The change index is the first sample of the alarming side's excursion
// (the sample after its last zero): Page's estimate of the change time, the
// maximum-likelihood one for a shift of 2k. Everything it needs is a few
// running sums; after an alarm the new segment starts from the excursion's
// samples (their mean is its level) and is tested again once it holds
// `warmup` samples.
//
// Level and scale:
//  - the first segment starts from the median and the median absolute
//    successive difference of its first `warmup` samples (a fixed buffer),
//    so an outlier or two in the warmup does not skew them;
//  - then the level is an EWMA (a running mean while the segment is young)
//    of residuals clipped at kClip sigma, and sigma an EWMA (a running mean
//    at first) of |x_t - x_{t-1}| clipped at kClip sigma, kept across
//    segments. Differences do not see a step in the level, so a change does
//    not inflate the scale that is supposed to detect it;
//  - while they rest on few samples, sigma is widened (Standardise).
// Clipping z also means a single spike adds at most kClip - kDrift = 3 < h:
// it takes ceil(h / 3) = 3 consecutive deviant samples to alarm, so isolated
// outliers never do. Successive differences assume roughly independent
// noise: on strongly autocorrelated series sigma is underestimated and
// alarms come sooner (raise the threshold).
#include <algorithm>
#include <array>
#include <cmath>

#include "analysis/cpd/cpd.h"

namespace gpucanary::analysis::cpd {
namespace {

// Alarm threshold h in noise standard deviations (OnlineOptions::threshold
// = 0). With kDrift = 1, Siegmund's approximation puts the in-control run
// length of a two-sided CUSUM with known level and scale near 1e7 samples;
// with both estimated, measured on N(0,1) noise: 41 alarms in 1.1e8 samples
// (3.7e-7 per sample, one per ~2.7e6), and 4 of 20,000 series of 300
// samples alarm at all. A 3-sigma step is found 4.2 samples after it on
// average (95 % within 7), a 2-sigma step after 9.8 (online_test.cc).
constexpr double kDefaultThreshold = 8.0;
// Reference value k: half the smallest shift (2 sigma) the detector is tuned for.
constexpr double kDrift = 1.0;
// Standardised values (and residuals for the level and scale) are clipped here.
constexpr double kClip = 4.0;
// EWMA weights of level and scale once the segment is older than 1 / weight.
constexpr double kLevelWeight = 0.01;
constexpr double kScaleWeight = 0.02;
// Calibration buffer of the first segment (OnlineOptions::warmup, capped).
constexpr std::size_t kMaxWarmupBuffer = 64;
// For normal noise: median |x_t - x_{t-1}| = 0.9539 sigma, E|x_t - x_{t-1}| = 2 sigma / sqrt(pi).
constexpr double kMedianAbsDiffPerSigma = 0.9539;
constexpr double kMeanAbsDiffPerSigma = 1.1284;

double Median(std::span<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// The side of a CUSUM: its statistic and the present samples of its current
// excursion (since its last zero).
struct Cusum {
  double statistic = 0;
  std::size_t start = 0;  // caller's index of the excursion's first sample
  std::size_t count = 0;
  double sum = 0;

  // Adds `increment` (z - k, or -z - k) for the sample `value` at `index`.
  void Add(double increment, double value, std::size_t index) {
    const double next = statistic + increment;
    if (next <= 0) {
      *this = Cusum{};
      return;
    }
    if (statistic == 0) {
      start = index;
      count = 0;
      sum = 0;
    }
    statistic = next;
    ++count;
    sum += value;
  }
};

}  // namespace

struct OnlineDetector::State {
  double threshold = kDefaultThreshold;
  std::size_t warmup = 10;

  // First-segment calibration.
  std::array<double, kMaxWarmupBuffer> buffer{};
  std::size_t buffered = 0;
  bool calibrated = false;

  double level = 0;
  double sigma = 0;
  bool has_previous = false;
  double previous = 0;
  std::size_t diffs_seen = 0;

  // The current segment's present samples.
  std::size_t segment_count = 0;
  double segment_sum = 0;

  Cusum up;
  Cusum down;

  std::optional<OnlineChange> Add(double value, std::size_t index);
  void Calibrate();
  void UpdateScale(double value);
  double Standardise(double value) const;
  OnlineChange Restart(const Cusum& side, std::size_t detected);
};

void OnlineDetector::StateDeleter::operator()(State* s) const { delete s; }

OnlineDetector::OnlineDetector(const OnlineOptions& options) : state_(new State) {
  if (options.threshold > 0) state_->threshold = options.threshold;
  state_->warmup = std::max<std::size_t>(options.warmup, 2);
}

std::optional<OnlineChange> OnlineDetector::Add(double value) {
  const std::size_t index = next_index_++;
  // NaN and +-Inf are missing samples: they keep their index and nothing else.
  if (!std::isfinite(value)) return std::nullopt;
  return state_->Add(value, index);
}

std::optional<OnlineChange> OnlineDetector::State::Add(double value, std::size_t index) {
  ++segment_count;
  segment_sum += value;
  if (!calibrated) {
    if (buffered < kMaxWarmupBuffer) buffer[buffered++] = value;
    previous = value;
    has_previous = true;
    if (segment_count >= std::min(warmup, kMaxWarmupBuffer)) Calibrate();
    return std::nullopt;
  }
  const double z = Standardise(value);
  std::optional<OnlineChange> change;
  // A young segment (fewer than `warmup` samples before this one) only
  // learns its level: its first mean, from a handful of samples, is too
  // uncertain to test against.
  if (segment_count > warmup) {
    up.Add(z - kDrift, value, index);
    down.Add(-z - kDrift, value, index);
    if (up.statistic > threshold)
      change = Restart(up, index);
    else if (down.statistic > threshold)
      change = Restart(down, index);
  }
  if (!change) {
    // A running mean while the segment is young, then an EWMA; residuals
    // clipped so that the level does not chase a step before the alarm.
    const double weight = std::max(kLevelWeight, 1.0 / static_cast<double>(segment_count));
    level += weight * std::clamp(value - level, -kClip * sigma, kClip * sigma);
  }
  UpdateScale(value);
  return change;
}

void OnlineDetector::State::Calibrate() {
  const std::span<double> samples(buffer.data(), buffered);
  std::array<double, kMaxWarmupBuffer> diffs{};
  double mean_abs_diff = 0;
  for (std::size_t i = 1; i < buffered; ++i) {
    diffs[i - 1] = std::abs(samples[i] - samples[i - 1]);
    mean_abs_diff += diffs[i - 1] / static_cast<double>(buffered - 1);
  }
  sigma = Median(std::span<double>(diffs.data(), buffered - 1)) / kMedianAbsDiffPerSigma;
  // Mostly constant warmup (quantised clocks): the median difference is 0,
  // the mean is not.
  if (sigma == 0) sigma = mean_abs_diff / kMeanAbsDiffPerSigma;
  level = Median(samples);
  diffs_seen = buffered - 1;
  calibrated = true;
}

void OnlineDetector::State::UpdateScale(double value) {
  if (has_previous) {
    const double diff = std::abs(value - previous) / kMeanAbsDiffPerSigma;
    // A scale of exactly 0 (a constant series so far) takes the first
    // difference unclipped, or it could never leave 0.
    const double clipped = sigma > 0 ? std::min(diff, kClip * sigma) : diff;
    ++diffs_seen;
    const double weight = std::max(kScaleWeight, 1.0 / static_cast<double>(diffs_seen));
    sigma += weight * (clipped - sigma);
  }
  previous = value;
  has_previous = true;
}

double OnlineDetector::State::Standardise(double value) const {
  const double residual = value - level;
  // Zero noise so far: any deviation is as strong as it can be.
  if (sigma <= 0) return residual > 0 ? kClip : (residual < 0 ? -kClip : 0.0);
  // Young estimates are uncertain: the level of a segment of n samples is off
  // by sigma / sqrt(n) (a self-starting CUSUM's sqrt(1 + 1/n)), and a scale
  // from ~10 differences can be several times too small. Widening sigma by
  // 1 + 10 / (differences seen) cut alarms on 300-sample noise series from
  // 14 to 4 in 20,000 and costs 0.2 samples of delay at sample 300.
  const double level_uncertainty =
      1.0 + 1.0 / static_cast<double>(std::max<std::size_t>(segment_count - 1, 1));
  const double scale_uncertainty = 1.0 + 10.0 / static_cast<double>(diffs_seen);
  return std::clamp(residual / (sigma * std::sqrt(level_uncertainty) * scale_uncertainty), -kClip,
                    kClip);
}

OnlineChange OnlineDetector::State::Restart(const Cusum& side, std::size_t detected) {
  OnlineChange change;
  change.index = side.start;
  change.detected = detected;
  change.mean_after = side.sum / static_cast<double>(side.count);
  change.mean_before = (segment_sum - side.sum) / static_cast<double>(segment_count - side.count);
  // The new segment is the excursion's samples; the scale carries over.
  segment_count = side.count;
  segment_sum = side.sum;
  level = change.mean_after;
  up = Cusum{};
  down = Cusum{};
  return change;
}

}  // namespace gpucanary::analysis::cpd
