#include "analysis/report/report_json.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

namespace gpucanary::analysis {
namespace {

using Json = nlohmann::ordered_json;

// JSON numbers are finite (RFC 8259 §6): NaN and +-inf become null.
Json Number(double x) { return std::isfinite(x) ? Json(x) : Json(nullptr); }
Json Number(const std::optional<double>& x) { return x ? Number(*x) : Json(nullptr); }

Json Strings(const std::vector<std::string>& items) {
  Json out = Json::array();
  for (const std::string& s : items) out.push_back(s);
  return out;
}

Json EvidenceJson(const Evidence& e) {
  Json j;
  j["metric"] = e.metric;
  j["baseline"] = Number(e.baseline);
  j["canary"] = Number(e.canary);
  j["unit"] = e.unit;
  return j;
}

Json CauseJson(const Cause& c) {
  Json j;
  // DESIGN.md §6, in its order.
  j["kind"] = c.kind;
  j["scope"] = c.scope;
  j["gpus"] = Strings(c.gpus);
  j["since"] = Number(c.since);
  j["summary"] = c.summary;
  Json evidence = Json::array();
  for (const Evidence& e : c.evidence) evidence.push_back(EvidenceJson(e));
  j["evidence"] = std::move(evidence);
  // Extras.
  j["nodes"] = Strings(c.nodes);
  j["decided_at"] = Number(c.decided_at);
  j["failing"] = c.failing;
  j["origin"] = c.origin;
  return j;
}

Json MetricJson(const MetricResult& m) {
  Json j;
  // DESIGN.md §6, in its order.
  j["name"] = m.name;
  j["baseline"] = Number(m.baseline);
  j["canary"] = Number(m.canary);
  j["change"] = Number(m.change);
  j["interval"] = Json::array({Number(m.interval_lo), Number(m.interval_hi)});
  j["result"] = m.result;
  // Extras.
  j["kind"] = m.kind;
  j["better"] = m.better;
  j["margin"] = Number(m.margin);
  j["critical"] = m.critical;
  j["detectable_effect"] = Number(m.detectable_effect);
  j["blocks"] = m.blocks;
  j["decided_at"] = Number(m.decided_at);
  return j;
}

}  // namespace

std::string ReportToJson(const Report& report, int indent) {
  Json j;
  // DESIGN.md §6, in its order.
  j["verdict"] = VerdictName(report.verdict);
  j["decided_at"] = Number(report.decided_at);
  j["score"] = Number(report.score);
  Json causes = Json::array();
  for (const Cause& c : report.causes) causes.push_back(CauseJson(c));
  j["causes"] = std::move(causes);
  Json metrics = Json::array();
  for (const MetricResult& m : report.metrics) metrics.push_back(MetricJson(m));
  j["metrics"] = std::move(metrics);
  // Extras.
  j["release_start"] = Number(report.release_start);
  j["first_tick"] = Number(report.first_tick);
  j["last_tick"] = Number(report.last_tick);
  j["canary_gpus"] = report.canary_gpus;
  j["baseline_gpus"] = report.baseline_gpus;
  j["notes"] = Strings(report.notes);
  // Host names and summaries come from input files: never throw on bad UTF-8.
  return j.dump(indent < 0 ? -1 : indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace gpucanary::analysis
