// The ground-truth and release-log files of an offline simulation
// (docs/simulator.md, "Ground truth"). Declared in sim/engine.h.

#include <cerrno>
#include <fstream>
#include <nlohmann/json.hpp>

#include "sim/engine.h"
#include "vocab/vocab.h"

namespace gpucanary::sim {
namespace {

double Seconds(std::int64_t ms) { return static_cast<double>(ms) / 1000.0; }

std::string_view TypeName(TruthRecord::Type type) {
  switch (type) {
    case TruthRecord::kFault:
      return "fault";
    case TruthRecord::kDeploy:
      return "deploy";
    case TruthRecord::kTraffic:
      return "traffic";
    case TruthRecord::kCordon:
      return "cordon";
    case TruthRecord::kLoad:
      return "load";
  }
  return "fault";
}

nlohmann::ordered_json ToJson(const TruthRecord& r) {
  nlohmann::ordered_json j;
  j["type"] = TypeName(r.type);
  switch (r.type) {
    case TruthRecord::kFault: {
      j["kind"] = vocab::Name(r.kind);
      j["scope"] = vocab::Name(r.scope);
      j["release"] = r.release;
      j["source"] = r.source;
      j["node"] = r.node;
      nlohmann::ordered_json gpus = nlohmann::ordered_json::array();
      for (int g : r.gpus) gpus.push_back(r.node + "/" + std::to_string(g));
      j["gpus"] = std::move(gpus);
      j["params"] = nlohmann::ordered_json::object();
      for (const auto& [k, v] : r.params) j["params"][k] = v;
      if (r.fault_id > 0) j["fault_id"] = r.fault_id;
      break;
    }
    case TruthRecord::kDeploy:
      j["release"] = r.release;
      j["previous"] = r.previous;
      j["node"] = r.node;
      break;
    case TruthRecord::kTraffic:
      j["weights"] = nlohmann::ordered_json::object();
      for (const auto& [k, v] : r.weights) j["weights"][k] = v;
      break;
    case TruthRecord::kCordon:
      j["node"] = r.node;
      break;
    case TruthRecord::kLoad:
      j["rps"] = r.rps;
      break;
  }
  j["since"] = Seconds(r.since_ms);
  j["until"] = r.until_ms ? nlohmann::ordered_json(Seconds(*r.until_ms)) : nullptr;
  return j;
}

template <typename WriteLines>
Status WriteFile(const std::string& path, WriteLines&& write_lines) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Error(StatusCode::kIoError, path + ": " + ErrnoMessage(errno));
  write_lines(out);
  out.flush();
  if (!out) return Error(StatusCode::kIoError, path + ": write failed: " + ErrnoMessage(errno));
  return Status::Ok();
}

}  // namespace

std::string TruthRecordJson(const TruthRecord& record) { return ToJson(record).dump(); }

Status WriteTruthJsonl(const std::vector<TruthRecord>& records, const std::string& path) {
  return WriteFile(path, [&](std::ofstream& out) {
    for (const TruthRecord& r : records) out << ToJson(r).dump() << '\n';
  });
}

Status WriteReleasesJsonl(const std::vector<ReleaseAnnotation>& annotations,
                          const std::string& path) {
  return WriteFile(path, [&](std::ofstream& out) {
    for (const ReleaseAnnotation& a : annotations) {
      nlohmann::ordered_json j;
      j["id"] = a.id;
      j["service"] = "sim";
      j["version"] = a.id;
      j["model"] = a.model;
      if (!a.framework.empty()) j["framework"] = a.framework;
      j["environment"] = "sim";
      j["started_at"] = Seconds(a.started_at_ms);
      j["targets"] = a.targets;
      if (!a.previous.empty()) j["previous"] = a.previous;
      out << j.dump() << '\n';
    }
  });
}

}  // namespace gpucanary::sim
