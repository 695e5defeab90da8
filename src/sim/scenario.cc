#include "sim/scenario.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <set>
#include <sstream>
#include <system_error>
#include <utility>

#include "config/yaml_fields.h"
#include "sim/scenario_text.h"

namespace gpucanary::sim {
namespace {

using config::Child;
using config::Contains;
using config::Fields;
using config::Index;
using config::JoinNames;
using config::ReadDuration;
using config::ReadInt;
using config::ReadNumber;
using config::ReadRate;
using config::ReadString;
using config::Reporter;

constexpr std::string_view kFaultNames[] = {
    "thermal",     "power_brake",   "power_cap",     "hw_slowdown", "pcie_downtrain",
    "pcie_errors", "memory_thrash", "low_occupancy", "xid_errors",  "ecc_errors"};

// The `params:` each fault kind accepts, in FaultKind order. The numbers feed
// the matching fields of sim::Faults (gpu_model.h).
constexpr std::string_view kThermalParams[] = {"cooling_factor"};
constexpr std::string_view kPowerCapParams[] = {"limit_w"};
constexpr std::string_view kDowntrainParams[] = {"width", "gen"};
constexpr std::string_view kPcieErrorParams[] = {"replays_per_s"};
constexpr std::string_view kFactorParams[] = {"factor"};
constexpr std::string_view kXidParams[] = {"xid", "per_s"};
constexpr std::string_view kEccParams[] = {"sbe_per_s", "dbe_per_s"};

constexpr std::string_view kTopLevelKeys[] = {"seed",     "duration", "fleet",
                                              "releases", "traffic",  "events"};
constexpr std::string_view kFleetKeys[] = {"nodes", "gpu",    "driver",
                                           "gpus",  "server", "hostname_label"};
constexpr std::string_view kTrafficKeys[] = {"rps", "diurnal", "bursts"};
constexpr std::string_view kDiurnalKeys[] = {"amplitude", "period"};
constexpr std::string_view kBurstKeys[] = {"rate"};
constexpr std::string_view kEventKeys[] = {"at",      "deploy", "fault", "clear_fault",
                                           "traffic", "cordon", "rps",   "nodes",
                                           "gpus",    "params", "scope"};
constexpr std::string_view kEventActions[] = {"deploy",  "fault",  "clear_fault",
                                              "traffic", "cordon", "rps"};
// The scopes a fault event takes (not the correlation's fleet).
constexpr std::string_view kFaultScopes[] = {vocab::Name(vocab::Scope::kNode),
                                             vocab::Name(vocab::Scope::kRelease)};
constexpr std::string_view kKernelProfiles[] = {"baseline"};
constexpr std::string_view kDefaultDriver = "580.105.08";
constexpr int kMaxGpusPerNode = 64;

struct WorkloadField {
  std::string_view name;
  double Workload::*member;
};
constexpr WorkloadField kWorkloadFields[] = {
    {"dynamic_power_w", &Workload::dynamic_power_w},
    {"sm_active", &Workload::sm_active},
    {"tensor_active", &Workload::tensor_active},
    {"dram_active", &Workload::dram_active},
    {"occupancy", &Workload::occupancy},
    {"memory_bound", &Workload::memory_bound},
    {"pcie_rx_bytes_s", &Workload::pcie_rx_bytes_s},
    {"pcie_tx_bytes_s", &Workload::pcie_tx_bytes_s},
    {"fb_used_mib", &Workload::fb_used_mib},
};
constexpr std::string_view kReleaseKeys[] = {
    "profile",     "power_spikiness", "dram_thrash",     "occupancy_factor", "slowdown",
    "xid",         "xid_per_s",       "dynamic_power_w", "sm_active",        "tensor_active",
    "dram_active", "occupancy",       "memory_bound",    "pcie_rx_bytes_s",  "pcie_tx_bytes_s",
    "fb_used_mib", "pcie_gen",        "pcie_width"};

// A hostname as expanded, and where its pattern was written.
struct Host {
  std::string name;
  YAML::Mark mark;
};

// A scalar pattern or a list of them, expanded.
Result<std::vector<Host>> ReadHostnames(const Reporter& r, const YAML::Node& node,
                                        std::string_view field) {
  std::vector<YAML::Node> patterns;
  if (node.IsScalar()) {
    patterns.push_back(node);
  } else if (node.IsSequence() && node.size() > 0) {
    for (std::size_t i = 0; i < node.size(); ++i) {
      patterns.push_back(node[i]);
      if (!patterns.back().IsScalar())
        return r.Fail(node[i], Index(field, i), "expected a hostname");
    }
  } else {
    return r.Fail(node, field, "expected a hostname pattern like node-[1-8] or a list");
  }
  std::vector<Host> out;
  for (const YAML::Node& pattern : patterns) {
    Result<std::vector<std::string>> names = ExpandHostPattern(pattern.Scalar());
    if (!names) return r.Fail(pattern, field, names.error().message());
    if (pattern.Scalar().empty()) return r.Fail(pattern, field, "empty hostname");
    for (std::string& name : *names) out.push_back({std::move(name), pattern.Mark()});
  }
  return out;
}

class ScenarioParser {
 public:
  ScenarioParser(const Reporter& r, Scenario* s) : r_(r), s_(s) {}

  Status Parse(const YAML::Node& root) {
    if (!root.IsMap()) {
      return r_.Fail(root, "scenario", "expected a map of " + JoinNames(kTopLevelKeys)).value();
    }
    Result<Fields> top = Fields::Read(r_, root, "", kTopLevelKeys);
    if (!top) return top.error();
    for (std::string_view required : {"duration", "fleet"}) {
      if (top->Find(required) == nullptr) {
        return r_.Fail(top->mark(), required, "required field is missing").value();
      }
    }
    if (const YAML::Node* seed = top->Find("seed")) {
      std::uint64_t value = 0;
      const std::string& text = seed->Scalar();
      const char* end = text.data() + text.size();
      if (!seed->IsScalar() || text.empty() ||
          std::from_chars(text.data(), end, value).ptr != end) {
        return r_.Fail(*seed, "seed", "expected a non-negative integer").value();
      }
      s_->seed = value;
    }
    Result<double> duration = ReadDuration(r_, *top->Find("duration"), "duration");
    if (!duration) return duration.error();
    if (*duration <= 0) return r_.Fail(*top->Find("duration"), "duration", "must be > 0").value();
    s_->duration_s = *duration;
    GC_RETURN_IF_ERROR(ParseFleet(*top->Find("fleet")));
    if (const YAML::Node* releases = top->Find("releases")) {
      GC_RETURN_IF_ERROR(ParseReleases(*releases));
    }
    if (const YAML::Node* traffic = top->Find("traffic")) {
      GC_RETURN_IF_ERROR(ParseTraffic(*traffic));
    }
    if (const YAML::Node* events = top->Find("events")) {
      if (!events->IsSequence()) return r_.Fail(*events, "events", "expected a list").value();
      for (std::size_t i = 0; i < events->size(); ++i) {
        GC_RETURN_IF_ERROR(ParseEvent((*events)[i], Index("events", i)));
      }
    }
    return Status::Ok();
  }

 private:
  Status ParseFleet(const YAML::Node& fleet) {
    if (!fleet.IsSequence() || fleet.size() == 0) {
      return r_.Fail(fleet, "fleet", "expected a non-empty list of node groups").value();
    }
    for (std::size_t i = 0; i < fleet.size(); ++i) {
      const std::string field = Index("fleet", i);
      Result<Fields> f = Fields::Read(r_, fleet[i], field, kFleetKeys);
      if (!f) return f.error();
      NodeGroup group;
      for (std::string_view required : {"nodes", "gpu"}) {
        if (f->Find(required) == nullptr) {
          return r_.Fail(f->mark(), Child(field, required), "required field is missing").value();
        }
      }
      const YAML::Node& gpu = *f->Find("gpu");
      group.profile = gpu.IsScalar() ? FindGpuProfile(gpu.Scalar()) : nullptr;
      if (group.profile == nullptr) {
        std::vector<std::string_view> keys;
        for (const GpuProfile& p : AllGpuProfiles()) keys.push_back(p.key);
        return r_
            .Fail(gpu, Child(field, "gpu"),
                  "unknown GPU profile '" + (gpu.IsScalar() ? gpu.Scalar() : std::string()) +
                      "' (known: " + JoinNames(keys) + ")")
            .value();
      }
      group.driver = std::string(kDefaultDriver);
      if (const YAML::Node* driver = f->Find("driver")) {
        Result<std::string> d = ReadString(r_, *driver, Child(field, "driver"));
        if (!d) return d.error();
        group.driver = *d;
      }
      if (const YAML::Node* gpus = f->Find("gpus")) {
        Result<std::int64_t> n = ReadInt(r_, *gpus, Child(field, "gpus"), 1, kMaxGpusPerNode);
        if (!n) return n.error();
        group.gpus_per_node = static_cast<int>(*n);
      }
      GC_RETURN_IF_ERROR(ReadServing(*f, field, &group));
      GC_RETURN_IF_ERROR(AddHosts(*f->Find("nodes"), Child(field, "nodes"), &group));
      s_->fleet.push_back(std::move(group));
    }
    return Status::Ok();
  }

  // `server:` and `hostname_label:` of one node group.
  Status ReadServing(const Fields& f, const std::string& field, NodeGroup* group) {
    if (const YAML::Node* server = f.Find("server")) {
      Result<std::string> name = ReadString(r_, *server, Child(field, "server"));
      if (!name) return name.error();
      std::optional<ServerKind> kind = ParseServerKind(*name);
      if (!kind) {
        return r_
            .Fail(*server, Child(field, "server"),
                  "unknown server '" + *name + "' (known: " + std::string(kServerKindNames) + ")")
            .value();
      }
      group->server = *kind;
    }
    if (const YAML::Node* label = f.Find("hostname_label")) {
      Result<std::string> name = ReadString(r_, *label, Child(field, "hostname_label"));
      if (!name) return name.error();
      if (*name != "Hostname" && *name != "hostname") {
        return r_
            .Fail(*label, Child(field, "hostname_label"),
                  "expected Hostname or hostname, got '" + *name + "'")
            .value();
      }
      group->lowercase_hostname = *name == "hostname";
    }
    return Status::Ok();
  }

  Status AddHosts(const YAML::Node& nodes, const std::string& field, NodeGroup* group) {
    Result<std::vector<Host>> hosts = ReadHostnames(r_, nodes, field);
    if (!hosts) return hosts.error();
    for (Host& host : *hosts) {
      if (!hosts_.emplace(host.name, s_->fleet.size()).second) {
        return r_.Fail(host.mark, field, "duplicate hostname '" + host.name + "'").value();
      }
      group->hostnames.push_back(std::move(host.name));
    }
    return Status::Ok();
  }

  Status ParseReleases(const YAML::Node& releases) {
    Result<Fields> names = Fields::Read(r_, releases, "releases", {});
    if (!names) return names.error();
    for (const Fields::Entry& entry : names->entries()) {
      const std::string& name = entry.name;
      const std::string field = Child("releases", name);
      Result<Fields> f = Fields::Read(r_, entry.value, field, kReleaseKeys);
      if (!f) return f.error();
      ReleaseSpec spec;
      spec.name = name;
      for (const Fields::Entry& e : f->entries()) {
        GC_RETURN_IF_ERROR(SetReleaseField(e.name, e.value, Child(field, e.name), &spec));
      }
      s_->releases.emplace(name, std::move(spec));
    }
    return Status::Ok();
  }

  Status SetReleaseField(const std::string& key, const YAML::Node& value, const std::string& field,
                         ReleaseSpec* spec) {
    if (key == "profile") {
      if (!value.IsScalar() || !Contains(kKernelProfiles, value.Scalar())) {
        return r_
            .Fail(value, field,
                  "unknown kernel profile (known: " + JoinNames(kKernelProfiles) + ")")
            .value();
      }
      spec->profile = value.Scalar();
      return Status::Ok();
    }
    if (key == "xid") {
      Result<std::int64_t> xid = ReadInt(r_, value, field, 0, 255);
      if (!xid) return xid.error();
      spec->xid = static_cast<int>(*xid);
      return Status::Ok();
    }
    if (key == "pcie_gen" || key == "pcie_width") {
      Result<std::int64_t> n = ReadInt(r_, value, field, 1, key == "pcie_gen" ? 6 : 32);
      if (!n) return n.error();
      (key == "pcie_gen" ? spec->pcie_gen : spec->pcie_width) = static_cast<int>(*n);
      return Status::Ok();
    }
    Result<double> number =
        key == "xid_per_s" ? ReadRate(r_, value, field) : ReadNumber(r_, value, field);
    if (!number) return number.error();
    for (const WorkloadField& w : kWorkloadFields) {
      if (w.name == key) spec->workload.*w.member = *number;
    }
    if (key == "power_spikiness") spec->power_spikiness = *number;
    if (key == "dram_thrash") spec->dram_thrash = *number;
    if (key == "occupancy_factor") spec->occupancy_factor = *number;
    if (key == "slowdown") spec->slowdown = *number;
    if (key == "xid_per_s") spec->xid_per_s = *number;
    return Status::Ok();
  }

  Status ParseTraffic(const YAML::Node& traffic) {
    Result<Fields> f = Fields::Read(r_, traffic, "traffic", kTrafficKeys);
    if (!f) return f.error();
    if (f->Find("rps") == nullptr) {
      return r_.Fail(f->mark(), "traffic.rps", "required field is missing").value();
    }
    Result<double> rps = ReadRate(r_, *f->Find("rps"), "traffic.rps");
    if (!rps) return rps.error();
    s_->traffic.rps = *rps;
    if (const YAML::Node* diurnal = f->Find("diurnal")) {
      Result<Fields> d = Fields::Read(r_, *diurnal, "traffic.diurnal", kDiurnalKeys);
      if (!d) return d.error();
      if (const YAML::Node* amplitude = d->Find("amplitude")) {
        Result<double> a = ReadNumber(r_, *amplitude, "traffic.diurnal.amplitude");
        if (!a) return a.error();
        if (*a > 1)
          return r_.Fail(*amplitude, "traffic.diurnal.amplitude", "must be in 0..1").value();
        s_->traffic.diurnal_amplitude = *a;
      }
      if (const YAML::Node* period = d->Find("period")) {
        Result<double> p = ReadDuration(r_, *period, "traffic.diurnal.period");
        if (!p) return p.error();
        if (*p <= 0) return r_.Fail(*period, "traffic.diurnal.period", "must be > 0").value();
        s_->traffic.diurnal_period_s = *p;
      }
    }
    if (const YAML::Node* bursts = f->Find("bursts")) {
      Result<Fields> b = Fields::Read(r_, *bursts, "traffic.bursts", kBurstKeys);
      if (!b) return b.error();
      if (const YAML::Node* rate = b->Find("rate")) {
        Result<double> v = ReadRate(r_, *rate, "traffic.bursts.rate");
        if (!v) return v.error();
        s_->traffic.burst_rate_per_s = *v;
      }
    }
    return Status::Ok();
  }

  Status ParseEvent(const YAML::Node& node, const std::string& field) {
    Result<Fields> f = Fields::Read(r_, node, field, kEventKeys);
    if (!f) return f.error();
    ScenarioEvent event;
    GC_RETURN_IF_ERROR(ReadEventTime(*f, field, &event));
    Result<std::string_view> action = FindEventAction(*f, field);
    if (!action) return action.error();
    GC_RETURN_IF_ERROR(CheckEventKeys(*f, field, *action));
    GC_RETURN_IF_ERROR(ReadEventAction(*f->Find(*action), Child(field, *action), *action, &event));
    GC_RETURN_IF_ERROR(ReadEventTargets(*f, field, &event));
    s_->events.push_back(std::move(event));
    return Status::Ok();
  }

  // The event's `at`: required, within the scenario, not before the event
  // before it.
  Status ReadEventTime(const Fields& f, const std::string& field, ScenarioEvent* event) {
    const YAML::Node* at = f.Find("at");
    if (at == nullptr)
      return r_.Fail(f.mark(), Child(field, "at"), "required field is missing").value();
    Result<double> at_s = ReadDuration(r_, *at, Child(field, "at"));
    if (!at_s) return at_s.error();
    if (*at_s < last_at_s_) {
      return r_
          .Fail(*at, Child(field, "at"),
                "events out of time order (" + at->Scalar() + " comes after an event at " +
                    std::to_string(last_at_s_) + "s)")
          .value();
    }
    if (*at_s > s_->duration_s) {
      return r_.Fail(*at, Child(field, "at"), "after the end of the scenario (duration)").value();
    }
    event->at_s = last_at_s_ = *at_s;
    return Status::Ok();
  }

  // The one action key the event has (deploy, fault, ...).
  Result<std::string_view> FindEventAction(const Fields& f, const std::string& field) {
    std::string_view action;
    for (std::string_view a : kEventActions) {
      if (f.Find(a) == nullptr) continue;
      if (!action.empty()) {
        return r_.Fail(
            f.mark(), field,
            "more than one action (" + std::string(action) + ", " + std::string(a) + ")");
      }
      action = a;
    }
    if (action.empty()) {
      return r_.Fail(f.mark(), field,
                     "no action (expected one of " + JoinNames(kEventActions) + ")");
    }
    return action;
  }

  // The action's value: its kind and what it carries.
  Status ReadEventAction(const YAML::Node& value, const std::string& value_field,
                         std::string_view action, ScenarioEvent* event) {
    if (action == "deploy") {
      event->kind = ScenarioEvent::kDeploy;
      return ReadRelease(value, value_field, &event->release);
    }
    if (action == "fault" || action == "clear_fault") {
      event->kind = action == "fault" ? ScenarioEvent::kFault : ScenarioEvent::kClearFault;
      if (!value.IsScalar() || !FaultKindFromName(value.Scalar(), &event->fault)) {
        return r_
            .Fail(value, value_field, "unknown fault kind (valid: " + JoinNames(kFaultNames) + ")")
            .value();
      }
      return Status::Ok();
    }
    if (action == "traffic") {
      event->kind = ScenarioEvent::kTraffic;
      return ReadWeights(value, value_field, &event->weights);
    }
    if (action == "rps") {
      event->kind = ScenarioEvent::kRps;
      Result<double> rps = ReadRate(r_, value, value_field);
      if (!rps) return rps.error();
      event->rps = *rps;
      return Status::Ok();
    }
    event->kind = ScenarioEvent::kCordon;
    return ReadEventNodes(value, value_field, &event->nodes);
  }

  // The keys beside the action: nodes, gpus, params, scope.
  Status ReadEventTargets(const Fields& f, const std::string& field, ScenarioEvent* event) {
    if (const YAML::Node* nodes = f.Find("nodes")) {
      GC_RETURN_IF_ERROR(ReadEventNodes(*nodes, Child(field, "nodes"), &event->nodes));
    }
    if (const YAML::Node* gpus = f.Find("gpus")) {
      GC_RETURN_IF_ERROR(ReadGpus(*gpus, Child(field, "gpus"), event->nodes, &event->gpus));
    }
    if (const YAML::Node* params = f.Find("params")) {
      GC_RETURN_IF_ERROR(ReadParams(*params, Child(field, "params"), event->fault, &event->params));
    }
    if (const YAML::Node* scope = f.Find("scope")) {
      if (!scope->IsScalar() || !Contains(kFaultScopes, scope->Scalar())) {
        return r_
            .Fail(*scope, Child(field, "scope"),
                  "unknown scope (valid: " + JoinNames(kFaultScopes) + ")")
            .value();
      }
      event->scope = *vocab::Parse<vocab::Scope>(scope->Scalar());
    }
    return Status::Ok();
  }

  // Which keys go with which action; `nodes` is required where it applies.
  Status CheckEventKeys(const Fields& f, const std::string& field, std::string_view action) const {
    const bool targets_gpus = action == "fault" || action == "clear_fault";
    const bool targets_nodes = targets_gpus || action == "deploy";
    for (const Fields::Entry& e : f.entries()) {
      const std::string& key = e.name;
      const bool ok = key == "at" || key == action || (key == "nodes" && targets_nodes) ||
                      (key == "gpus" && targets_gpus) ||
                      ((key == "params" || key == "scope") && action == "fault");
      if (!ok) {
        return r_
            .Fail(e.key, Child(field, key), "not allowed in a " + std::string(action) + " event")
            .value();
      }
    }
    if (targets_nodes && f.Find("nodes") == nullptr) {
      return r_.Fail(f.mark(), Child(field, "nodes"), "required field is missing").value();
    }
    return Status::Ok();
  }

  Status ReadRelease(const YAML::Node& node, const std::string& field, std::string* out) const {
    if (!node.IsScalar() || s_->releases.count(node.Scalar()) == 0) {
      std::vector<std::string> known;
      for (const auto& [name, spec] : s_->releases) known.push_back(name);
      return r_
          .Fail(node, field,
                "unknown release '" + (node.IsScalar() ? node.Scalar() : std::string()) +
                    "' (known: " + JoinNames(known) + ")")
          .value();
    }
    *out = node.Scalar();
    return Status::Ok();
  }

  Status ReadEventNodes(const YAML::Node& node, const std::string& field,
                        std::vector<std::string>* out) const {
    if (node.IsScalar() && node.Scalar() == "all") {
      for (const NodeGroup& g : s_->fleet)
        out->insert(out->end(), g.hostnames.begin(), g.hostnames.end());
      return Status::Ok();
    }
    Result<std::vector<Host>> hosts = ReadHostnames(r_, node, field);
    if (!hosts) return hosts.error();
    for (Host& host : *hosts) {
      if (hosts_.count(host.name) == 0) {
        return r_.Fail(host.mark, field, "unknown node '" + host.name + "' (not in fleet)").value();
      }
      out->push_back(std::move(host.name));
    }
    return Status::Ok();
  }

  Status ReadGpus(const YAML::Node& node, const std::string& field,
                  const std::vector<std::string>& nodes, std::string* out) const {
    if (!node.IsScalar())
      return r_.Fail(node, field, "expected \"all\" or a range like \"0-3\"").value();
    for (const std::string& host : nodes) {
      const int gpus = s_->fleet[hosts_.at(host)].gpus_per_node;
      Result<std::vector<int>> indices = ExpandGpuSelector(node.Scalar(), gpus);
      if (!indices) return r_.Fail(node, field, indices.error().message() + " on " + host).value();
    }
    *out = node.Scalar();
    return Status::Ok();
  }

  Status ReadParams(const YAML::Node& node, const std::string& field, FaultKind kind,
                    std::map<std::string, double>* out) const {
    Result<Fields> f = Fields::Read(r_, node, field, FaultParamNames(kind));
    if (!f) return f.error();
    for (const Fields::Entry& e : f->entries()) {
      Result<double> number = ReadNumber(r_, e.value, Child(field, e.name));
      if (!number) return number.error();
      (*out)[e.name] = *number;
    }
    return Status::Ok();
  }

  Status ReadWeights(const YAML::Node& node, const std::string& field,
                     std::map<std::string, double>* out) const {
    // `traffic: even` drops the weights: every serving node gets an equal share.
    if (node.IsScalar()) {
      if (node.Scalar() == "even") return Status::Ok();
      return r_.Fail(node, field, "expected release: weight pairs, or `even`").value();
    }
    Result<Fields> f = Fields::Read(r_, node, field, {});
    if (!f) return f.error();
    if (f->entries().empty()) {
      return r_.Fail(node, field, "expected release: weight pairs, or `even`").value();
    }
    for (const Fields::Entry& e : f->entries()) {
      std::string release;
      GC_RETURN_IF_ERROR(ReadRelease(e.key, Child(field, e.name), &release));
      Result<double> weight = ReadNumber(r_, e.value, Child(field, e.name));
      if (!weight) return weight.error();
      (*out)[e.name] = *weight;
    }
    return Status::Ok();
  }

  const Reporter& r_;
  Scenario* s_;
  std::map<std::string, std::size_t> hosts_;  // hostname -> index of its group in s_->fleet
  double last_at_s_ = 0;
};

}  // namespace

std::string_view FaultKindName(FaultKind kind) {
  return kFaultNames[static_cast<std::size_t>(kind)];
}

vocab::CauseKind CauseKindOf(FaultKind kind) {
  switch (kind) {
    case FaultKind::kThermal:
      return vocab::CauseKind::kThermalThrottle;
    case FaultKind::kPowerBrake:
      return vocab::CauseKind::kPowerBrake;
    case FaultKind::kPowerCap:
      return vocab::CauseKind::kPowerCap;
    case FaultKind::kHwSlowdown:
      return vocab::CauseKind::kHwSlowdown;
    case FaultKind::kPcieDowntrain:
      return vocab::CauseKind::kPcieDowntrain;
    case FaultKind::kPcieErrors:
      return vocab::CauseKind::kPcieErrors;
    case FaultKind::kMemoryThrash:
      return vocab::CauseKind::kMemoryThrash;
    case FaultKind::kLowOccupancy:
      return vocab::CauseKind::kLowOccupancy;
    case FaultKind::kXidErrors:
      return vocab::CauseKind::kXidErrors;
    case FaultKind::kEccErrors:
      return vocab::CauseKind::kEccErrors;
  }
  return vocab::CauseKind::kThermalThrottle;
}

bool FaultKindFromName(std::string_view name, FaultKind* kind) {
  for (std::size_t i = 0; i < std::size(kFaultNames); ++i) {
    if (kFaultNames[i] == name) {
      *kind = static_cast<FaultKind>(i);
      return true;
    }
  }
  return false;
}

std::span<const std::string_view> FaultParamNames(FaultKind kind) {
  switch (kind) {
    case FaultKind::kThermal:
      return kThermalParams;
    case FaultKind::kPowerCap:
      return kPowerCapParams;
    case FaultKind::kPcieDowntrain:
      return kDowntrainParams;
    case FaultKind::kPcieErrors:
      return kPcieErrorParams;
    case FaultKind::kMemoryThrash:
    case FaultKind::kLowOccupancy:
      return kFactorParams;
    case FaultKind::kXidErrors:
      return kXidParams;
    case FaultKind::kEccErrors:
      return kEccParams;
    case FaultKind::kPowerBrake:
    case FaultKind::kHwSlowdown:
      break;
  }
  return {};
}

Result<std::vector<int>> ExpandGpuSelector(std::string_view selector, int gpus_per_node) {
  std::set<int> indices;
  if (selector == "all") {
    for (int i = 0; i < gpus_per_node; ++i) indices.insert(i);
    return std::vector<int>(indices.begin(), indices.end());
  }
  for (std::string_view item : SplitCommas(selector)) {
    std::int64_t lo = 0;
    std::int64_t hi = 0;
    if (!ParseRangeItem(item, &lo, &hi)) {
      return Error(StatusCode::kParseError, "bad GPU range '" + std::string(item) +
                                                "' (expected \"all\", \"3\" or \"0-3\")");
    }
    if (hi >= gpus_per_node) {
      return Error(StatusCode::kParseError, "GPU range '" + std::string(item) + "' outside 0.." +
                                                std::to_string(gpus_per_node - 1));
    }
    for (std::int64_t i = lo; i <= hi; ++i) indices.insert(static_cast<int>(i));
  }
  return std::vector<int>(indices.begin(), indices.end());
}

Result<Scenario> ParseScenario(std::string_view yaml_text, std::string_view file_name) {
  const Reporter r{std::string(file_name)};
  Scenario scenario;
  scenario.file = std::string(file_name);
  // yaml-cpp reports malformed input by throwing; nothing thrown leaves here.
  try {
    const YAML::Node root = YAML::Load(std::string(yaml_text));
    ScenarioParser parser(r, &scenario);
    Status status = parser.Parse(root);
    if (!status.ok()) return Error(std::move(status));
  } catch (const YAML::Exception& e) {
    return r.Fail(e.mark, "syntax", e.msg);
  }
  return scenario;
}

Result<Scenario> LoadScenario(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error(StatusCode::kNotFound, path + ": cannot open scenario file");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Error(StatusCode::kIoError, path + ": read failed");
  return ParseScenario(text.str(), path);
}

}  // namespace gpucanary::sim
