#include "sim/engine.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <utility>

#include "dcgm/exposition.h"

namespace gpucanary::sim {
namespace {

constexpr double kMinSpeed = 0.01;
constexpr double kUnloadedFbMib = 512;  // no model loaded: the CUDA context only
constexpr int kLostXid = 79;

std::uint64_t Mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

std::int64_t SecondsToMs(double s) { return static_cast<std::int64_t>(std::llround(s * 1000)); }

}  // namespace

Engine::Engine(const Scenario& scenario, const EngineOptions& options)
    : scenario_(scenario),
      options_(options),
      fleet_(scenario.seed),
      traffic_(scenario.traffic, Mix(scenario.seed ^ 0x7261666669637321ULL)),
      seed_(scenario.seed) {
  for (const NodeGroup& group : scenario_.fleet) {
    for (const std::string& host : group.hostnames) {
      fleet_.AddNode(host, *group.profile, group.gpus_per_node, group.driver);
      NodeState n;
      n.server_kind = group.server;
      n.lowercase_hostname = group.lowercase_hostname;
      n.lost_at_ms.assign(static_cast<std::size_t>(group.gpus_per_node), -1);
      n.gpu_faults.resize(static_cast<std::size_t>(group.gpus_per_node));
      nodes_.push_back(std::move(n));
    }
  }
  fleet_.set_now_ms(options_.start_ms);
}

std::vector<vocab::Server> Engine::servers() const {
  std::vector<vocab::Server> out;
  for (const NodeState& n : nodes_) {
    if (n.server_kind && std::find(out.begin(), out.end(), *n.server_kind) == out.end()) {
      out.push_back(*n.server_kind);
    }
  }
  return out;
}

double Engine::elapsed_s() const {
  return static_cast<double>(now_ms() - options_.start_ms) / 1000.0;
}

void Engine::Step() {
  ApplyDueEvents();
  AdvanceDeploys();
  RouteTraffic(traffic_.Step(elapsed_s(), kStepSeconds));
  StepServers();
  ComputeFaults();
  StepGpus();
}

void Engine::ApplyDueEvents() {
  const std::int64_t elapsed_ms = now_ms() - options_.start_ms;
  while (next_event_ < scenario_.events.size() &&
         SecondsToMs(scenario_.events[next_event_].at_s) <= elapsed_ms) {
    const Status s = ApplyEvent(scenario_.events[next_event_]);
    // ParseScenario validated every name and selector an event uses.
    GC_CHECK(s.ok(), s.message().c_str());
    ++next_event_;
  }
}

Status Engine::ApplyEvent(const ScenarioEvent& e) {
  switch (e.kind) {
    case ScenarioEvent::kDeploy:
      return Deploy(e.release, e.nodes);
    case ScenarioEvent::kFault: {
      Result<std::vector<int>> ids =
          InjectFault(e.fault, e.nodes, e.gpus, e.params, "scenario", e.scope);
      return ids ? Status::Ok() : Status(ids.error());
    }
    case ScenarioEvent::kClearFault: {
      Result<int> n = ClearFaults(e.fault, e.nodes, e.gpus);
      return n ? Status::Ok() : Status(n.error());
    }
    case ScenarioEvent::kTraffic:
      return SetTraffic(e.weights);
    case ScenarioEvent::kCordon:
      for (const std::string& node : e.nodes) GC_RETURN_IF_ERROR(SetCordon(node, true));
      return Status::Ok();
    case ScenarioEvent::kRps:
      return SetFleetRate(e.rps);
  }
  return Status::Ok();
}

Result<std::vector<std::size_t>> Engine::ResolveNodes(const std::vector<std::string>& nodes) const {
  std::vector<std::size_t> out;
  for (const std::string& name : nodes) {
    if (name == "all") {
      for (std::size_t i = 0; i < nodes_.size(); ++i) out.push_back(i);
      continue;
    }
    std::optional<std::size_t> i = FindNode(name);
    if (!i) return Error(StatusCode::kInvalidArgument, "unknown node '" + name + "'");
    out.push_back(*i);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  if (out.empty()) return Error(StatusCode::kInvalidArgument, "no nodes given");
  return out;
}

std::optional<std::size_t> Engine::FindNode(const std::string& hostname) const {
  const std::vector<SimNode>& all = fleet_.nodes();
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all[i].hostname == hostname) return i;
  }
  return std::nullopt;
}

Status Engine::Deploy(const std::string& release, const std::vector<std::string>& nodes) {
  if (!scenario_.releases.contains(release)) {
    return Error(StatusCode::kInvalidArgument, "unknown release '" + release + "'");
  }
  Result<std::vector<std::size_t>> targets = ResolveNodes(nodes);
  if (!targets) return Error(targets.error());
  const bool announced = std::any_of(annotations_.begin(), annotations_.end(),
                                     [&](const ReleaseAnnotation& a) { return a.id == release; });
  if (!announced) {
    ReleaseAnnotation a;
    a.id = release;
    a.started_at_ms = now_ms();
    for (std::size_t i : *targets) a.targets.push_back(fleet_.nodes()[i].hostname);
    a.previous = nodes_[targets->front()].release;
    a.model = options_.serving.model_name;
    if (const ServerKind& kind = nodes_[targets->front()].server_kind) {
      a.framework = std::string(ServerJob(*kind));
    }
    annotations_.push_back(std::move(a));
  }
  // A rolling update: nodes that run something restart one after another;
  // a node with nothing loaded takes the release at once.
  int rank = 0;
  for (std::size_t i : *targets) {
    NodeState& n = nodes_[i];
    const bool same =
        n.pending_release.empty() ? n.release == release : n.pending_release == release;
    if (same) continue;
    n.pending_release = release;
    if (n.release.empty()) {
      n.restart_at_ms = now_ms();
      n.serving_at_ms = now_ms();
    } else {
      n.restart_at_ms = now_ms() + SecondsToMs(rank * options_.restart_seconds);
      n.serving_at_ms = n.restart_at_ms + SecondsToMs(options_.restart_seconds);
      ++rank;
    }
  }
  return Status::Ok();
}

void Engine::AdvanceDeploys() {
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    NodeState& n = nodes_[i];
    if (n.pending_release.empty()) continue;
    if (now_ms() >= n.restart_at_ms && n.server) n.server.reset();  // the old server goes down
    if (now_ms() < n.serving_at_ms) continue;
    const std::string old = n.release;
    n.release = std::exchange(n.pending_release, std::string());
    ++n.restarts;
    const std::string& host = fleet_.nodes()[i].hostname;
    n.server = std::make_unique<ServingNode>(
        options_.serving, host,
        Mix(seed_ ^ std::hash<std::string>{}(host) ^ static_cast<std::uint64_t>(n.restarts)),
        n.server_kind);
    n.brake_latched = false;
    CloseOpenTruth(
        [&](const TruthRecord& r) { return r.type == TruthRecord::kDeploy && r.node == host; });
    TruthRecord deploy;
    deploy.type = TruthRecord::kDeploy;
    deploy.since_ms = now_ms();
    deploy.release = n.release;
    deploy.node = host;
    deploy.previous = old;
    OpenTruth(std::move(deploy));
    UpdateReleaseTruth(i, old, n.release);
  }
}

bool Engine::Serving(const NodeState& n) const {
  if (!n.server || n.cordoned) return false;
  return std::none_of(n.lost_at_ms.begin(), n.lost_at_ms.end(),
                      [](std::int64_t t) { return t >= 0; });
}

Status Engine::SetTraffic(const std::map<std::string, double>& weights) {
  for (const auto& [release, w] : weights) {
    if (!scenario_.releases.contains(release)) {
      return Error(StatusCode::kInvalidArgument, "unknown release '" + release + "'");
    }
    if (!(w >= 0) || !std::isfinite(w)) {
      return Error(StatusCode::kInvalidArgument, "weight of '" + release + "' must be >= 0");
    }
  }
  weights_ = weights;
  CloseOpenTruth([](const TruthRecord& r) { return r.type == TruthRecord::kTraffic; });
  TruthRecord r;
  r.type = TruthRecord::kTraffic;
  r.since_ms = now_ms();
  r.weights = weights;
  OpenTruth(std::move(r));
  return Status::Ok();
}

Status Engine::SetFleetRate(double rps) {
  if (!(rps >= 0) || !std::isfinite(rps)) {
    return Error(StatusCode::kInvalidArgument, "rps must be a finite rate >= 0");
  }
  traffic_.set_rps(rps);
  CloseOpenTruth([](const TruthRecord& r) { return r.type == TruthRecord::kLoad; });
  TruthRecord r;
  r.type = TruthRecord::kLoad;
  r.since_ms = now_ms();
  r.rps = rps;
  OpenTruth(std::move(r));
  return Status::Ok();
}

Status Engine::SetCordon(const std::string& node, bool cordoned) {
  std::optional<std::size_t> i = FindNode(node);
  if (!i) return Error(StatusCode::kInvalidArgument, "unknown node '" + node + "'");
  NodeState& n = nodes_[*i];
  if (n.cordoned == cordoned) return Status::Ok();
  n.cordoned = cordoned;
  if (cordoned) {
    TruthRecord r;
    r.type = TruthRecord::kCordon;
    r.since_ms = now_ms();
    r.node = node;
    OpenTruth(std::move(r));
  } else {
    CloseOpenTruth(
        [&](const TruthRecord& r) { return r.type == TruthRecord::kCordon && r.node == node; });
  }
  return Status::Ok();
}

void Engine::RouteTraffic(double rate) {
  std::map<std::string, std::vector<std::size_t>> serving;  // release -> nodes
  std::size_t total_serving = 0;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    nodes_[i].arrival_rate = 0;
    if (Serving(nodes_[i])) {
      serving[nodes_[i].release].push_back(i);
      ++total_serving;
    }
  }
  double routed = 0;
  if (weights_.empty()) {
    for (auto& [release, list] : serving) {
      for (std::size_t i : list) nodes_[i].arrival_rate = rate / static_cast<double>(total_serving);
    }
    routed = total_serving > 0 ? rate : 0;
  } else {
    double total_w = 0;
    for (const auto& [release, w] : weights_) {
      if (serving.contains(release)) total_w += w;
    }
    if (total_w > 0) {
      for (const auto& [release, w] : weights_) {
        auto it = serving.find(release);
        if (it == serving.end()) continue;
        const double share = rate * w / total_w / static_cast<double>(it->second.size());
        for (std::size_t i : it->second) nodes_[i].arrival_rate = share;
      }
      routed = rate;
    }
  }
  // Requests with nowhere to go fail at the load balancer.
  dropped_credit_ += (rate - routed) * kStepSeconds;
  if (dropped_credit_ >= 1) {
    const double whole = std::floor(dropped_credit_);
    dropped_ += static_cast<std::uint64_t>(whole);
    dropped_credit_ -= whole;
  }
}

void Engine::StepServers() {
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    NodeState& n = nodes_[i];
    if (!n.server) {
      n.load = 0;
      continue;
    }
    // Tensor parallelism: every iteration waits for the slowest GPU. An idle
    // GPU reports no throughput but would run at full speed once work comes.
    double speed = 1;
    const SimNode& node = fleet_.nodes()[i];
    for (std::size_t g = 0; g < node.gpus.size(); ++g) {
      const double t = node.gpus[g].model.throughput();
      speed = std::min(speed, t > 0 ? t : 1.0);
    }
    const ReleaseSpec& spec = scenario_.releases.at(n.release);
    n.speed = std::max(kMinSpeed, speed / std::max(spec.slowdown, 1e-3));
    n.server->Step(kStepSeconds, Serving(n) ? n.arrival_rate : 0, n.speed);
    n.load = n.server->gpu_load();
  }
}

void Engine::StepGpus() {
  const SimNode* first = fleet_.nodes().data();
  fleet_.Step(
      [this, first](const SimNode& node, int gpu, std::int64_t, Workload& work, Faults& faults) {
        const auto i = static_cast<std::size_t>(&node - first);
        const NodeState& n = nodes_[i];
        if (n.server) {
          const ReleaseSpec& spec = scenario_.releases.at(n.release);
          work = spec.workload;
          work.dynamic_power_w *= spec.power_spikiness;
          work.load = n.load;
        } else {
          work.load = 0;
          work.fb_used_mib = kUnloadedFbMib;
        }
        faults = n.gpu_faults[static_cast<std::size_t>(gpu)];
      });
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    NodeState& n = nodes_[i];
    const SimNode& node = fleet_.nodes()[i];
    for (std::size_t g = 0; g < n.gpu_faults.size(); ++g) {
      if (n.gpu_faults[g].xid != kLostXid || n.lost_at_ms[g] >= 0) continue;
      const dcgm::Readings r = node.gpus[g].model.Read();
      if (r.Get(dcgm::ExporterField::kXidErrors).value_or(0) == kLostXid)
        n.lost_at_ms[g] = now_ms();
    }
  }
}

void Engine::OpenTruth(TruthRecord record) { truth_.push_back(std::move(record)); }

void Engine::CloseTruth(std::size_t index) { truth_[index].until_ms = now_ms(); }

std::vector<TruthRecord> Engine::Truth() const {
  std::vector<TruthRecord> out = truth_;
  std::stable_sort(out.begin(), out.end(), [](const TruthRecord& a, const TruthRecord& b) {
    return a.since_ms < b.since_ms;
  });
  return out;
}

Engine::NodeView Engine::node_view(std::size_t index) const {
  const NodeState& n = nodes_.at(index);
  NodeView v;
  v.hostname = fleet_.nodes()[index].hostname;
  v.release = n.release;
  v.next_release = n.pending_release;
  v.cordoned = n.cordoned;
  v.restarting = !n.pending_release.empty() && now_ms() >= n.restart_at_ms;
  v.serving = Serving(n);
  v.arrival_rate = n.arrival_rate;
  v.speed = n.speed;
  v.server = server(index);
  v.server_kind = n.server_kind;
  v.lost.reserve(n.lost_at_ms.size());
  for (std::int64_t t : n.lost_at_ms) v.lost.push_back(t >= 0);
  return v;
}

bool Engine::GpuReported(std::size_t node, std::size_t gpu) const {
  const std::int64_t lost = nodes_.at(node).lost_at_ms.at(gpu);
  return lost < 0 || now_ms() - lost <= SecondsToMs(options_.lost_gpu_grace_s);
}

void Engine::RenderDcgm(std::size_t index, std::string& out) const {
  const SimNode& node = fleet_.nodes().at(index);
  std::vector<dcgm::GpuIdentity> ids;
  std::vector<dcgm::Readings> readings;
  ids.reserve(node.gpus.size());
  readings.reserve(node.gpus.size());
  for (std::size_t g = 0; g < node.gpus.size(); ++g) {
    if (!GpuReported(index, g)) continue;
    ids.push_back(node.gpus[g].id);
    readings.push_back(node.gpus[g].model.Read());
  }
  dcgm::RenderDcgmExposition(
      ids, readings,
      dcgm::DcgmRenderOptions{.lowercase_hostname = nodes_.at(index).lowercase_hostname}, out);
}

void Engine::RenderServer(std::size_t index, std::string& out) const {
  if (const ServingNode* s = server(index)) RenderServerExposition(*s, out);
}

}  // namespace gpucanary::sim
