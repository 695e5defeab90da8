#include "eval/fleet/fleet_case.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <utility>

#include "eval/field/field_random.h"

namespace gpucanary::eval::fleet {

namespace {

using field::Rng;

struct ClassInfo {
  FleetClass cls;
  std::string_view name;
  int per_suite;  // cases per seed
};

constexpr ClassInfo kClasses[] = {
    {FleetClass::kHealthy, "healthy", 3},
    {FleetClass::kGuiltySlower, "guilty-slower", 2},
    {FleetClass::kGuiltyPower, "guilty-power", 1},
    {FleetClass::kGuiltyThrash, "guilty-thrash", 1},
    {FleetClass::kGuiltyOccupancy, "guilty-occupancy", 1},
    {FleetClass::kGuiltyXid, "guilty-xid", 1},
    {FleetClass::kOverlap, "overlap", 2},
    {FleetClass::kStaged, "staged", 1},
    {FleetClass::kRollback, "rollback", 1},
    {FleetClass::kHeat, "heat", 1},
    {FleetClass::kFacilityCap, "facility-cap", 1},
    {FleetClass::kLoadShift, "load-shift", 1},
    {FleetClass::kNodeFault, "node-fault", 2},
    {FleetClass::kGuiltyAndNode, "guilty-and-node", 2},
    {FleetClass::kBaselineRestart, "baseline-restart", 1},
    {FleetClass::kMissing, "missing", 3},
    {FleetClass::kSensitivity, "sensitivity", 2},
};

std::vector<int> Shuffled(Rng& rng, int n) {
  std::vector<int> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  for (int i = n - 1; i > 0; --i) {
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(rng.Int(0, i))]);
  }
  return order;
}

// The parameters every case draws.
FleetCase DrawBase(Rng& rng) {
  FleetCase c;
  const double sku_pick = rng.Unit();
  c.sku = sku_pick < 0.6 ? &field::H100Sxm()
                         : (sku_pick < 0.85 ? &field::H200Sxm() : &field::H100Pcie());
  c.gpus_per_node = rng.Chance(0.6) ? 4 : 8;
  c.nodes = rng.Int(12, 24);
  c.hosts = field::Hostnames(rng, c.nodes, 4);
  c.model = field::DrawModel(rng, *c.sku, c.gpus_per_node);
  // Few engines per node keep the server series small; 8B models at TP1 on
  // 4-GPU nodes are common enough to keep.
  c.duration_s = std::round(rng.Uniform(40, 70)) * 60;
  c.scrape_s = rng.Chance(0.75) ? 5 : 15;
  c.driver = rng.Chance(0.5) ? "570.172.08" : "550.90.12";
  c.service = rng.Chance(0.5) ? "chat-api" : "completions";
  c.rps = field::RpsFor(c.model, rng.Uniform(0.3, 0.7));
  c.fleet_sigma = rng.Uniform(0.01, 0.06);
  c.fleet_phi = rng.Uniform(0.95, 0.995);
  c.node_sigma = rng.Uniform(0.02, 0.10);
  c.node_phi = rng.Uniform(0.7, 0.97);
  c.trend = rng.Uniform(-0.2, 0.2);
  // A day's traffic curve seen through a 40-70 minute window.
  c.diurnal_amp = rng.Uniform(0, 0.3);
  c.diurnal_phase = rng.Uniform(0, 6.283185307179586);
  c.burst_rate = 1.0 / rng.Uniform(60, 400);
  c.burst_size = rng.Uniform(0.1, 0.5);
  c.burst_len_s = rng.Uniform(3, 40);
  c.least_outstanding = rng.Chance(0.4);
  c.ramp_s = rng.Uniform(5, 30);
  for (int i = 0; i < c.nodes; ++i) {
    c.node_load.push_back(rng.Uniform(0.93, 1.07));
    c.node_inlet.push_back(rng.Normal(0, 1.0));
  }
  c.inlet_c = rng.Uniform(20, 28);
  c.r_th = c.sku->power_limit_w < 500 ? rng.Uniform(0.11, 0.13) : rng.Uniform(0.05, 0.065);
  c.sw_thermal_offset = rng.Uniform(-1, 1);

  field::Exposition& e = c.expo;
  e.host_label = rng.Chance(0.7) ? 0 : 1;
  e.pod_labels = rng.Chance(0.6);
  e.vllm_hostname_label = rng.Chance(0.25);
  e.miss_prob = rng.Uniform(0, 0.01);
  e.prof_miss_prob = rng.Uniform(0, 0.005);
  e.throttle_field = true;
  e.link_fields = rng.Chance(0.85);
  e.max_link_fields = e.link_fields && rng.Chance(0.6);
  e.prof_fields = true;
  e.power_limit_fields = rng.Chance(0.7);
  e.temp_limit_field = rng.Chance(0.2);
  e.violation_counters = rng.Chance(0.2);
  if (rng.Chance(0.2)) {  // a dcgm-exporter restart somewhere
    e.exporter_gaps.push_back(
        {rng.Int(0, c.nodes - 1), rng.Uniform(60, c.duration_s - 120), rng.Uniform(10, 60)});
  }
  return c;
}

// ---------------------------------------------------------------------------
// The release log.

struct Versions {
  int model = 18000, kernel = 3, quant = 1, framework = 7, driver = 0;
  int day = 10;
};

constexpr const char* kDrivers[] = {"550.90.12", "550.127.05", "570.133.20", "570.172.08",
                                    "575.57.08", "580.65.06",  "580.105.08"};

class LogBuilder {
 public:
  LogBuilder(Rng& rng, FleetCase& c) : rng_(rng), c_(c) {
    day_ = rng.Int(2, 27);
    v_.model = 1000 * rng.Int(12, 30);
    v_.framework = rng.Int(2, 9);
    current_driver_ = 0;
    for (int i = 0; i < 7; ++i) {
      if (c.driver == kDrivers[i]) current_driver_ = i;
    }
    for (int t = 0; t < 5; ++t)
      last_[static_cast<std::size_t>(t)] = BaseId(static_cast<ReleaseType>(t));
  }

  // A release of `type` with its version fields, not yet deployed.
  Release Make(ReleaseType type) {
    Release r;
    r.type = type;
    r.previous = last_[static_cast<std::size_t>(type)];
    const std::string date = "2026-01-" + field::Two(day_);
    const int build = ++builds_;
    switch (type) {
      case ReleaseType::kModel:
        v_.model += 1000 * rng_.Int(1, 3);
        r.model = ModelSlug();
        r.checkpoint = "ckpt-" + std::to_string(v_.model);
        r.id = r.model + "-" + date + "." + std::to_string(build);
        break;
      case ReleaseType::kKernel: {
        ++v_.kernel;
        r.cuda_version = rng_.Chance(0.5) ? "12.8" : "12.9";
        r.id = "cuda-kernels-" + r.cuda_version + "." + std::to_string(v_.kernel) + "-" + date;
        break;
      }
      case ReleaseType::kQuantization: {
        static const char* const kQuant[] = {"fp8", "fp8-dynamic", "int8-w8a8", "awq-int4"};
        r.quantization = kQuant[rng_.Int(0, 3)];
        r.id = ModelSlug() + "-" + r.quantization + "-" + date + "." + std::to_string(build);
        break;
      }
      case ReleaseType::kFramework:
        ++v_.framework;
        r.framework_version = "0.11." + std::to_string(rng_.Int(0, 2));
        r.id = "vllm-" + r.framework_version + "-build." + std::to_string(v_.framework);
        break;
      case ReleaseType::kDriver:
        current_driver_ = std::min(current_driver_ + 1, 6);
        r.driver = kDrivers[current_driver_];
        r.id = "driver-" + r.driver + "-" + date;
        break;
    }
    r.version = "2026.01." + field::Two(day_) + "-" + std::to_string(build);
    last_[static_cast<std::size_t>(type)] = r.id;
    return r;
  }

  // The re-deploy of what `r` replaced.
  Release Rollback(const Release& r, int index) {
    Release b;
    b.type = r.type;
    const std::string base = r.previous.substr(0, r.previous.find("-redeploy-"));
    b.id = base + "-redeploy-" + std::to_string(++builds_);
    b.previous = r.id;
    b.rollback_of = index;
    b.rollout = "rollback";
    b.model = r.model.empty() ? "" : ModelSlug();
    b.version = "rollback-of-" + r.version;
    if (r.type == ReleaseType::kDriver) b.driver = c_.driver;
    return b;
  }

  // `b` (a rollback) is in the log: what the next release of its type replaces.
  void Committed(const Release& b) { last_[static_cast<std::size_t>(b.type)] = b.id; }

 private:
  std::string ModelSlug() const {
    const std::string& m = c_.model.model_name;
    if (m.find("70B") != std::string::npos) return "llama3-70b";
    if (m.find("8B") != std::string::npos) return "llama3-8b";
    return "qwen25-32b";
  }
  std::string BaseId(ReleaseType t) const {
    switch (t) {
      case ReleaseType::kModel:
        return ModelSlug() + "-2025-12-18.4";
      case ReleaseType::kKernel:
        return "cuda-kernels-12.8.2-2025-12-11";
      case ReleaseType::kQuantization:
        return ModelSlug() + "-fp8-2025-12-03.1";
      case ReleaseType::kFramework:
        return "vllm-0.11.0-build.1";
      case ReleaseType::kDriver:
        return "driver-" + c_.driver + "-2025-11-20";
    }
    return "";
  }

  Rng& rng_;
  FleetCase& c_;
  Versions v_;
  int day_ = 10;
  int builds_ = 0;
  int current_driver_ = 0;
  std::array<std::string, 5> last_;
};

double RestartFor(Rng& rng, ReleaseType type, bool prewarm_ok) {
  if (type == ReleaseType::kDriver) return std::round(rng.Uniform(25, 35));
  if (prewarm_ok && rng.Chance(0.3)) return 0;  // pre-warmed pods swap in
  return std::round(rng.Uniform(6, 35));
}

// Deploys `r` to `nodes` starting at `at`, a rolling update of a few nodes
// at a time, `spread_s` for the whole group.
void DeployGroup(Rng& rng, Release& r, const std::vector<int>& nodes, double at, double spread_s,
                 bool prewarm_ok) {
  const double per = nodes.size() > 1 ? spread_s / static_cast<double>(nodes.size()) : 0;
  double t = at;
  for (int n : nodes) {
    r.deploys.push_back({n, std::round(t), RestartFor(rng, r.type, prewarm_ok)});
    t += per * rng.Uniform(0.5, 1.5);
  }
}

enum class Rollout : std::uint8_t { kCanary, kStaged, kPartial, kAll };

// Rolls `r` out from `at` over the fleet in order `order`.
void RollOut(Rng& rng, const FleetCase& c, Release& r, Rollout style, double at,
             const std::vector<int>& order) {
  const bool prewarm_ok = rng.Chance(0.5);
  const int n = c.nodes;
  const int quarter = std::max(2, (n + 3) / 4);
  const std::vector<int> first(order.begin(), order.begin() + 1);
  const std::vector<int> stage2(order.begin() + 1, order.begin() + quarter);
  const std::vector<int> rest(order.begin() + quarter, order.end());
  // Stages over 5-20 minutes (reference: staged rollouts, Gandalf §1).
  const double total = rng.Uniform(300, 1200);
  const double t2 = at + total * rng.Uniform(0.25, 0.45);
  const double t3 = at + total * rng.Uniform(0.6, 0.8);
  switch (style) {
    case Rollout::kCanary:
      DeployGroup(rng, r, first, at, 0, prewarm_ok);
      r.rollout = "canary";
      break;
    case Rollout::kStaged:
      DeployGroup(rng, r, first, at, 0, prewarm_ok);
      DeployGroup(rng, r, stage2, t2, rng.Uniform(30, 120), prewarm_ok);
      DeployGroup(rng, r, rest, t3, rng.Uniform(60, 240), prewarm_ok);
      r.rollout = "staged";
      break;
    case Rollout::kPartial:
      DeployGroup(rng, r, first, at, 0, prewarm_ok);
      DeployGroup(rng, r, stage2, t2, rng.Uniform(30, 120), prewarm_ok);
      r.rollout = "partial";
      break;
    case Rollout::kAll:
      DeployGroup(rng, r, order, at, rng.Uniform(120, 400), prewarm_ok);
      r.rollout = "all";
      break;
  }
  r.started_at_s = at - std::round(rng.Uniform(0, 45));
  for (const Deploy& d : r.deploys) r.announced.push_back(d.node);
  if (style == Rollout::kPartial && rng.Chance(0.5)) {
    r.announced = order;  // the pipeline announced the whole plan, then stopped
  }
  // Deploys are kept in time order and inside the recording.
  std::sort(r.deploys.begin(), r.deploys.end(),
            [](const Deploy& a, const Deploy& b) { return a.at_s < b.at_s; });
  for (Deploy& d : r.deploys) d.at_s = std::min(d.at_s, c.duration_s - 60);
}

Rollout DrawRollout(Rng& rng) {
  const double u = rng.Unit();
  return u < 0.35 ? Rollout::kStaged
                  : (u < 0.6 ? Rollout::kPartial : (u < 0.8 ? Rollout::kAll : Rollout::kCanary));
}

ReleaseType DrawType(Rng& rng) {
  const double u = rng.Unit();
  if (u < 0.25) return ReleaseType::kModel;
  if (u < 0.45) return ReleaseType::kKernel;
  if (u < 0.6) return ReleaseType::kQuantization;
  if (u < 0.9) return ReleaseType::kFramework;
  return ReleaseType::kDriver;
}

// Adds `count` healthy releases at random times in [from, to], some rolled
// back, some overlapping. Returns their indices.
std::vector<int> AddHealthy(Rng& rng, FleetCase& c, LogBuilder& log, int count, double from,
                            double to) {
  std::vector<int> added;
  for (int i = 0; i < count; ++i) {
    Release r = log.Make(DrawType(rng));
    RollOut(rng, c, r, DrawRollout(rng), std::round(rng.Uniform(from, to)), Shuffled(rng, c.nodes));
    c.releases.push_back(std::move(r));
    added.push_back(static_cast<int>(c.releases.size()) - 1);
    if (rng.Chance(0.1)) {  // rolled back anyway (a flaky health check)
      const Release& done = c.releases.back();
      Release b = log.Rollback(done, added.back());
      std::vector<int> nodes;
      for (const Deploy& d : done.deploys) nodes.push_back(d.node);
      const double at = done.deploys.back().at_s + rng.Uniform(120, 600);
      if (at < c.duration_s - 120) {
        DeployGroup(rng, b, nodes, at, rng.Uniform(30, 180), true);
        b.started_at_s = std::round(at - rng.Uniform(0, 20));
        b.announced = nodes;
        log.Committed(b);
        c.releases.push_back(std::move(b));
      }
    }
  }
  return added;
}

// Mean steady board power of one GPU at `rps` and full clock (field's
// calibration, on this case's fleet).
double Steady(const FleetCase& c, double rps, double toggle, double tensor_scale) {
  return field::SteadyBoardPower(c.model, *c.sku, rps, toggle, tensor_scale);
}

// The toggle that puts the power limit at a clock `drop` below f_max (as
// field_case.cc's power-cap class solves it).
double ToggleFor(const FleetCase& c, double tensor_scale, double drop) {
  const field::Sku& sku = *c.sku;
  const double f_t = std::floor(sku.f_max_mhz * (1 - drop) / sku.f_step_mhz) * sku.f_step_mhz;
  return field::ToggleForClock(c.model, sku, c.rps, tensor_scale, f_t);
}

Effect DrawEffect(Rng& rng, const FleetCase& c, EffectKind kind, std::string& what) {
  Effect e;
  e.kind = kind;
  char buf[160];
  switch (kind) {
    case EffectKind::kNone:
      break;
    case EffectKind::kSlower:
      e.sw_factor = rng.Uniform(1.05, 1.30);
      std::snprintf(buf, sizeof buf, "%.0f %% slower per step (software)", 100 * (e.sw_factor - 1));
      what = buf;
      break;
    case EffectKind::kPowerHungry: {
      const double drop = rng.Uniform(0.10, 0.25);
      e.tensor_scale = rng.Uniform(1.1, 1.4);
      e.toggle = ToggleFor(c, e.tensor_scale, drop);
      std::snprintf(buf, sizeof buf,
                    "more power per unit of work (tensor x%.2f, switching x%.2f): clock held "
                    "~%.0f %% down by the %.0f W limit",
                    e.tensor_scale, e.toggle, 100 * drop, c.sku->power_limit_w);
      what = buf;
      break;
    }
    case EffectKind::kMemoryThrash:
      e.dram_scale = rng.Uniform(1.3, 1.8);
      // The decode step's memory-bound part moves that much more data.
      e.sw_factor = 1 + (1 - c.model.compute_frac) * (e.dram_scale - 1) * rng.Uniform(0.4, 0.7);
      std::snprintf(buf, sizeof buf, "DRAM traffic x%.2f for the same work, steps %.0f %% slower",
                    e.dram_scale, 100 * (e.sw_factor - 1));
      what = buf;
      break;
    case EffectKind::kLowOccupancy:
      e.occupancy_scale = rng.Uniform(0.4, 0.7);
      e.sw_factor = rng.Uniform(1.04, 1.15);
      std::snprintf(buf, sizeof buf,
                    "SM occupancy x%.2f (fewer warps resident), steps %.0f %% slower",
                    e.occupancy_scale, 100 * (e.sw_factor - 1));
      what = buf;
      break;
    case EffectKind::kXidCrashloop:
      e.xid = rng.Chance(0.5) ? 13 : 31;
      e.xid_period_s = rng.Uniform(90, 300);
      e.xid_down_s = rng.Uniform(15, 40);
      e.xid_first_s = rng.Uniform(30, 200);
      std::snprintf(buf, sizeof buf, "Xid %d, server crashes every %.0f s (down %.0f s)", e.xid,
                    e.xid_period_s, e.xid_down_s);
      what = buf;
      break;
  }
  return e;
}

// The guilty release: of a type that can have `kind`, rolled out `style` at
// `at`. Returns its index.
int AddGuilty(Rng& rng, FleetCase& c, LogBuilder& log, EffectKind kind, Rollout style, double at,
              const std::vector<int>& order, std::string& what) {
  ReleaseType type = ReleaseType::kFramework;
  switch (kind) {
    case EffectKind::kPowerHungry:
      type = rng.Chance(0.5) ? ReleaseType::kKernel : ReleaseType::kQuantization;
      break;
    case EffectKind::kMemoryThrash:
    case EffectKind::kLowOccupancy:
    case EffectKind::kXidCrashloop:
      type = rng.Chance(0.5) ? ReleaseType::kKernel : ReleaseType::kFramework;
      break;
    default: {
      const double u = rng.Unit();
      type = u < 0.3   ? ReleaseType::kModel
             : u < 0.5 ? ReleaseType::kQuantization
             : u < 0.8 ? ReleaseType::kFramework
                       : ReleaseType::kKernel;
    }
  }
  Release r = log.Make(type);
  r.effect = DrawEffect(rng, c, kind, what);
  RollOut(rng, c, r, style, at, order);
  c.releases.push_back(std::move(r));
  return static_cast<int>(c.releases.size()) - 1;
}

int RandomNodeNotIn(Rng& rng, const FleetCase& c, const std::vector<int>& avoid) {
  for (int tries = 0; tries < 1000; ++tries) {
    const int n = rng.Int(0, c.nodes - 1);
    if (std::find(avoid.begin(), avoid.end(), n) == avoid.end()) return n;
  }
  return 0;
}

std::vector<int> NodesOf(const Release& r) {
  std::vector<int> out;
  for (const Deploy& d : r.deploys) out.push_back(d.node);
  return out;
}

double SwThermal(const FleetCase& c) { return c.sku->sw_thermal_c + c.sw_thermal_offset; }

// A node fault of `kind` on `node` from `at`.
NodeFault DrawFault(Rng& rng, const FleetCase& c, NodeFaultKind kind, int node, double at,
                    std::string& what) {
  NodeFault f;
  f.kind = kind;
  f.node = node;
  f.gpu = rng.Int(0, c.gpus_per_node - 1);
  f.start_s = std::round(at);
  char buf[200];
  const std::string& host = c.hosts[static_cast<std::size_t>(node)];
  switch (kind) {
    case NodeFaultKind::kAirflow: {
      const double power = Steady(c, c.rps, 1, 1);
      const double target = SwThermal(c) + rng.Uniform(3, 8);
      f.airflow_rth = std::clamp((target - c.inlet_c) / (c.r_th * std::max(power, 50.0)), 1.2, 3.0);
      std::snprintf(buf, sizeof buf, "%s loses airflow (R_th x%.2f) at t=%.0f s", host.c_str(),
                    f.airflow_rth, f.start_s);
      break;
    }
    case NodeFaultKind::kPcieDown:
      f.pcie_width = rng.Chance(0.6) ? 8 : 4;
      f.pcie_gen = rng.Chance(0.8) ? c.sku->pcie_gen : c.sku->pcie_gen - 1;
      std::snprintf(buf, sizeof buf, "%s GPU %d link retrains at Gen%d x%d at its restart",
                    host.c_str(), f.gpu, f.pcie_gen, f.pcie_width);
      break;
    case NodeFaultKind::kHwSlowdown:
      f.hw_factor = rng.Uniform(0.3, 0.6);
      f.hw_bits = rng.Chance(0.6) ? field::kReasonHwSlowdown
                                  : field::kReasonHwSlowdown | field::kReasonHwPowerBrake;
      f.length_s = rng.Chance(0.5) ? 1e9 : rng.Uniform(300, 1200);
      std::snprintf(buf, sizeof buf, "%s GPU %d in HW slowdown (0x%x, clock x%.2f) from t=%.0f s",
                    host.c_str(), f.gpu, f.hw_bits, f.hw_factor, f.start_s);
      break;
    case NodeFaultKind::kXid79:
      std::snprintf(buf, sizeof buf,
                    "%s GPU %d falls off the bus (Xid 79) at t=%.0f s; node drained", host.c_str(),
                    f.gpu, f.start_s);
      break;
    case NodeFaultKind::kEcc:
      f.length_s = rng.Uniform(25, 45);  // the server's restart
      std::snprintf(buf, sizeof buf,
                    "%s GPU %d double-bit ECC error (Xid 48, 63) at t=%.0f s, server restarts",
                    host.c_str(), f.gpu, f.start_s);
      break;
    case NodeFaultKind::kNone:
      break;
  }
  what = buf;
  return f;
}

NodeFaultKind DrawFaultKind(Rng& rng) {
  const double u = rng.Unit();
  if (u < 0.25) return NodeFaultKind::kAirflow;
  if (u < 0.45) return NodeFaultKind::kPcieDown;
  if (u < 0.7) return NodeFaultKind::kHwSlowdown;
  if (u < 0.85) return NodeFaultKind::kXid79;
  return NodeFaultKind::kEcc;
}

EffectKind DrawGuiltyKind(Rng& rng) {
  const double u = rng.Unit();
  if (u < 0.4) return EffectKind::kSlower;
  if (u < 0.6) return EffectKind::kPowerHungry;
  if (u < 0.75) return EffectKind::kMemoryThrash;
  if (u < 0.9) return EffectKind::kLowOccupancy;
  return EffectKind::kXidCrashloop;
}

// The guilty release's first deploy: after 12-20 minutes of history, with
// at least 25 minutes left.
double GuiltyAt(Rng& rng, const FleetCase& c) {
  return std::round(std::max(300.0, std::min(rng.Uniform(720, 1200), c.duration_s - 1500)));
}

void Describe(FleetCase& c, const std::string& what) {
  std::string d = what;
  for (const Release& r : c.releases) {
    if (!d.empty()) d += "; ";
    d += r.id + " " + r.rollout + " " + std::to_string(r.deploys.size()) + "n";
  }
  c.description = d;
}

void BuildClass(Rng& rng, FleetCase& c) {
  LogBuilder log(rng, c);
  const int others = rng.Int(2, 4);  // healthy releases beside the guilty one: 3-5 in all
  const double lo = 300, hi = c.duration_s - 900;
  std::string what;
  switch (c.cls) {
    case FleetClass::kHealthy:
      AddHealthy(rng, c, log, others + 1, lo, hi);
      what = "healthy releases only";
      break;
    case FleetClass::kGuiltySlower:
    case FleetClass::kGuiltyPower:
    case FleetClass::kGuiltyThrash:
    case FleetClass::kGuiltyOccupancy:
    case FleetClass::kGuiltyXid: {
      const EffectKind kind =
          c.cls == FleetClass::kGuiltySlower  ? EffectKind::kSlower
          : c.cls == FleetClass::kGuiltyPower ? EffectKind::kPowerHungry
          : c.cls == FleetClass::kGuiltyThrash
              ? EffectKind::kMemoryThrash
              : (c.cls == FleetClass::kGuiltyOccupancy ? EffectKind::kLowOccupancy
                                                       : EffectKind::kXidCrashloop);
      AddHealthy(rng, c, log, others, lo, hi);
      const Rollout style = rng.Chance(0.5) ? Rollout::kPartial : Rollout::kStaged;
      AddGuilty(rng, c, log, kind, style, GuiltyAt(rng, c), Shuffled(rng, c.nodes), what);
      break;
    }
    case FleetClass::kOverlap: {
      // Another release reaches the same nodes 1-5 minutes before or after.
      AddHealthy(rng, c, log, others - 1, lo, hi);
      const std::vector<int> order = Shuffled(rng, c.nodes);
      const double at = GuiltyAt(rng, c);
      const Rollout style = rng.Chance(0.5) ? Rollout::kPartial : Rollout::kStaged;
      const int g = AddGuilty(rng, c, log, DrawGuiltyKind(rng), style, at, order, what);
      Release other = log.Make(DrawType(rng));
      const double shift = (rng.Chance(0.5) ? -1 : 1) * rng.Uniform(60, 300);
      RollOut(rng, c, other, style, at + shift, order);
      c.releases.push_back(std::move(other));
      what += "; " + c.releases.back().id + " on the same nodes " +
              std::to_string(static_cast<int>(shift)) + " s apart";
      (void)g;
      break;
    }
    case FleetClass::kStaged:
      AddHealthy(rng, c, log, others, lo, hi);
      AddGuilty(rng, c, log, DrawGuiltyKind(rng), Rollout::kStaged, GuiltyAt(rng, c),
                Shuffled(rng, c.nodes), what);
      break;
    case FleetClass::kRollback: {
      AddHealthy(rng, c, log, others, lo, hi);
      const int g = AddGuilty(rng, c, log, DrawGuiltyKind(rng), Rollout::kPartial, GuiltyAt(rng, c),
                              Shuffled(rng, c.nodes), what);
      const Release guilty = c.releases[static_cast<std::size_t>(g)];
      Release b = log.Rollback(guilty, g);
      const double at = guilty.deploys.back().at_s + rng.Uniform(300, 900);
      DeployGroup(rng, b, NodesOf(guilty), at, rng.Uniform(30, 180), true);
      b.started_at_s = std::round(at - rng.Uniform(0, 20));
      b.announced = NodesOf(guilty);
      log.Committed(b);
      c.releases.push_back(std::move(b));
      what += "; rolled back at t=" + std::to_string(static_cast<int>(at)) + " s";
      break;
    }
    case FleetClass::kHeat: {
      AddHealthy(rng, c, log, others + 1, lo, hi);
      const double power = Steady(c, c.rps, 1, 1);
      c.heat_start_s = std::round(rng.Uniform(600, c.duration_s - 1500));
      c.heat_ramp_s = rng.Uniform(60, 300);
      c.heat_inlet_c = rng.Uniform(8, 18);
      const double target = SwThermal(c) + rng.Uniform(2, 7);
      c.heat_rth = std::clamp((target - c.inlet_c - c.heat_inlet_c) / (c.r_th * power), 1.0, 2.2);
      c.heat_len_s = rng.Chance(0.5) ? 1e9 : rng.Uniform(600, 1200);
      char buf[160];
      std::snprintf(buf, sizeof buf, "heat: inlet +%.0f C, R_th x%.2f from t=%.0f s",
                    c.heat_inlet_c, c.heat_rth, c.heat_start_s);
      what = buf;
      break;
    }
    case FleetClass::kFacilityCap: {
      AddHealthy(rng, c, log, others + 1, lo, hi);
      const double power = Steady(c, c.rps, 1, 1);
      c.cap_limit_w = std::round(std::max(c.sku->power_min_w, power * rng.Uniform(0.7, 0.9)));
      c.cap_start_s = std::round(rng.Uniform(600, c.duration_s - 1500));
      c.cap_in_band = rng.Chance(0.4);
      what = "facility cap " + std::to_string(static_cast<int>(c.cap_limit_w)) +
             " W from t=" + std::to_string(static_cast<int>(c.cap_start_s));
      break;
    }
    case FleetClass::kLoadShift: {
      AddHealthy(rng, c, log, others + 1, lo, hi);
      c.shift_factor = rng.Chance(0.5) ? rng.Uniform(0.5, 0.8) : rng.Uniform(1.3, 1.8);
      if (c.shift_factor > 1)
        c.rps = field::RpsFor(c.model, rng.Uniform(0.3, 0.6)) / c.shift_factor;
      // Near a deploy: the shift lands while a release rolls out.
      const Release& r = c.releases[static_cast<std::size_t>(rng.Int(0, others))];
      c.shift_start_s = std::round(
          std::clamp(r.deploys.front().at_s + rng.Uniform(-120, 240), 300.0, c.duration_s - 900));
      c.shift_ramp_s = rng.Uniform(10, 90);
      char buf[120];
      std::snprintf(buf, sizeof buf, "traffic x%.2f from t=%.0f s", c.shift_factor,
                    c.shift_start_s);
      what = buf;
      break;
    }
    case FleetClass::kNodeFault: {
      const std::vector<int> healthy = AddHealthy(rng, c, log, others + 1, lo, hi);
      Release& r = c.releases[static_cast<std::size_t>(healthy[0])];
      Deploy& d =
          r.deploys[static_cast<std::size_t>(rng.Int(0, static_cast<int>(r.deploys.size()) - 1))];
      const NodeFaultKind kind = DrawFaultKind(rng);
      // Right after the deploy on that node; a PCIe link retrains at the
      // restart itself.
      double at = d.at_s + d.restart_s + rng.Uniform(10, 150);
      if (kind == NodeFaultKind::kPcieDown) {
        d.restart_s = std::max(d.restart_s, 10.0);
        at = d.at_s;
      }
      const std::string id = r.id;
      c.faults.push_back(DrawFault(rng, c, kind, d.node, at, what));
      what += " (after " + id + " reached it)";
      break;
    }
    case FleetClass::kGuiltyAndNode: {
      AddHealthy(rng, c, log, others, lo, hi);
      const double at = GuiltyAt(rng, c);
      const int g = AddGuilty(rng, c, log, DrawGuiltyKind(rng), Rollout::kPartial, at,
                              Shuffled(rng, c.nodes), what);
      const int node = RandomNodeNotIn(rng, c, NodesOf(c.releases[static_cast<std::size_t>(g)]));
      NodeFaultKind kind = DrawFaultKind(rng);
      if (kind == NodeFaultKind::kPcieDown) kind = NodeFaultKind::kHwSlowdown;
      std::string fault;
      c.faults.push_back(DrawFault(rng, c, kind, node, at + rng.Uniform(-300, 300), fault));
      what += "; " + fault;
      break;
    }
    case FleetClass::kBaselineRestart: {
      AddHealthy(rng, c, log, others + 1, lo, hi);
      const int k = rng.Int(1, 2);
      for (int i = 0; i < k; ++i) {
        c.restarts.push_back({rng.Int(0, c.nodes - 1),
                              std::round(rng.Uniform(600, c.duration_s - 600)),
                              std::round(rng.Uniform(10, 40))});
      }
      what = std::to_string(k) + " server restart(s) with no release";
      break;
    }
    case FleetClass::kMissing: {
      field::Exposition& e = c.expo;
      const double u = rng.Unit();
      // Half of them with a guilty release, half healthy.
      if (rng.Chance(0.5)) {
        AddHealthy(rng, c, log, others, lo, hi);
        AddGuilty(rng, c, log, rng.Chance(0.5) ? EffectKind::kSlower : EffectKind::kPowerHungry,
                  Rollout::kPartial, GuiltyAt(rng, c), Shuffled(rng, c.nodes), what);
      } else {
        AddHealthy(rng, c, log, others + 1, lo, hi);
        what = "healthy releases";
      }
      std::string gaps;
      if (u < 0.35 || rng.Chance(0.3)) {
        e.throttle_field = false;
        gaps += " no-field-112";
      }
      if (u >= 0.35 && u < 0.6) {
        e.prof_fields = false;
        gaps += " no-profiling";
      }
      if (u >= 0.6 || rng.Chance(0.3)) {
        e.vllm_legacy = true;
        gaps += " vllm-0.10";
      }
      if (rng.Chance(0.5)) {
        e.host_label = 2;
        for (int n = 0; n < c.nodes; ++n) {
          if (rng.Chance(0.5)) c.lower_host_nodes.push_back(n);
        }
        gaps += " hostname/Hostname";
      }
      const int k = rng.Int(2, 5);
      for (int i = 0; i < k; ++i) {
        e.exporter_gaps.push_back(
            {rng.Int(0, c.nodes - 1), rng.Uniform(120, c.duration_s - 200), rng.Uniform(30, 180)});
      }
      gaps += " " + std::to_string(k) + "-exporter-gaps";
      e.miss_prob = rng.Uniform(0.01, 0.03);
      what += ";" + gaps;
      break;
    }
    case FleetClass::kSensitivity:
      break;  // MakeFleetSuite sets it up (needs the fleet size)
  }
  Describe(c, what);
}

// A release 2 % (or 5 %) slower per step on >= 16 GPUs with >= 30 minutes
// after it.
void BuildSensitivity(Rng& rng, FleetCase& c, double slower) {
  LogBuilder log(rng, c);
  c.duration_s = std::max(c.duration_s, 3300.0);
  const int others = rng.Int(2, 3);
  AddHealthy(rng, c, log, others, 300, c.duration_s - 900);
  const int need_nodes = (16 + c.gpus_per_node - 1) / c.gpus_per_node;
  std::vector<int> order = Shuffled(rng, c.nodes);
  Release r = log.Make(rng.Chance(0.5) ? ReleaseType::kFramework : ReleaseType::kModel);
  r.effect.kind = EffectKind::kSlower;
  r.effect.sw_factor = 1 + slower;
  const double at = std::round(rng.Uniform(600, c.duration_s - 1800 - 300));
  const int reach = std::max(need_nodes, c.nodes / 3);
  std::vector<int> nodes(order.begin(), order.begin() + reach);
  const bool prewarm = rng.Chance(0.5);
  DeployGroup(rng, r, std::vector<int>(nodes.begin(), nodes.begin() + 1), at, 0, prewarm);
  DeployGroup(rng, r, std::vector<int>(nodes.begin() + 1, nodes.end()), at + rng.Uniform(120, 300),
              rng.Uniform(60, 180), prewarm);
  r.rollout = "partial";
  r.started_at_s = at - std::round(rng.Uniform(0, 30));
  r.announced = nodes;
  c.releases.push_back(std::move(r));
  char buf[120];
  std::snprintf(buf, sizeof buf, "%.0f %% slower per step on %d GPUs", 100 * slower,
                reach * c.gpus_per_node);
  Describe(c, buf);
}

}  // namespace

std::string_view ClassName(FleetClass c) {
  for (const ClassInfo& i : kClasses) {
    if (i.cls == c) return i.name;
  }
  return "?";
}

std::string_view ReleaseTypeName(ReleaseType t) {
  switch (t) {
    case ReleaseType::kModel:
      return "model";
    case ReleaseType::kKernel:
      return "kernel";
    case ReleaseType::kQuantization:
      return "quantization";
    case ReleaseType::kFramework:
      return "framework";
    case ReleaseType::kDriver:
      return "driver";
  }
  return "?";
}

std::string_view EffectName(EffectKind k) {
  switch (k) {
    case EffectKind::kNone:
      return "none";
    case EffectKind::kSlower:
      return "slower";
    case EffectKind::kPowerHungry:
      return "power_hungry";
    case EffectKind::kMemoryThrash:
      return "memory_thrash";
    case EffectKind::kLowOccupancy:
      return "low_occupancy";
    case EffectKind::kXidCrashloop:
      return "xid_crashloop";
  }
  return "?";
}

std::string_view NodeFaultName(NodeFaultKind k) {
  switch (k) {
    case NodeFaultKind::kNone:
      return "none";
    case NodeFaultKind::kAirflow:
      return "airflow_loss";
    case NodeFaultKind::kPcieDown:
      return "pcie_downtrain";
    case NodeFaultKind::kHwSlowdown:
      return "hw_slowdown";
    case NodeFaultKind::kXid79:
      return "xid79";
    case NodeFaultKind::kEcc:
      return "ecc_dbe";
  }
  return "?";
}

double SteadyPower(const FleetCase& c, double rps, double toggle, double tensor_scale) {
  return Steady(c, rps, toggle, tensor_scale);
}

std::vector<FleetCase> MakeFleetSuite(std::uint64_t seed) {
  std::vector<FleetCase> out;
  int index = 0;
  for (const ClassInfo& info : kClasses) {
    for (int k = 0; k < info.per_suite; ++k, ++index) {
      const std::uint64_t case_seed = seed * std::uint64_t{2654435761} +
                                      static_cast<std::uint64_t>(index) * std::uint64_t{104729} + 7;
      Rng rng(case_seed);
      FleetCase c = DrawBase(rng);
      c.cls = info.cls;
      c.seed = case_seed;
      c.name = std::string(info.name) + "-" + field::Two(k + 1);
      if (info.cls == FleetClass::kSensitivity) {
        BuildSensitivity(rng, c, k == 0 ? 0.02 : 0.05);
      } else {
        BuildClass(rng, c);
      }
      out.push_back(std::move(c));
    }
  }
  return out;
}

FleetCase MakeSmallCase(FleetClass cls, std::uint64_t seed, double duration_s) {
  Rng rng(seed);
  FleetCase c = DrawBase(rng);
  c.cls = cls;
  c.seed = seed;
  c.name = std::string(ClassName(cls)) + "-small";
  c.nodes = 6;
  c.gpus_per_node = 4;
  c.hosts.resize(6);
  c.node_load.resize(6);
  c.node_inlet.resize(6);
  c.model = field::DrawModel(rng, *c.sku, 4);
  c.rps = field::RpsFor(c.model, 0.5);
  c.duration_s = duration_s;
  c.expo.exporter_gaps.clear();
  if (cls == FleetClass::kSensitivity) {
    // Quiet load, so that the measured slowdown is the release's.
    c.fleet_sigma = 0.01;
    c.node_sigma = 0.02;
    c.trend = 0;
    c.diurnal_amp = 0;
    c.burst_rate = 0;
    c.least_outstanding = false;
    c.scrape_s = 5;
    LogBuilder log(rng, c);
    Release r = log.Make(ReleaseType::kFramework);
    r.effect.kind = EffectKind::kSlower;
    r.effect.sw_factor = 1.02;
    const double at = std::round(duration_s * 0.4);
    DeployGroup(rng, r, {0, 1, 2, 3}, at, 60, false);
    r.rollout = "partial";
    r.started_at_s = at;
    r.announced = {0, 1, 2, 3};
    c.releases.push_back(std::move(r));
    Describe(c, "2 % slower on 16 GPUs");
    return c;
  }
  BuildClass(rng, c);
  return c;
}

}  // namespace gpucanary::eval::fleet
