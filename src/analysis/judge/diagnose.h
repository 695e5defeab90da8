#pragma once
// Diagnosis (docs/analysis-method.md, "Diagnosis"): which mechanism a
// failing metric points to, from the signature of the other metrics, and the
// sentence an SRE reads for each cause.

#include <string>
#include <string_view>
#include <vector>

#include "analysis/judge/judge.h"
#include "vocab/vocab.h"

namespace gpucanary::analysis {

// Relative changes (canary vs baseline, NaN: unknown) of the signature
// metrics over the judged blocks of the whole canary.
struct Signature {
  double sm_clock = 0;
  double sm_active = 0;
  double occupancy = 0;
  double tensor = 0;
  double dram = 0;
  double power = 0;
  double tokens_per_dram = 0;
  bool power_capped = false;  // SW power cap (0x4) seen on the canary and not the baseline
};

// The cause a failing metric points to. `metric` is its name; `gpu_metric`
// whether it is a DCGM field (else a service metric).
vocab::CauseKind ClassifyMetricFailure(std::string_view metric, bool gpu_metric,
                                       const Signature& signature);

// "node-4/0-7", "node-2/0-3, node-5/0-3", "3 GPUs on node-6" ...: a short
// description of a set of GPU keys ("host/index"), sorted.
std::string DescribeGpus(const std::vector<std::string>& gpus);

// The cause's one-sentence summary from its kind, scope, GPUs, evidence and
// detail (reason bits, link, XID code), and how long it held.
std::string SummarizeCause(const Cause& cause, std::string_view detail, double seconds);

}  // namespace gpucanary::analysis
