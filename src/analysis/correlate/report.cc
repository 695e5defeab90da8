// The correlation report as docs/contracts.md §7 JSON and as text.

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "analysis/correlate/correlate.h"
#include "core/time_format.h"

namespace gpucanary::analysis::correlate {
namespace {

using Json = nlohmann::ordered_json;

// JSON numbers are finite (RFC 8259 §6): NaN and +-inf become null.
Json Number(double x) { return std::isfinite(x) ? Json(x) : Json(nullptr); }

// Scores to 3 decimals: enough to rank, stable to read.
Json Score(double x) { return Number(std::round(x * 1000) / 1000); }

Json SuspectJson(const Suspect& s) {
  Json j;
  j["release"] = s.release;
  j["score"] = Score(s.score);
  j["reason"] = s.reason;
  j["time"] = Score(s.time);
  j["space"] = Score(s.space);
  j["dose"] = Score(s.dose);
  j["mechanism"] = Score(s.mechanism);
  return j;
}

Json RegressionJson(const Regression& r) {
  Json j;
  // docs/contracts.md §7, in its order.
  j["metric"] = r.metric;
  j["at"] = Number(r.at);
  j["change"] = Number(r.change);
  j["gpus"] = r.gpus;
  Json suspects = Json::array();
  for (const Suspect& s : r.suspects) suspects.push_back(SuspectJson(s));
  j["suspects"] = std::move(suspects);
  Json causes = Json::array();
  for (const RegressionCause& c : r.causes) {
    Json cj;
    cj["kind"] = c.kind ? Json(*c.kind) : Json(nullptr);
    cj["scope"] = c.scope;
    if (!c.detail.empty()) cj["detail"] = c.detail;
    causes.push_back(std::move(cj));
  }
  j["causes"] = std::move(causes);
  // Extras.
  j["change_kind"] = r.change_relative ? "relative" : "absolute";
  j["nodes"] = r.nodes;
  j["summary"] = r.summary;
  Json evidence = Json::array();
  for (const MetricChange& m : r.evidence) {
    Json e;
    e["metric"] = m.metric;
    e["before"] = Number(m.before);
    e["after"] = Number(m.after);
    e["change"] = Number(m.change);
    e["change_kind"] = m.relative ? "relative" : "absolute";
    e["unit"] = m.unit;
    e["entities"] = m.entities;
    evidence.push_back(std::move(e));
  }
  j["evidence"] = std::move(evidence);
  Json candidates = Json::array();
  for (const Suspect& s : r.candidates) candidates.push_back(SuspectJson(s));
  j["candidates"] = std::move(candidates);
  return j;
}

}  // namespace

std::string CorrelateReportJson(const CorrelateReport& report) {
  Json j;
  Json regressions = Json::array();
  for (const Regression& r : report.regressions) regressions.push_back(RegressionJson(r));
  j["regressions"] = std::move(regressions);
  j["from"] = Number(report.from);
  j["to"] = Number(report.to);
  j["resolution_s"] = report.resolution_s;
  j["gpus"] = report.gpus;
  j["nodes"] = report.nodes;
  Json releases = Json::array();
  for (const ReleaseReach& r : report.releases) {
    Json rj;
    rj["id"] = r.release;
    rj["started_at"] = Number(r.started_at);
    Json arrivals = Json::array();
    for (const ReleaseReach::Arrival& a : r.arrivals) {
      arrivals.push_back(Json{{"node", a.node}, {"at", Number(a.at)}, {"observed", a.observed}});
    }
    rj["arrivals"] = std::move(arrivals);
    Json effects = Json::array();
    for (const ReleaseReach::Effect& e : r.effects) {
      effects.push_back(Json{{"metric", e.metric},
                             {"change", Number(e.change)},
                             {"low", Number(e.low)},
                             {"high", Number(e.high)},
                             {"z", Number(e.z)},
                             {"relative", e.relative}});
    }
    rj["effects"] = std::move(effects);
    releases.push_back(std::move(rj));
  }
  j["releases"] = std::move(releases);
  return j.dump() + "\n";
}

std::string CorrelateReportText(const CorrelateReport& report) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line,
                "%zu regression%s in %s .. %s (%d GPUs, %d nodes, %lld s buckets, %zu releases)\n",
                report.regressions.size(), report.regressions.size() == 1 ? "" : "s",
                FormatUtcMillis(static_cast<std::int64_t>(report.from * 1000)).c_str(),
                FormatUtcMillis(static_cast<std::int64_t>(report.to * 1000)).c_str(), report.gpus,
                report.nodes, static_cast<long long>(report.resolution_s), report.releases.size());
  out += line;
  for (const Regression& r : report.regressions) {
    out += "\n* " + r.summary + "\n";
    for (const MetricChange& m : r.evidence) {
      std::snprintf(line, sizeof line, "    %-40s %10.4g -> %-10.4g %s (%d)\n", m.metric.c_str(),
                    m.before, m.after, m.unit.c_str(), m.entities);
      out += line;
    }
    for (const Suspect& s : r.candidates) {
      bool named = false;
      for (const Suspect& n : r.suspects) named |= n.release == s.release;
      std::snprintf(line, sizeof line, "    %-9s %-28s %.2f  ", named ? "suspect" : "candidate",
                    s.release.c_str(), s.score);
      out += line + s.reason + "\n";
    }
  }
  return out;
}

}  // namespace gpucanary::analysis::correlate
