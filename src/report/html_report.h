#pragma once
// `gpucanary report BUNDLE`: a diagnostic bundle (docs/actions.md: the
// incident.json and the telemetry.om recording the circuit breaker wrote)
// as one self-contained HTML page an SRE can open offline or attach to a
// ticket: the verdict and its causes in words, the release, the nodes, and
// charts of the canary's GPUs against the baseline's (SM clock, power,
// temperature, DRAM activity, tokens per second per node) with the release
// start and the decision marked and throttled seconds shaded. uPlot and the
// page's script and style are inlined; nothing is fetched.
//
// Thread-safe (no shared state).

#include <filesystem>
#include <string>

#include "core/status.h"

namespace gpucanary::report {

struct HtmlReportStats {
  int gpus = 0;     // GPUs charted
  int seconds = 0;  // seconds on the time axis
  int charts = 0;   // charts with data
};

// Renders the bundle in `dir`. Errors: kNotFound / kIoError for a missing
// or unreadable incident.json or telemetry.om; kParseError naming the file
// (and line:col for the recording) for one that does not parse.
Result<std::string> RenderHtmlReport(const std::filesystem::path& dir,
                                     HtmlReportStats* stats = nullptr);

}  // namespace gpucanary::report
