#include "actions/incident.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace gpucanary::actions {
namespace {

using Json = nlohmann::json;

void AddUnique(std::vector<std::string>& out, const std::string& value) {
  if (!value.empty() && std::find(out.begin(), out.end(), value) == out.end()) {
    out.push_back(value);
  }
}

}  // namespace

std::vector<std::string> Incident::NodeScopedNodes() const {
  std::vector<std::string> out;
  for (const IncidentCause& c : causes) {
    if (c.scope != vocab::Scope::kNode) continue;
    if (!c.node.empty()) {
      AddUnique(out, c.node);
      continue;
    }
    // A cause over several nodes: the hosts of its GPU keys ("node-6/3").
    for (const std::string& gpu : c.gpus) AddUnique(out, gpu.substr(0, gpu.rfind('/')));
  }
  return out;
}

bool Incident::HasScope(vocab::Scope scope) const {
  return std::any_of(causes.begin(), causes.end(),
                     [&](const IncidentCause& c) { return c.scope == scope; });
}

std::vector<vocab::CauseKind> Incident::CauseKinds() const {
  std::vector<vocab::CauseKind> out;
  for (const IncidentCause& c : causes) {
    if (std::find(out.begin(), out.end(), c.kind) == out.end()) out.push_back(c.kind);
  }
  return out;
}

std::string Incident::PreviousRelease() const {
  const Json annotation = Json::parse(release.annotation_json, nullptr, /*allow_exceptions=*/false);
  if (!annotation.is_object()) return "";
  auto it = annotation.find("previous");
  if (it == annotation.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

std::string IncidentToJson(const Incident& incident, int indent) {
  Json annotation = Json::object();
  if (!incident.release.annotation_json.empty()) {
    annotation = Json::parse(incident.release.annotation_json, nullptr, false);
    // Kept as text when it is not JSON: the receiver still sees what came in.
    if (annotation.is_discarded()) annotation = incident.release.annotation_json;
  }
  Json causes = Json::array();
  for (const IncidentCause& c : incident.causes) {
    causes.push_back({{"kind", vocab::Name(c.kind)},
                      {"scope", vocab::Name(c.scope)},
                      {"node", c.node},
                      {"gpus", c.gpus},
                      {"summary", c.summary}});
  }
  const Json out = {
      {"canary", incident.canary_id},
      {"verdict", vocab::Name(incident.verdict)},
      {"decided_at", incident.decided_at},
      {"release",
       {{"id", incident.release.id},
        {"service", incident.release.service},
        {"annotation", annotation}}},
      {"causes", causes},
      {"canary_nodes", incident.canary_nodes},
      {"baseline_nodes", incident.baseline_nodes},
  };
  // Replace invalid UTF-8 rather than throw: summaries and names come from
  // telemetry labels.
  return out.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace gpucanary::actions
