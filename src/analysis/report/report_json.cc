#include "analysis/report/report_json.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "vocab/vocab.h"

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
  // docs/contracts.md §6, in its order.
  j["kind"] = vocab::Name(c.kind);
  j["scope"] = vocab::Name(c.scope);
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
  // docs/contracts.md §6, in its order.
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

// Reads a report back; the first value of the wrong type stops it and names
// its key. Absent keys keep their defaults.
class Reader {
 public:
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }

  // The value at `key` of `object`, or null when absent (or after an error).
  const Json* Find(const Json& object, const std::string& where, const char* key) {
    if (!ok() || !object.is_object()) return nullptr;
    auto it = object.find(key);
    if (it == object.end()) return nullptr;
    where_ = where + key;
    return &*it;
  }
  // `object` is an object, or an error at `where`.
  bool IsObject(const Json& object, const std::string& where) {
    if (object.is_object()) return true;
    where_ = where;
    Fail("an object");
    return false;
  }
  void Number(const Json& object, const std::string& where, const char* key, double& out) {
    if (const Json* v = Find(object, where, key)) Value(*v, out);
  }
  // A number or null (NaN) at `where`.
  void Value(const Json& v, double& out) {
    if (v.is_null()) {
      out = std::numeric_limits<double>::quiet_NaN();
    } else if (v.is_number()) {
      out = v.get<double>();
    } else {
      Fail("a number or null");
    }
  }
  void At(std::string where) { where_ = std::move(where); }
  void Number(const Json& object, const std::string& where, const char* key,
              std::optional<double>& out) {
    if (const Json* v = Find(object, where, key)) {
      if (v->is_null()) {
        out.reset();
      } else if (v->is_number()) {
        out = v->get<double>();
      } else {
        Fail("a number or null");
      }
    }
  }
  template <typename Int>
  void Integer(const Json& object, const std::string& where, const char* key, Int& out) {
    if (const Json* v = Find(object, where, key)) {
      if (v->is_number_integer()) {
        out = v->get<Int>();
      } else {
        Fail("an integer");
      }
    }
  }
  void Bool(const Json& object, const std::string& where, const char* key, bool& out) {
    if (const Json* v = Find(object, where, key)) {
      if (v->is_boolean()) {
        out = v->get<bool>();
      } else {
        Fail("true or false");
      }
    }
  }
  void String(const Json& object, const std::string& where, const char* key, std::string& out) {
    if (const Json* v = Find(object, where, key)) {
      if (v->is_string()) {
        out = v->get<std::string>();
      } else {
        Fail("a string");
      }
    }
  }
  // A word of the vocabulary (vocab/vocab.h) at `key`, a string. Returns
  // false for a string that is no such word (out untouched, no error).
  template <typename E>
  bool Word(const Json& object, const std::string& where, const char* key, E& out) {
    if (Find(object, where, key) == nullptr) return true;
    std::string text;
    String(object, where, key, text);
    if (!ok()) return true;
    const std::optional<E> word = vocab::Parse<E>(text);
    if (word) out = *word;
    return word.has_value();
  }
  void Strings(const Json& object, const std::string& where, const char* key,
               std::vector<std::string>& out) {
    const Json* v = Array(object, where, key);
    if (v == nullptr) return;
    out.clear();
    for (const Json& item : *v) {
      if (!item.is_string()) return Fail("an array of strings");
      out.push_back(item.get<std::string>());
    }
  }
  // The array at `key`, or null when absent or not an array (an error).
  const Json* Array(const Json& object, const std::string& where, const char* key) {
    const Json* v = Find(object, where, key);
    if (v == nullptr) return nullptr;
    if (v->is_array()) return v;
    Fail("an array");
    return nullptr;
  }
  void Fail(const char* expected) {
    if (ok()) error_ = where_ + ": expected " + expected;
  }

 private:
  std::string where_;
  std::string error_;
};

// nullopt for a cause whose kind or scope this version does not know (a
// newer version's report): it is left out.
std::optional<Cause> CauseFrom(Reader& in, const Json& j, const std::string& at) {
  Cause c;
  if (!in.IsObject(j, at.substr(0, at.size() - 1))) return c;
  const bool known_kind = in.Word(j, at, "kind", c.kind);
  const bool known_scope = in.Word(j, at, "scope", c.scope);
  in.Strings(j, at, "gpus", c.gpus);
  in.Number(j, at, "since", c.since);
  in.String(j, at, "summary", c.summary);
  if (const Json* evidence = in.Array(j, at, "evidence")) {
    for (std::size_t i = 0; i < evidence->size(); ++i) {
      const std::string e_at = at + "evidence[" + std::to_string(i) + "].";
      Evidence e;
      if (!in.IsObject((*evidence)[i], e_at.substr(0, e_at.size() - 1))) break;
      in.String((*evidence)[i], e_at, "metric", e.metric);
      in.Number((*evidence)[i], e_at, "baseline", e.baseline);
      in.Number((*evidence)[i], e_at, "canary", e.canary);
      in.String((*evidence)[i], e_at, "unit", e.unit);
      c.evidence.push_back(std::move(e));
    }
  }
  in.Strings(j, at, "nodes", c.nodes);
  in.Number(j, at, "decided_at", c.decided_at);
  in.Bool(j, at, "failing", c.failing);
  in.String(j, at, "origin", c.origin);
  if (!known_kind || !known_scope) return std::nullopt;
  return c;
}

MetricResult MetricFrom(Reader& in, const Json& j, const std::string& at) {
  MetricResult m;
  if (!in.IsObject(j, at.substr(0, at.size() - 1))) return m;
  in.String(j, at, "name", m.name);
  in.Number(j, at, "baseline", m.baseline);
  in.Number(j, at, "canary", m.canary);
  in.Number(j, at, "change", m.change);
  if (const Json* interval = in.Array(j, at, "interval")) {
    if (interval->size() != 2) {
      in.Fail("[lo, hi]");
    } else {
      in.At(at + "interval[0]");
      in.Value((*interval)[0], m.interval_lo);
      in.At(at + "interval[1]");
      in.Value((*interval)[1], m.interval_hi);
    }
  }
  in.String(j, at, "result", m.result);
  in.String(j, at, "kind", m.kind);
  in.String(j, at, "better", m.better);
  in.Number(j, at, "margin", m.margin);
  in.Bool(j, at, "critical", m.critical);
  in.Number(j, at, "detectable_effect", m.detectable_effect);
  in.Integer(j, at, "blocks", m.blocks);
  in.Number(j, at, "decided_at", m.decided_at);
  return m;
}

}  // namespace

Result<Report> ReportFromJson(std::string_view json) {
  const Json j = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return Error(StatusCode::kParseError, "a report is a JSON object");
  Reader in;
  Report r;
  std::string verdict(vocab::Name(Verdict::kInconclusive));
  in.String(j, "", "verdict", verdict);
  if (const std::optional<Verdict> v = vocab::Parse<Verdict>(verdict)) {
    r.verdict = *v;
  } else if (in.ok()) {
    return Error(StatusCode::kParseError, "verdict: expected pass, fail or inconclusive");
  }
  in.Number(j, "", "decided_at", r.decided_at);
  in.Number(j, "", "score", r.score);
  if (const Json* causes = in.Array(j, "", "causes")) {
    for (std::size_t i = 0; i < causes->size(); ++i) {
      std::optional<Cause> c = CauseFrom(in, (*causes)[i], "causes[" + std::to_string(i) + "].");
      if (c) r.causes.push_back(std::move(*c));
    }
  }
  if (const Json* metrics = in.Array(j, "", "metrics")) {
    for (std::size_t i = 0; i < metrics->size(); ++i) {
      r.metrics.push_back(MetricFrom(in, (*metrics)[i], "metrics[" + std::to_string(i) + "]."));
    }
  }
  in.Number(j, "", "release_start", r.release_start);
  in.Number(j, "", "first_tick", r.first_tick);
  in.Number(j, "", "last_tick", r.last_tick);
  in.Integer(j, "", "canary_gpus", r.canary_gpus);
  in.Integer(j, "", "baseline_gpus", r.baseline_gpus);
  in.Bool(j, "", "service_metrics_seen", r.service_metrics_seen);  // absent (older reports): true
  in.Strings(j, "", "notes", r.notes);
  if (!in.ok()) return Error(StatusCode::kParseError, in.error());
  return r;
}

std::string ReportToJson(const Report& report, int indent) {
  Json j;
  // docs/contracts.md §6, in its order.
  j["verdict"] = vocab::Name(report.verdict);
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
  j["service_metrics_seen"] = report.service_metrics_seen;
  j["notes"] = Strings(report.notes);
  // Host names and summaries come from input files: never throw on bad UTF-8.
  return j.dump(indent < 0 ? -1 : indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace gpucanary::analysis
