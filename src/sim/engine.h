#pragma once
// The scenario engine (docs/simulator.md, "The engine"): turns a Scenario's
// releases, traffic and timed events into what every simulated GPU runs and
// suffers, step by step, and keeps the ground truth of what it did.
//
// Per 100 ms step:
//   1. due scenario events are applied (deploy, fault, clear_fault, traffic,
//      cordon) through the same operations the live control API calls;
//   2. the fleet arrival rate (TrafficProcess) is routed to nodes: by traffic
//      weight to each release, then evenly to the nodes that serve it (not
//      cordoned, not restarting, no GPU lost);
//   3. every node's model server (ServingNode) serves its arrivals at the speed
//      of its slowest GPU (tensor parallelism) divided by the release's
//      software slowdown, and its busy fraction becomes the GPUs' load;
//   4. every GPU steps its physical model with its release's workload and the
//      faults in force: node faults (events or API) and release faults (what
//      the release's kernel profile causes: power_spikiness >= 2 trips the
//      power brake under load, 1 < spikiness < 2 draws more power into the
//      cap, dram_thrash > 1 thrashes memory, occupancy_factor < 1 collapses
//      occupancy, slowdown > 1 is a software regression, xid recurs).
//
// A deploy restarts the model server on each node, one node at a time
// (kRestartSeconds each, as a rolling update with maxUnavailable 1): the node
// serves nothing while it restarts and its server's counters start again from 0.
//
// Every node runs a ServingNode whatever its `server:` (the load on its GPUs
// is the same); the server only decides what the node exposes: vLLM, SGLang,
// TGI or Triton metrics, or none.
//
// XID 79 ("fallen off the bus") loses the GPU: its series stay for
// kLostGpuGraceSeconds, then vanish from the exposition; the node's server
// stops serving (a TP group cannot run with a GPU missing).
//
// Deterministic for a scenario seed. Thread-compatible: the live server
// serialises Step, the control operations and rendering with one mutex.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "sim/fleet.h"
#include "sim/scenario.h"
#include "sim/serving.h"
#include "sim/traffic.h"

namespace gpucanary::sim {

// One entry of the ground truth: something the engine did or caused, with the
// simulated interval it held. Written as JSONL by WriteTruthJsonl.
struct TruthRecord {
  enum Type : std::uint8_t { kFault, kDeploy, kTraffic, kCordon, kLoad };
  Type type = kFault;
  std::int64_t since_ms = 0;
  std::optional<std::int64_t> until_ms;  // unset: still in force at the end
  // kFault: the cause kind (docs/contracts.md §6), its scope (release when a
  // release's kernel profile causes it, node for an injected hardware fault),
  // the release that causes it (scope release) or ran there (scope node), the
  // source ("scenario", "api" or "release"), and the params in force.
  vocab::CauseKind kind{};
  vocab::Scope scope{};
  std::string release;
  std::string source;
  std::string node;
  std::vector<int> gpus;
  std::map<std::string, double> params;
  int fault_id = 0;  // kFault from an event or the API: the id DELETE /faults/{id} takes
  // kDeploy: `release` on `node` (since: the node serves it), replacing
  // `previous` ("" for the first); kTraffic: weights (empty: even per node);
  // kCordon: `node` (until: uncordoned); kLoad: the fleet's mean request
  // rate `rps` set by a load shift (until: the next one).
  std::string previous;
  std::map<std::string, double> weights;
  double rps = 0;
};

// What a CI/CD pipeline would have announced (docs/contracts.md §5) when a release
// was first deployed: id = the release name, started_at = that first deploy,
// targets = its nodes, previous = the release the first of them ran.
struct ReleaseAnnotation {
  std::string id;
  std::int64_t started_at_ms = 0;
  std::vector<std::string> targets;
  std::string previous;
  std::string model;
  // The server its first target runs (ServerJob: "vllm", "sglang", "tgi",
  // "triton_trtllm"); empty when that node exposes none.
  std::string framework;
};

struct EngineOptions {
  std::int64_t start_ms = 1764680000000;  // simulated wall-clock time of t = 0
  ServingProfile serving;
  double restart_seconds = 10;  // model server restart on deploy
  double lost_gpu_grace_s = 2;  // series of a lost GPU stay this long after XID 79
};

class Engine {
 public:
  static constexpr double kStepSeconds = GpuModel::kStepSeconds;

  // Builds the fleet of `scenario` (nodes in file order). Scenario events run
  // as simulated time reaches them. REQUIRES: a scenario from ParseScenario.
  explicit Engine(const Scenario& scenario, const EngineOptions& options = {});

  // Advances one step of kStepSeconds.
  void Step();

  std::int64_t now_ms() const { return fleet_.now_ms(); }
  double elapsed_s() const;
  const Scenario& scenario() const { return scenario_; }
  const Fleet& fleet() const { return fleet_; }
  std::size_t node_count() const { return nodes_.size(); }

  // Control operations (scenario events and the live control API). Errors are
  // kInvalidArgument naming the unknown release, node, fault or selector.
  Status Deploy(const std::string& release, const std::vector<std::string>& nodes);
  Status SetTraffic(const std::map<std::string, double>& weights);
  Status SetCordon(const std::string& node, bool cordoned);
  // A load shift: the fleet's mean request rate (TrafficSpec::rps) becomes
  // `rps` from this step on; diurnal shape, drift and bursts still apply.
  // kInvalidArgument for a negative or non-finite rate.
  Status SetFleetRate(double rps);
  // Injects a fault on `gpus` ("all", "0-3", ...) of each node; returns the
  // ids of the faults created, one per node. `scope` node is a hardware
  // fault; release records it as the effect of the release running there
  // (truth scope release), for release effects no kernel profile models;
  // another scope is kInvalidArgument.
  Result<std::vector<int>> InjectFault(FaultKind kind, const std::vector<std::string>& nodes,
                                       const std::string& gpus,
                                       const std::map<std::string, double>& params,
                                       const std::string& source = "api",
                                       vocab::Scope scope = vocab::Scope::kNode);
  // Clears injected faults of `kind` on those GPUs (a fault covering other
  // GPUs too keeps them). Returns how many GPU-faults were cleared.
  Result<int> ClearFaults(FaultKind kind, const std::vector<std::string>& nodes,
                          const std::string& gpus);
  Status ClearFault(int fault_id);

  // False once GPU `gpu` of node `node` has been off the bus (XID 79) for
  // longer than lost_gpu_grace_s: dcgm-exporter no longer reports it.
  bool GpuReported(std::size_t node, std::size_t gpu) const;

  // dcgm-exporter's and the model server's /metrics bodies for node `index`
  // now. RenderServer renders the node's `server:` (vLLM, SGLang, TGI,
  // Triton); nothing for a `none` node, nor while the server is down
  // (restarting, nothing deployed: node_view(index).server is null then, and
  // a live endpoint answers 503).
  void RenderDcgm(std::size_t index, std::string& out) const;
  void RenderServer(std::size_t index, std::string& out) const;

  // What a node is doing now (for GET /state and tests).
  struct NodeView {
    std::string hostname;
    std::string release;       // "" before the first deploy
    std::string next_release;  // set while a deploy waits or restarts
    bool cordoned = false;
    bool restarting = false;
    bool serving = false;     // receives traffic now
    double arrival_rate = 0;  // requests/s routed to it this step
    double speed = 0;         // relative speed of its server this step
    const ServingNode* server = nullptr;
    ServerKind server_kind;  // its group's `server:`
    std::vector<bool> lost;  // per GPU
  };
  NodeView node_view(std::size_t index) const;
  // Node `index`'s model server, or null while it restarts or runs nothing.
  const ServingNode* server(std::size_t index) const { return nodes_.at(index).server.get(); }
  std::optional<std::size_t> FindNode(const std::string& hostname) const;
  // Whether node `index`'s dcgm-exporter labels the host `hostname` (4.8.2
  // on) rather than `Hostname`.
  bool lowercase_hostname(std::size_t index) const { return nodes_.at(index).lowercase_hostname; }
  // The server node `index` exposes (its group's `server:`; none: no service metrics).
  ServerKind server_kind(std::size_t index) const { return nodes_.at(index).server_kind; }
  // The servers the fleet's nodes expose, each once, in node order (none left out).
  std::vector<vocab::Server> servers() const;
  const std::map<std::string, double>& traffic_weights() const { return weights_; }
  double fleet_rate() const { return traffic_.rate(); }
  std::uint64_t dropped_requests() const { return dropped_; }

  // One annotation per release, in order of first deploy.
  const std::vector<ReleaseAnnotation>& releases() const { return annotations_; }

  // Injected faults in force: id, kind, node, GPUs, params.
  struct ActiveFault {
    int id = 0;
    FaultKind kind = FaultKind::kThermal;
    std::size_t node = 0;
    std::vector<int> gpus;
    std::map<std::string, double> params;
    std::string source;
    std::int64_t since_ms = 0;
  };
  const std::vector<ActiveFault>& active_faults() const { return faults_; }

  // The ground truth so far, in order of `since`, with open intervals for
  // what still holds.
  std::vector<TruthRecord> Truth() const;

 private:
  struct NodeState {
    std::string release;
    std::string pending_release;
    std::int64_t restart_at_ms = -1;  // when the pending deploy's restart begins
    std::int64_t serving_at_ms = -1;  // when the restart ends
    bool cordoned = false;
    std::unique_ptr<ServingNode> server;
    int restarts = 0;
    bool brake_latched = false;  // a release's current spikes hold the power brake
    double arrival_rate = 0;
    double speed = 1;
    double load = 0;
    ServerKind server_kind = vocab::Server::kVllm;  // its group's `server:`
    bool lowercase_hostname = false;                // its group's `hostname_label: hostname`
    std::vector<std::int64_t> lost_at_ms;           // per GPU, -1 while on the bus
    std::vector<Faults> gpu_faults;                 // per GPU, this step
  };

  void ApplyDueEvents();
  Status ApplyEvent(const ScenarioEvent& event);
  void AdvanceDeploys();
  void RouteTraffic(double rate);
  void StepServers();
  void ComputeFaults();
  void StepGpus();
  void UpdateReleaseTruth(std::size_t node, const std::string& old_release,
                          const std::string& new_release);
  bool Serving(const NodeState& n) const;
  Result<std::vector<std::size_t>> ResolveNodes(const std::vector<std::string>& nodes) const;
  Result<std::vector<int>> SelectGpus(std::size_t node, const std::string& gpus) const;
  void OpenTruth(TruthRecord record);
  void CloseTruth(std::size_t index);
  // Ends, now, every interval still open for which `matches(record)` holds.
  template <typename Pred>
  void CloseOpenTruth(Pred matches) {
    for (std::size_t t = 0; t < truth_.size(); ++t) {
      if (!truth_[t].until_ms && matches(truth_[t])) CloseTruth(t);
    }
  }

  Scenario scenario_;
  EngineOptions options_;
  Fleet fleet_;
  TrafficProcess traffic_;
  std::vector<NodeState> nodes_;
  std::map<std::string, double> weights_;  // empty: every serving node gets an equal share
  std::vector<ActiveFault> faults_;
  int next_fault_id_ = 1;
  std::size_t next_event_ = 0;
  std::uint64_t dropped_ = 0;
  double dropped_credit_ = 0;
  std::uint64_t seed_;
  std::vector<TruthRecord> truth_;
  std::vector<ReleaseAnnotation> annotations_;
  std::vector<std::size_t> open_release_truth_;  // indices into truth_ of open release faults
};

// One record as one line of JSON (no newline).
std::string TruthRecordJson(const TruthRecord& record);

// Writes `records` as JSON lines (docs/simulator.md, "Ground truth"): one
// object per line, times in Unix seconds. Errors: kIoError naming `path`.
Status WriteTruthJsonl(const std::vector<TruthRecord>& records, const std::string& path);

// Writes one docs/contracts.md §5 release annotation per line for `annotations`
// (Engine::releases()). Errors: kIoError naming `path`.
Status WriteReleasesJsonl(const std::vector<ReleaseAnnotation>& annotations,
                          const std::string& path);

}  // namespace gpucanary::sim
