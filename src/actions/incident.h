#pragma once
// What the circuit breaker acts on: one failed canary, as plain values that
// need nothing from the judge or the daemon (the live canary manager fills
// them from the judge's Report and the release annotation). Also its JSON
// form, the body webhooks receive and the incident.json of a diagnostic
// bundle (docs/actions.md, "The incident").

#include <cstdint>
#include <string>
#include <vector>

#include "vocab/vocab.h"

namespace gpucanary::actions {

// The release under canary (docs/contracts.md §5).
struct Release {
  std::string id;       // "llama3-70b-2026-12-02.1"
  std::string service;  // "chat-api"; "" when the annotation has none
  // The annotation as received (a JSON object); "" or "{}" when unknown.
  // Its "previous" field names the stable release that traffic_shift
  // sends traffic back to.
  std::string annotation_json;
};

// One cause of the verdict (docs/contracts.md §6).
struct IncidentCause {
  vocab::CauseKind kind{};
  vocab::Scope scope{};           // release or node
  std::string node;               // the node it sits on; "": several (see its gpus)
  std::vector<std::string> gpus;  // "node-4/0", sorted
  std::string summary;            // one sentence an SRE can act on
};

struct Incident {
  Release release;
  std::string canary_id;  // the live canary
  // "" for the canary's fail; "node:<host>" for a node fault found while the
  // canary runs (its node-scoped actions run then, the release goes on).
  std::string part;
  vocab::Verdict verdict = vocab::Verdict::kFail;
  double decided_at = 0.0;  // Unix seconds of the sample that completed the decision
  std::vector<IncidentCause> causes;
  std::vector<std::string> canary_nodes;
  std::vector<std::string> baseline_nodes;

  // What idempotence is keyed on: the canary id, plus "#" and the part when
  // there is one ("r2#node:node-6").
  std::string Key() const { return part.empty() ? canary_id : canary_id + "#" + part; }
  // The distinct nodes of node-scoped causes, in first-seen order: what
  // isolate_node and `{node}` command templates act on. A cause without a
  // node contributes the hosts of its GPU keys ("node-6/3" -> "node-6").
  std::vector<std::string> NodeScopedNodes() const;
  // Whether any cause has this scope.
  bool HasScope(vocab::Scope scope) const;
  // The distinct cause kinds, in first-seen order.
  std::vector<vocab::CauseKind> CauseKinds() const;
  // The stable release to return traffic to: the annotation's "previous"
  // field; "" when absent or the annotation is not a JSON object.
  std::string PreviousRelease() const;
};

// The incident as one JSON object (docs/actions.md):
//   {"canary": ..., "verdict": "fail", "decided_at": 1764680034.0,
//    "release": {"id", "service", "annotation": {...}},
//    "causes": [{"kind", "scope", "node", "gpus", "summary"}],
//    "canary_nodes": [...], "baseline_nodes": [...]}
// An annotation that is not valid JSON is sent as a string.
std::string IncidentToJson(const Incident& incident, int indent = -1);

}  // namespace gpucanary::actions
