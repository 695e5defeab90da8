#pragma once
// How the field model's fleet is exported: dcgm-exporter's families and
// labels for each GPU, vLLM's gauges, counters and histograms for each
// engine, written to a recording (docs/contracts.md §4) through the
// product's RecordingWriter. Shared by the field suite (field_generator.cc)
// and the fleet suite (eval/fleet), which run the same physics and differ in
// what happens to the fleet.
//
// GPU series are dcgm-exporter's, family by family in field-id order with
// the exporter's label order (gpu, UUID, pci_bus_id, device, modelName,
// Hostname, DCGM_FI_DRIVER_VERSION, then container/namespace/pod), INT64
// fields as integers and DOUBLE fields with six decimals, blank fields
// absent (reference/dcgm-telemetry.md §1.3). Server series are vLLM's
// (src/vocab/testdata/vllm.prom; vllm_legacy.prom for 0.10) with the
// scrape's `instance` and `job` labels.
//
// Pure functions over plain structs; randomness only from the Rng passed in,
// in a fixed order (a seed gives the same bytes). Thread-compatible.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "eval/field/field_case.h"
#include "eval/field/field_physics.h"
#include "eval/field/field_random.h"
#include "eval/field/field_service.h"
#include "recording/recording_writer.h"

namespace gpucanary::eval::field {

// vLLM's histogram buckets (src/vocab/testdata/vllm.prom, vllm_legacy.prom).
inline constexpr double kItlBuckets[] = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
                                         0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
inline constexpr double kTtftBuckets[] = {0.001, 0.005, 0.01, 0.02,  0.04,  0.06,  0.08, 0.1,
                                          0.25,  0.5,   0.75, 1.0,   2.5,   5.0,   7.5,  10.0,
                                          20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
inline constexpr double kE2eBuckets[] = {0.3,  0.5,   0.8,   1.0,   1.5,   2.0,    2.5,
                                         5.0,  10.0,  15.0,  20.0,  30.0,  40.0,   50.0,
                                         60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

struct Histogram {
  std::vector<double> counts;  // cumulative per bucket (without +Inf)
  double count = 0, sum = 0;
  void Reset();
};

// One GPU as the model runs it and the exporter reads it.
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
  double remapped_uncorrectable = 0, remapped_correctable = 0;  // rows (fields 393/394)
  bool lost = false;  // fallen off the bus (Xid 79): the exporter reads nothing
  std::string uuid, bus, device, index;
};

// One vLLM engine: its last second and its counters since the server started.
struct EngineSim {
  EngineState state;
  EngineSecond last;
  Histogram itl, ttft, e2e;
  double gen = 0, prompt = 0, stop = 0, length = 0, preempt = 0;
  std::string pod;
  std::string engine;    // engine label ("0", ...)
  std::string instance;  // scrape target
};

// Empty histograms with vLLM's buckets.
void InitHistograms(EngineSim& e);

// What one node's exporters put around the per-GPU and per-engine values.
struct NodeLabels {
  const Sku* sku = nullptr;
  const Exposition* expo = nullptr;
  const ModelProfile* model = nullptr;  // model_name and tp (GPUs per engine)
  std::string_view host;
  std::string_view driver;          // DCGM_FI_DRIVER_VERSION
  bool lower_host = false;          // "hostname" rather than "Hostname"
  bool names46 = false;             // DCGM 4.6 field names
  bool up = true;                   // the server runs: pod labels on allocated GPUs
  bool mgmt_limit_follows = false;  // POWER_MGMT_LIMIT shows the enforced limit (in band)
  double sw_thermal_offset = 0;
};

// Appends one dcgm-exporter scrape of a node (every GPU but lost ones) at
// `ts_ms`. Draws from `rng` (a blank profiling sample). Errors: the writer's.
Status WriteDcgm(recording::RecordingWriter& w, const NodeLabels& n, std::span<const GpuSim> gpus,
                 std::span<const EngineSim> engines, Rng& rng, std::int64_t ts_ms);

// Appends one scrape of a node's vLLM server (all its engines) at `ts_ms`.
// Draws from `rng` (the running gauge's noise). Errors: the writer's.
Status WriteVllm(recording::RecordingWriter& w, const NodeLabels& n,
                 std::span<const EngineSim> engines, Rng& rng, std::int64_t ts_ms);

// The server's counters and histograms after one more second of `eng.last`.
void ObserveServer(Rng& rng, const ModelProfile& m, EngineSim& eng);

double Round6(double v);
std::string Hex(Rng& rng, int digits);
std::string Uuid(Rng& rng);       // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
std::string PodSuffix(Rng& rng);  // Kubernetes' 5-character suffix
// "00000000:53:00.0": the HGX bus id of GPU `gpu` on a board of 8 (or 4).
std::string BusId(int gpu, int gpus_per_node);

}  // namespace gpucanary::eval::field
