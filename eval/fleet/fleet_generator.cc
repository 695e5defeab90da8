#include "eval/fleet/fleet_generator.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <memory>
#include <utility>
#include <vector>

#include "eval/field/field_exposition.h"
#include "eval/field/field_random.h"
#include "eval/fleet/fleet_labels.h"
#include "recording/recording_writer.h"

namespace gpucanary::eval::fleet {

namespace {

using field::EngineSim;
using field::GpuSim;
using field::Rng;
using recording::RecordingWriter;

constexpr double kNever = -1e18;

// Smooth 0 → 1 from `start` over `ramp` seconds.
double Ramp(double t, double start, double ramp) {
  if (start < -1e8 || t <= start) return 0;
  return std::min(1.0, (t - start) / std::max(1.0, ramp));
}

struct NodeRun {
  int index = 0;
  double ar = 0, burst_left = 0, burst_amp = 0, inlet_drift = 0, cap_jitter = 0;
  int dcgm_offset = 0, vllm_offset = 0;       // second of the scrape interval
  double dcgm_frac_ms = 0, vllm_frac_ms = 0;  // and the millisecond in it
  bool up = true;
  bool drained = false;  // taken out of service (Xid 79)
  double up_since = kNever, down_since = kNever, down_until = kNever;
  std::vector<int> pending;  // releases that start serving when the server is back
  std::array<int, 5> slot{-1, -1, -1, -1, -1};  // active release per ReleaseType
  std::vector<std::array<int, 5>> slot_before;  // per release: slots when it arrived
  Effect eff;
  double crash_next = 1e18;
  int pcie_width = 0, pcie_gen = 0;  // 0: the SKU's
  std::string driver, ip, deploy_name;
  std::vector<GpuSim> gpus;
  std::vector<EngineSim> engines;
};

class Generator {
 public:
  Generator(const FleetCase& c, std::string dir)
      : c_(c), dir_(std::move(dir)), rng_(c.seed ^ 0x5851f42d4c957f2dULL) {}

  Result<FleetFiles> Run();

 private:
  void Build();
  void Events(int t);
  void Activate(NodeRun& n, int release, double t);
  void GoDown(NodeRun& n, double t, double length);
  void NewPods(NodeRun& n, bool new_replicaset);
  void ComposeEffect(NodeRun& n);
  void StepLoad(double t, std::vector<double>& rps);
  field::Environment EnvFor(const NodeRun& n, int gpu, double t) const;
  void StepGpus(double t, const std::vector<double>& rps);
  void Record(int t);
  Status Scrape(int t);
  field::NodeLabels LabelsOf(const NodeRun& n) const;
  bool InGap(const NodeRun& n, double t) const;

  const FleetCase& c_;
  std::string dir_;
  Rng rng_;
  std::vector<NodeRun> nodes_;
  double fleet_ar_ = 0, fleet_burst_left_ = 0, fleet_burst_amp_ = 0;
  double pcie_base_ = 0;
  std::unique_ptr<RecordingWriter> writer_;
  std::int64_t start_s_ = 0;
  SimTrace trace_;
};

void Generator::Build() {
  const field::Sku& sku = *c_.sku;
  pcie_base_ = rng_.Uniform(5e7, 4e8);
  const int engines = std::max(1, c_.gpus_per_node / c_.model.tp);
  const std::string& m = c_.model.model_name;
  const std::string deploy = m.find("70B") != std::string::npos
                                 ? "llama-70b"
                                 : (m.find("8B") != std::string::npos ? "llama-8b" : "qwen-32b");
  for (int i = 0; i < c_.nodes; ++i) {
    NodeRun n;
    n.index = i;
    n.dcgm_offset = rng_.Int(0, c_.scrape_s - 1);
    n.vllm_offset = rng_.Int(0, c_.scrape_s - 1);
    n.dcgm_frac_ms = rng_.Uniform(50, 850);
    n.vllm_frac_ms = rng_.Uniform(50, 850);
    n.cap_jitter = rng_.Uniform(0, 20);
    n.driver = c_.driver;
    n.deploy_name = deploy;
    n.ip = "10.244." + std::to_string(rng_.Int(0, 63)) + "." + std::to_string(rng_.Int(2, 250));
    n.slot_before.resize(c_.releases.size());
    for (int g = 0; g < c_.gpus_per_node; ++g) {
      GpuSim s;
      s.board = field::DrawBoard(rng_, c_.r_th);
      s.act_scale = rng_.Normal(1.0, 0.02);
      s.state.temp_c = c_.inlet_c + 10;
      s.busy_clock = sku.f_max_mhz;
      s.energy_mj = std::round(rng_.Uniform(1e11, 2e12));
      s.replays = static_cast<double>(rng_.Int(0, 120));
      s.fb_used = (sku.fb_total_mib - sku.fb_reserved_mib) * 0.9 + rng_.Uniform(-300, 300);
      s.gen = sku.pcie_gen;
      s.width = sku.pcie_width;
      s.uuid = field::Uuid(rng_);
      s.index = std::to_string(g);
      s.device = "nvidia" + s.index;
      s.bus = field::BusId(g, c_.gpus_per_node);
      n.gpus.push_back(std::move(s));
    }
    for (int e = 0; e < engines; ++e) {
      EngineSim es;
      field::InitHistograms(es);
      es.engine = std::to_string(c_.expo.vllm_legacy ? 0 : e);
      es.gen = std::round(rng_.Uniform(1e6, 5e7));
      es.prompt = std::round(es.gen * rng_.Uniform(1.5, 4));
      es.stop = std::round(es.gen / c_.model.out_mean * 0.95);
      es.length = std::round(es.gen / c_.model.out_mean * 0.05);
      n.engines.push_back(std::move(es));
    }
    nodes_.push_back(std::move(n));
    NewPods(nodes_.back(), true);
  }
  const std::size_t r = c_.releases.size();
  const std::size_t nn = static_cast<std::size_t>(c_.nodes);
  trace_.deploy_at.assign(r, std::vector<double>(nn, -1));
  trace_.active_from.assign(r, std::vector<double>(nn, -1));
  trace_.active_to.assign(r, std::vector<double>(nn, -1));
}

// New pods for the node's engines: a new ReplicaSet hash for a new release
// (Deployment rollout), a new suffix always; the scrape target follows the
// pod's IP where the scrape config uses it.
void Generator::NewPods(NodeRun& n, bool new_replicaset) {
  const std::string hash = field::Hex(rng_, 9);
  for (std::size_t e = 0; e < n.engines.size(); ++e) {
    EngineSim& es = n.engines[e];
    std::string rs = hash;
    if (!new_replicaset && !es.pod.empty()) {
      const std::size_t a = es.pod.rfind("-vllm-") + 6;
      rs = es.pod.substr(a, es.pod.rfind('-') - a);
    }
    es.pod = n.deploy_name + "-vllm-" + rs + "-" + field::PodSuffix(rng_);
  }
  n.ip = "10.244." + std::to_string(rng_.Int(0, 63)) + "." + std::to_string(rng_.Int(2, 250));
  const std::string& host = c_.hosts[static_cast<std::size_t>(n.index)];
  for (std::size_t e = 0; e < n.engines.size(); ++e) {
    const int port = c_.expo.vllm_legacy ? 8000 + static_cast<int>(e) : 8000;
    n.engines[e].instance =
        (c_.expo.vllm_hostname_label ? n.ip : host) + ":" + std::to_string(port);
  }
}

void Generator::ComposeEffect(NodeRun& n) {
  Effect e;
  for (int r : n.slot) {
    if (r < 0) continue;
    const Effect& x = c_.releases[static_cast<std::size_t>(r)].effect;
    e.sw_factor *= x.sw_factor;
    e.toggle *= x.toggle;
    e.tensor_scale *= x.tensor_scale;
    e.dram_scale *= x.dram_scale;
    e.occupancy_scale *= x.occupancy_scale;
    if (x.xid != 0) {
      e.xid = x.xid;
      e.xid_period_s = x.xid_period_s;
      e.xid_down_s = x.xid_down_s;
      e.xid_first_s = x.xid_first_s;
    }
    if (x.kind != EffectKind::kNone) e.kind = x.kind;
  }
  n.eff = e;
}

// Release `r` starts serving on `n` at `t`: a rollback restores the slot the
// release it undoes found there.
void Generator::Activate(NodeRun& n, int r, double t) {
  const Release& rel = c_.releases[static_cast<std::size_t>(r)];
  const auto type = static_cast<std::size_t>(rel.type);
  n.slot_before[static_cast<std::size_t>(r)] = n.slot;
  const int replaced = n.slot[type];
  if (rel.rollback_of >= 0) {
    const auto undone = static_cast<std::size_t>(rel.rollback_of);
    if (replaced == rel.rollback_of) n.slot[type] = n.slot_before[undone][type];
  } else {
    n.slot[type] = r;
  }
  // What it replaced stops running here (a rollback, or a newer release of
  // the same kind: a fix forward).
  if (replaced >= 0 && replaced != n.slot[type]) {
    double& to =
        trace_.active_to[static_cast<std::size_t>(replaced)][static_cast<std::size_t>(n.index)];
    if (to < 0) to = t;
  }
  if (rel.type == ReleaseType::kDriver) {
    const int now = n.slot[type];
    n.driver = now >= 0 ? c_.releases[static_cast<std::size_t>(now)].driver : c_.driver;
  }
  const bool had_xid = n.eff.xid != 0;
  ComposeEffect(n);
  if (n.eff.xid != 0 && !had_xid) n.crash_next = t + n.eff.xid_first_s;
  if (n.eff.xid == 0) n.crash_next = 1e18;
  double& from = trace_.active_from[static_cast<std::size_t>(r)][static_cast<std::size_t>(n.index)];
  if (from < 0) from = t;
}

void Generator::GoDown(NodeRun& n, double t, double length) {
  if (n.up) {
    n.up = false;
    n.down_since = t;
  }
  n.down_until = std::max(n.down_until, t + length);
}

bool Generator::InGap(const NodeRun& n, double t) const {
  for (const field::Gap& g : c_.expo.exporter_gaps) {
    if (g.node == n.index && t >= g.start_s && t < g.start_s + g.length_s) return true;
  }
  return false;
}

// What happens to each node this second: deploys, restarts, faults, crashes,
// and servers coming back.
void Generator::Events(int t) {
  const double td = t;
  for (std::size_t r = 0; r < c_.releases.size(); ++r) {
    for (const Deploy& d : c_.releases[r].deploys) {
      if (static_cast<int>(d.at_s) != t) continue;
      NodeRun& n = nodes_[static_cast<std::size_t>(d.node)];
      trace_.deploy_at[r][static_cast<std::size_t>(d.node)] = td;
      if (n.drained) continue;
      if (d.restart_s > 0) {
        GoDown(n, td, d.restart_s);
        n.pending.push_back(static_cast<int>(r));
      } else {  // pre-warmed pods take the traffic: new processes, warm
        Activate(n, static_cast<int>(r), td);
        NewPods(n, true);
        for (EngineSim& e : n.engines) {
          e.itl.Reset();
          e.ttft.Reset();
          e.e2e.Reset();
          e.gen = e.prompt = e.stop = e.length = e.preempt = 0;
        }
      }
    }
  }
  for (const Restart& r : c_.restarts) {
    if (static_cast<int>(r.at_s) == t)
      GoDown(nodes_[static_cast<std::size_t>(r.node)], td, r.length_s);
  }
  for (const NodeFault& f : c_.faults) {
    NodeRun& n = nodes_[static_cast<std::size_t>(f.node)];
    GpuSim& g = n.gpus[static_cast<std::size_t>(f.gpu)];
    const int start = static_cast<int>(f.start_s);
    switch (f.kind) {
      case NodeFaultKind::kPcieDown:
        if (t == start) {
          n.pcie_width = f.pcie_width;
          n.pcie_gen = f.pcie_gen;
        }
        break;
      case NodeFaultKind::kXid79:
        if (t == start) {
          g.xid = 79;
          GoDown(n, td, 1e9);
          n.drained = true;
        }
        if (t == start + 2) g.lost = true;
        break;
      case NodeFaultKind::kEcc:
        if (t == start) {
          g.xid = 48;
          g.remapped_uncorrectable += 1;
          GoDown(n, td, f.length_s);
        }
        if (t == start + 1) g.xid = 63;
        break;
      default:
        break;
    }
  }
  for (NodeRun& n : nodes_) {
    if (n.up && n.eff.xid != 0 && td >= n.crash_next) {
      n.gpus[0].xid = n.eff.xid;
      GoDown(n, td, n.eff.xid_down_s);
      n.crash_next = td + n.eff.xid_period_s;
    }
    if (!n.up && !n.drained && td >= n.down_until) {
      n.up = true;
      n.up_since = td;
      for (EngineSim& e : n.engines) {  // a restarted server counts from 0
        e.state = field::EngineState{};
        e.itl.Reset();
        e.ttft.Reset();
        e.e2e.Reset();
        e.gen = e.prompt = e.stop = e.length = e.preempt = 0;
      }
      if (!n.pending.empty()) {
        for (int r : n.pending) Activate(n, r, td);
        NewPods(n, true);
        n.pending.clear();
      }
    }
  }
}

// Offered load per engine of each node: a fleet-wide AR(1) with trend,
// diurnal curve, bursts and the case's shift, a node AR(1) and share; what a
// node cannot take (down) is spread over the others, as a load balancer does
// (field_generator.cc's model, with a daily curve).
void Generator::StepLoad(double t, std::vector<double>& rps) {
  fleet_ar_ = c_.fleet_phi * fleet_ar_ +
              c_.fleet_sigma * std::sqrt(1 - c_.fleet_phi * c_.fleet_phi) * rng_.Normal();
  if (fleet_burst_left_ <= 0 && rng_.Chance(c_.burst_rate)) {
    fleet_burst_left_ = c_.burst_len_s * rng_.Uniform(0.5, 1.5);
    fleet_burst_amp_ = c_.burst_size * rng_.Uniform(0.5, 1.5);
  }
  double fleet = std::max(0.05, 1 + fleet_ar_) * (1 + c_.trend * t / c_.duration_s) *
                 (1 + c_.diurnal_amp *
                          std::sin(6.283185307179586 * t / c_.diurnal_period_s + c_.diurnal_phase));
  if (fleet_burst_left_ > 0) {
    fleet *= 1 + fleet_burst_amp_;
    fleet_burst_left_ -= 1;
  }
  if (c_.shift_start_s >= 0) {
    fleet *= 1 + (c_.shift_factor - 1) * Ramp(t, c_.shift_start_s, c_.shift_ramp_s);
  }
  double itl_all = 0, itl_n = 0;
  if (c_.least_outstanding) {
    for (const NodeRun& n : nodes_) {
      for (const EngineSim& e : n.engines) {
        if (n.up && e.last.itl_mean_s > 0) {
          itl_all += e.last.itl_mean_s;
          itl_n += 1;
        }
      }
    }
  }
  double total = 0, routed = 0;
  std::vector<double> weight(nodes_.size(), 0.0);
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    NodeRun& n = nodes_[i];
    n.ar = c_.node_phi * n.ar +
           c_.node_sigma * std::sqrt(1 - c_.node_phi * c_.node_phi) * rng_.Normal();
    if (n.burst_left <= 0 && rng_.Chance(c_.burst_rate * 0.5)) {
      n.burst_left = c_.burst_len_s * rng_.Uniform(0.3, 1.0);
      n.burst_amp = c_.burst_size * rng_.Uniform(0.3, 1.0);
    }
    double share = c_.node_load[i] * std::max(0.05, 1 + n.ar);
    if (n.burst_left > 0) {
      share *= 1 + n.burst_amp;
      n.burst_left -= 1;
    }
    total += share;
    double w = share;
    if (!n.up) {
      w = 0;
    } else {
      w *= n.up_since < -1e8 ? 1.0 : std::max(0.02, Ramp(t, n.up_since, c_.ramp_s));
      if (itl_n > 0) {
        double itl = 0, k = 0;
        for (const EngineSim& e : n.engines) {
          if (e.last.itl_mean_s > 0) {
            itl += e.last.itl_mean_s;
            k += 1;
          }
        }
        if (k > 0) w *= std::clamp(std::pow((itl_all / itl_n) / (itl / k), 1.5), 0.4, 1.2);
      }
    }
    weight[i] = w;
    routed += w;
  }
  // A fleet this size never routes more than 1.6x a node's share to one node.
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    rps[i] = routed > 0 ? c_.rps * fleet * total * weight[i] / routed : 0.0;
  }
}

field::Environment Generator::EnvFor(const NodeRun& n, int gpu, double t) const {
  field::Environment env;
  double heat = 0;
  if (c_.heat_start_s >= 0) {
    heat = Ramp(t, c_.heat_start_s, c_.heat_ramp_s) *
           (1 - Ramp(t, c_.heat_start_s + c_.heat_len_s, c_.heat_ramp_s));
  }
  env.inlet_c = c_.inlet_c + c_.node_inlet[static_cast<std::size_t>(n.index)] + n.inlet_drift +
                c_.heat_inlet_c * heat;
  env.r_th_scale = 1 + (c_.heat_rth - 1) * heat;
  env.sw_thermal_offset = c_.sw_thermal_offset;
  env.enforced_limit_w = c_.sku->power_limit_w;
  if (c_.cap_start_s >= 0 && t >= c_.cap_start_s + n.cap_jitter)
    env.enforced_limit_w = c_.cap_limit_w;
  for (const NodeFault& f : c_.faults) {
    if (f.node != n.index || t < f.start_s || t >= f.start_s + f.length_s) continue;
    if (f.kind == NodeFaultKind::kAirflow) {
      env.r_th_scale *= 1 + (f.airflow_rth - 1) * std::min(1.0, (t - f.start_s) / 30.0);
    } else if (f.kind == NodeFaultKind::kHwSlowdown && f.gpu == gpu) {
      env.hw_factor = f.hw_factor;
      env.hw_bits = f.hw_bits;
    }
  }
  return env;
}

// One second of every engine and GPU (field_generator.cc's two passes: the
// step time depends on the slowest clock and the clocks on the work), with
// the node's composite release effect.
void Generator::StepGpus(double t, const std::vector<double>& rps) {
  const field::Sku& sku = *c_.sku;
  const auto tp = static_cast<std::size_t>(c_.model.tp);
  for (NodeRun& n : nodes_) {
    const bool down = !n.up;
    const Effect& eff = n.eff;
    n.inlet_drift = 0.995 * n.inlet_drift + 0.03 * rng_.Normal();
    std::vector<double> noise(n.gpus.size());
    for (double& x : noise) x = rng_.Normal(1.0, 0.02);
    std::vector<double> dither(n.gpus.size());
    for (double& x : dither) x = rng_.Uniform(-1.2, 1.2);
    std::vector<field::Environment> env;
    env.reserve(n.gpus.size());
    for (int g = 0; g < static_cast<int>(n.gpus.size()); ++g) env.push_back(EnvFor(n, g, t));
    std::vector<field::EngineState> committed(n.engines.size());
    for (int pass = 0; pass < 2; ++pass) {
      for (std::size_t e = 0; e < n.engines.size(); ++e) {
        EngineSim& es = n.engines[e];
        double slowest = sku.f_max_mhz;
        for (std::size_t g = 0; g < tp; ++g)
          slowest = std::min(slowest, n.gpus[e * tp + g].busy_clock);
        const double ratio = sku.f_max_mhz / std::max(slowest, sku.f_idle_mhz / 4);
        field::EngineState st = es.state;
        field::EngineSecond sec;
        if (!down) {
          sec = field::StepEngine(c_.model, rps[static_cast<std::size_t>(n.index)], ratio,
                                  eff.sw_factor, st);
        }
        committed[e] = st;
        es.last = sec;
        for (std::size_t g = 0; g < tp; ++g) {
          const std::size_t gi = e * tp + g;
          GpuSim& gs = n.gpus[gi];
          field::Activity a =
              down ? field::Activity{}
                   : field::ActivityOf(c_.model, sec, ratio, eff.tensor_scale, eff.toggle);
          const double k = gs.act_scale * noise[gi];
          a.sm = std::clamp(a.sm * k, 0.0, 1.0);
          a.tensor = std::clamp(a.tensor * k, 0.0, 1.0);
          a.dram = std::clamp(a.dram * k * eff.dram_scale, 0.0, 1.0);
          if (gs.lost) a = field::Activity{};
          gs.act = a;
          gs.occupancy =
              down ? 0.0 : std::clamp(field::OccupancyOf(sec) * k * eff.occupancy_scale, 0.0, 1.0);
          field::ChooseClock(sku, gs.board, a, env[gi], dither[gi], gs.state);
          if (a.duty >= 0.02) gs.busy_clock = gs.state.clock_mhz;
        }
      }
    }
    for (std::size_t e = 0; e < n.engines.size(); ++e) n.engines[e].state = committed[e];
    for (std::size_t gi = 0; gi < n.gpus.size(); ++gi) {
      GpuSim& g = n.gpus[gi];
      const bool downtrained = n.pcie_width > 0 && static_cast<int>(gi) == [&] {
        for (const NodeFault& f : c_.faults) {
          if (f.kind == NodeFaultKind::kPcieDown && f.node == n.index) return f.gpu;
        }
        return -1;
      }();
      g.width = downtrained ? n.pcie_width : sku.pcie_width;
      g.gen = downtrained ? n.pcie_gen : sku.pcie_gen;
      const double link_bw = 25e9 * g.width / 16.0 * (g.gen >= 5 ? 1.0 : 0.5);
      const double full = (sku.fb_total_mib - sku.fb_reserved_mib) * 0.9;
      if (down) {
        // Loading the model over PCIe in the last 60 % of the gap.
        const double gap_len = std::min(60.0, n.down_until - n.down_since);
        const double into = t - n.down_since;
        if (into < 0.4 * gap_len) {
          g.fb_used = into < 2 ? g.fb_used : 0;
          g.pcie_rx = rng_.Uniform(2e5, 8e5);
        } else {
          g.fb_used = std::min(full, g.fb_used + link_bw / 1048576.0 * 0.6);
          g.pcie_rx = link_bw * rng_.Uniform(0.5, 0.65);
        }
        g.pcie_tx = rng_.Uniform(2e5, 8e5);
        g.nvlink = 0;
      } else {
        g.fb_used = g.fb_used < full * 0.5 ? full : g.fb_used;
        const double busy = 0.2 + 0.8 * g.act.duty;
        g.pcie_rx = std::min(pcie_base_ * busy * rng_.Uniform(0.75, 1.25), link_bw * 0.8);
        g.pcie_tx = 0.6 * pcie_base_ * busy * rng_.Uniform(0.75, 1.25);
        g.nvlink = tp > 1 ? g.act.duty * rng_.Uniform(0.9, 1.1) *
                                (4000 + 60 * n.engines[gi / tp].last.running)
                          : 0.0;
      }
      g.limit_w = env[gi].enforced_limit_w;
      g.gr_engine = std::min(1.0, g.act.duty * rng_.Normal(0.97, 0.01));
      field::AdvanceThermal(sku, g.board, g.act, env[gi], g.state);
      g.reported_power = g.state.power_w * g.board.sensor_gain * rng_.Normal(1.0, 0.004);
      g.energy_mj += g.state.power_w * 1000.0;
      const double replay_rate =
          g.width < sku.pcie_width || g.gen < sku.pcie_gen ? 0.05 : 1.0 / 3600;
      g.replays += static_cast<double>(rng_.Poisson(replay_rate));
      if ((g.state.reasons & field::kReasonSwPowerCap) != 0) g.power_violation_ns += 1e9;
      if ((g.state.reasons & (field::kReasonSwThermal | field::kReasonHwThermal)) != 0) {
        g.thermal_violation_ns += 1e9;
      }
    }
  }
}

void Generator::Record(int t) {
  for (NodeRun& n : nodes_) {
    NodeSecond s;
    s.up = n.up;
    for (const EngineSim& e : n.engines) {
      if (!n.up || e.last.tokens_per_s <= 0) continue;
      s.tokens += static_cast<float>(e.last.tokens_per_s);
      s.itl_w += static_cast<float>(e.last.itl_mean_s * e.last.tokens_per_s);
    }
    for (const GpuSim& g : n.gpus) {
      if (g.lost || g.act.duty < 0.02) continue;
      s.clock_sum += static_cast<float>(g.state.clock_mhz);
      ++s.busy_gpus;
      if ((g.state.reasons & (field::kReasonSwThermal | field::kReasonHwThermal)) != 0) {
        ++s.thermal_gpus;
      }
      if ((g.state.reasons & field::kReasonSwPowerCap) != 0) ++s.capped_gpus;
    }
    trace_.nodes[static_cast<std::size_t>(n.index)][static_cast<std::size_t>(t)] = s;
  }
}

field::NodeLabels Generator::LabelsOf(const NodeRun& n) const {
  const field::Exposition& e = c_.expo;
  auto in = [&](const std::vector<int>& v) {
    return std::find(v.begin(), v.end(), n.index) != v.end();
  };
  field::NodeLabels l;
  l.sku = c_.sku;
  l.expo = &e;
  l.model = &c_.model;
  l.host = c_.hosts[static_cast<std::size_t>(n.index)];
  l.driver = n.driver;
  l.lower_host = e.host_label == 1 || (e.host_label == 2 && in(c_.lower_host_nodes));
  l.names46 = e.dcgm46_names == 1 || (e.dcgm46_names == 2 && in(c_.dcgm46_nodes));
  l.up = n.up;
  l.mgmt_limit_follows = c_.cap_in_band;
  l.sw_thermal_offset = c_.sw_thermal_offset;
  return l;
}

// The server's counters move every second; each target is scraped every
// scrape_s seconds at its own offset (a lost scrape leaves no sample).
Status Generator::Scrape(int t) {
  const std::int64_t second_ms = (start_s_ + t) * 1000;
  for (NodeRun& n : nodes_) {
    if (n.up) {
      for (EngineSim& e : n.engines) field::ObserveServer(rng_, c_.model, e);
    }
    if (t % c_.scrape_s == n.dcgm_offset && !InGap(n, t) && !rng_.Chance(c_.expo.miss_prob)) {
      const auto ts = second_ms + static_cast<std::int64_t>(n.dcgm_frac_ms) + rng_.Int(-4, 4);
      GC_RETURN_IF_ERROR(field::WriteDcgm(*writer_, LabelsOf(n), n.gpus, n.engines, rng_, ts));
    }
    if (n.up && t % c_.scrape_s == n.vllm_offset && !rng_.Chance(c_.expo.miss_prob)) {
      const auto ts = second_ms + static_cast<std::int64_t>(n.vllm_frac_ms) + rng_.Int(-4, 4);
      GC_RETURN_IF_ERROR(field::WriteVllm(*writer_, LabelsOf(n), n.engines, rng_, ts));
    }
  }
  return Status::Ok();
}

Result<FleetFiles> Generator::Run() {
  Build();
  start_s_ = 1767225600 + static_cast<std::int64_t>(c_.seed % 5000) * 3600;
  FleetFiles files;
  files.telemetry = dir_ + "/fleet.om";
  files.releases = dir_ + "/releases.jsonl";
  files.labels = dir_ + "/labels.json";
  files.start_unix_s = start_s_;
  Result<std::unique_ptr<RecordingWriter>> w = RecordingWriter::Open(files.telemetry);
  if (!w) return Error(w.error());
  writer_ = std::move(*w);
  const int seconds = static_cast<int>(c_.duration_s);
  trace_.start_unix_s = start_s_;
  trace_.seconds = seconds;
  trace_.nodes.assign(nodes_.size(), std::vector<NodeSecond>(static_cast<std::size_t>(seconds)));
  std::vector<double> rps(nodes_.size(), 0.0);
  // Two minutes unrecorded first, so temperatures and batches are settled.
  for (int t = -120; t < seconds; ++t) {
    Events(t);
    StepLoad(t, rps);
    StepGpus(t, rps);
    if (t < 0) continue;
    Record(t);
    GC_RETURN_IF_ERROR(Scrape(t));
  }
  files.samples = writer_->samples_written();
  GC_RETURN_IF_ERROR(writer_->Close());
  std::error_code ec;
  files.bytes = std::filesystem::file_size(files.telemetry, ec);
  files.events = LabelEvents(c_, trace_);
  GC_RETURN_IF_ERROR(WriteReleasesJsonl(c_, start_s_, files.releases));
  GC_RETURN_IF_ERROR(WriteLabelsJson(c_, files, files.labels));
  return files;
}

}  // namespace

std::string_view MustName(Must m) {
  switch (m) {
    case Must::kYes:
      return "true";
    case Must::kNo:
      return "false";
    case Must::kOptional:
      return "optional";
  }
  return "?";
}

Result<FleetFiles> GenerateFleetCase(const FleetCase& c, const std::string& dir) {
  Generator g(c, dir);
  return g.Run();
}

}  // namespace gpucanary::eval::fleet
