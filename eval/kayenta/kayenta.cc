#include "eval/kayenta/kayenta.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <utility>

namespace gpucanary::eval::kayenta {
namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
// WeightedSumScorer: NODATA_THRESHOLD = 50 (percent of the scored metrics).
constexpr double kNodataThreshold = 50;
// GenerateCanaryAnalysisResultTask warns below 50 control data points.
constexpr std::size_t kFewDataPoints = 50;
// Tie breaking noise: sd = 1e-5 * value (MannWhitneyClassifier.addGaussianNoise).
constexpr double kNoiseScale = 1e-5;
constexpr std::uint64_t kNoiseSeed = 0x6b617965'6e746131ULL;  // fixed: judgements repeat

SampleStats Describe(const std::vector<double>& v) {
  SampleStats s;
  s.count = v.size();
  if (v.empty()) {
    s.min = s.max = s.mean = s.std = kNan;
    return s;
  }
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  s.min = *lo;
  s.max = *hi;
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  double ss = 0;
  for (const double x : v) ss += (x - s.mean) * (x - s.mean);
  s.std = v.size() > 1 ? std::sqrt(ss / static_cast<double>(v.size() - 1)) : 0.0;
  return s;
}

double Mean(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// EffectSizes.meanRatio: NaN when either mean is 0 (the gates then pass).
double MeanRatio(const std::vector<double>& canary, const std::vector<double>& baseline) {
  const double c = Mean(canary);
  const double b = Mean(baseline);
  return (c == 0 || b == 0) ? kNan : c / b;
}

bool IsConstant(const std::vector<double>& v) {
  return std::all_of(v.begin(), v.end(), [&](double x) { return x == v.front(); });
}

// Kayenta draws the noise at random; a fixed seed keeps our judgements
// repeatable. A zero value gets no noise (sd 0): the other arm's noise is
// enough to break the total tie.
void AddNoise(std::vector<double>& v, std::mt19937_64& rng) {
  const double sd = std::fabs(v.front()) * kNoiseScale;
  if (sd == 0) return;
  std::normal_distribution<double> noise(0.0, sd);
  for (double& x : v) x += noise(rng);
}

struct Limits {
  double allowed_increase;
  double allowed_decrease;
  double critical_increase;
  double critical_decrease;
};

Limits EffectLimits(const MetricConfig& m) {
  const double def = m.effect_measure == EffectMeasure::kCles ? 0.5 : 1.0;
  return {m.allowed_increase.value_or(def), m.allowed_decrease.value_or(def),
          m.critical_increase.value_or(def), m.critical_decrease.value_or(def)};
}

// A NaN effect (meanRatio with a zero mean) passes every gate.
bool AtLeast(double effect, double limit) { return std::isnan(effect) || effect >= limit; }
bool AtMost(double effect, double limit) { return std::isnan(effect) || effect <= limit; }

// MannWhitneyClassifier.compare and the critical check of classify: High or
// Low when the CI clears the band -/+ tolerance |HL| and the effect gate
// agrees, else Pass. REQUIRES: r.test and r.effect_size set.
void Decide(const MetricConfig& cfg, double tolerance, MetricResult& r) {
  const MannWhitneyResult& test = *r.test;
  const double band = tolerance * std::fabs(test.estimate);
  r.lower_bound = -band;
  r.upper_bound = band;
  const Limits limits = EffectLimits(cfg);
  const bool high = cfg.direction != Direction::kDecrease && test.ci_lower > r.upper_bound &&
                    AtLeast(r.effect_size, limits.allowed_increase);
  const bool low = cfg.direction != Direction::kIncrease && test.ci_upper < r.lower_bound &&
                   AtMost(r.effect_size, limits.allowed_decrease);
  if (high) {
    r.classification = Classification::kHigh;
    r.critical = cfg.critical && AtLeast(r.effect_size, limits.critical_increase);
  } else if (low) {
    r.classification = Classification::kLow;
    r.critical = cfg.critical && AtMost(r.effect_size, limits.critical_decrease);
  } else {
    return;
  }
  r.reason = cfg.name + " was classified as " + std::string(ClassificationName(r.classification)) +
             (r.critical ? " (Critical)" : "");
}

Status ValidateMetric(const MetricConfig& m, std::set<std::string>& names) {
  if (m.name.empty()) return Status(StatusCode::kInvalidArgument, "metric with an empty name");
  if (!names.insert(m.name).second) {
    return Status(StatusCode::kInvalidArgument, "metric '" + m.name + "' configured twice");
  }
  for (const auto& limit :
       {m.allowed_increase, m.allowed_decrease, m.critical_increase, m.critical_decrease}) {
    if (limit && !(std::isfinite(*limit) && *limit >= 0)) {
      return Status(StatusCode::kInvalidArgument,
                    "metric '" + m.name + "': effect-size limits must be finite and >= 0");
    }
  }
  return Status::Ok();
}

struct Scored {
  std::vector<GroupScore> groups;
  double score = 0;
  bool critical_failure = false;
  std::string reason;
};

// WeightedSumScorer.calculateGroupScore for every group, in order of first use.
std::vector<GroupScore> GroupScores(const std::vector<MetricResult>& results,
                                    const JudgeConfig& config) {
  std::vector<GroupScore> groups;
  std::vector<std::pair<int, int>> counts;  // (#Pass, #counted) per group
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (results[i].muted) continue;
    const std::string& group = config.metrics[i].group;
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const GroupScore& g) { return g.name == group; });
    if (it == groups.end()) {
      groups.push_back({group, 0, false});
      counts.emplace_back(0, 0);
      it = groups.end() - 1;
    }
    auto& [pass, counted] = counts[static_cast<std::size_t>(it - groups.begin())];
    switch (results[i].classification) {
      case Classification::kPass:
        ++pass;
        ++counted;
        break;
      case Classification::kHigh:
      case Classification::kLow:
      case Classification::kNodataFailMetric:
        ++counted;
        break;
      case Classification::kNodata:
      case Classification::kError:
        break;
    }
  }
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const auto [pass, counted] = counts[g];
    groups[g].no_data = counted == 0;
    groups[g].score = counted == 0 ? 100.0 : 100.0 * pass / counted;
  }
  return groups;
}

Scored Score(const std::vector<MetricResult>& results, const JudgeConfig& config) {
  Scored out;
  out.groups = GroupScores(results, config);
  double weight_sum = 0;
  for (const auto& [name, weight] : config.group_weights) weight_sum += weight;
  const auto weight_of = [&](const std::string& group) -> std::optional<double> {
    for (const auto& [name, weight] : config.group_weights) {
      if (name == group) return weight;
    }
    return std::nullopt;
  };
  const auto unweighted = std::count_if(out.groups.begin(), out.groups.end(),
                                        [&](const GroupScore& g) { return !weight_of(g.name); });
  const double shared = unweighted > 0 ? (100 - weight_sum) / static_cast<double>(unweighted) : 0;
  double sum = 0;
  for (const auto& g : out.groups) sum += g.score * weight_of(g.name).value_or(shared) / 100;
  out.score = std::round(sum * 100) / 100;

  int scored = 0;
  int nodata = 0;
  for (const auto& r : results) {
    if (r.muted) continue;
    ++scored;
    if (r.classification == Classification::kNodata) ++nodata;
    if (!out.critical_failure && r.critical && r.classification != Classification::kPass) {
      out.critical_failure = true;
      out.reason = "Canary Failed: " + r.reason;
    }
  }
  if (out.critical_failure) {
    out.score = 0;
  } else if (scored > 0 && 100.0 * nodata / scored >= kNodataThreshold) {
    out.score = 0;
    out.reason = "Canary Failed: " + std::to_string(nodata) + " of " + std::to_string(scored) +
                 " metrics have no data";
  }
  return out;
}

}  // namespace

std::string_view ClassificationName(Classification c) {
  switch (c) {
    case Classification::kPass:
      return "Pass";
    case Classification::kHigh:
      return "High";
    case Classification::kLow:
      return "Low";
    case Classification::kNodata:
      return "Nodata";
    case Classification::kNodataFailMetric:
      return "NodataFailMetric";
    case Classification::kError:
      return "Error";
  }
  return "?";
}

std::string_view OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kPass:
      return "Pass";
    case Outcome::kMarginal:
      return "Marginal";
    case Outcome::kFail:
      return "Fail";
  }
  return "?";
}

Result<KayentaJudge> KayentaJudge::Create(JudgeConfig config) {
  if (config.metrics.empty()) {
    return Error(StatusCode::kInvalidArgument, "Kayenta judge needs at least one metric");
  }
  std::set<std::string> names;
  for (const auto& m : config.metrics) GC_RETURN_IF_ERROR(ValidateMetric(m, names));
  if (!std::isfinite(config.pass_threshold) || !std::isfinite(config.marginal_threshold) ||
      config.marginal_threshold > config.pass_threshold) {
    return Error(StatusCode::kInvalidArgument,
                 "score thresholds must be finite with marginal <= pass");
  }
  if (!(config.conf_level > 0 && config.conf_level < 1)) {
    return Error(StatusCode::kInvalidArgument, "confidence level must be in (0, 1)");
  }
  if (!(std::isfinite(config.tolerance) && config.tolerance >= 0)) {
    return Error(StatusCode::kInvalidArgument, "tolerance must be finite and >= 0");
  }
  for (const auto& [group, weight] : config.group_weights) {
    if (!(std::isfinite(weight) && weight >= 0)) {
      return Error(StatusCode::kInvalidArgument,
                   "group weight of '" + group + "' must be finite and >= 0");
    }
  }
  return KayentaJudge(std::move(config));
}

KayentaJudge::KayentaJudge(JudgeConfig config)
    : config_(std::move(config)),
      canary_(config_.metrics.size()),
      baseline_(config_.metrics.size()) {}

void KayentaJudge::Add(int metric, std::optional<double> canary, std::optional<double> baseline) {
  GC_CHECK(metric >= 0 && static_cast<std::size_t>(metric) < config_.metrics.size(),
           "metric index out of range");
  const auto i = static_cast<std::size_t>(metric);
  if (canary) {
    if (std::isfinite(*canary)) {
      canary_[i].push_back(*canary);
    } else {
      ++dropped_;
    }
  }
  if (baseline) {
    if (std::isfinite(*baseline)) {
      baseline_[i].push_back(*baseline);
    } else {
      ++dropped_;
    }
  }
}

void KayentaJudge::Reset() {
  for (auto& v : canary_) v.clear();
  for (auto& v : baseline_) v.clear();
  dropped_ = 0;
}

MetricResult KayentaJudge::Classify(std::size_t metric) const {
  const MetricConfig& cfg = config_.metrics[metric];
  MetricResult r;
  r.name = cfg.name;
  r.muted = cfg.muted;
  std::vector<double> canary = canary_[metric];
  std::vector<double> baseline = baseline_[metric];
  r.canary = Describe(canary);
  r.baseline = Describe(baseline);

  if (canary.empty() || baseline.empty()) {
    r.reason = "Missing data for " + cfg.name;
    const bool fail_metric = cfg.must_have_data && !cfg.critical;
    r.classification = fail_metric ? Classification::kNodataFailMetric : Classification::kNodata;
    r.critical = cfg.critical;
    return r;
  }
  std::vector<double> sorted_canary = canary;
  std::vector<double> sorted_baseline = baseline;
  std::sort(sorted_canary.begin(), sorted_canary.end());
  std::sort(sorted_baseline.begin(), sorted_baseline.end());
  if (sorted_canary == sorted_baseline) {
    r.reason = "The canary and baseline data are identical";
    return r;
  }
  if (IsConstant(canary) && IsConstant(baseline)) {
    if (canary.front() == baseline.front()) return r;  // one distinct value in all
    std::mt19937_64 rng(kNoiseSeed + metric);
    AddNoise(canary, rng);
    AddNoise(baseline, rng);
    r.noise_added = true;
  }

  const auto test = MannWhitney(canary, baseline, config_.conf_level);
  if (!test) {
    r.classification = Classification::kError;
    r.reason = "Metric Classification Failed: " + test.error().message();
    r.critical = cfg.critical;
    return r;
  }
  r.test = *test;
  r.ratio = MeanRatio(canary, baseline);
  r.effect_size =
      cfg.effect_measure == EffectMeasure::kCles
          ? test->u / (static_cast<double>(canary.size()) * static_cast<double>(baseline.size()))
          : r.ratio;
  Decide(cfg, config_.tolerance, r);
  return r;
}

Judgement KayentaJudge::Evaluate() const {
  Judgement j;
  j.metrics.reserve(config_.metrics.size());
  for (std::size_t i = 0; i < config_.metrics.size(); ++i) j.metrics.push_back(Classify(i));
  Scored scored = Score(j.metrics, config_);
  j.groups = std::move(scored.groups);
  j.score = scored.score;
  j.reason = std::move(scored.reason);
  if (scored.critical_failure || j.score < config_.marginal_threshold) {
    j.outcome = Outcome::kFail;
  } else {
    j.outcome = j.score >= config_.pass_threshold ? Outcome::kPass : Outcome::kMarginal;
  }
  const bool few = std::any_of(j.metrics.begin(), j.metrics.end(), [](const MetricResult& r) {
    return r.baseline.count < kFewDataPoints;
  });
  if (few) {
    j.warnings.emplace_back(
        "One of the metrics returned fewer than 50 data points, which can reduce confidence in "
        "the final canary score.");
  }
  return j;
}

}  // namespace gpucanary::eval::kayenta
