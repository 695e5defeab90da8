#include "eval/kayenta/standalone.h"

#include <algorithm>
#include <string>
#include <utility>

namespace gpucanary::eval::kayenta {

Result<StandaloneAnalysis> StandaloneAnalysis::Create(JudgeConfig judge, StandaloneConfig run,
                                                      std::int64_t start_tick) {
  if (run.interval_s == 0) run.interval_s = run.lifetime_s;
  if (run.lifetime_s <= 0 || run.interval_s < 0 || run.begin_after_s < 0 || run.lookback_s < 0 ||
      run.interval_s > run.lifetime_s) {
    return Error(StatusCode::kInvalidArgument,
                 "standalone analysis needs lifetime > 0, 0 <= interval <= lifetime, and "
                 "non-negative warm-up and lookback");
  }
  auto created = KayentaJudge::Create(std::move(judge));
  if (!created) return Error(created.error());
  return StandaloneAnalysis(std::move(*created), run, start_tick);
}

StandaloneAnalysis::StandaloneAnalysis(KayentaJudge judge, StandaloneConfig run,
                                       std::int64_t start_tick)
    : judge_(std::move(judge)),
      run_(run),
      analysis_start_(start_tick + run.begin_after_s),
      // CanaryAnalysisExecutionRequest: lifetime / interval judgements.
      planned_(run.lifetime_s / run.interval_s) {}

void StandaloneAnalysis::Add(std::int64_t tick, int metric, std::optional<double> canary,
                             std::optional<double> baseline) {
  GC_CHECK(metric >= 0 && static_cast<std::size_t>(metric) < judge_.config().metrics.size(),
           "metric index out of range");
  if (state_ != RunState::kRunning || tick < analysis_start_) return;  // never judged
  samples_.push_back({tick, metric, canary, baseline});
}

std::int64_t StandaloneAnalysis::WindowStart(std::int64_t i) const {
  if (run_.lookback_s == 0) return analysis_start_;
  return std::max(analysis_start_, DueAt(i) - run_.lookback_s);
}

std::size_t StandaloneAnalysis::AdvanceTo(std::int64_t now) {
  std::size_t made = 0;
  while (state_ == RunState::kRunning) {
    const auto i = static_cast<std::int64_t>(judgements_.size()) + 1;
    if (DueAt(i) > now) break;
    const std::int64_t from = WindowStart(i);
    const std::int64_t to = DueAt(i);
    judge_.Reset();
    for (const Sample& s : samples_) {
      if (s.tick >= from && s.tick < to) judge_.Add(s.metric, s.canary, s.baseline);
    }
    judgements_.push_back(judge_.Evaluate());
    ++made;
    Decide(judgements_.back());
    // Later windows start no earlier than the next one.
    if (i < planned_) {
      const std::int64_t keep_from = WindowStart(i + 1);
      std::erase_if(samples_, [&](const Sample& s) { return s.tick < keep_from; });
    }
  }
  if (state_ != RunState::kRunning) samples_.clear();
  return made;
}

void StandaloneAnalysis::Decide(const Judgement& j) {
  const auto i = static_cast<std::int64_t>(judgements_.size());
  const std::string at = "judgement " + std::to_string(i) + " of " + std::to_string(planned_);
  const double marginal = judge_.config().marginal_threshold;
  if (i < planned_) {
    if (j.score <= marginal) {
      state_ = RunState::kFailed;
      reason_ = at + ": score " + std::to_string(j.score) + " <= marginal " +
                std::to_string(marginal) + (j.reason.empty() ? "" : " (" + j.reason + ")");
    }
    return;
  }
  const bool passed = j.score > marginal && j.score >= judge_.config().pass_threshold;
  state_ = passed ? RunState::kPassed : RunState::kFailed;
  reason_ = at + " (last): score " + std::to_string(j.score) +
            (passed ? " passed the thresholds" : " did not pass the thresholds") +
            (j.reason.empty() ? "" : " (" + j.reason + ")");
}

}  // namespace gpucanary::eval::kayenta
