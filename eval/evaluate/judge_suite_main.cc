// judge_suite: runs the labelled scenario suite through gpucanary's judge and
// the Kayenta-style judge and prints the markdown report of
// docs/judge-accuracy.md.
//
//   build/release/eval/evaluate/judge_suite [FILTER]   # case name prefix
//   build/release/eval/evaluate/judge_suite --policy=P.yaml   # another policy
//   build/release/eval/evaluate/judge_suite --aa=1000  # A/A false-fail rate:
//       the suite's A/A scenarios again and again with new seeds
//   build/release/eval/evaluate/judge_suite --without-service  # GPU telemetry
//       alone: every service series dropped, as on a DCGM-only fleet
//   build/release/eval/evaluate/judge_suite --effects=20  # time to decision by
//       effect size: regression-05pct-1 with the release 0-50% slower per
//       token, 20 seeds each

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "analysis/policy/policy.h"
#include "eval/evaluate/evaluate.h"

namespace {

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(std::lround(q * static_cast<double>(v.size() - 1)));
  return v[std::min(i, v.size() - 1)];
}

// Time to decision by effect size: regression-05pct-1 (4 GPUs x 6 nodes,
// canary node-2 and node-5, 210 req/s) with the release `slowdown` times
// slower per token, `runs` seeds each.
int RunEffects(const std::vector<gpucanary::eval::suite::SuiteCase>& cases,
               const gpucanary::eval::evaluate::EvaluateOptions& options, std::int64_t runs) {
  namespace suite = gpucanary::eval::suite;
  namespace evaluate = gpucanary::eval::evaluate;
  using gpucanary::analysis::Verdict;
  const auto base = std::find_if(cases.begin(), cases.end(), [](const suite::SuiteCase& c) {
    return c.name == "regression-05pct-1";
  });
  if (base == cases.end()) {
    std::fprintf(stderr, "regression-05pct-1 not in the suite\n");
    return 3;
  }
  std::printf(
      "| slower per token | runs | fail | pass | inconclusive | decision after onset: median | "
      "p90 | max |\n| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  for (const double slowdown : {1.0, 1.02, 1.03, 1.04, 1.05, 1.10, 1.20, 1.50}) {
    std::int64_t fails = 0, passes = 0;
    std::vector<double> delays;
    for (std::int64_t i = 0; i < runs; ++i) {
      suite::SuiteCase c = *base;
      c.scenario.seed = 200000 + static_cast<std::uint64_t>(i);
      c.scenario.releases["next"].slowdown = slowdown;
      auto o = evaluate::EvaluateCase(c, options);
      if (!o) {
        std::fprintf(stderr, "%s\n", o.error().message().c_str());
        return 3;
      }
      fails += o->verdict == Verdict::kFail;
      passes += o->verdict == Verdict::kPass;
      if (o->delay_s && o->verdict != Verdict::kInconclusive) delays.push_back(*o->delay_s);
    }
    std::printf("| %.0f%% | %ld | %ld | %ld | %ld |", (slowdown - 1) * 100, runs, fails, passes,
                runs - fails - passes);
    for (const double q : {0.5, 0.9, 1.0}) {
      if (delays.empty()) {
        std::printf(" – |");  // nothing decided
      } else {
        std::printf(" %.0f s |", Percentile(delays, q));
      }
    }
    std::printf("\n");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  namespace suite = gpucanary::eval::suite;
  namespace evaluate = gpucanary::eval::evaluate;
  using gpucanary::analysis::Verdict;
  using gpucanary::analysis::VerdictName;
  std::string filter;
  std::string policy_path;
  std::int64_t aa_runs = 0;
  bool without_service = false;
  std::int64_t effect_runs = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--effects=", 0) == 0) {
      effect_runs = std::strtoll(arg.c_str() + 10, nullptr, 10);
    } else if (arg == "--without-service") {
      without_service = true;
    } else if (arg.rfind("--policy=", 0) == 0) {
      policy_path = arg.substr(9);
    } else if (arg.rfind("--aa=", 0) == 0) {
      aa_runs = std::strtoll(arg.c_str() + 5, nullptr, 10);
    } else {
      filter = arg;
    }
  }
  auto cases = suite::LoadSuite(std::string(GPUCANARY_SOURCE_DIR) + "/scenarios/suite/labels.yaml");
  if (!cases) {
    std::fprintf(stderr, "%s\n", cases.error().message().c_str());
    return 3;
  }
  evaluate::EvaluateOptions options;
  if (!policy_path.empty()) {
    auto policy = gpucanary::analysis::LoadPolicy(policy_path);
    if (!policy) {
      std::fprintf(stderr, "%s\n", policy.error().message().c_str());
      return 3;
    }
    options.policy = std::move(*policy);
  }
  options.without_service = without_service;
  options.work_dir = std::filesystem::temp_directory_path().string() + "/gpucanary-judge-suite";
  std::vector<evaluate::CaseOutcome> outcomes;
  if (effect_runs > 0) return RunEffects(*cases, options, effect_runs);
  if (aa_runs > 0) {
    std::vector<const suite::SuiteCase*> aa;
    for (const suite::SuiteCase& c : *cases) {
      if (c.category == suite::Category::kAa) aa.push_back(&c);
    }
    std::int64_t fails = 0, kayenta_fails = 0, passes = 0, kayenta_passes = 0;
    for (std::int64_t i = 0; i < aa_runs; ++i) {
      suite::SuiteCase c = *aa[static_cast<std::size_t>(i) % aa.size()];
      c.scenario.seed = 100000 + static_cast<std::uint64_t>(i);
      c.name += "-seed" + std::to_string(c.scenario.seed);
      auto o = evaluate::EvaluateCase(c, options);
      if (!o) {
        std::fprintf(stderr, "%s: %s\n", c.name.c_str(), o.error().message().c_str());
        return 3;
      }
      fails += o->verdict == Verdict::kFail;
      passes += o->verdict == Verdict::kPass;
      kayenta_fails += o->kayenta_verdict == Verdict::kFail;
      kayenta_passes += o->kayenta_verdict == Verdict::kPass;
      if (o->verdict == Verdict::kFail) {
        std::string causes;
        for (const std::string& cs : o->causes) causes += " " + cs;
        std::fprintf(stderr, "false fail: %s:%s\n", c.name.c_str(), causes.c_str());
      }
    }
    std::printf(
        "A/A runs: %ld\n| judge | false fails | passes |\n| --- | ---: | ---: |\n"
        "| gpucanary | %ld (%.2f%%) | %ld |\n| Kayenta-style | %ld (%.2f%%) | %ld |\n",
        aa_runs, fails, 100.0 * static_cast<double>(fails) / static_cast<double>(aa_runs), passes,
        kayenta_fails, 100.0 * static_cast<double>(kayenta_fails) / static_cast<double>(aa_runs),
        kayenta_passes);
    return 0;
  }
  for (const suite::SuiteCase& c : *cases) {
    if (c.name.rfind(filter, 0) != 0) continue;
    auto o = evaluate::EvaluateCase(c, options);
    if (!o) {
      std::fprintf(stderr, "%s: %s\n", c.name.c_str(), o.error().message().c_str());
      return 3;
    }
    std::fprintf(stderr, "%-28s %-12s %s %.1fs\n", c.name.c_str(),
                 std::string(VerdictName(o->verdict)).c_str(),
                 o->verdict_ok && o->causes_ok ? "ok" : "WRONG", o->seconds);
    outcomes.push_back(std::move(*o));
  }
  std::printf("%s", evaluate::Markdown(outcomes).c_str());
  return 0;
}
