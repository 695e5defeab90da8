// real_suite: the judge on real GPU traces shaped into canary/baseline pairs
// (docs/judge-accuracy.md, "Real traces").
//
//   build/release/eval/realdata/real_suite [--shared DIR] [--policy FILE] [--case NAME]
//       [--details]
//
// Prints the markdown table; --details adds each case's summary sentences and
// notes. Exit status 0 when every case is as labelled, 1 otherwise, 3 on bad input.

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <string_view>

#include "analysis/policy/policy.h"
#include "eval/realdata/real_suite.h"

namespace {

namespace analysis = gpucanary::analysis;
namespace eval = gpucanary::eval;

int Main(int argc, char** argv) {
  std::string shared = GPUCANARY_SHARED_DIR;
  std::string policy_file;
  std::string only;
  bool details = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--details") {
      details = true;
    } else if (arg == "--shared" && i + 1 < argc) {
      shared = argv[++i];
    } else if (arg == "--policy" && i + 1 < argc) {
      policy_file = argv[++i];
    } else if (arg == "--case" && i + 1 < argc) {
      only = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: real_suite [--shared DIR] [--policy FILE] [--case NAME] [--details]\n");
      return 3;
    }
  }

  eval::realdata::RunOptions options;
  options.shared_dir = shared;
  options.work_dir =
      (std::filesystem::temp_directory_path() / ("real_suite_" + std::to_string(::getpid())))
          .string();
  if (!policy_file.empty()) {
    auto policy = analysis::LoadPolicy(policy_file);
    if (!policy) {
      std::cerr << policy.error().message() << "\n";
      return 3;
    }
    options.policy = *policy;
  }
  std::vector<eval::realdata::RealOutcome> outcomes;
  bool all_ok = true;
  for (const eval::realdata::RealCase& c : eval::realdata::RealCases()) {
    if (!only.empty() && c.name != only) continue;
    auto outcome = eval::realdata::RunRealCase(c, options);
    if (!outcome) {
      std::cerr << c.name << ": " << outcome.error().message() << "\n";
      return 3;
    }
    all_ok = all_ok && outcome->ok;
    if (details) {
      std::cout << "## " << c.name << ": " << c.what << "\n";
      for (const auto& cause : outcome->report.causes)
        std::cout << "- cause: " << cause.summary << "\n";
      for (const auto& note : outcome->report.notes) std::cout << "- note: " << note << "\n";
      for (const auto& m : outcome->report.metrics) {
        std::printf("- metric %s: %s change %+.3f [%+.3f, %+.3f] blocks %lld\n", m.name.c_str(),
                    m.result.c_str(), m.change, m.interval_lo, m.interval_hi,
                    static_cast<long long>(m.blocks));
      }
      std::cout << "\n";
    }
    outcomes.push_back(std::move(*outcome));
  }
  std::filesystem::remove_all(options.work_dir);
  std::cout << eval::realdata::Markdown(outcomes);
  return all_ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) { return Main(argc, argv); }
