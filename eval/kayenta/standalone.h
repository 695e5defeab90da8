#pragma once
// StandaloneAnalysis: Kayenta's multi-interval "standalone canary analysis"
// (kayenta-standalone-canary-analysis: CanaryAnalysisExecutionRequest,
// MonitorCanaryTask, GenerateCanaryAnalysisResultTask;
// shared/reference/canary-anchors.md §1.6) driven by ticks instead of a
// scheduler, around one KayentaJudge. This is also how Argo Rollouts' Kayenta
// provider and Spinnaker pipelines see Kayenta: a series of judgements of one
// run, the last of which decides.
//
//   lifetime_s     lifetimeDurationMins; > 0
//   interval_s     analysisIntervalMins; 0 = lifetime_s (one judgement)
//   begin_after_s  beginAfterMins: warm-up before the analysis starts
//   lookback_s     lookbackMins: 0 = every judgement sees the window growing
//                  from the analysis start; > 0 = only the last lookback_s
//
// With A = start_tick + begin_after_s, judgement i = 1 .. lifetime_s /
// interval_s is due at t_i = A + i * interval_s and covers the ticks in
// [A, t_i) (lookback 0) or [max(A, t_i - lookback_s), t_i).
// Verdict (MonitorCanaryTask / GenerateCanaryAnalysisResultTask):
//  - a judgement before the last with score <= marginal ends the run, Failed
//    (Kayenta's only fail-fast; note "<=" where the judge's label uses "<");
//  - otherwise the last judgement alone decides: Passed when its score is
//    > marginal and >= pass, else Failed. Earlier Marginal scores are forgotten.
//
// Thread-compatible.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "eval/kayenta/kayenta.h"

namespace gpucanary::eval::kayenta {

struct StandaloneConfig {
  std::int64_t lifetime_s = 0;
  std::int64_t interval_s = 0;
  std::int64_t begin_after_s = 0;
  std::int64_t lookback_s = 0;
};

enum class RunState : std::uint8_t { kRunning, kPassed, kFailed };

class StandaloneAnalysis {
 public:
  // Returns kInvalidArgument for a bad judge configuration (see
  // KayentaJudge::Create), lifetime_s <= 0, a negative interval, warm-up or
  // lookback, or interval_s > lifetime_s.
  static Result<StandaloneAnalysis> Create(JudgeConfig judge, StandaloneConfig run,
                                           std::int64_t start_tick);

  // One tick of one metric, as KayentaJudge::Add. Ticks may arrive in any
  // order but must arrive before the judgement whose window holds them.
  // REQUIRES: 0 <= metric < number of configured metrics.
  void Add(std::int64_t tick, int metric, std::optional<double> canary,
           std::optional<double> baseline);

  // Makes, in order, every judgement due at or before `now`; returns how many.
  // None once the run has ended.
  std::size_t AdvanceTo(std::int64_t now);

  RunState state() const { return state_; }
  const std::string& reason() const { return reason_; }  // why it ended
  const std::vector<Judgement>& judgements() const { return judgements_; }
  std::int64_t planned_judgements() const { return planned_; }
  // When judgement i (1-based) is due.
  std::int64_t DueAt(std::int64_t i) const { return analysis_start_ + i * run_.interval_s; }

 private:
  struct Sample {
    std::int64_t tick;
    int metric;
    std::optional<double> canary;
    std::optional<double> baseline;
  };

  StandaloneAnalysis(KayentaJudge judge, StandaloneConfig run, std::int64_t start_tick);
  std::int64_t WindowStart(std::int64_t i) const;
  void Decide(const Judgement& j);

  KayentaJudge judge_;
  StandaloneConfig run_;
  std::int64_t analysis_start_;
  std::int64_t planned_;
  std::vector<Sample> samples_;
  std::vector<Judgement> judgements_;
  RunState state_ = RunState::kRunning;
  std::string reason_;
};

}  // namespace gpucanary::eval::kayenta
