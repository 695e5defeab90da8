#include "eval/field/field_exposition.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <utility>

#include "model/label_view.h"
#include "model/metric_type.h"

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
  kRemapUncorrectable,
  kRemapCorrectable,
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
     Value::kRemapUncorrectable, "Number of remapped rows for uncorrectable errors"},
    {394, "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "", MetricType::kCounter, false, Group::kCore,
     Value::kRemapCorrectable, "Number of remapped rows for correctable errors"},
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

// Lognormal CDF with mean `mean` and log-sd `sigma`.
double LogNormalCdf(double x, double mean, double sigma) {
  if (x <= 0 || mean <= 0) return 0;
  const double mu = std::log(mean) - 0.5 * sigma * sigma;
  return 0.5 * std::erfc(-(std::log(x) - mu) / (sigma * std::sqrt(2.0)));
}

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

std::string_view XidMessage(int xid) {
  switch (xid) {
    case 13:
      return "Graphics Engine Exception";
    case 31:
      return "GPU memory page fault";
    case 48:
      return "Double Bit ECC Error";
    case 63:
      return "ECC page retirement or row remapping recording event";
    case 79:
      return "GPU has fallen off the bus";
    case 94:
      return "Contained ECC error";
    default:
      return "Unknown Error";
  }
}

bool HasGroup(Group group, const NodeLabels& n, std::span<const GpuSim> gpus) {
  const Exposition& e = *n.expo;
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
      return std::any_of(gpus.begin(), gpus.end(), [](const GpuSim& g) { return g.xid != 0; });
    case Group::kProf:
      return e.prof_fields;
  }
  return false;
}

double FamilyValue(const Family& f, const NodeLabels& n, const GpuSim& g) {
  const Sku& sku = *n.sku;
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
      return std::round(sku.sw_thermal_c + n.sw_thermal_offset - s.temp_c);
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
    case Value::kRemapUncorrectable:
      return g.remapped_uncorrectable;
    case Value::kRemapCorrectable:
      return g.remapped_correctable;
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

}  // namespace

void Histogram::Reset() {
  std::fill(counts.begin(), counts.end(), 0.0);
  count = sum = 0;
}

void InitHistograms(EngineSim& e) {
  e.itl.counts.assign(std::size(kItlBuckets), 0);
  e.ttft.counts.assign(std::size(kTtftBuckets), 0);
  e.e2e.counts.assign(std::size(kE2eBuckets), 0);
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

std::string BusId(int gpu, int gpus_per_node) {
  const std::string bus = gpus_per_node == 8
                              ? std::string(kBusIds[static_cast<std::size_t>(gpu)])
                              : std::string(kBusIds[2 * static_cast<std::size_t>(gpu)]);
  return "00000000:" + bus + ":00.0";
}

Status WriteDcgm(RecordingWriter& w, const NodeLabels& n, std::span<const GpuSim> gpus,
                 std::span<const EngineSim> engines, Rng& rng, std::int64_t ts_ms) {
  const Exposition& e = *n.expo;
  const std::string_view host = n.host;
  const bool lower_host = n.lower_host;
  const bool names46 = n.names46;
  std::string model(n.sku->model_name);
  if (e.model_name_dashes) std::replace(model.begin(), model.end(), ' ', '-');
  const bool prof_blank = rng.Chance(e.prof_miss_prob);
  for (const Family& f : kFamilies) {
    if (!HasGroup(f.group, n, gpus)) continue;
    if (f.group == Group::kProf && prof_blank) continue;
    const std::string_view name = names46 && !f.name46.empty() ? f.name46 : f.name;
    GC_RETURN_IF_ERROR(w.DeclareFamily(name, f.type, f.help));
    for (std::size_t gi = 0; gi < gpus.size(); ++gi) {
      const GpuSim& g = gpus[gi];
      if (g.lost) continue;
      if (f.group == Group::kXid && g.xid == 0) continue;  // blank until the first Xid
      const EngineSim& eng = engines[gi / static_cast<std::size_t>(n.model->tp)];
      const std::string xid_code = std::to_string(g.xid);
      std::vector<LabelView> labels;
      labels.push_back({"gpu", g.index});
      labels.push_back({e.uuid_lower ? "uuid" : "UUID", g.uuid});
      labels.push_back({"pci_bus_id", g.bus});
      labels.push_back({"device", g.device});
      if (e.model_name_label) labels.push_back({"modelName", model});
      labels.push_back({lower_host ? "hostname" : "Hostname", host});
      labels.push_back({"DCGM_FI_DRIVER_VERSION", n.driver});
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
      double v = FamilyValue(f, n, g);
      if (f.value == Value::kEnforcedLimit) v = g.limit_w;
      if (f.value == Value::kMgmtLimit) v = n.mgmt_limit_follows ? g.limit_w : n.sku->power_limit_w;
      if (f.is_double) v = Round6(v);
      GC_RETURN_IF_ERROR(w.Append(name, labels, v, ts_ms));
    }
  }
  return Status::Ok();
}

Status WriteVllm(RecordingWriter& w, const NodeLabels& n, std::span<const EngineSim> engines,
                 Rng& rng, std::int64_t ts_ms) {
  const Exposition& e = *n.expo;
  const std::string_view host = n.host;
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
  for (const EngineSim& eng : engines) {
    // Prometheus's exported label order: sorted by name.
    std::vector<LabelView> base;
    if (!legacy) base.push_back({"engine", eng.engine});
    if (e.vllm_hostname_label) base.push_back({"hostname", host});
    base.push_back({"instance", eng.instance});
    base.push_back({"job", "vllm"});
    base.push_back({"model_name", n.model->model_name});
    if (e.vllm_hostname_label) {
      base.push_back({"namespace", "inference"});
      base.push_back({"pod", eng.pod});
    }
    const EngineSecond& s = eng.last;
    auto append = [&](std::string_view name, double v) { return w.Append(name, base, v, ts_ms); };
    GC_RETURN_IF_ERROR(append("vllm:num_requests_running",
                              std::round(std::max(0.0, s.running * rng.Normal(1, 0.04)))));
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

}  // namespace gpucanary::eval::field
