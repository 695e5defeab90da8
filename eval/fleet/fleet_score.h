#pragma once
// Scoring `gpucanary correlate`'s JSON (docs/contracts.md §7; key names as
// src/analysis/correlate/report.cc writes them) against a fleet case's true
// events (fleet_generator.h). The correlator is a black box here: only its
// output is read.
//
// Rules (eval/fleet/README.md, "Scoring"):
// - a report matches an event when their nodes overlap and the report's
//   `at` lies in [onset - 120 s, onset + 900 s] of one of the shared nodes;
//   among several, the best is a must-report event before an optional one
//   before a no-report one, then the larger node overlap, then the nearer
//   onset; each report matches at most one event;
// - noise: a report that matches no event, or only an event a report is
//   noise for (must_report false);
// - duplicates: every matched report of an event beyond its first;
// - a release event's best report is its matched report with the largest
//   node overlap (then the nearest onset): top-1 when its first suspect is
//   the guilty release, top-3 when the guilty one is among its first three
//   candidates;
// - a false blame: a report with a suspect that matches no release event;
// - kinds ok: the best report of a found event names one of its kinds.
//
// Pure functions; thread-safe.

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "eval/fleet/fleet_generator.h"

namespace gpucanary::eval::fleet {

// One regression of the correlator's report.
struct Report {
  std::string metric;
  double at = 0;
  double change = 0;
  std::vector<std::string> nodes;
  std::vector<std::string> suspects;    // releases, in order
  std::vector<std::string> candidates;  // releases, in order
  std::vector<std::string> kinds;       // causes[].kind (null kinds left out)
};

// Parses `correlate --output json`. Errors: kParseError with what was wrong.
Result<std::vector<Report>> ParseCorrelateJson(std::string_view text);

struct CaseScore {
  int events = 0;  // must_report true
  int reports = 0, matched = 0, noise = 0, dup = 0, found = 0;
  int release_events = 0, release_found = 0, top1 = 0, top3 = 0;
  int false_blames = 0;
  int kinds_checked = 0, kinds_ok = 0;
  double correlate_s = 0;
  std::vector<std::string> noise_metrics;  // metric of every noise report
  std::vector<std::string> lines;          // one line per event and report, for the details
  void Add(const CaseScore& o);
};

CaseScore ScoreCase(const std::vector<FleetEvent>& events, const std::vector<Report>& reports,
                    double start_unix_s);

}  // namespace gpucanary::eval::fleet
