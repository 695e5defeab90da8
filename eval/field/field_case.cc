#include "eval/field/field_case.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <utility>

#include "eval/field/field_random.h"

namespace gpucanary::eval::field {

namespace {

struct ClassInfo {
  CaseClass cls;
  std::string_view name;
  int weight;  // cases per 56
  std::string_view source;
};

// Sources are the files under shared/ (reference/…, data/…) or the vendor
// documents and field reports they quote.
constexpr ClassInfo kClasses[] = {
    {CaseClass::kAa, "aa", 8,
     "reference/dcgm-telemetry.md §5 (idle/busy values); data/gpu-traces atharvanihalani i4/b1 "
     "(8×H100 inference noise, 1-5 s gaps, blank profiling cells)"},
    {CaseClass::kHeatEvent, "heat-event", 4,
     "reference/dcgm-telemetry.md §2.3 (SW thermal 0x20), §2.5 and §5 (T.Limit ≈ 87 °C, slowdown "
     "−2 °C); issue 18 field report (fleet heat event failed as thermal_throttle)"},
    {CaseClass::kFacilityPowerCap, "facility-power-cap", 4,
     "reference/dcgm-telemetry.md §2.4 (ENFORCED_POWER_LIMIT incl. out-of-band limiters), §6 row "
     "1 (dcgm-exporter #720: power capping degrades inference); data/gpu-traces t3 (0x4 on every "
     "GPU at the limit)"},
    {CaseClass::kLoadShift, "load-shift", 4,
     "reference/canary-anchors.md (Kayenta/Argo users: traffic shifts during analysis); "
     "data/gpu-traces i4/e2 phase changes"},
    {CaseClass::kLoadMismatch, "load-mismatch", 4,
     "issue 18 field report (slower canary busy at 1290 MHz vs baseline idling at 345 MHz); "
     "leptonai nvidia-smi -q (idle GPUs at Gen1 links)"},
    {CaseClass::kMissingFields, "missing-fields", 6,
     "reference/dcgm-telemetry.md §1.2 (field 112, 160/164, 235-238 not in the default CSVs), §6 "
     "rows 6, 7, 10, 11 (profiling absent, families vanishing, Hostname→hostname), §2.1 (DCGM 4.6 "
     "names); DESIGN.md §3 (vLLM renames, counter resets)"},
    {CaseClass::kPowerCapRegression, "power-cap", 3,
     "data/gpu-traces yqg9651 (same GEMM, more power per op: clock 1620→1305/1020 MHz at 350 W, "
     "−18/−34 % TFLOPS); reference §2.3 bit 0x4"},
    {CaseClass::kPowerCapNoReasons, "power-cap-no-reasons", 3,
     "data/gpu-traces yqg9651 (nvidia-smi log without throttle reasons); issue 18 (clock drop "
     "without field 112 named hw_slowdown)"},
    {CaseClass::kSoftwareSlower, "software-slower", 4,
     "DESIGN.md §1 (a release costs token throughput / p99 with no hardware cause); reference §5 "
     "regression signatures"},
    {CaseClass::kHwSlowdownOneGpu, "hw-slowdown", 3,
     "reference §2.3 (HW slowdown 0x8 with 0x40/0x80, clock /2 or more); leptonai nvidia-smi -q "
     "(HW slowdown + power brake at 86 MHz); seed's 3-second rule"},
    {CaseClass::kPcieDowntrain, "pcie-downtrain", 3,
     "reference §2.6 (width below max under load is a link problem; 235/236 often not exported); "
     "issue 18 field report (downtrain named software_regression)"},
    {CaseClass::kCanaryIdle, "canary-idle", 3,
     "issue 18 field report (inference → idle invisible); reference §5 idle values (345 MHz, "
     "0x1 idle bit, ~110 W with a model loaded)"},
    {CaseClass::kXidCrashloop, "xid-crashloop", 2,
     "reference §4 (Xid 13/31 with a new image point at the software; RESTART_APP); leptonai "
     "dmesg-xid-13-43.log (repeated Xid 13 then 43 from one process)"},
    {CaseClass::kBaselineNodeHot, "baseline-node-hot", 2,
     "reference §2.5/§5 thresholds; leptonai nvidia-smi -q (single-node throttling outliers)"},
    {CaseClass::kCanaryNodePreThrottled, "canary-node-throttled", 3,
     "leptonai nvidia-smi -q 535.161.08 (a whole node in HW slowdown + power brake at 86 MHz, "
     "idle); DESIGN.md §6 (history before the release tells a bad node)"},
};

const ClassInfo& Info(CaseClass c) {
  for (const ClassInfo& i : kClasses) {
    if (i.cls == c) return i;
  }
  return kClasses[0];
}

}  // namespace

std::string Two(int i) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%02d", i);
  return buf;
}

std::vector<std::string> Hostnames(Rng& rng, int n, int per_rack) {
  std::vector<std::string> hosts;
  const int scheme = rng.Int(0, 2);
  const int base = rng.Int(1, 40);
  const int rack = rng.Int(1, 30);
  for (int i = 0; i < n; ++i) {
    switch (scheme) {
      case 0:
        hosts.push_back("gpu-node-" + Two(base + i));
        break;
      case 1:  // per_rack nodes a rack, 4U apart
        hosts.push_back("hgx-r" + Two(rack + i / per_rack) + "-u" + Two(4 * (i % per_rack) + 3));
        break;
      default:
        hosts.push_back("ip-10-4-" + std::to_string(rack + i / (2 * per_rack)) + "-" +
                        std::to_string(base * 3 + i));
        break;
    }
  }
  return hosts;
}

Board DrawBoard(Rng& rng, double r_th) {
  Board b;
  b.dyn_scale = rng.Normal(1.0, 0.03);
  b.leak_scale = rng.Normal(1.0, 0.08);
  b.r_th = r_th * rng.Normal(1.0, 0.06);
  b.tau_s = rng.Uniform(25, 60);
  b.sensor_gain = rng.Normal(1.0, 0.01);
  b.mem_temp_offset = rng.Uniform(3, 9);
  return b;
}

// A served model, its tensor-parallel size and step costs, from its size
// and the GPU's HBM bandwidth (decode reads the weights every step) and
// FLOPs (prefill): see README "Service model".
ModelProfile DrawModel(Rng& rng, const Sku& sku, int gpus_per_node) {
  ModelProfile m;
  const double bw = sku.mem_clock_mhz > 3000 ? 0.72 : (sku.mem_clock_mhz < 2000 ? 1.6 : 1.0);
  const double flops = sku.power_limit_w < 500 ? 1.35 : 1.0;
  const int pick = rng.Int(0, 2);
  if (pick == 0) {
    m.model_name = "meta-llama/Llama-3.1-8B-Instruct";
    m.tp = 1;
    m.t0_ms = rng.Uniform(7, 10) * bw;
    m.prefill_ms_per_ktok = rng.Uniform(20, 35) * flops;
  } else if (pick == 1) {
    m.model_name = "meta-llama/Llama-3.1-70B-Instruct";
    m.tp = gpus_per_node >= 8 && rng.Chance(0.6) ? 8 : 4;
    m.t0_ms = (m.tp == 8 ? rng.Uniform(10, 15) : rng.Uniform(15, 20)) * bw;
    m.prefill_ms_per_ktok = (m.tp == 8 ? rng.Uniform(25, 40) : rng.Uniform(50, 75)) * flops;
  } else {
    m.model_name = "Qwen/Qwen2.5-32B-Instruct";
    m.tp = rng.Chance(0.5) ? 2 : 4;
    m.t0_ms = (m.tp == 2 ? rng.Uniform(13, 17) : rng.Uniform(8, 11)) * bw;
    m.prefill_ms_per_ktok = (m.tp == 2 ? rng.Uniform(45, 70) : rng.Uniform(25, 40)) * flops;
  }
  m.prompt_mean = rng.Uniform(250, 1500);
  m.out_mean = rng.Uniform(120, 600);
  m.k_ms = rng.Uniform(0.03, 0.09) * (m.prompt_mean + 0.5 * m.out_mean) / 1000.0 * bw;
  m.compute_frac = rng.Uniform(0.25, 0.45);
  m.max_batch = rng.Chance(0.7) ? 256 : 128;
  m.max_tokens = m.out_mean * rng.Uniform(3, 6);
  m.kv_capacity_tokens = m.max_batch * (m.prompt_mean + m.out_mean) * rng.Uniform(1.1, 2.0);
  return m;
}

// Offered requests/s per engine for utilisation `u` of its decode capacity,
// with the prefill share that load brings (λ·out = U·(1 − λ·c)). The share
// grows with λ, so a node given f times this load is at more than f·u: scale
// the busiest node's rate instead (RpsFor(u) / f).
double RpsFor(const ModelProfile& m, double u) {
  const double step = m.t0_ms + m.k_ms * m.max_batch;
  const double cap = u * 1000.0 * m.max_batch / step;  // tokens/s
  const double c = m.prompt_mean / 1000.0 * m.prefill_ms_per_ktok / 1000.0;
  return cap / (m.out_mean + cap * c);
}

namespace {

// The parameters every case draws, whatever its class.
FieldCase DrawBase(Rng& rng) {
  FieldCase c;
  const double sku_pick = rng.Unit();
  c.sku = sku_pick < 0.6 ? &H100Sxm() : (sku_pick < 0.85 ? &H200Sxm() : &H100Pcie());
  c.nodes = rng.Int(4, 8);
  c.gpus_per_node = rng.Chance(0.65) ? 8 : 4;
  const int n_canary = rng.Chance(0.7) ? 1 : 2;
  std::vector<int> order(static_cast<std::size_t>(c.nodes));
  for (int i = 0; i < c.nodes; ++i) order[static_cast<std::size_t>(i)] = i;
  for (int i = c.nodes - 1; i > 0; --i)
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(rng.Int(0, i))]);
  c.canary.assign(order.begin(), order.begin() + n_canary);
  std::sort(c.canary.begin(), c.canary.end());
  c.hosts = Hostnames(rng, c.nodes, c.nodes);
  c.model = DrawModel(rng, *c.sku, c.gpus_per_node);
  c.duration_s = std::round(rng.Uniform(360, 600));
  c.release_s = std::round(rng.Uniform(50, 75));
  c.restart_s = rng.Chance(0.3) ? 0 : std::round(rng.Uniform(6, 35));
  c.ramp_s = rng.Uniform(5, 30);
  c.driver = rng.Chance(0.5) ? "580.105.08" : (rng.Chance(0.5) ? "570.172.08" : "550.90.12");
  c.rps = RpsFor(c.model, rng.Uniform(0.3, 0.75));
  c.fleet_sigma = rng.Uniform(0.01, 0.08);
  c.fleet_phi = rng.Uniform(0.95, 0.995);
  c.node_sigma = rng.Uniform(0.02, 0.12);
  c.node_phi = rng.Uniform(0.7, 0.97);
  c.trend = rng.Uniform(-0.15, 0.15);
  c.burst_rate = 1.0 / rng.Uniform(45, 300);
  c.burst_size = rng.Uniform(0.1, 0.6);
  c.burst_len_s = rng.Uniform(3, 30);
  c.least_outstanding = rng.Chance(0.4);
  for (int i = 0; i < c.nodes; ++i) {
    c.node_load.push_back(rng.Uniform(0.95, 1.05));
    c.node_inlet.push_back(rng.Normal(0, 1.0));
  }
  c.inlet_c = rng.Uniform(20, 30);
  c.r_th = c.sku->power_limit_w < 500 ? rng.Uniform(0.11, 0.14) : rng.Uniform(0.05, 0.07);
  c.sw_thermal_offset = rng.Uniform(-1, 1);

  Exposition& e = c.expo;
  const double host = rng.Unit();
  e.host_label = host < 0.6 ? 0 : (host < 0.9 ? 1 : 2);
  e.uuid_lower = rng.Chance(0.05);
  const double names = rng.Unit();
  e.dcgm46_names = names < 0.85 ? 0 : (names < 0.95 ? 1 : 2);
  e.pod_labels = rng.Chance(0.6);
  e.vllm_legacy = rng.Chance(0.15);
  e.vllm_hostname_label = rng.Chance(0.25);
  e.miss_prob = rng.Uniform(0, 0.01);
  e.prof_miss_prob = rng.Uniform(0, 0.005);
  e.throttle_field = rng.Chance(0.9);
  e.link_fields = rng.Chance(0.85);
  e.max_link_fields = e.link_fields && rng.Chance(0.6);
  e.prof_fields = rng.Chance(0.85);
  e.power_limit_fields = rng.Chance(0.7);
  e.temp_limit_field = rng.Chance(0.3);
  e.violation_counters = rng.Chance(0.2);
  e.model_name_label = rng.Chance(0.95);
  e.model_name_dashes = rng.Chance(0.05);
  if (rng.Chance(0.15)) {
    e.exporter_gaps.push_back(
        {rng.Int(0, c.nodes - 1), rng.Uniform(0, c.duration_s - 40), rng.Uniform(5, 30)});
  }
  if (rng.Chance(0.1)) {
    std::vector<int> baseline;
    for (int i = 0; i < c.nodes; ++i) {
      if (std::find(c.canary.begin(), c.canary.end(), i) == c.canary.end()) baseline.push_back(i);
    }
    e.server_restarts.push_back(
        {baseline[static_cast<std::size_t>(rng.Int(0, static_cast<int>(baseline.size()) - 1))],
         rng.Uniform(0, c.duration_s - 60), rng.Uniform(10, 40)});
  }
  return c;
}

int BaselineNode(Rng& rng, const FieldCase& c) {
  for (;;) {
    const int n = rng.Int(0, c.nodes - 1);
    if (std::find(c.canary.begin(), c.canary.end(), n) == c.canary.end()) return n;
  }
}

double Serving(const FieldCase& c) { return c.release_s + c.restart_s; }

// The airflow loss (R_th multiplier) that brings a GPU drawing `power` from
// `inlet` to `target` °C.
double RthFor(const FieldCase& c, double power, double inlet, double target) {
  return (target - inlet) / (c.r_th * std::max(power, 50.0));
}

double SwThermal(const FieldCase& c) { return c.sku->sw_thermal_c + c.sw_thermal_offset; }

void HeatEvent(Rng& rng, FieldCase& c) {
  const double power = SteadyPower(c, c.rps, 1, 1);
  c.heat_start_s = std::round(rng.Uniform(c.release_s - 50, c.release_s + 120));
  c.heat_ramp_s = rng.Uniform(60, 180);
  c.heat_inlet_c = rng.Uniform(10, 20);
  const double target = SwThermal(c) + rng.Uniform(2, 8);
  c.heat_rth = std::clamp(RthFor(c, power, c.inlet_c + c.heat_inlet_c, target), 1.0, 2.2);
  const double warmer = rng.Uniform(0.5, 2.0);
  for (int n : c.canary) c.node_inlet[static_cast<std::size_t>(n)] += warmer;
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "inlet +%.0f °C and R_th ×%.2f over %.0f s from t=%.0f s on every node; canary "
                "racks %.1f °C warmer",
                c.heat_inlet_c, c.heat_rth, c.heat_ramp_s, c.heat_start_s, warmer);
  c.description = buf;
}

void PowerCapRegression(Rng& rng, FieldCase& c, double drop) {
  // The release does more switching per unit of work (other kernels, other
  // data): solve the toggle that puts the power limit at the target clock.
  c.rps = RpsFor(c.model, rng.Uniform(0.5, 0.75));
  c.tensor_scale = rng.Uniform(1.1, 1.5);
  const Sku& sku = *c.sku;
  const double f_t = std::floor(sku.f_max_mhz * (1 - drop) / sku.f_step_mhz) * sku.f_step_mhz;
  c.toggle = ToggleForClock(c.model, sku, c.rps, c.tensor_scale, f_t);
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "release draws more power per token (tensor ×%.2f, switching ×%.2f): clock "
                "held near %.0f MHz (−%.0f %%) by the %.0f W limit",
                c.tensor_scale, c.toggle, f_t, 100 * drop, sku.power_limit_w);
  c.description = buf;
}

void Label(FieldCase& c, Expect e, std::vector<std::string> kinds, std::string scope,
           double onset) {
  c.expect = e;
  c.kinds = std::move(kinds);
  c.scope = std::move(scope);
  c.onset_s = onset;
}

// A regression seen through a fleet-wide traffic change (a quarter of the
// fails): the canary must still fail, for its own reason.
void MaybeShiftLoad(Rng& rng, FieldCase& c) {
  if (c.expect != Expect::kFail || !rng.Chance(0.25)) return;
  c.shift_factor = rng.Chance(0.5) ? rng.Uniform(0.6, 0.9) : rng.Uniform(1.1, 1.3);
  c.shift_start_s = std::round(rng.Uniform(c.release_s + 30, c.release_s + 200));
  c.shift_ramp_s = rng.Uniform(5, 60);
  char buf[96];
  std::snprintf(buf, sizeof buf, "; fleet traffic ×%.2f from t=%.0f s", c.shift_factor,
                c.shift_start_s);
  c.description += buf;
}

void Specialise(Rng& rng, FieldCase& c) {
  char buf[240];
  switch (c.cls) {
    case CaseClass::kAa:
      // Must pass: a fleet with headroom and ordinary imbalance (the wide
      // load ranges are the confounder classes').
      c.rps = RpsFor(c.model, rng.Uniform(0.3, 0.65));
      c.node_sigma = rng.Uniform(0.02, 0.06);
      c.burst_size = rng.Uniform(0.1, 0.35);
      Label(c, Expect::kPass, {}, "", c.release_s);
      c.description = "healthy release, same version: load noise, bursts, scrape losses";
      break;
    case CaseClass::kHeatEvent:
      HeatEvent(rng, c);
      Label(c, Expect::kNotFail, {}, "", c.release_s);
      break;
    case CaseClass::kFacilityPowerCap: {
      const double power = SteadyPower(c, c.rps, 1, 1);
      c.cap_limit_w = std::round(std::max(c.sku->power_min_w, power * rng.Uniform(0.7, 0.9)));
      c.cap_start_s = std::round(rng.Uniform(c.release_s - 40, c.release_s + 150));
      c.cap_in_band = rng.Chance(0.4);
      Label(c, Expect::kNotFail, {}, "", c.release_s);
      std::snprintf(buf, sizeof buf,
                    "facility caps every GPU at %.0f W (%s) from t=%.0f s; the fleet drew %.0f W",
                    c.cap_limit_w, c.cap_in_band ? "in band" : "out of band", c.cap_start_s, power);
      c.description = buf;
      break;
    }
    case CaseClass::kLoadShift:
      c.shift_factor = rng.Chance(0.5) ? rng.Uniform(0.35, 0.7) : rng.Uniform(1.3, 1.9);
      // The fleet has the capacity for the shift (a saturated fleet is an
      // outage, not a canary question).
      if (c.shift_factor > 1) c.rps = RpsFor(c.model, rng.Uniform(0.35, 0.75)) / c.shift_factor;
      c.shift_start_s = std::round(rng.Uniform(c.release_s + 20, c.release_s + 200));
      c.shift_ramp_s = rng.Uniform(5, 60);
      Label(c, Expect::kNotFail, {}, "", c.release_s);
      std::snprintf(buf, sizeof buf, "traffic ×%.2f on every node from t=%.0f s over %.0f s",
                    c.shift_factor, c.shift_start_s, c.shift_ramp_s);
      c.description = buf;
      break;
    case CaseClass::kLoadMismatch:
      if (rng.Chance(0.5)) {
        // A heavier weight for the canary in the balancer; the busier node
        // stays below saturation (a saturated node is a capacity problem).
        const double f = rng.Uniform(1.3, 1.9);
        c.rps = RpsFor(c.model, rng.Uniform(0.35, 0.75)) / f;
        for (int n : c.canary) c.node_load[static_cast<std::size_t>(n)] *= f;
        std::snprintf(buf, sizeof buf, "canary gets ×%.2f the traffic of a baseline node", f);
      } else {
        int drained = 0;
        for (int n = 0; n < c.nodes; ++n) {
          if (std::find(c.canary.begin(), c.canary.end(), n) != c.canary.end()) continue;
          if (drained * 2 + 2 <= c.nodes - static_cast<int>(c.canary.size()) && rng.Chance(0.6)) {
            c.node_load[static_cast<std::size_t>(n)] = rng.Uniform(0.0, 0.3);
            ++drained;
          }
        }
        std::snprintf(buf, sizeof buf, "%d baseline nodes partly drained (0-30 %% traffic)",
                      drained);
      }
      c.description = buf;
      Label(c, Expect::kNotFail, {}, "", c.release_s);
      break;
    case CaseClass::kMissingFields: {
      Exposition& e = c.expo;
      std::string what;
      for (int k = 0; k < 4; ++k) {
        switch (rng.Int(0, 9)) {
          case 0:
            e.throttle_field = false;
            what += " no-112";
            break;
          case 1:
            e.max_link_fields = false;
            what += " no-max-link";
            break;
          case 2:
            e.prof_fields = false;
            what += " no-prof";
            break;
          case 3:
            e.host_label = rng.Int(1, 2);
            what += " hostname-variant";
            break;
          case 4:
            e.model_name_label = false;
            what += " no-modelName";
            break;
          case 5:
            e.dcgm46_names = rng.Int(1, 2);
            what += " dcgm46-names";
            break;
          case 6:
            e.vllm_legacy = true;
            what += " vllm-0.10";
            break;
          case 7:
            e.exporter_gaps.push_back({c.canary[0],
                                       std::round(rng.Uniform(c.release_s + 30, c.duration_s - 60)),
                                       rng.Uniform(10, 40)});
            what += " canary-exporter-restart";
            break;
          case 8:
            e.miss_prob = rng.Uniform(0.02, 0.04);
            what += " lossy-scrapes";
            break;
          default:
            e.power_limit_fields = false;
            e.link_fields = false;
            e.max_link_fields = false;
            what += " no-limits-no-links";
            break;
        }
      }
      c.description = "healthy release;" + what;
      Label(c, Expect::kNotFail, {}, "", c.release_s);
      break;
    }
    case CaseClass::kPowerCapRegression:
    case CaseClass::kPowerCapNoReasons:
      PowerCapRegression(rng, c, rng.Uniform(0.10, 0.35));
      c.expo.throttle_field = c.cls == CaseClass::kPowerCapRegression;
      Label(c, Expect::kFail, {"power_cap"}, "release", Serving(c));
      break;
    case CaseClass::kSoftwareSlower:
      c.sw_factor = 1 + rng.Uniform(0.05, 0.30);
      Label(c, Expect::kFail, {"software_regression"}, "release", Serving(c));
      std::snprintf(buf, sizeof buf, "release %.0f %% slower per step (kernels), no hardware cause",
                    100 * (c.sw_factor - 1));
      c.description = buf;
      break;
    case CaseClass::kHwSlowdownOneGpu: {
      HwEpisode h;
      h.node = c.canary[0];
      h.gpu = rng.Int(0, c.gpus_per_node - 1);
      h.start_s = std::round(Serving(c) + rng.Uniform(5, 10));
      h.length_s = std::round(rng.Uniform(4, 12));
      h.factor = rng.Uniform(0.25, 0.5);
      const double b = rng.Unit();
      h.bits = b < 0.4 ? kReasonHwSlowdown | kReasonHwPowerBrake
                       : (b < 0.7 ? kReasonHwSlowdown | kReasonHwThermal : kReasonHwSlowdown);
      c.hw.push_back(h);
      c.expo.throttle_field = true;
      std::vector<std::string> kinds = {"hw_slowdown"};
      if ((h.bits & kReasonHwPowerBrake) != 0) kinds.push_back("power_brake");
      if ((h.bits & kReasonHwThermal) != 0) kinds.push_back("thermal_throttle");
      Label(c, Expect::kFail, kinds, "release", h.start_s);
      std::snprintf(buf, sizeof buf, "canary GPU %d in HW slowdown (0x%x, clock ×%.2f) for %.0f s",
                    h.gpu, h.bits, h.factor, h.length_s);
      c.description = buf;
      break;
    }
    case CaseClass::kPcieDowntrain:
      c.pcie_gpu = rng.Int(0, c.gpus_per_node - 1);
      c.pcie_width = rng.Chance(0.7) ? 8 : 4;
      c.pcie_gen = rng.Chance(0.7) ? 5 : 4;
      c.expo.max_link_fields = false;
      c.expo.link_fields = true;
      Label(c, Expect::kFail, {"pcie_downtrain"}, "release", c.release_s);
      std::snprintf(buf, sizeof buf,
                    "canary GPU %d retrains at Gen%d x%d at the release; peers Gen5 x16; no "
                    "max-link fields",
                    c.pcie_gpu, c.pcie_gen, c.pcie_width);
      c.description = buf;
      break;
    case CaseClass::kCanaryIdle:
      c.idle_mode = rng.Chance(0.5) ? 1 : 2;
      Label(c, Expect::kFail, {"software_regression", "low_occupancy"}, "release", c.release_s);
      c.description = c.idle_mode == 1
                          ? "release up but gets no work (GPUs idle, server metrics flat)"
                          : "release never becomes ready (no server metrics, GPUs idle)";
      break;
    case CaseClass::kXidCrashloop:
      c.xid = rng.Chance(0.6) ? 31 : 13;
      c.xid_period_s = rng.Uniform(60, 120);
      c.xid_down_s = rng.Uniform(15, 35);
      Label(c, Expect::kFail, {"xid_errors", "software_regression"}, "release",
            std::round(Serving(c) + rng.Uniform(10, 60)));
      std::snprintf(buf, sizeof buf, "Xid %d on a canary GPU, engine restarts every %.0f s", c.xid,
                    c.xid_period_s);
      c.description = buf;
      break;
    case CaseClass::kBaselineNodeHot: {
      c.hot_node = BaselineNode(rng, c);
      c.hot_start_s = std::round(rng.Uniform(c.release_s - 30, c.release_s + 120));
      const double power = SteadyPower(c, c.rps, 1, 1);
      c.hot_rth =
          std::clamp(RthFor(c, power, c.inlet_c, SwThermal(c) + rng.Uniform(3, 8)), 1.3, 3.0);
      Label(c, Expect::kNotFail, {}, "", c.release_s);
      std::snprintf(buf, sizeof buf, "baseline node %s loses airflow (R_th ×%.2f) at t=%.0f s",
                    c.hosts[static_cast<std::size_t>(c.hot_node)].c_str(), c.hot_rth,
                    c.hot_start_s);
      c.description = buf;
      break;
    }
    case CaseClass::kCanaryNodePreThrottled: {
      const int node = c.canary[0];
      c.node = c.hosts[static_cast<std::size_t>(node)];
      if (rng.Chance(0.6)) {
        c.hot_node = node;
        c.hot_start_s = -600;  // long before the recording
        c.rps = RpsFor(c.model, rng.Uniform(0.5, 0.85));
        const double power = SteadyPower(c, c.rps, 1, 1);
        c.hot_rth =
            std::clamp(RthFor(c, power, c.inlet_c, SwThermal(c) + rng.Uniform(3, 8)), 1.3, 3.0);
        Label(c, Expect::kNotFail, {"thermal_throttle"}, "node", 0);
        std::snprintf(buf, sizeof buf,
                      "canary node lost airflow before the recording (R_th ×%.2f): SW thermal "
                      "before and after the release",
                      c.hot_rth);
      } else {
        const int gpu = rng.Int(0, c.gpus_per_node - 1);
        const double period = rng.Uniform(25, 50);
        const double length = std::round(rng.Uniform(4, 8));
        const double factor = rng.Uniform(0.1, 0.4);
        const double first = rng.Uniform(5, 20);
        for (int k = 0; first + k * period < c.duration_s; ++k) {
          c.hw.push_back({node, gpu, std::round(first + k * period), length, factor,
                          kReasonHwSlowdown | kReasonHwPowerBrake});
        }
        Label(c, Expect::kNotFail, {"power_brake", "hw_slowdown"}, "node", 0);
        std::snprintf(buf, sizeof buf,
                      "canary GPU %d power-brakes (0x88) for %.0f s every %.0f s, before and "
                      "after the release",
                      gpu, length, period);
      }
      c.description = buf;
      c.scope = "node";
      break;
    }
  }
}

// The classes in an order that spreads each over the sequence, so that the
// first N cases hold every class in about its proportion.
std::vector<CaseClass> Sequence() {
  std::vector<std::pair<double, CaseClass>> slots;
  for (const ClassInfo& i : kClasses) {
    for (int j = 0; j < i.weight; ++j) {
      slots.emplace_back((j + 0.5) / i.weight, i.cls);
    }
  }
  std::stable_sort(slots.begin(), slots.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<CaseClass> out;
  out.reserve(slots.size());
  for (const auto& s : slots) out.push_back(s.second);
  return out;
}

}  // namespace

std::string_view ClassName(CaseClass c) { return Info(c).name; }
std::string_view ClassSource(CaseClass c) { return Info(c).source; }

const std::vector<CaseClass>& AllClasses() {
  static const std::vector<CaseClass> all = [] {
    std::vector<CaseClass> v;
    for (const ClassInfo& i : kClasses) v.push_back(i.cls);
    return v;
  }();
  return all;
}

std::string_view ExpectName(Expect e) {
  switch (e) {
    case Expect::kPass:
      return "pass";
    case Expect::kNotFail:
      return "not_fail";
    case Expect::kFail:
      return "fail";
  }
  return "?";
}

double SteadyBoardPower(const ModelProfile& m, const Sku& sku, double rps, double toggle,
                        double tensor_scale) {
  EngineState st;
  EngineSecond sec;
  for (int i = 0; i < 200; ++i) sec = StepEngine(m, rps, 1, 1, st);
  const Activity a = ActivityOf(m, sec, 1, tensor_scale, toggle);
  return BoardPower(sku, Board{}, a, sku.f_max_mhz, 60);
}

double SteadyPower(const FieldCase& c, double rps, double toggle, double tensor_scale) {
  return SteadyBoardPower(c.model, *c.sku, rps, toggle, tensor_scale);
}

double ToggleForClock(const ModelProfile& m, const Sku& sku, double rps, double tensor_scale,
                      double f_t) {
  const double ratio = sku.f_max_mhz / f_t;
  EngineState st;
  EngineSecond sec;
  for (int i = 0; i < 200; ++i) sec = StepEngine(m, rps, ratio, 1, st);
  const Activity a = ActivityOf(m, sec, ratio, tensor_scale, 1);
  const double v = (sku.v_min + (sku.v_max - sku.v_min) * (f_t - sku.f_idle_mhz) /
                                    (sku.f_max_mhz - sku.f_idle_mhz)) /
                   sku.v_max;
  const double temp = 65;
  const double fixed = sku.idle_power_w * (1 + 0.006 * (temp - 35)) + sku.hbm_power_w * a.dram;
  const double per_a = sku.dyn_power_w * (f_t / sku.f_max_mhz) * v * v;
  const double need_a = (0.985 * sku.power_limit_w - fixed) / per_a;
  return std::clamp((need_a - 0.45 * a.sm) / (0.75 * std::max(a.tensor, 0.05)), 1.0, 6.0);
}

std::optional<CaseClass> ParseClass(std::string_view name) {
  for (const ClassInfo& i : kClasses) {
    if (i.name == name) return i.cls;
  }
  return std::nullopt;
}

std::vector<FieldCase> MakeSuite(std::uint64_t seed, int cases, std::optional<CaseClass> only) {
  const std::vector<CaseClass> seq = only ? std::vector<CaseClass>{*only} : Sequence();
  std::map<CaseClass, int> counts;
  std::vector<FieldCase> out;
  for (int i = 0; i < cases; ++i) {
    const CaseClass cls = seq[static_cast<std::size_t>(i) % seq.size()];
    const std::uint64_t case_seed =
        seed * std::uint64_t{1000003} + static_cast<std::uint64_t>(i) * std::uint64_t{7919} + 17;
    Rng rng(case_seed);
    FieldCase c = DrawBase(rng);
    c.cls = cls;
    c.seed = case_seed;
    c.name = std::string(ClassName(cls)) + "-" + Two(++counts[cls]);
    Specialise(rng, c);
    MaybeShiftLoad(rng, c);
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace gpucanary::eval::field
