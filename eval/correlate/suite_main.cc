// correlate_suite: runs the correlation's labelled simulator suite
// (scenarios/correlate/) and prints one Markdown row per case and the
// totals, the figures in docs/analysis-method.md ("Correlation: accuracy").
//
//   build/release/eval/correlate/correlate_suite [scenarios/correlate/labels.yaml]
//       [--scrape-interval S] [--keep DIR] [--case NAME]

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include "eval/correlate/suite.h"

namespace {

using gpucanary::eval::correlate::CaseOutcome;
using gpucanary::eval::correlate::CorrelateCase;

int Main(int argc, char** argv) {
  std::string labels = "scenarios/correlate/labels.yaml";
  std::string keep;
  std::string only;
  gpucanary::eval::correlate::SuiteRunOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--scrape-interval" && i + 1 < argc) {
      options.scrape_interval_s = std::atof(argv[++i]);
    } else if (a == "--keep" && i + 1 < argc) {
      keep = argv[++i];
    } else if (a == "--case" && i + 1 < argc) {
      only = argv[++i];
    } else if (!a.empty() && a[0] != '-') {
      labels = std::string(a);
    } else {
      std::fprintf(stderr,
                   "usage: correlate_suite [LABELS] [--scrape-interval S] [--keep DIR] "
                   "[--case NAME]\n");
      return 3;
    }
  }
  auto cases = gpucanary::eval::correlate::LoadCorrelateSuite(labels);
  if (!cases) {
    std::fprintf(stderr, "%s\n", cases.error().message().c_str());
    return 3;
  }
  const std::filesystem::path base =
      keep.empty() ? std::filesystem::temp_directory_path() / "gpucanary-correlate-suite"
                   : std::filesystem::path(keep);
  int guilty = 0;
  int top1 = 0;
  int none = 0;
  int none_clean = 0;
  int correct = 0;
  int reported = 0;
  double sim_s = 0;
  double corr_s = 0;
  std::printf("| case | category | guilty | top suspect | score | named | regressions | ok |\n");
  std::printf("| --- | --- | --- | --- | ---: | --- | ---: | --- |\n");
  for (const CorrelateCase& c : *cases) {
    if (!only.empty() && c.name != only) continue;
    auto outcome =
        gpucanary::eval::correlate::RunCorrelateCase(c, (base / c.name).string(), options);
    if (!outcome) {
      std::fprintf(stderr, "%s: %s\n", c.name.c_str(), outcome.error().message().c_str());
      return 1;
    }
    std::string named;
    for (const std::string& n : outcome->named) named += (named.empty() ? "" : ", ") + n;
    std::printf("| %s | %s | %s | %s | %.2f | %s | %d | %s |\n", c.name.c_str(), c.category.c_str(),
                c.guilty.empty() ? "-" : c.guilty.c_str(),
                outcome->top.empty() ? "-" : outcome->top.c_str(), outcome->top_score,
                named.empty() ? "-" : named.c_str(), outcome->regressions,
                outcome->correct ? "yes" : "**no**");
    if (c.guilty.empty()) {
      ++none;
      none_clean += outcome->correct ? 1 : 0;
    } else {
      ++guilty;
      top1 += outcome->top1 ? 1 : 0;
    }
    correct += outcome->correct ? 1 : 0;
    reported += outcome->regressions;
    sim_s += outcome->simulate_s;
    corr_s += outcome->correlate_s;
    if (!only.empty()) {
      std::printf("\n%s\n",
                  gpucanary::analysis::correlate::CorrelateReportText(outcome->report).c_str());
    }
    if (keep.empty()) std::filesystem::remove_all(base / c.name);
  }
  std::printf(
      "\ntop-1 where a release is guilty: %d/%d; no suspect where none is: %d/%d; "
      "all correct: %d/%d; regressions reported: %d; simulate %.1f s, correlate %.1f s\n",
      top1, guilty, none_clean, none, correct, guilty + none, reported, sim_s, corr_s);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return Main(argc, argv); }
