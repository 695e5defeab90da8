#include "eval/evaluate/evaluate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "analysis/replay/replay.h"
#include "analysis/stats/blocks.h"
#include "eval/kayenta/kayenta.h"
#include "eval/kayenta/standalone.h"
#include "eval/suite/sentences.h"

namespace gpucanary::eval::evaluate {

using analysis::Catalog;
using analysis::Cause;
using analysis::Judge;
using analysis::MetricPolicy;
using analysis::Policy;
using analysis::Replay;
using analysis::ReplayInput;
using analysis::Report;
using analysis::Role;
using analysis::Tick;
using analysis::Verdict;
using analysis::VerdictName;
namespace stats = analysis::stats;

namespace {

std::string CauseKey(vocab::CauseKind kind, vocab::Scope scope, const std::string& node) {
  std::string s = std::string(vocab::Name(kind)) + "/" + std::string(vocab::Name(scope));
  if (!node.empty()) s += "@" + node;
  return s;
}

// Whether a CauseKey names one of the throttle rule's causes.
bool ThrottleKey(const std::string& key) {
  using vocab::CauseKind;
  const std::optional<CauseKind> kind = vocab::Parse<CauseKind>(key.substr(0, key.find('/')));
  return kind == CauseKind::kPowerBrake || kind == CauseKind::kThermalThrottle ||
         kind == CauseKind::kHwSlowdown || kind == CauseKind::kPowerCap;
}

// Kayenta is given the policy's comparable metrics, in the direction the
// policy says is harmful, all in one group; the policy's critical metrics are
// critical.
kayenta::JudgeConfig KayentaConfig(const Policy& policy, std::vector<int>* tap_to_metric) {
  kayenta::JudgeConfig config;
  tap_to_metric->assign(policy.metrics.size(), -1);
  for (std::size_t i = 0; i < policy.metrics.size(); ++i) {
    const MetricPolicy& m = policy.metrics[i];
    if (m.kind == MetricPolicy::Kind::kP99) continue;  // no per-tick value to hand over
    kayenta::MetricConfig k;
    k.name = m.name;
    k.direction = m.better == MetricPolicy::Better::kHigher ? kayenta::Direction::kDecrease
                                                            : kayenta::Direction::kIncrease;
    k.critical = m.critical;
    (*tap_to_metric)[i] = static_cast<int>(config.metrics.size());
    config.metrics.push_back(std::move(k));
  }
  return config;
}

}  // namespace

Result<CaseOutcome> EvaluateCase(const suite::SuiteCase& c, const EvaluateOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  CaseOutcome out;
  out.name = c.name;
  out.category = c.category;
  out.expected = c.verdict;
  for (const suite::ExpectedCause& e : c.causes) {
    out.expected_causes.push_back(CauseKey(e.kind, e.scope, e.node));
  }
  const std::string dir = options.work_dir + "/" + c.name;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Error(StatusCode::kIoError, "cannot create '" + dir + "': " + ec.message());
  Result<suite::CaseFiles> files = suite::GenerateCase(c, dir, false);
  if (!files) return Error(files.error());
  const auto release_start = static_cast<std::int64_t>(std::llround(files->release_start_unix_s));
  const double onset =
      files->release_start_unix_s - c.release_start_s + c.onset_s.value_or(c.release_start_s);

  auto replay = Replay::Open(
      {ReplayInput{.path = files->baseline, .role = Role::kBaseline, .format = std::nullopt},
       ReplayInput{.path = files->canary, .role = Role::kCanary, .format = std::nullopt}});
  if (!replay) return Error(replay.error());
  Judge judge({.policy = options.policy, .release_start_s = release_start});

  std::vector<int> tap_to_metric;
  kayenta::JudgeConfig kconfig = KayentaConfig(options.policy, &tap_to_metric);
  const auto judged_from =
      release_start + static_cast<std::int64_t>(options.policy.warmup_s) + 10;  // + the restart
  const auto duration = static_cast<std::int64_t>(c.scenario.duration_s - c.release_start_s);
  kayenta::StandaloneConfig run;
  const auto interval = static_cast<std::int64_t>(options.kayenta_interval_s);
  run.interval_s = interval;
  run.lifetime_s =
      std::max(interval, (duration - (judged_from - release_start)) / interval * interval);
  Result<kayenta::StandaloneAnalysis> standalone =
      kayenta::StandaloneAnalysis::Create(kconfig, run, judged_from);
  if (!standalone) return Error(standalone.error());
  std::optional<std::int64_t> kayenta_end;
  std::vector<std::pair<std::int64_t, double>> first_metric;  // (tick, log ratio)
  judge.SetTap([&](std::int64_t tick, int policy_metric, std::optional<double> canary,
                   std::optional<double> baseline) {
    if (policy_metric == 0 && canary && baseline && *canary > 0 && *baseline > 0) {
      first_metric.emplace_back(tick, std::log(*canary / *baseline));
    }
    const int k = tap_to_metric[static_cast<std::size_t>(policy_metric)];
    if (k < 0 || tick < judged_from) return;
    standalone->Add(tick, k, canary, baseline);
  });
  Tick tick;
  while (true) {
    Result<bool> more = (*replay)->Next(tick);
    if (!more) return Error(more.error());
    if (!*more) break;
    if (options.without_service) {  // DCGM has no histograms: every one is a server's
      tick.node_points.clear();
      tick.histograms.clear();
      tick.buckets.clear();
      tick.nodes.clear();
    }
    judge.Add(tick, Catalog::Of(**replay));
    if (standalone->state() == kayenta::RunState::kRunning) {
      standalone->AdvanceTo(tick.time_s);
      if (standalone->state() != kayenta::RunState::kRunning) kayenta_end = tick.time_s;
    }
  }
  const Report report = judge.Finish();

  out.verdict = report.verdict;
  if (report.decided_at) out.delay_s = *report.decided_at - onset;
  for (const Cause& cause : report.causes) {
    for (std::string& line : suite::SummaryContradictions(cause)) {
      out.contradictions.push_back(std::move(line));
    }
  }
  for (const Cause& cause : report.causes) {
    if (cause.failing && report.decided_at && !out.since_delay_s) {
      out.since_delay_s = *report.decided_at - cause.since;
    }
  }
  for (const Cause& cause : report.causes) {
    std::string nodes;
    for (const std::string& n : cause.nodes) nodes += (nodes.empty() ? "" : ",") + n;
    out.causes.push_back(
        CauseKey(cause.kind, cause.scope, cause.scope == vocab::Scope::kNode ? nodes : ""));
  }
  out.verdict_ok = c.verdict == suite::Verdict::kFail ? report.verdict == Verdict::kFail
                                                      : report.verdict != Verdict::kFail;
  out.causes_ok = true;
  for (const suite::ExpectedCause& e : c.causes) {
    bool found = false;
    for (const Cause& cause : report.causes) {
      if (cause.kind != e.kind || cause.scope != e.scope) continue;
      if (e.scope == vocab::Scope::kRelease && !cause.failing) continue;
      if (!e.node.empty() &&
          std::find(cause.nodes.begin(), cause.nodes.end(), e.node) == cause.nodes.end()) {
        continue;
      }
      found = true;
    }
    out.causes_ok &= found;
  }
  // A case with no expected cause must not blame the release.
  if (c.causes.empty()) {
    for (const Cause& cause : report.causes) out.causes_ok &= !cause.failing;
  }

  switch (standalone->state()) {
    case kayenta::RunState::kFailed:
      out.kayenta_verdict = Verdict::kFail;
      break;
    case kayenta::RunState::kPassed:
      out.kayenta_verdict = Verdict::kPass;
      break;
    case kayenta::RunState::kRunning:
      out.kayenta_verdict = Verdict::kInconclusive;
      break;
  }
  if (kayenta_end) out.kayenta_delay_s = static_cast<double>(*kayenta_end) - onset;
  out.kayenta_ok = c.verdict == suite::Verdict::kFail ? out.kayenta_verdict == Verdict::kFail
                                                      : out.kayenta_verdict != Verdict::kFail;
  // Autocorrelation of the first metric's log ratio, per tick and per block.
  const auto blocked = [&](std::int64_t block_s) {
    std::map<std::int64_t, std::pair<double, std::int64_t>> blocks;
    for (const auto& [at, lr] : first_metric) {
      auto& b = blocks[at / block_s];
      b.first += lr;
      b.second += 1;
    }
    std::vector<double> x;
    for (const auto& [index, b] : blocks) {
      if (2 * b.second >= block_s) x.push_back(b.first / static_cast<double>(b.second));
    }
    return stats::Lag1Autocorrelation(x);
  };
  out.autocorrelation_1s = blocked(1);
  out.autocorrelation_5s = blocked(5);
  out.autocorrelation_10s = blocked(10);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::filesystem::remove_all(dir, ec);
  return out;
}

namespace {

std::string Seconds(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f s", v);
  return buf;
}

double Median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

std::string Markdown(const std::vector<CaseOutcome>& outcomes) {
  std::string md;
  // Confusion matrix: expected (rows) x verdict (columns), gpucanary and Kayenta.
  const auto matrix = [&](bool kayenta) {
    std::map<std::pair<suite::Category, Verdict>, int> counts;
    for (const CaseOutcome& o : outcomes) {
      counts[{o.category, kayenta ? o.kayenta_verdict : o.verdict}]++;
    }
    std::string t =
        "| category (expected) | fail | pass | inconclusive |\n| --- | ---: | ---: | ---: |\n";
    using suite::Category;
    for (Category cat :
         {Category::kAa, Category::kNode, Category::kRelease, Category::kRegression}) {
      const char* expect = cat == Category::kAa     ? " (pass)"
                           : cat == Category::kNode ? " (not fail)"
                                                    : " (fail)";
      t += "| " + std::string(suite::CategoryName(cat)) + expect + " | " +
           std::to_string(counts[{cat, Verdict::kFail}]) + " | " +
           std::to_string(counts[{cat, Verdict::kPass}]) + " | " +
           std::to_string(counts[{cat, Verdict::kInconclusive}]) + " |\n";
    }
    return t;
  };
  md += "### Verdicts: gpucanary\n\n" + matrix(false) + "\n";
  md += "### Verdicts: Kayenta-style Mann-Whitney judge (same ticks)\n\n" + matrix(true) + "\n";

  int n = 0, ok = 0, cause_ok = 0, fails = 0, kok = 0, aa = 0, aa_fail = 0, kaa_fail = 0;
  std::vector<double> delays_throttle, delays_streak, delays_regression, delays_other, kdelays;
  for (const CaseOutcome& o : outcomes) {
    ++n;
    ok += o.verdict_ok;
    kok += o.kayenta_ok;
    if (o.category == suite::Category::kAa) {
      ++aa;
      aa_fail += o.verdict == Verdict::kFail;
      kaa_fail += o.kayenta_verdict == Verdict::kFail;
    }
    if (o.expected == suite::Verdict::kFail) {
      ++fails;
      cause_ok += o.verdict_ok && o.causes_ok;
      if (o.verdict == Verdict::kFail && o.delay_s) {
        bool throttle = false;
        for (const std::string& e : o.expected_causes) throttle |= ThrottleKey(e);
        if (throttle && o.since_delay_s) delays_streak.push_back(*o.since_delay_s);
        (o.category == suite::Category::kRegression ? delays_regression
         : throttle                                 ? delays_throttle
                                                    : delays_other)
            .push_back(*o.delay_s);
      }
      if (o.kayenta_verdict == Verdict::kFail && o.kayenta_delay_s)
        kdelays.push_back(*o.kayenta_delay_s);
    }
  }
  md += "### Summary\n\n| | gpucanary | Kayenta-style |\n| --- | ---: | ---: |\n";
  md += "| verdicts right | " + std::to_string(ok) + "/" + std::to_string(n) + " | " +
        std::to_string(kok) + "/" + std::to_string(n) + " |\n";
  md += "| A/A false fails | " + std::to_string(aa_fail) + "/" + std::to_string(aa) + " | " +
        std::to_string(kaa_fail) + "/" + std::to_string(aa) + " |\n";
  md += "| faults failed with the right cause and scope | " + std::to_string(cause_ok) + "/" +
        std::to_string(fails) + " | (no causes) |\n";
  const auto delay_row = [&](const char* label, const std::vector<double>& d) {
    if (d.empty()) return std::string("| ") + label + " | - | |\n";
    return std::string("| ") + label + " | median " + Seconds(Median(d)) + ", max " +
           Seconds(*std::max_element(d.begin(), d.end())) + " | |\n";
  };
  md += delay_row("delay from onset, throttle faults", delays_throttle);
  md += delay_row("delay from the first throttled second, throttle faults", delays_streak);
  md += delay_row("delay from onset, 5%/10% regressions", delays_regression);
  md += delay_row("delay from onset, other faults", delays_other);
  if (!kdelays.empty()) {
    md += "| Kayenta delay from onset (its fails) | | median " + Seconds(Median(kdelays)) + " |\n";
  }
  {
    double a1 = 0, a5 = 0, a10 = 0;
    int k = 0;
    for (const CaseOutcome& o : outcomes) {
      if (o.category != suite::Category::kAa || std::isnan(o.autocorrelation_10s)) continue;
      a1 += o.autocorrelation_1s;
      a5 += o.autocorrelation_5s;
      a10 += o.autocorrelation_10s;
      ++k;
    }
    if (k > 0) {
      char buf[256];
      std::snprintf(buf, sizeof buf,
                    "\nLag-1 autocorrelation of the first metric's canary/baseline log ratio, "
                    "mean over %d A/A cases: %.2f per 1 s tick, %.2f per 5 s block, %.2f per 10 s "
                    "block.\n",
                    k, a1 / k, a5 / k, a10 / k);
      md += buf;
    }
  }
  md +=
      "\n### Cases\n\n| case | expected | gpucanary | delay | causes found | Kayenta |\n"
      "| --- | --- | --- | ---: | --- | --- |\n";
  for (const CaseOutcome& o : outcomes) {
    std::string causes;
    for (const std::string& cs : o.causes) causes += (causes.empty() ? "" : ", ") + cs;
    md += "| " + o.name + " | " + std::string(suite::VerdictName(o.expected)) + " | " +
          std::string(VerdictName(o.verdict)) + (o.verdict_ok && o.causes_ok ? "" : " ✗") + " | " +
          (o.delay_s ? Seconds(*o.delay_s) : std::string("-")) + " | " + causes + " | " +
          std::string(VerdictName(o.kayenta_verdict)) + (o.kayenta_ok ? "" : " ✗") +
          (o.kayenta_verdict == Verdict::kFail && o.kayenta_delay_s
               ? " (" + Seconds(*o.kayenta_delay_s) + ")"
               : std::string()) +
          " |\n";
  }
  return md;
}

}  // namespace gpucanary::eval::evaluate
