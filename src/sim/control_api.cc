// The live simulator's control API (docs/simulator.md, "Control API"): JSON
// over HTTP, what an orchestrator and gpucanary's circuit breaker drive.
//
//   GET    /state                 the fleet now (nodes, releases, traffic, faults)
//   GET    /targets               Prometheus file_sd JSON for every endpoint
//   GET    /truth                 ground truth so far, JSON lines
//   POST   /deploy                {"release": R, "nodes": [..] | "all"}
//   POST   /traffic               {"weights": {R: w, ..}} or {"even": true}
//   POST   /cordon, /uncordon     {"node": N}
//   POST   /faults                {"kind": K, "nodes": .., "gpus": "0-3", "params": {..}} -> 201
//   POST   /faults/clear          {"kind": K, "nodes": .., "gpus": ..}
//   DELETE /faults/{id}           -> 204
//
// Errors: 400 {"error": "..."} naming the field (bad JSON gives the byte
// offset), 404 for an unknown path or fault id, 405 with Allow.

#include <charconv>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/mutex.h"
#include "sim/live.h"

namespace gpucanary::sim {
namespace {

using Json = nlohmann::json;

void Reply(net::HttpResponse& r, int status, const Json& body) {
  r.status = status;
  r.content_type = "application/json";
  r.body = body.dump();
  r.body += '\n';
}

void Fail(net::HttpResponse& r, int status, const std::string& message) {
  Reply(r, status, Json{{"error", message}});
}

void MethodNotAllowed(net::HttpResponse& r, const char* allow) {
  r.headers.emplace_back("Allow", allow);
  Fail(r, 405, std::string("method not allowed; use ") + allow);
}

Result<Json> ParseBody(const std::string& body) {
  try {
    Json j = Json::parse(body);
    if (!j.is_object()) return Error(StatusCode::kInvalidArgument, "body: expected a JSON object");
    return j;
  } catch (const Json::parse_error& e) {
    return Error(StatusCode::kInvalidArgument,
                 "body: invalid JSON at byte " + std::to_string(e.byte) + ": " + e.what());
  }
}

Result<std::string> StringField(const Json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end()) return Error(StatusCode::kInvalidArgument, std::string(name) + ": missing");
  if (!it->is_string()) {
    return Error(StatusCode::kInvalidArgument, std::string(name) + ": expected a string");
  }
  return it->get<std::string>();
}

// "nodes": ["node-1", ...] or "all" or one name.
Result<std::vector<std::string>> NodesField(const Json& j) {
  auto it = j.find("nodes");
  if (it == j.end()) return Error(StatusCode::kInvalidArgument, "nodes: missing");
  if (it->is_string()) return std::vector<std::string>{it->get<std::string>()};
  if (!it->is_array()) {
    return Error(StatusCode::kInvalidArgument, "nodes: expected a list of hostnames or \"all\"");
  }
  std::vector<std::string> out;
  for (std::size_t i = 0; i < it->size(); ++i) {
    if (!(*it)[i].is_string()) {
      return Error(StatusCode::kInvalidArgument,
                   "nodes[" + std::to_string(i) + "]: expected a hostname");
    }
    out.push_back((*it)[i].get<std::string>());
  }
  return out;
}

Result<std::map<std::string, double>> NumberMap(const Json& j, const char* name) {
  std::map<std::string, double> out;
  auto it = j.find(name);
  if (it == j.end()) return out;
  if (!it->is_object()) {
    return Error(StatusCode::kInvalidArgument, std::string(name) + ": expected an object");
  }
  for (const auto& [key, value] : it->items()) {
    if (!value.is_number()) {
      return Error(StatusCode::kInvalidArgument,
                   std::string(name) + "." + key + ": expected a number");
    }
    out[key] = value.get<double>();
  }
  return out;
}

Result<FaultKind> KindField(const Json& j) {
  Result<std::string> name = StringField(j, "kind");
  if (!name) return Error(name.error());
  FaultKind kind;
  if (!FaultKindFromName(*name, &kind)) {
    return Error(StatusCode::kInvalidArgument, "kind: unknown fault '" + *name + "'");
  }
  return kind;
}

std::string GpusField(const Json& j) {
  auto it = j.find("gpus");
  return it != j.end() && it->is_string() ? it->get<std::string>() : "all";
}

Json StateJson(const Engine& engine, const std::vector<LiveSim::Endpoint>& endpoints,
               const std::string& host) {
  Json nodes = Json::array();
  for (std::size_t i = 0; i < engine.node_count(); ++i) {
    const Engine::NodeView v = engine.node_view(i);
    Json n;
    n["hostname"] = v.hostname;
    n["server"] = ServerKindName(v.server_kind);
    if (i < endpoints.size()) {
      n["dcgm"] = host + ":" + std::to_string(endpoints[i].dcgm_port);
      if (v.server_kind) {
        n["server_metrics"] = host + ":" + std::to_string(endpoints[i].server_port);
      }
    }
    n["release"] = v.release;
    n["next_release"] = v.next_release;
    n["cordoned"] = v.cordoned;
    n["restarting"] = v.restarting;
    n["serving"] = v.serving;
    n["arrival_rate"] = v.arrival_rate;
    n["speed"] = v.speed;
    if (v.server != nullptr) {
      n["tokens_per_s"] = v.server->tokens_per_second();
      n["running"] = v.server->num_running();
      n["waiting"] = v.server->num_waiting();
      n["p99_e2e_latency_s"] =
          HistogramQuantile(v.server->state().e2e_request_latency_seconds, 0.99);
    }
    Json gpus = Json::array();
    const SimNode& node = engine.fleet().nodes()[i];
    for (std::size_t g = 0; g < node.gpus.size(); ++g) {
      const GpuModel& m = node.gpus[g].model;
      gpus.push_back({{"gpu", g},
                      {"sm_clock_mhz", m.sm_clock_mhz()},
                      {"power_w", m.power_w()},
                      {"temp_c", m.temp_c()},
                      {"clock_event_reasons", m.clock_event_reasons()},
                      {"throughput", m.throughput()},
                      {"lost", static_cast<bool>(v.lost[g])}});
    }
    n["gpus"] = std::move(gpus);
    nodes.push_back(std::move(n));
  }
  Json faults = Json::array();
  for (const Engine::ActiveFault& a : engine.active_faults()) {
    faults.push_back({{"id", a.id},
                      {"kind", FaultKindName(a.kind)},
                      {"node", engine.fleet().nodes()[a.node].hostname},
                      {"gpus", a.gpus},
                      {"params", a.params},
                      {"source", a.source},
                      {"since", static_cast<double>(a.since_ms) / 1000.0}});
  }
  Json releases = Json::array();
  for (const auto& [name, spec] : engine.scenario().releases) releases.push_back(name);
  return Json{{"time", static_cast<double>(engine.now_ms()) / 1000.0},
              {"elapsed_s", engine.elapsed_s()},
              {"fleet_rate", engine.fleet_rate()},
              {"dropped_requests", engine.dropped_requests()},
              {"traffic_weights", engine.traffic_weights()},
              {"releases", std::move(releases)},
              {"nodes", std::move(nodes)},
              {"faults", std::move(faults)}};
}

// The operations that change the fleet; `body` is the parsed request.
Result<Json> RunPost(Engine& engine, const std::string& path, const Json& body, int* status) {
  if (path == "/deploy") {
    Result<std::string> release = StringField(body, "release");
    if (!release) return Error(release.error());
    Result<std::vector<std::string>> nodes = NodesField(body);
    if (!nodes) return Error(nodes.error());
    GC_RETURN_IF_ERROR(engine.Deploy(*release, *nodes));
    return Json{{"deployed", *release}, {"nodes", *nodes}};
  }
  if (path == "/traffic") {
    if (body.value("even", false)) {
      GC_RETURN_IF_ERROR(engine.SetTraffic({}));
      return Json{{"weights", Json::object()}};
    }
    if (!body.contains("weights")) {
      return Error(StatusCode::kInvalidArgument, "weights: missing (or give \"even\": true)");
    }
    Result<std::map<std::string, double>> weights = NumberMap(body, "weights");
    if (!weights) return Error(weights.error());
    GC_RETURN_IF_ERROR(engine.SetTraffic(*weights));
    return Json{{"weights", *weights}};
  }
  if (path == "/cordon" || path == "/uncordon") {
    Result<std::string> node = StringField(body, "node");
    if (!node) return Error(node.error());
    GC_RETURN_IF_ERROR(engine.SetCordon(*node, path == "/cordon"));
    return Json{{"node", *node}, {"cordoned", path == "/cordon"}};
  }
  if (path == "/faults") {
    Result<FaultKind> kind = KindField(body);
    if (!kind) return Error(kind.error());
    Result<std::vector<std::string>> nodes = NodesField(body);
    if (!nodes) return Error(nodes.error());
    Result<std::map<std::string, double>> params = NumberMap(body, "params");
    if (!params) return Error(params.error());
    Result<std::vector<int>> ids = engine.InjectFault(*kind, *nodes, GpusField(body), *params);
    if (!ids) return Error(ids.error());
    *status = 201;
    return Json{{"ids", *ids}};
  }
  if (path == "/faults/clear") {
    Result<FaultKind> kind = KindField(body);
    if (!kind) return Error(kind.error());
    Result<std::vector<std::string>> nodes = NodesField(body);
    if (!nodes) return Error(nodes.error());
    Result<int> cleared = engine.ClearFaults(*kind, *nodes, GpusField(body));
    if (!cleared) return Error(cleared.error());
    return Json{{"cleared", *cleared}};
  }
  *status = 404;
  return Error(StatusCode::kNotFound, "no such endpoint: POST " + path);
}

bool IsPostPath(const std::string& path) {
  return path == "/deploy" || path == "/traffic" || path == "/cordon" || path == "/uncordon" ||
         path == "/faults" || path == "/faults/clear";
}

}  // namespace

void LiveSim::HandleControl(const net::HttpRequest& request, net::HttpResponse& response) {
  const std::string& path = request.path;
  const bool get = request.method == "GET" || request.method == "HEAD";
  if (path == "/state" || path == "/targets" || path == "/truth" || path == "/healthz") {
    if (!get) return MethodNotAllowed(response, "GET, HEAD");
    if (path == "/healthz") {
      response.content_type = "text/plain; charset=utf-8";
      response.body = "ok\n";
      return;
    }
    if (path == "/targets") {
      response.content_type = "application/json";
      response.body = TargetsJson();
      return;
    }
    MutexLock lock(mu_);
    if (path == "/state") return Reply(response, 200, StateJson(engine_, endpoints_, host()));
    std::string lines;
    for (const TruthRecord& r : engine_.Truth()) lines += TruthRecordJson(r) + "\n";
    response.content_type = "application/x-ndjson";
    response.body = std::move(lines);
    return;
  }
  if (IsPostPath(path)) {
    if (request.method != "POST") return MethodNotAllowed(response, "POST");
    Result<Json> body = ParseBody(request.body);
    if (!body) return Fail(response, 400, body.error().message());
    int status = 200;
    MutexLock lock(mu_);
    Result<Json> out = RunPost(engine_, path, *body, &status);
    if (!out) return Fail(response, status == 404 ? 404 : 400, out.error().message());
    return Reply(response, status, *out);
  }
  constexpr std::string_view kFaultPrefix = "/faults/";
  if (path.starts_with(kFaultPrefix)) {
    if (request.method != "DELETE") return MethodNotAllowed(response, "DELETE");
    const std::string_view id_text = std::string_view(path).substr(kFaultPrefix.size());
    int id = 0;
    const auto [end, ec] = std::from_chars(id_text.data(), id_text.data() + id_text.size(), id);
    if (ec != std::errc() || end != id_text.data() + id_text.size()) {
      return Fail(response, 400,
                  "fault id: expected an integer, got '" + std::string(id_text) + "'");
    }
    MutexLock lock(mu_);
    const Status s = engine_.ClearFault(id);
    if (!s.ok()) return Fail(response, 404, s.message());
    response.status = 204;
    return;
  }
  Fail(response, 404, "no such endpoint: " + request.method + " " + path);
}

}  // namespace gpucanary::sim
