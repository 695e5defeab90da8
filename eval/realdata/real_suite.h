#pragma once
// The judge on real GPU traces (../shared/data/gpu-traces), shaped into
// canary/baseline pairs without changing a value (docs/judge-accuracy.md,
// "Real traces"): the two halves of one 8-GPU node running the same job, and
// runs of one GEMM on one card whose input data moved the power draw. Each arm
// is imported with the product's importers (gpucanary import's --gpus and
// --start-at: a subset of GPUs, moved in time so both arms start together),
// then judged exactly as `gpucanary judge --release-start T0` judges the files.
//
// The traces have no license: they are read in place, never copied into the
// repository (their READMEs).

#include <optional>
#include <string>
#include <vector>

#include "analysis/judge/judge.h"
#include "analysis/policy/policy.h"
#include "core/status.h"

namespace gpucanary::eval::realdata {

enum class Expect : std::uint8_t {
  kPass,     // an A/A pair the judge must pass
  kNotFail,  // must not fail (pass or inconclusive)
  kNotPass,  // a large workload change: must never pass
  kFail,     // a regression with a known cause, scope release
};
std::string_view ExpectName(Expect expect);

enum class TraceFormat : std::uint8_t { kNvidiaSmi, kDcgmCsv };

// One trace file imported into one arm.
struct ArmSource {
  TraceFormat format = TraceFormat::kDcgmCsv;
  std::string file;               // relative to <shared>/data/gpu-traces
  std::vector<std::string> gpus;  // empty: every GPU of the file
  std::string model;              // modelName for logs without one ("" : the file's)
  double offset_s = 0;            // where the first row lands, after the arms' common start
};

struct RealCase {
  std::string name;
  std::string what;  // one line: where the pair comes from and what is known
  Expect expect = Expect::kNotFail;
  std::string cause;  // kFail: the cause kind expected, scope release
  std::vector<ArmSource> baseline;
  std::vector<ArmSource> canary;
  // Seconds after the common start at which the canary runs the release
  // (the canary's history is before it).
  double release_offset_s = 0;
};

std::vector<RealCase> RealCases();

struct RealOutcome {
  std::string name;
  Expect expect = Expect::kNotFail;
  std::string expected_cause;
  analysis::Report report;
  // When the canary GPUs were busy (GPU utilisation at or above 90%, first
  // and last such second after the release), relative to the release.
  std::optional<double> busy_from_s, busy_to_s;
  std::optional<double> decided_s;  // decided_at minus the release
  std::vector<std::string> causes;  // "kind/scope" as found, failing first
  bool ok = false;                  // the verdict (and cause) as labelled
  // kFail: decided while the canary was still busy (within its busy period).
  bool within_busy = false;
  // Summaries that contradict their own evidence (suite::SummaryContradictions).
  std::vector<std::string> contradictions;
};

struct RunOptions {
  std::string shared_dir;  // the folder holding data/gpu-traces
  std::string work_dir;    // recordings are written here, one folder per case
  analysis::Policy policy = analysis::DefaultPolicy();
};

Result<RealOutcome> RunRealCase(const RealCase& c, const RunOptions& options);

// The table of docs/judge-accuracy.md, "Real traces".
std::string Markdown(const std::vector<RealOutcome>& outcomes);

}  // namespace gpucanary::eval::realdata
