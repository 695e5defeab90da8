#pragma once
// KayentaJudge: Kayenta's NetflixACAJudge-v1.0 (spinnaker/kayenta, read at
// a69573be; shared/reference/canary-anchors.md §1), re-implemented as the
// baseline method gpucanary is compared against (docs/analysis-method.md,
// "Against a Kayenta-style judge"). One judgement = one fixed-horizon Kayenta
// canary run over the data added so far; multi-interval "standalone" runs are
// in standalone.h.
//
// Per metric (MannWhitneyClassifier.scala, classify/compare):
//  1. Unset and non-finite values are dropped, each arm separately
//     (nanStrategy "remove", the default; never replaced by 0).
//  2. No data on either side: Nodata (critical if the metric is), or
//     NodataFailMetric when must_have_data and not critical.
//  3. Sorted canary == sorted baseline, or a single distinct value across
//     both: Pass ("data are identical").
//  4. Both arms constant (but different): Gaussian noise with sd 1e-5 * value
//     is added to each, so the rank test has no total tie.
//  5. Mann-Whitney, x = canary, y = baseline, confidence level 0.98
//     (mann_whitney.h): CI [lo, hi] for the shift, Hodges-Lehmann estimate HL.
//  6. The tolerance band is relative to HL itself: bounds -/+ 0.25 |HL|
//     (calculateBounds: "a fraction of the Hodges-Lehmann estimator").
//       High: direction increase/either, lo > +0.25 |HL| and effect >= allowed_increase
//       Low:  direction decrease/either, hi < -0.25 |HL| and effect <= allowed_decrease
//     effect = mean(canary) / mean(baseline) (meanRatio; NaN if either mean is
//     0, and then the effect gate is skipped) or CLES = U / (n m). Defaults
//     as Kayenta ships: allowed 1.0 for meanRatio (any ratio on the bad side
//     of 1), 0.5 for CLES. NOTE: the 0.25 is *not* "canary/baseline ratio
//     outside 1 +/- 0.25": a tight CI around a 2% shift is High. To demand a
//     minimum relative change set allowed_increase = 1.25 (Kayenta's
//     effectSize.allowedIncrease), as the tests do.
//  7. A critical metric that is High with effect >= critical_increase (or Low
//     with effect <= critical_decrease), or Nodata / Error, is a critical failure.
//
// Score (WeightedSumScorer.scala, ThresholdScoreClassifier.scala):
//  - muted metrics are reported but not scored;
//  - any critical failure: score 0, outcome Fail, reason "Canary Failed: ...";
//  - >= 50% of the scored metrics Nodata: score 0;
//  - group score = 100 #Pass / (#Pass + #High + #Low + #NodataFailMetric);
//    Nodata and Error are not counted; a group with nothing counted is
//    "no data" and counts 100;
//  - score = sum of group score * weight / 100, rounded to 2 decimals; groups
//    without a configured weight share (100 - sum of weights) equally;
//  - score >= pass: Pass; >= marginal: Marginal; else Fail.
//
// Intervals. Evaluate() judges everything added since construction or the
// last Reset(): calling it at every interval boundary is Kayenta standalone's
// default (lookbackMins = 0: the scope grows from the start). Reset() before
// each interval's data gives independent windows (lookbackMins = interval).
// Judging the growing window again and again is exactly the repeated-looks
// problem of a fixed-horizon test (docs/analysis-method.md, "Against a Kayenta-style judge"); this
// class keeps that behaviour on purpose.
//
// Thread-compatible: const methods may run concurrently, Add/Reset need
// exclusive access.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "eval/kayenta/mann_whitney.h"

namespace gpucanary::eval::kayenta {

// Which change fails the canary (Kayenta's "direction").
enum class Direction : std::uint8_t { kIncrease, kDecrease, kEither };

// effectSize.measure.
enum class EffectMeasure : std::uint8_t { kMeanRatio, kCles };

// Kayenta's metric labels.
enum class Classification : std::uint8_t {
  kPass,
  kHigh,
  kLow,
  kNodata,
  kNodataFailMetric,
  kError,
};

enum class Outcome : std::uint8_t { kPass, kMarginal, kFail };

std::string_view ClassificationName(Classification c);  // "Pass", "High", ... as Kayenta
std::string_view OutcomeName(Outcome o);                // "Pass", "Marginal", "Fail"

// metrics[].analysisConfigurations.canary.* and groups.
struct MetricConfig {
  std::string name;
  std::string group = "default";
  Direction direction = Direction::kEither;
  bool critical = false;
  bool must_have_data = false;
  bool muted = false;
  EffectMeasure effect_measure = EffectMeasure::kMeanRatio;
  // effectSize.allowedIncrease/allowedDecrease/criticalIncrease/criticalDecrease;
  // unset = Kayenta's default for the measure (1.0 meanRatio, 0.5 CLES).
  std::optional<double> allowed_increase;
  std::optional<double> allowed_decrease;
  std::optional<double> critical_increase;
  std::optional<double> critical_decrease;
};

struct JudgeConfig {
  std::vector<MetricConfig> metrics;
  // classifier.groupWeights (group name, weight out of 100).
  std::vector<std::pair<std::string, double>> group_weights;
  double pass_threshold = 75;      // scoreThresholds.pass
  double marginal_threshold = 50;  // scoreThresholds.marginal
  double tolerance = 0.25;         // hard-coded in NetflixACAJudge.scala
  double conf_level = 0.98;        // idem
};

// Kayenta's experimentMetadata/controlMetadata.stats (std is the sample
// standard deviation; NaN fields when count is 0).
struct SampleStats {
  std::size_t count = 0;
  double min = 0;
  double max = 0;
  double mean = 0;
  double std = 0;
};

struct MetricResult {
  std::string name;
  Classification classification = Classification::kPass;
  std::string reason;     // empty for a plain Pass
  bool critical = false;  // a critical failure (fails the canary)
  bool muted = false;
  // Kayenta's deviation (resultMetadata.ratio): mean ratio canary / baseline,
  // 1.0 when no test ran, NaN when either mean is 0.
  double ratio = 1.0;
  double effect_size = 1.0;  // what the effect gate compared (ratio or CLES)
  SampleStats canary;
  SampleStats baseline;
  std::optional<MannWhitneyResult> test;  // absent when no test ran
  double lower_bound = 0;                 // -tolerance |HL|
  double upper_bound = 0;                 // +tolerance |HL|
  bool noise_added = false;               // step 4 above
};

struct GroupScore {
  std::string name;
  double score = 0;
  bool no_data = false;
};

struct Judgement {
  std::vector<MetricResult> metrics;  // in configuration order
  std::vector<GroupScore> groups;     // in order of first use
  double score = 0;
  Outcome outcome = Outcome::kFail;
  std::string reason;  // set when the score was forced to 0
  // "fewer than 50 data points" (GenerateCanaryAnalysisResultTask).
  std::vector<std::string> warnings;
};

class KayentaJudge {
 public:
  // Returns kInvalidArgument for no metrics, an empty or repeated metric name,
  // marginal > pass or non-finite thresholds, conf_level outside (0, 1), a
  // negative tolerance, or a negative or non-finite effect or group weight.
  static Result<KayentaJudge> Create(JudgeConfig config);

  // One tick of metric `metric` (index into config().metrics): the canary and
  // baseline values, each already aggregated over its arm. Unset, NaN and
  // infinite values are no data for that arm only.
  // REQUIRES: 0 <= metric < config().metrics.size().
  void Add(int metric, std::optional<double> canary, std::optional<double> baseline);

  // The Kayenta judgement of everything added since construction or Reset().
  Judgement Evaluate() const;

  // Forgets the data; the configuration stays.
  void Reset();

  const JudgeConfig& config() const { return config_; }
  // Values dropped as non-finite (NaN or infinite) since the last Reset().
  std::int64_t dropped() const { return dropped_; }

 private:
  explicit KayentaJudge(JudgeConfig config);

  MetricResult Classify(std::size_t metric) const;

  JudgeConfig config_;
  std::vector<std::vector<double>> canary_;    // per metric
  std::vector<std::vector<double>> baseline_;  // per metric
  std::int64_t dropped_ = 0;
};

}  // namespace gpucanary::eval::kayenta
