#include "eval/field/field_generator.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <memory>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "eval/field/field_exposition.h"
#include "eval/field/field_random.h"
#include "recording/recording_writer.h"

namespace gpucanary::eval::field {

namespace {

using recording::RecordingWriter;

// Smooth 0 → 1 from `start` over `ramp` seconds.
double Ramp(double t, double start, double ramp) {
  if (start < -1e8 || t <= start) return 0;
  return std::min(1.0, (t - start) / std::max(1.0, ramp));
}

// ---------------------------------------------------------------------------

struct NodeSim {
  int index = 0;
  bool canary = false;
  double ar = 0;
  double burst_left = 0, burst_amp = 0;
  double inlet_drift = 0;
  double cap_jitter = 0;
  double dcgm_phase = 0, vllm_phase = 0;
  bool up = true;
  double up_since = -1e9;
  double down_since = -1e9;
  double served_rps = 0;  // per engine, this second
  std::string ip;
  std::vector<GpuSim> gpus;
  std::vector<EngineSim> engines;
};

class Generator {
 public:
  Generator(const FieldCase& c, std::string dir, bool trace)
      : c_(c), dir_(std::move(dir)), trace_(trace), rng_(c.seed ^ 0x9e3779b97f4a7c15ULL) {}

  Result<CaseFiles> Run();

 private:
  void Build();
  bool ServerDown(const NodeSim& n, double t) const;
  void Step(double t);
  void StepLoad(double t, std::vector<double>& rps);
  void StepGpus(double t, const std::vector<double>& rps);
  Environment EnvFor(const NodeSim& n, int gpu, double t) const;
  void Measure(double t);
  void Trace(double t);
  Status WriteTick(double t);
  NodeLabels LabelsOf(const NodeSim& n) const;
  bool InGap(const std::vector<Gap>& gaps, const NodeSim& n, double t) const;

  const FieldCase& c_;
  std::string dir_;
  bool trace_ = false;
  std::array<std::array<double, 9>, 2> trace_sum_{};  // per arm: see Trace
  Rng rng_;
  std::vector<NodeSim> nodes_;
  double fleet_ar_ = 0, fleet_burst_left_ = 0, fleet_burst_amp_ = 0;
  double pcie_base_ = 0;  // bytes/s of host traffic while serving
  std::unique_ptr<RecordingWriter> baseline_, canary_;
  CaseFiles files_;
  std::int64_t start_ms_ = 0;
  // Measurement accumulators (canary 1, baseline 0).
  std::array<double, 2> clock_sum_{}, clock_n_{}, itl_sum_{}, itl_w_{}, power_sum_{};
  std::array<int, 2> capped_{}, thermal_{};
};

void Generator::Build() {
  const Sku& sku = *c_.sku;
  pcie_base_ = rng_.Uniform(5e7, 4e8);
  const int engines = std::max(1, c_.gpus_per_node / c_.model.tp);
  for (int i = 0; i < c_.nodes; ++i) {
    NodeSim n;
    n.index = i;
    n.canary = std::find(c_.canary.begin(), c_.canary.end(), i) != c_.canary.end();
    n.dcgm_phase = rng_.Uniform(0.05, 0.85);
    n.vllm_phase = rng_.Uniform(0.05, 0.85);
    n.cap_jitter = rng_.Uniform(0, 10);
    n.ip = "10.244." + std::to_string(rng_.Int(0, 63)) + "." + std::to_string(rng_.Int(2, 250));
    const std::string& host = c_.hosts[static_cast<std::size_t>(i)];
    for (int g = 0; g < c_.gpus_per_node; ++g) {
      GpuSim s;
      s.board = DrawBoard(rng_, c_.r_th);
      s.act_scale = rng_.Normal(1.0, 0.02);
      s.state.temp_c = c_.inlet_c + 10;
      s.busy_clock = sku.f_max_mhz;
      s.energy_mj = std::round(rng_.Uniform(1e11, 2e12));
      s.replays = static_cast<double>(rng_.Int(0, 120));
      s.fb_used = (sku.fb_total_mib - sku.fb_reserved_mib) * 0.9 + rng_.Uniform(-300, 300);
      s.gen = sku.pcie_gen;
      s.width = sku.pcie_width;
      s.uuid = Uuid(rng_);
      s.index = std::to_string(g);
      s.device = "nvidia" + s.index;
      s.bus = BusId(g, c_.gpus_per_node);
      n.gpus.push_back(std::move(s));
    }
    const std::string deploy =
        c_.model.model_name.find("70B") != std::string::npos
            ? "llama-70b"
            : (c_.model.model_name.find("8B") != std::string::npos ? "llama-8b" : "qwen-32b");
    for (int e = 0; e < engines; ++e) {
      EngineSim es;
      InitHistograms(es);
      es.engine = std::to_string(c_.expo.vllm_legacy ? 0 : e);
      es.pod = deploy + "-vllm-" + Hex(rng_, 9) + "-" + PodSuffix(rng_);
      const int port = c_.expo.vllm_legacy ? 8000 + e : 8000;
      es.instance = (c_.expo.vllm_hostname_label ? n.ip : host) + ":" + std::to_string(port);
      // Counters since the server started, some time before the recording.
      es.gen = std::round(rng_.Uniform(1e6, 5e7));
      es.prompt = std::round(es.gen * rng_.Uniform(1.5, 4));
      es.stop = std::round(es.gen / c_.model.out_mean * 0.95);
      es.length = std::round(es.gen / c_.model.out_mean * 0.05);
      n.engines.push_back(std::move(es));
    }
    nodes_.push_back(std::move(n));
  }
}

bool Generator::InGap(const std::vector<Gap>& gaps, const NodeSim& n, double t) const {
  for (const Gap& g : gaps) {
    if (g.node == n.index && t >= g.start_s && t < g.start_s + g.length_s) return true;
  }
  return false;
}

bool Generator::ServerDown(const NodeSim& n, double t) const {
  if (InGap(c_.expo.server_restarts, n, t)) return true;
  if (!n.canary) return false;
  if (t >= c_.release_s && t < c_.release_s + c_.restart_s) return true;
  if (c_.idle_mode == 2 && t >= c_.release_s) return true;
  if (c_.xid != 0 && t >= c_.onset_s) {
    const double since = std::fmod(t - c_.onset_s, c_.xid_period_s);
    if (since < c_.xid_down_s) return true;
  }
  return false;
}

// Offered load per engine of each node: a fleet-wide AR(1) with trend,
// bursts and the case's shift, a node AR(1) and share; what a node cannot
// take (down, not routed) is spread over the others, as a load balancer does.
void Generator::StepLoad(double t, std::vector<double>& rps) {
  fleet_ar_ = c_.fleet_phi * fleet_ar_ +
              c_.fleet_sigma * std::sqrt(1 - c_.fleet_phi * c_.fleet_phi) * rng_.Normal();
  if (fleet_burst_left_ <= 0 && rng_.Chance(c_.burst_rate)) {
    fleet_burst_left_ = c_.burst_len_s * rng_.Uniform(0.5, 1.5);
    fleet_burst_amp_ = c_.burst_size * rng_.Uniform(0.5, 1.5);
  }
  double fleet = std::max(0.05, 1 + fleet_ar_) * (1 + c_.trend * t / c_.duration_s);
  if (fleet_burst_left_ > 0) {
    fleet *= 1 + fleet_burst_amp_;
    fleet_burst_left_ -= 1;
  }
  if (c_.shift_start_s >= 0) {
    fleet *= 1 + (c_.shift_factor - 1) * Ramp(t, c_.shift_start_s, c_.shift_ramp_s);
  }
  double total = 0, routed_weight = 0;
  std::vector<double> weight(nodes_.size(), 0.0);
  // The canary's own ITL against the fleet's, for a least-outstanding balancer.
  double itl_base = 0, itl_n = 0;
  for (const NodeSim& n : nodes_) {
    if (n.canary) continue;
    for (const EngineSim& e : n.engines) {
      if (e.last.itl_mean_s > 0) {
        itl_base += e.last.itl_mean_s;
        itl_n += 1;
      }
    }
  }
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    NodeSim& n = nodes_[i];
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
    if (ServerDown(n, t) || (n.canary && c_.idle_mode == 1 && t >= c_.release_s)) {
      w = 0;
    } else {
      w *= std::min(1.0, Ramp(t, n.up_since, c_.ramp_s) + (n.up_since < -1e8 ? 1.0 : 0.0));
      if (c_.least_outstanding && n.canary && itl_n > 0) {
        double itl = 0, k = 0;
        for (const EngineSim& e : n.engines) {
          if (e.last.itl_mean_s > 0) {
            itl += e.last.itl_mean_s;
            k += 1;
          }
        }
        if (k > 0) w *= std::clamp(std::pow((itl_base / itl_n) / (itl / k), 1.5), 0.4, 1.2);
      }
    }
    weight[i] = w;
    routed_weight += w;
  }
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    rps[i] = routed_weight > 0 ? c_.rps * fleet * total * weight[i] / routed_weight : 0.0;
  }
}

Environment Generator::EnvFor(const NodeSim& n, int gpu, double t) const {
  Environment env;
  const double heat = c_.heat_start_s >= 0 ? Ramp(t, c_.heat_start_s, c_.heat_ramp_s) : 0.0;
  env.inlet_c = c_.inlet_c + c_.node_inlet[static_cast<std::size_t>(n.index)] + n.inlet_drift +
                c_.heat_inlet_c * heat;
  env.r_th_scale = 1 + (c_.heat_rth - 1) * heat;
  env.sw_thermal_offset = c_.sw_thermal_offset;
  if (c_.hot_node == n.index && t >= c_.hot_start_s) {
    env.r_th_scale *= 1 + (c_.hot_rth - 1) * std::min(1.0, (t - c_.hot_start_s) / 30.0);
  }
  env.enforced_limit_w = c_.sku->power_limit_w;
  if (c_.cap_start_s >= 0 && t >= c_.cap_start_s + n.cap_jitter)
    env.enforced_limit_w = c_.cap_limit_w;
  for (const HwEpisode& h : c_.hw) {
    if (h.node == n.index && h.gpu == gpu && t >= h.start_s && t < h.start_s + h.length_s) {
      env.hw_factor = h.factor;
      env.hw_bits = h.bits;
    }
  }
  return env;
}

// One second of every engine and GPU. The engine's step time depends on the
// slowest clock of its GPUs and the clocks on the work: two passes settle it.
void Generator::StepGpus(double t, const std::vector<double>& rps) {
  const Sku& sku = *c_.sku;
  const auto tp = static_cast<std::size_t>(c_.model.tp);
  for (NodeSim& n : nodes_) {
    const bool down = ServerDown(n, t);
    if (down && n.up) {
      n.up = false;
      n.down_since = t;
    } else if (!down && !n.up) {
      n.up = true;
      n.up_since = t;
      for (EngineSim& e : n.engines) {  // a restarted server counts from 0
        e.state = EngineState{};
        e.itl.Reset();
        e.ttft.Reset();
        e.e2e.Reset();
        e.gen = e.prompt = e.stop = e.length = e.preempt = 0;
        if (n.canary && t >= c_.release_s && t < c_.release_s + c_.restart_s + 1) {
          e.pod = e.pod.substr(0, e.pod.rfind("-vllm-")) + "-vllm-" + Hex(rng_, 9) + "-" +
                  PodSuffix(rng_);
        }
      }
    }
    if (n.canary && c_.restart_s == 0 && t == c_.release_s) {  // pre-warmed pods swap in
      for (EngineSim& e : n.engines) {
        e.pod = e.pod.substr(0, e.pod.rfind("-vllm-")) + "-vllm-" + Hex(rng_, 9) + "-" +
                PodSuffix(rng_);
      }
    }
    const bool released = n.canary && t >= c_.release_s;
    const double sw = released ? c_.sw_factor : 1.0;
    const double toggle = released ? c_.toggle : 1.0;
    const double tensor_scale = released ? c_.tensor_scale : 1.0;
    n.inlet_drift = 0.995 * n.inlet_drift + 0.03 * rng_.Normal();
    std::vector<double> noise(n.gpus.size());
    for (double& x : noise) x = rng_.Normal(1.0, 0.02);
    std::vector<double> dither(n.gpus.size());
    for (double& x : dither) x = rng_.Uniform(-1.2, 1.2);
    std::vector<Environment> env;
    env.reserve(n.gpus.size());
    for (int g = 0; g < static_cast<int>(n.gpus.size()); ++g) env.push_back(EnvFor(n, g, t));
    std::vector<EngineState> committed(n.engines.size());
    for (int pass = 0; pass < 2; ++pass) {
      for (std::size_t e = 0; e < n.engines.size(); ++e) {
        EngineSim& es = n.engines[e];
        double slowest = sku.f_max_mhz;
        for (std::size_t g = 0; g < tp; ++g) {
          slowest = std::min(slowest, n.gpus[e * tp + g].busy_clock);
        }
        const double ratio = sku.f_max_mhz / std::max(slowest, sku.f_idle_mhz / 4);
        EngineState st = es.state;
        EngineSecond sec;
        if (!down)
          sec = StepEngine(c_.model, rps[static_cast<std::size_t>(n.index)], ratio, sw, st);
        committed[e] = st;
        es.last = sec;
        for (std::size_t g = 0; g < tp; ++g) {
          const std::size_t gi = e * tp + g;
          GpuSim& gs = n.gpus[gi];
          Activity a = down ? Activity{} : ActivityOf(c_.model, sec, ratio, tensor_scale, toggle);
          const double k = gs.act_scale * noise[gi];
          a.sm = std::clamp(a.sm * k, 0.0, 1.0);
          a.tensor = std::clamp(a.tensor * k, 0.0, 1.0);
          a.dram = std::clamp(a.dram * k, 0.0, 1.0);
          gs.act = a;
          gs.occupancy = down ? 0.0 : std::clamp(OccupancyOf(sec) * k, 0.0, 1.0);
          ChooseClock(sku, gs.board, a, env[gi], dither[gi], gs.state);
          if (a.duty >= 0.02) gs.busy_clock = gs.state.clock_mhz;
        }
      }
    }
    for (std::size_t e = 0; e < n.engines.size(); ++e) n.engines[e].state = committed[e];
    // Loading the model while the server is down (the last 60 % of the gap).
    for (std::size_t gi = 0; gi < n.gpus.size(); ++gi) {
      GpuSim& g = n.gpus[gi];
      const bool downtrained = n.canary && n.index == c_.canary[0] &&
                               static_cast<int>(gi) == c_.pcie_gpu && t >= c_.release_s;
      g.width = downtrained ? c_.pcie_width : sku.pcie_width;
      g.gen = downtrained ? c_.pcie_gen : sku.pcie_gen;
      const double link_bw = 25e9 * g.width / 16.0 * (g.gen >= 5 ? 1.0 : 0.5);
      const double full = (sku.fb_total_mib - sku.fb_reserved_mib) * 0.9;
      if (down) {
        const double gap_len = n.canary && t < c_.release_s + c_.restart_s + 1 && t >= c_.release_s
                                   ? c_.restart_s
                                   : 25.0;
        const double into = t - n.down_since;
        const double load_from = 0.4 * gap_len;
        if (into < load_from) {
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
        // Host traffic of a serving process: inputs, sampled tokens, the
        // scheduler's small copies (gpu-traces i4: ~350 MB/s RX).
        const double busy = 0.2 + 0.8 * g.act.duty;
        g.pcie_rx = pcie_base_ * busy * rng_.Uniform(0.75, 1.25);
        g.pcie_tx = 0.6 * pcie_base_ * busy * rng_.Uniform(0.75, 1.25);
        g.pcie_rx = std::min(g.pcie_rx, link_bw * 0.8);
        g.nvlink = tp > 1 ? g.act.duty * rng_.Uniform(0.9, 1.1) *
                                (4000 + 60 * n.engines[gi / tp].last.running)
                          : 0.0;
      }
      g.limit_w = env[gi].enforced_limit_w;
      g.gr_engine = std::min(1.0, g.act.duty * rng_.Normal(0.97, 0.01));
      AdvanceThermal(sku, g.board, g.act, env[gi], g.state);
      g.reported_power = g.state.power_w * g.board.sensor_gain * rng_.Normal(1.0, 0.004);
      g.energy_mj += g.state.power_w * 1000.0;
      const double replay_rate = g.width < sku.pcie_width ? 0.05 : 1.0 / 3600.0;
      g.replays += static_cast<double>(rng_.Poisson(replay_rate));
      if ((g.state.reasons & kReasonSwPowerCap) != 0) g.power_violation_ns += 1e9;
      if ((g.state.reasons & (kReasonSwThermal | kReasonHwThermal)) != 0) {
        g.thermal_violation_ns += 1e9;
      }
      if (c_.xid != 0 && n.canary && n.index == c_.canary[0] && gi == 0 && t >= c_.onset_s) {
        g.xid = c_.xid;
      }
    }
  }
}

void Generator::Measure(double t) {
  const double from = c_.expect == Expect::kFail ? std::max(c_.onset_s, c_.release_s + c_.restart_s)
                                                 : c_.release_s + c_.restart_s + c_.ramp_s;
  if (t < from) return;
  for (const NodeSim& n : nodes_) {
    const std::size_t k = n.canary ? 1 : 0;
    for (const GpuSim& g : n.gpus) {
      if (g.act.duty < 0.02) continue;
      clock_sum_[k] += g.state.clock_mhz;
      power_sum_[k] += g.state.power_w;
      clock_n_[k] += 1;
      capped_[k] += (g.state.reasons & kReasonSwPowerCap) != 0 ? 1 : 0;
      thermal_[k] += (g.state.reasons & (kReasonSwThermal | kReasonHwThermal)) != 0 ? 1 : 0;
    }
    for (const EngineSim& e : n.engines) {
      if (e.last.tokens_per_s <= 0) continue;
      itl_sum_[k] += e.last.itl_mean_s * e.last.tokens_per_s;
      itl_w_[k] += e.last.tokens_per_s;
    }
  }
}

// Per arm, 10 s means: clock, power, temp, GPUs capped (0x4), GPUs thermal,
// ITL (token-weighted), tokens/s per engine, running per engine, GPUs busy.
void Generator::Trace(double t) {
  for (const NodeSim& n : nodes_) {
    auto& a = trace_sum_[n.canary ? 1 : 0];
    for (const GpuSim& g : n.gpus) {
      a[0] += g.state.clock_mhz;
      a[1] += g.state.power_w;
      a[2] += g.state.temp_c;
      a[3] += (g.state.reasons & kReasonSwPowerCap) != 0 ? 1 : 0;
      a[4] += (g.state.reasons & (kReasonSwThermal | kReasonHwThermal | kReasonHwSlowdown)) != 0;
      a[8] += 1;
    }
    for (const EngineSim& e : n.engines) {
      a[5] += e.last.itl_mean_s * e.last.tokens_per_s;
      a[6] += e.last.tokens_per_s;
      a[7] += e.last.running;
    }
  }
  if (static_cast<int>(t) % 10 != 9) return;
  char buf[512];
  if (files_.trace.empty()) {
    files_.trace =
        "t,clock_c,clock_b,power_c,power_b,temp_c,temp_b,capped_c,capped_b,thermal_c,thermal_b,"
        "itl_ms_c,itl_ms_b,tok_per_engine_c,tok_per_engine_b,running_c,running_b\n";
  }
  const double engines_c =
      static_cast<double>(c_.canary.size()) * std::max(1, c_.gpus_per_node / c_.model.tp) * 10.0;
  const double engines_b =
      static_cast<double>(static_cast<std::size_t>(c_.nodes) - c_.canary.size()) *
      std::max(1, c_.gpus_per_node / c_.model.tp) * 10.0;
  const auto& k = trace_sum_[1];
  const auto& b = trace_sum_[0];
  std::snprintf(
      buf, sizeof buf,
      "%.0f,%.0f,%.0f,%.0f,%.0f,%.1f,%.1f,%.2f,%.2f,%.2f,%.2f,%.1f,%.1f,%.0f,%.0f,%.1f,%.1f\n",
      t - 9, k[0] / k[8], b[0] / b[8], k[1] / k[8], b[1] / b[8], k[2] / k[8], b[2] / b[8],
      k[3] / k[8], b[3] / b[8], k[4] / k[8], b[4] / b[8], k[6] > 0 ? 1000 * k[5] / k[6] : 0.0,
      b[6] > 0 ? 1000 * b[5] / b[6] : 0.0, k[6] / engines_c, b[6] / engines_b, k[7] / engines_c,
      b[7] / engines_b);
  files_.trace += buf;
  trace_sum_ = {};
}

NodeLabels Generator::LabelsOf(const NodeSim& n) const {
  const Exposition& e = c_.expo;
  NodeLabels l;
  l.sku = c_.sku;
  l.expo = &e;
  l.model = &c_.model;
  l.host = c_.hosts[static_cast<std::size_t>(n.index)];
  l.driver = c_.driver;
  l.lower_host = e.host_label == 1 || (e.host_label == 2 && n.canary);
  l.names46 = e.dcgm46_names == 1 || (e.dcgm46_names == 2 && n.canary);
  l.up = n.up;
  l.mgmt_limit_follows = c_.cap_in_band;
  l.sw_thermal_offset = c_.sw_thermal_offset;
  return l;
}

Status Generator::WriteTick(double t) {
  const std::int64_t second_ms = start_ms_ + static_cast<std::int64_t>(t) * 1000;
  for (NodeSim& n : nodes_) {
    RecordingWriter& w = n.canary ? *canary_ : *baseline_;
    if (!InGap(c_.expo.exporter_gaps, n, t) && !rng_.Chance(c_.expo.miss_prob)) {
      const auto ts = second_ms + static_cast<std::int64_t>(n.dcgm_phase * 1000) + rng_.Int(-4, 4);
      GC_RETURN_IF_ERROR(WriteDcgm(w, LabelsOf(n), n.gpus, n.engines, rng_, ts));
    }
    if (n.up) {
      for (EngineSim& e : n.engines) ObserveServer(rng_, c_.model, e);
      if (!rng_.Chance(c_.expo.miss_prob)) {
        const auto ts =
            second_ms + static_cast<std::int64_t>(n.vllm_phase * 1000) + rng_.Int(-4, 4);
        GC_RETURN_IF_ERROR(WriteVllm(w, LabelsOf(n), n.engines, rng_, ts));
      }
    }
  }
  return Status::Ok();
}

Result<CaseFiles> Generator::Run() {
  Build();
  const std::int64_t start_s = 1767225600 + static_cast<std::int64_t>(c_.seed % 2000) * 3600;
  start_ms_ = start_s * 1000;
  files_.baseline = dir_ + "/baseline.om";
  files_.canary = dir_ + "/canary.om";
  files_.start_unix_s = start_s;
  files_.release_unix_s = start_s + static_cast<std::int64_t>(c_.release_s);
  files_.onset_unix_s = static_cast<double>(start_s) + c_.onset_s;
  Result<std::unique_ptr<RecordingWriter>> b = RecordingWriter::Open(files_.baseline);
  if (!b) return Error(b.error());
  Result<std::unique_ptr<RecordingWriter>> k = RecordingWriter::Open(files_.canary);
  if (!k) return Error(k.error());
  baseline_ = std::move(*b);
  canary_ = std::move(*k);
  std::vector<double> rps(nodes_.size(), 0.0);
  // Two minutes unrecorded first, so temperatures and batches are settled.
  for (int i = -120; i < static_cast<int>(c_.duration_s); ++i) {
    const double t = i;
    StepLoad(t, rps);
    StepGpus(t, rps);
    if (i < 0) continue;
    Measure(t);
    if (trace_) Trace(t);
    GC_RETURN_IF_ERROR(WriteTick(t));
  }
  files_.samples = baseline_->samples_written() + canary_->samples_written();
  GC_RETURN_IF_ERROR(baseline_->Close());
  GC_RETURN_IF_ERROR(canary_->Close());
  auto mean = [](double s, double n) { return n > 0 ? s / n : 0.0; };
  files_.canary_clock_mhz = mean(clock_sum_[1], clock_n_[1]);
  files_.baseline_clock_mhz = mean(clock_sum_[0], clock_n_[0]);
  files_.canary_power_w = mean(power_sum_[1], clock_n_[1]);
  files_.baseline_power_w = mean(power_sum_[0], clock_n_[0]);
  files_.canary_itl_s = mean(itl_sum_[1], itl_w_[1]);
  files_.baseline_itl_s = mean(itl_sum_[0], itl_w_[0]);
  files_.canary_capped_s = capped_[1];
  files_.baseline_capped_s = capped_[0];
  files_.canary_thermal_s = thermal_[1];
  files_.baseline_thermal_s = thermal_[0];
  return files_;
}

}  // namespace

Result<CaseFiles> GenerateCase(const FieldCase& c, const std::string& dir, bool trace) {
  Generator g(c, dir, trace);
  return g.Run();
}

}  // namespace gpucanary::eval::field
