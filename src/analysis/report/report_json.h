#pragma once
// The judge's report as JSON: the output of `gpucanary judge --output json`
// (docs/contracts.md §6), and later of the daemon's API.
//
// Shape, keys in this order (the contract's first, then gpucanary's extras):
//
//   {"verdict": "fail", "decided_at": 1764680073.0, "score": 12.5,
//    "causes": [{"kind", "scope", "gpus", "since", "summary",
//                "evidence": [{"metric", "baseline", "canary", "unit"}],
//                "nodes", "decided_at", "failing", "origin"}],
//    "metrics": [{"name", "baseline", "canary", "change", "interval": [lo, hi], "result",
//                 "kind", "better", "margin", "critical", "detectable_effect", "blocks",
//                 "decided_at"}],
//    "release_start", "first_tick", "last_tick", "canary_gpus", "baseline_gpus",
//    "service_metrics_seen", "notes"}
//
// Numbers are printed at full precision (shortest text that reads back to the
// same double). JSON has no NaN or infinity: a non-finite number (NaN "not
// known", +-inf "unbounded", as in an interval before enough blocks) is
// `null`, and so is an unset optional (`decided_at` of an undecided report).
// Strings that are not valid UTF-8 (host names come from input files) have
// the bad bytes replaced by U+FFFD; this never throws.
//
// ReportFromJson reads that text back (the daemon keeps each verdict's
// report in its metadata database and serves it again after a restart).
//
// Thread-safe (pure functions).

#include <string>
#include <string_view>

#include "analysis/judge/judge.h"
#include "core/status.h"

namespace gpucanary::analysis {

// `indent` < 0: one line, no spaces (what `gpucanary judge` prints);
// otherwise pretty-printed with that many spaces per level. No trailing newline.
std::string ReportToJson(const Report& report, int indent = -1);

// The inverse of ReportToJson: ReportToJson(*ReportFromJson(ReportToJson(r)))
// is ReportToJson(r). `null` numbers read back as NaN (so +-inf comes back
// as NaN) or as unset optionals; a key that is absent keeps the default (a
// report written by an older version); a cause whose kind or scope is not a
// word of vocab/vocab.h (a newer version's) is left out. Errors: kParseError
// naming the key ("causes[0].since: expected a number or null") for text
// that is not such a report.
Result<Report> ReportFromJson(std::string_view json);

}  // namespace gpucanary::analysis
