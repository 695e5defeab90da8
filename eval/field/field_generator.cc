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

#include "eval/field/field_random.h"
#include "model/label_view.h"
#include "model/metric_type.h"
#include "recording/recording_writer.h"

namespace gpucanary::eval::field {

namespace {

using model::LabelView;
using model::MetricType;
using recording::RecordingWriter;

// ---------------------------------------------------------------------------
// dcgm-exporter's families: the 26 rows of default-counters.csv that a GPU
// serves (reference §1.2; VGPU_LICENSE is blank on bare metal, so absent),
// plus the opt-in rows a canary setup adds (§1.2 "Not in either file"), in
// DCGM field-id order, as the exporter renders them (§1.3).

enum class Group : std::uint8_t {
  kCore,
  kThrottle,    // 112
  kTempLimit,   // 153
  kPowerLimit,  // 160, 164
  kLink,        // 237, 238
  kMaxLink,     // 235, 236
  kViolation,   // 240, 241
  kXid,         // 230: absent until the first Xid
  kProf,        // 1001-1010
};

enum class Value : std::uint8_t {
  kSmClock,
  kMemClock,
  kReasons,
  kMemTemp,
  kGpuTemp,
  kTempMargin,
  kPower,
  kEnergy,
  kMgmtLimit,
  kEnforcedLimit,
  kReplays,
  kGpuUtil,
  kMemCopyUtil,
  kZero,
  kXid,
  kMaxGen,
  kMaxWidth,
  kGen,
  kWidth,
  kPowerViolation,
  kThermalViolation,
  kFbFree,
  kFbUsed,
  kFbReserved,
  kNvlink,
  kGrEngine,
  kSmActive,
  kOccupancy,
  kTensor,
  kDram,
  kPcieTx,
  kPcieRx,
};

struct Family {
  int id;
  std::string_view name;    // as in the shipped CSVs
  std::string_view name46;  // DCGM 4.6 name ("" = unchanged)
  MetricType type;
  bool is_double;  // DOUBLE field: printed with %f
  Group group;
  Value value;
  std::string_view help;
};

constexpr Family kFamilies[] = {
    {100, "DCGM_FI_DEV_SM_CLOCK", "", MetricType::kGauge, false, Group::kCore, Value::kSmClock,
     "SM clock frequency (in MHz)."},
    {101, "DCGM_FI_DEV_MEM_CLOCK", "", MetricType::kGauge, false, Group::kCore, Value::kMemClock,
     "Memory clock frequency (in MHz)."},
    {112, "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS",
     MetricType::kGauge, false, Group::kThrottle, Value::kReasons,
     "Current clock throttle reasons."},
    {140, "DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_MEMORY_TEMP_CELSIUS", MetricType::kGauge, false,
     Group::kCore, Value::kMemTemp, "Memory temperature (in C)."},
    {150, "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_GPU_TEMP_CELSIUS", MetricType::kGauge, false,
     Group::kCore, Value::kGpuTemp, "GPU temperature (in C)."},
    {153, "DCGM_FI_DEV_GPU_TEMP_LIMIT", "DCGM_FI_DEV_GPU_TEMP_MARGIN_CELSIUS", MetricType::kGauge,
     false, Group::kTempLimit, Value::kTempMargin, "GPU temperature margin to T.Limit (in C)."},
    {155, "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_BOARD_POWER_WATTS", MetricType::kGauge, true,
     Group::kCore, Value::kPower, "Power draw (in W)."},
    {156, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "", MetricType::kCounter, false, Group::kCore,
     Value::kEnergy, "Total energy consumption since boot (in mJ)."},
    {160, "DCGM_FI_DEV_POWER_MGMT_LIMIT", "DCGM_FI_DEV_BOARD_POWER_LIMIT_REQUESTED_WATTS",
     MetricType::kGauge, true, Group::kPowerLimit, Value::kMgmtLimit,
     "Power management limit (in W)."},
    {164, "DCGM_FI_DEV_ENFORCED_POWER_LIMIT", "DCGM_FI_DEV_BOARD_POWER_LIMIT_ENFORCED_WATTS",
     MetricType::kGauge, true, Group::kPowerLimit, Value::kEnforcedLimit,
     "Effective power limit that the driver enforces after taking into account all limiters "
     "(in W)."},
    {202, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_PCIE_REPLAY_TOTAL", MetricType::kCounter,
     false, Group::kCore, Value::kReplays, "Total number of PCIe retries."},
    {203, "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_UTIL_RATIO", MetricType::kGauge, false,
     Group::kCore, Value::kGpuUtil, "GPU utilization (in %)."},
    {204, "DCGM_FI_DEV_MEM_COPY_UTIL", "", MetricType::kGauge, false, Group::kCore,
     Value::kMemCopyUtil, "Memory utilization (in %)."},
    {206, "DCGM_FI_DEV_ENC_UTIL", "", MetricType::kGauge, false, Group::kCore, Value::kZero,
     "Encoder utilization (in %)."},
    {207, "DCGM_FI_DEV_DEC_UTIL", "", MetricType::kGauge, false, Group::kCore, Value::kZero,
     "Decoder utilization (in %)."},
    {230, "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_XID_ERROR", MetricType::kGauge, false, Group::kXid,
     Value::kXid, "Value of the last XID error encountered."},
    {235, "DCGM_FI_DEV_PCIE_MAX_LINK_GEN", "", MetricType::kGauge, false, Group::kMaxLink,
     Value::kMaxGen, "PCIe Max Link Generation."},
    {236, "DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH", "", MetricType::kGauge, false, Group::kMaxLink,
     Value::kMaxWidth, "PCIe Max Link Width."},
    {237, "DCGM_FI_DEV_PCIE_LINK_GEN", "", MetricType::kGauge, false, Group::kLink, Value::kGen,
     "PCIe Current Link Generation."},
    {238, "DCGM_FI_DEV_PCIE_LINK_WIDTH", "", MetricType::kGauge, false, Group::kLink, Value::kWidth,
     "PCIe Current Link Width."},
    {240, "DCGM_FI_DEV_POWER_VIOLATION", "", MetricType::kCounter, false, Group::kViolation,
     Value::kPowerViolation, "Throttling duration due to power constraints (in ns)."},
    {241, "DCGM_FI_DEV_THERMAL_VIOLATION", "", MetricType::kCounter, false, Group::kViolation,
     Value::kThermalViolation, "Throttling duration due to thermal constraints (in ns)."},
    {251, "DCGM_FI_DEV_FB_FREE", "", MetricType::kGauge, false, Group::kCore, Value::kFbFree,
     "Framebuffer memory free (in MiB)."},
    {252, "DCGM_FI_DEV_FB_USED", "", MetricType::kGauge, false, Group::kCore, Value::kFbUsed,
     "Framebuffer memory used (in MiB)."},
    {253, "DCGM_FI_DEV_FB_RESERVED", "", MetricType::kGauge, false, Group::kCore,
     Value::kFbReserved, "Framebuffer memory reserved (in MiB)."},
    {393, "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "", MetricType::kCounter, false, Group::kCore,
     Value::kZero, "Number of remapped rows for uncorrectable errors"},
    {394, "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "", MetricType::kCounter, false, Group::kCore,
     Value::kZero, "Number of remapped rows for correctable errors"},
    {395, "DCGM_FI_DEV_ROW_REMAP_FAILURE", "", MetricType::kGauge, false, Group::kCore,
     Value::kZero, "Whether remapping of rows has failed"},
    {449, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "", MetricType::kCounter, false, Group::kCore,
     Value::kNvlink, "Total number of NVLink bandwidth counters for all lanes."},
    {1001, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO", MetricType::kGauge,
     true, Group::kProf, Value::kGrEngine, "Ratio of time the graphics engine is active."},
    {1002, "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_SM_UTIL_RATIO", MetricType::kGauge, true,
     Group::kProf, Value::kSmActive, "The ratio of cycles an SM has at least 1 warp assigned."},
    {1003, "DCGM_FI_PROF_SM_OCCUPANCY", "DCGM_FI_PROF_SM_OCCUPANCY_RATIO", MetricType::kGauge, true,
     Group::kProf, Value::kOccupancy, "The ratio of number of warps resident on an SM."},
    {1004, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_TENSOR_UTIL_RATIO", MetricType::kGauge,
     true, Group::kProf, Value::kTensor, "Ratio of cycles the tensor (HMMA) pipe is active."},
    {1005, "DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_PROF_DRAM_UTIL_RATIO", MetricType::kGauge, true,
     Group::kProf, Value::kDram,
     "Ratio of cycles the device memory interface is active sending or receiving data."},
    {1009, "DCGM_FI_PROF_PCIE_TX_BYTES", "", MetricType::kGauge, false, Group::kProf,
     Value::kPcieTx,
     "The rate of data transmitted over the PCIe bus - including both protocol headers and data "
     "payloads - in bytes per second."},
    {1010, "DCGM_FI_PROF_PCIE_RX_BYTES", "", MetricType::kGauge, false, Group::kProf,
     Value::kPcieRx,
     "The rate of data received over the PCIe bus - including both protocol headers and data "
     "payloads - in bytes per second."},
};

// The bus ids of an HGX H100 8-GPU board (reference §1.3, the h100x8 sample).
constexpr std::array<std::string_view, 8> kBusIds = {"53", "64", "75", "86",
                                                     "97", "A8", "B9", "CA"};

// vLLM's histogram buckets (src/vocab/testdata/vllm.prom, vllm_legacy.prom).
constexpr double kItlBuckets[] = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
                                  0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
constexpr double kTtftBuckets[] = {0.001, 0.005, 0.01, 0.02,  0.04,  0.06,  0.08, 0.1,
                                   0.25,  0.5,   0.75, 1.0,   2.5,   5.0,   7.5,  10.0,
                                   20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
constexpr double kE2eBuckets[] = {0.3,  0.5,   0.8,   1.0,   1.5,   2.0,    2.5,
                                  5.0,  10.0,  15.0,  20.0,  30.0,  40.0,   50.0,
                                  60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

// Lognormal CDF with mean `mean` and log-sd `sigma`.
double LogNormalCdf(double x, double mean, double sigma) {
  if (x <= 0 || mean <= 0) return 0;
  const double mu = std::log(mean) - 0.5 * sigma * sigma;
  return 0.5 * std::erfc(-(std::log(x) - mu) / (sigma * std::sqrt(2.0)));
}

struct Histogram {
  std::vector<double> counts;  // cumulative per bucket (without +Inf)
  double count = 0, sum = 0;
  void Reset() {
    std::fill(counts.begin(), counts.end(), 0.0);
    count = sum = 0;
  }
};

// Adds n observations whose CDF is `cdf`, mean `mean`, to `h`.
template <typename Cdf>
void Observe(Rng& rng, std::span<const double> bounds, Histogram& h, std::int64_t n, double mean,
             double rel_sd, const Cdf& cdf) {
  if (n <= 0) return;
  std::int64_t left = n;
  double below = 0;
  for (std::size_t i = 0; i < bounds.size() && left > 0; ++i) {
    const double f = std::min(1.0, cdf(bounds[i]));
    const double p = below >= 1 ? 1.0 : std::clamp((f - below) / (1 - below), 0.0, 1.0);
    const std::int64_t k = rng.Binomial(left, p);
    for (std::size_t j = i; j < bounds.size(); ++j) h.counts[j] += static_cast<double>(k);
    left -= k;
    below = f;
  }
  h.count += static_cast<double>(n);
  const double nd = static_cast<double>(n);
  h.sum += std::max(0.0, nd * mean * (1 + rng.Normal(0, rel_sd / std::sqrt(nd))));
}

double Round6(double v) { return std::round(v * 1e6) / 1e6; }

std::string Hex(Rng& rng, int digits) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  for (int i = 0; i < digits; ++i) s += kDigits[rng.Bits() & 15];
  return s;
}

std::string Uuid(Rng& rng) {
  return "GPU-" + Hex(rng, 8) + "-" + Hex(rng, 4) + "-" + Hex(rng, 4) + "-" + Hex(rng, 4) + "-" +
         Hex(rng, 12);
}

std::string PodSuffix(Rng& rng) {
  static constexpr char kChars[] = "bcdfghjklmnpqrstvwxz2456789";
  std::string s;
  for (int i = 0; i < 5; ++i) s += kChars[rng.Bits() % (sizeof kChars - 1)];
  return s;
}

std::string_view XidMessage(int xid) {
  switch (xid) {
    case 13:
      return "Graphics Engine Exception";
    case 31:
      return "GPU memory page fault";
    default:
      return "Unknown Error";
  }
}

// Smooth 0 → 1 from `start` over `ramp` seconds.
double Ramp(double t, double start, double ramp) {
  if (start < -1e8 || t <= start) return 0;
  return std::min(1.0, (t - start) / std::max(1.0, ramp));
}

// ---------------------------------------------------------------------------

struct GpuSim {
  Board board;
  GpuState state;
  Activity act;
  double occupancy = 0;
  double act_scale = 1;  // this board's share of the engine's work
  double busy_clock = 0;
  double energy_mj = 0;
  double replays = 0;
  double power_violation_ns = 0, thermal_violation_ns = 0;
  double fb_used = 0;
  double pcie_rx = 0, pcie_tx = 0, nvlink = 0;
  double gr_engine = 0;
  double reported_power = 0;
  double limit_w = 0;  // enforced this second
  int xid = 0;
  int gen = 5, width = 16;
  std::string uuid, bus, device, index;
};

struct EngineSim {
  EngineState state;
  EngineSecond last;
  Histogram itl, ttft, e2e;
  double gen = 0, prompt = 0, stop = 0, length = 0, preempt = 0;
  std::string pod;
  std::string engine;    // engine label ("0", ...)
  std::string instance;  // scrape target
};

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
  Status WriteDcgm(RecordingWriter& w, NodeSim& n, std::int64_t ts_ms);
  Status WriteVllm(RecordingWriter& w, NodeSim& n, std::int64_t ts_ms);
  double FamilyValue(const Family& f, const GpuSim& g) const;
  bool HasGroup(Group group, const NodeSim& n) const;
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
      s.board.dyn_scale = rng_.Normal(1.0, 0.03);
      s.board.leak_scale = rng_.Normal(1.0, 0.08);
      s.board.r_th = c_.r_th * rng_.Normal(1.0, 0.06);
      s.board.tau_s = rng_.Uniform(25, 60);
      s.board.sensor_gain = rng_.Normal(1.0, 0.01);
      s.board.mem_temp_offset = rng_.Uniform(3, 9);
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
      const std::string bus = c_.gpus_per_node == 8
                                  ? std::string(kBusIds[static_cast<std::size_t>(g)])
                                  : std::string(kBusIds[2 * static_cast<std::size_t>(g)]);
      s.bus = "00000000:" + bus + ":00.0";
      n.gpus.push_back(std::move(s));
    }
    const std::string deploy =
        c_.model.model_name.find("70B") != std::string::npos
            ? "llama-70b"
            : (c_.model.model_name.find("8B") != std::string::npos ? "llama-8b" : "qwen-32b");
    for (int e = 0; e < engines; ++e) {
      EngineSim es;
      es.itl.counts.assign(std::size(kItlBuckets), 0);
      es.ttft.counts.assign(std::size(kTtftBuckets), 0);
      es.e2e.counts.assign(std::size(kE2eBuckets), 0);
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

bool Generator::HasGroup(Group group, const NodeSim& n) const {
  const Exposition& e = c_.expo;
  switch (group) {
    case Group::kCore:
      return true;
    case Group::kThrottle:
      return e.throttle_field;
    case Group::kTempLimit:
      return e.temp_limit_field;
    case Group::kPowerLimit:
      return e.power_limit_fields;
    case Group::kLink:
      return e.link_fields;
    case Group::kMaxLink:
      return e.max_link_fields;
    case Group::kViolation:
      return e.violation_counters;
    case Group::kXid:
      return std::any_of(n.gpus.begin(), n.gpus.end(), [](const GpuSim& g) { return g.xid != 0; });
    case Group::kProf:
      return e.prof_fields;
  }
  return false;
}

double Generator::FamilyValue(const Family& f, const GpuSim& g) const {
  const Sku& sku = *c_.sku;
  const GpuState& s = g.state;
  switch (f.value) {
    case Value::kSmClock:
      return s.clock_mhz;
    case Value::kMemClock:
      return sku.mem_clock_mhz > 3200 ? sku.mem_clock_mhz - 2 : sku.mem_clock_mhz;
    case Value::kReasons:
      return static_cast<double>(s.reasons);
    case Value::kMemTemp:
      return std::round(s.temp_c + g.board.mem_temp_offset + 10 * g.act.dram);
    case Value::kGpuTemp:
      return std::round(s.temp_c);
    case Value::kTempMargin:
      return std::round(sku.sw_thermal_c + c_.sw_thermal_offset - s.temp_c);
    case Value::kPower:
      return Round6(g.reported_power);
    case Value::kEnergy:
      return std::round(g.energy_mj);
    case Value::kMgmtLimit:  // both limits are set per second in WriteDcgm
    case Value::kEnforcedLimit:
      return sku.power_limit_w;
    case Value::kReplays:
      return g.replays;
    case Value::kGpuUtil:
      return std::round(100 * std::min(1.0, g.act.duty * 1.02));
    case Value::kMemCopyUtil:
      return std::round(100 * std::min(1.0, g.act.dram * 0.95));
    case Value::kZero:
      return 0;
    case Value::kXid:
      return g.xid;
    case Value::kMaxGen:
      return sku.pcie_gen;
    case Value::kMaxWidth:
      return sku.pcie_width;
    case Value::kGen:
      // Idle links drop to Gen1 to save power (leptonai RTX capture).
      return g.act.duty < 0.02 && g.pcie_rx < 1e7 ? 1 : g.gen;
    case Value::kWidth:
      return g.width;
    case Value::kPowerViolation:
      return g.power_violation_ns;
    case Value::kThermalViolation:
      return g.thermal_violation_ns;
    case Value::kFbFree:
      return std::round(sku.fb_total_mib - sku.fb_reserved_mib - g.fb_used);
    case Value::kFbUsed:
      return std::round(g.fb_used);
    case Value::kFbReserved:
      return sku.fb_reserved_mib;
    case Value::kNvlink:
      return std::round(g.nvlink);
    case Value::kGrEngine:
      return Round6(g.gr_engine);
    case Value::kSmActive:
      return Round6(g.act.sm);
    case Value::kOccupancy:
      return Round6(g.occupancy);
    case Value::kTensor:
      return Round6(g.act.tensor);
    case Value::kDram:
      return Round6(g.act.dram);
    case Value::kPcieTx:
      return std::round(g.pcie_tx);
    case Value::kPcieRx:
      return std::round(g.pcie_rx);
  }
  return 0;
}

Status Generator::WriteDcgm(RecordingWriter& w, NodeSim& n, std::int64_t ts_ms) {
  const Exposition& e = c_.expo;
  const std::string& host = c_.hosts[static_cast<std::size_t>(n.index)];
  const bool lower_host = e.host_label == 1 || (e.host_label == 2 && n.canary);
  const bool names46 = e.dcgm46_names == 1 || (e.dcgm46_names == 2 && n.canary);
  std::string model(c_.sku->model_name);
  if (e.model_name_dashes) std::replace(model.begin(), model.end(), ' ', '-');
  const bool prof_blank = rng_.Chance(e.prof_miss_prob);
  for (const Family& f : kFamilies) {
    if (!HasGroup(f.group, n)) continue;
    if (f.group == Group::kProf && prof_blank) continue;
    const std::string_view name = names46 && !f.name46.empty() ? f.name46 : f.name;
    GC_RETURN_IF_ERROR(w.DeclareFamily(name, f.type, f.help));
    for (std::size_t gi = 0; gi < n.gpus.size(); ++gi) {
      const GpuSim& g = n.gpus[gi];
      if (f.group == Group::kXid && g.xid == 0) continue;  // blank until the first Xid
      const EngineSim& eng = n.engines[gi / static_cast<std::size_t>(c_.model.tp)];
      const std::string xid_code = std::to_string(g.xid);
      std::vector<LabelView> labels;
      labels.push_back({"gpu", g.index});
      labels.push_back({e.uuid_lower ? "uuid" : "UUID", g.uuid});
      labels.push_back({"pci_bus_id", g.bus});
      labels.push_back({"device", g.device});
      if (e.model_name_label) labels.push_back({"modelName", model});
      labels.push_back({lower_host ? "hostname" : "Hostname", host});
      labels.push_back({"DCGM_FI_DRIVER_VERSION", c_.driver});
      const bool pod = e.pod_labels && n.up;
      if (pod) labels.push_back({"container", "vllm"});
      if (f.group == Group::kXid) {
        labels.push_back({"err_code", xid_code});
        labels.push_back({"err_msg", XidMessage(g.xid)});
      }
      if (pod) {
        labels.push_back({"namespace", "inference"});
        labels.push_back({"pod", eng.pod});
      }
      double v = FamilyValue(f, g);
      if (f.value == Value::kEnforcedLimit) v = g.limit_w;
      if (f.value == Value::kMgmtLimit) v = c_.cap_in_band ? g.limit_w : c_.sku->power_limit_w;
      if (f.is_double) v = Round6(v);
      GC_RETURN_IF_ERROR(w.Append(name, labels, v, ts_ms));
    }
  }
  return Status::Ok();
}

Status Generator::WriteVllm(RecordingWriter& w, NodeSim& n, std::int64_t ts_ms) {
  const Exposition& e = c_.expo;
  const std::string& host = c_.hosts[static_cast<std::size_t>(n.index)];
  const bool legacy = e.vllm_legacy;
  const std::string_view itl_name =
      legacy ? "vllm:time_per_output_token_seconds" : "vllm:inter_token_latency_seconds";
  const std::string_view kv_name =
      legacy ? "vllm:gpu_cache_usage_perc" : "vllm:kv_cache_usage_perc";
  GC_RETURN_IF_ERROR(w.DeclareFamily("vllm:num_requests_running", MetricType::kGauge,
                                     "Number of requests in model execution batches."));
  GC_RETURN_IF_ERROR(w.DeclareFamily("vllm:num_requests_waiting", MetricType::kGauge,
                                     "Number of requests waiting to be processed."));
  GC_RETURN_IF_ERROR(w.DeclareFamily(kv_name, MetricType::kGauge,
                                     legacy ? "GPU KV-cache usage. 1 means 100 percent usage."
                                            : "KV-cache usage. 1 means 100 percent usage."));
  GC_RETURN_IF_ERROR(w.DeclareFamily("vllm:num_preemptions_total", MetricType::kCounter,
                                     "Cumulative number of preemption from the engine."));
  GC_RETURN_IF_ERROR(w.DeclareFamily("vllm:prompt_tokens_total", MetricType::kCounter,
                                     "Number of prefill tokens processed."));
  GC_RETURN_IF_ERROR(w.DeclareFamily("vllm:generation_tokens_total", MetricType::kCounter,
                                     "Number of generation tokens processed."));
  GC_RETURN_IF_ERROR(w.DeclareFamily("vllm:request_success_total", MetricType::kCounter,
                                     "Count of successfully processed requests."));
  GC_RETURN_IF_ERROR(w.DeclareFamily("vllm:time_to_first_token_seconds", MetricType::kHistogram,
                                     "Histogram of time to first token in seconds."));
  GC_RETURN_IF_ERROR(w.DeclareFamily(itl_name, MetricType::kHistogram,
                                     legacy ? "Histogram of time per output token in seconds."
                                            : "Histogram of inter-token latency in seconds."));
  GC_RETURN_IF_ERROR(w.DeclareFamily("vllm:e2e_request_latency_seconds", MetricType::kHistogram,
                                     "Histogram of end to end request latency in seconds."));
  for (EngineSim& eng : n.engines) {
    // Prometheus's exported label order: sorted by name.
    std::vector<LabelView> base;
    if (!legacy) base.push_back({"engine", eng.engine});
    if (e.vllm_hostname_label) base.push_back({"hostname", host});
    base.push_back({"instance", eng.instance});
    base.push_back({"job", "vllm"});
    base.push_back({"model_name", c_.model.model_name});
    if (e.vllm_hostname_label) {
      base.push_back({"namespace", "inference"});
      base.push_back({"pod", eng.pod});
    }
    const EngineSecond& s = eng.last;
    auto append = [&](std::string_view name, double v) { return w.Append(name, base, v, ts_ms); };
    GC_RETURN_IF_ERROR(append("vllm:num_requests_running",
                              std::round(std::max(0.0, s.running * rng_.Normal(1, 0.04)))));
    GC_RETURN_IF_ERROR(append("vllm:num_requests_waiting", std::round(s.waiting)));
    GC_RETURN_IF_ERROR(append(kv_name, std::round(s.kv_usage * 1e4) / 1e4));
    GC_RETURN_IF_ERROR(append("vllm:num_preemptions_total", eng.preempt));
    GC_RETURN_IF_ERROR(append("vllm:prompt_tokens_total", eng.prompt));
    GC_RETURN_IF_ERROR(append("vllm:generation_tokens_total", eng.gen));
    for (const auto& [reason, value] :
         {std::pair<std::string_view, double>{"length", eng.length}, {"stop", eng.stop}}) {
      std::vector<LabelView> l = base;
      l.insert(l.begin() + (legacy ? 0 : 1), {"finished_reason", reason});
      GC_RETURN_IF_ERROR(w.Append("vllm:request_success_total", l, value, ts_ms));
    }
    auto histogram = [&](std::string_view family, std::span<const double> bounds,
                         const Histogram& h) -> Status {
      const std::string bucket = std::string(family) + "_bucket";
      char le[32];
      for (std::size_t i = 0; i <= bounds.size(); ++i) {
        std::vector<LabelView> l = base;
        if (i < bounds.size()) {
          std::snprintf(le, sizeof le, "%.6g", bounds[i]);
          std::string_view text(le);
          if (text.find('.') == std::string_view::npos &&
              text.find('e') == std::string_view::npos) {
            std::snprintf(le, sizeof le, "%.1f", bounds[i]);  // Python prints 1.0
          }
        } else {
          std::snprintf(le, sizeof le, "+Inf");
        }
        l.push_back({"le", le});
        std::sort(l.begin(), l.end(),
                  [](const LabelView& a, const LabelView& b) { return a.name < b.name; });
        const double v = i < bounds.size() ? h.counts[i] : h.count;
        GC_RETURN_IF_ERROR(w.Append(bucket, l, v, ts_ms));
      }
      GC_RETURN_IF_ERROR(w.Append(std::string(family) + "_count", base, h.count, ts_ms));
      return w.Append(std::string(family) + "_sum", base, Round6(h.sum), ts_ms);
    };
    GC_RETURN_IF_ERROR(histogram("vllm:time_to_first_token_seconds", kTtftBuckets, eng.ttft));
    GC_RETURN_IF_ERROR(histogram(itl_name, kItlBuckets, eng.itl));
    GC_RETURN_IF_ERROR(histogram("vllm:e2e_request_latency_seconds", kE2eBuckets, eng.e2e));
  }
  return Status::Ok();
}

// The server's counters and histograms for one second of its engines.
void ObserveServer(Rng& rng, const ModelProfile& m, EngineSim& eng) {
  const EngineSecond& s = eng.last;
  const std::int64_t tokens = rng.Poisson(s.tokens_per_s);
  const std::int64_t done = rng.Poisson(s.requests_per_s);
  const std::int64_t started = rng.Poisson(s.requests_per_s);
  eng.gen += static_cast<double>(tokens);
  eng.prompt += std::round(static_cast<double>(started) * m.prompt_mean * rng.Uniform(0.8, 1.2));
  const double long_share = std::exp(-m.max_tokens / m.out_mean);
  const std::int64_t length = rng.Binomial(done, long_share);
  eng.length += static_cast<double>(length);
  eng.stop += static_cast<double>(done - length);
  if (s.kv_usage > 0.95) eng.preempt += static_cast<double>(rng.Poisson(2));
  // Inter-token latency: most steps at the decode step time, the ones that
  // carry a prefill chunk longer (chunked prefill).
  const double q = std::min(0.4, 2 * s.prefill_share);
  const double m0 = s.itl_mean_s / ((1 - q) + q * 2.5);
  Observe(rng, kItlBuckets, eng.itl, std::max<std::int64_t>(0, tokens - started), s.itl_mean_s, 0.3,
          [&](double x) {
            return (1 - q) * LogNormalCdf(x, m0, 0.15) + q * LogNormalCdf(x, 2.5 * m0, 0.3);
          });
  Observe(rng, kTtftBuckets, eng.ttft, started, s.ttft_mean_s, 0.6,
          [&](double x) { return LogNormalCdf(x, s.ttft_mean_s, 0.55); });
  const double e2e = s.ttft_mean_s + m.out_mean * s.itl_mean_s;
  Observe(rng, kE2eBuckets, eng.e2e, done, e2e, 0.8,
          [&](double x) { return LogNormalCdf(x, e2e, 0.75); });
}

Status Generator::WriteTick(double t) {
  const std::int64_t second_ms = start_ms_ + static_cast<std::int64_t>(t) * 1000;
  for (NodeSim& n : nodes_) {
    RecordingWriter& w = n.canary ? *canary_ : *baseline_;
    if (!InGap(c_.expo.exporter_gaps, n, t) && !rng_.Chance(c_.expo.miss_prob)) {
      const auto ts = second_ms + static_cast<std::int64_t>(n.dcgm_phase * 1000) + rng_.Int(-4, 4);
      GC_RETURN_IF_ERROR(WriteDcgm(w, n, ts));
    }
    if (n.up) {
      for (EngineSim& e : n.engines) ObserveServer(rng_, c_.model, e);
      if (!rng_.Chance(c_.expo.miss_prob)) {
        const auto ts =
            second_ms + static_cast<std::int64_t>(n.vllm_phase * 1000) + rng_.Int(-4, 4);
        GC_RETURN_IF_ERROR(WriteVllm(w, n, ts));
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
