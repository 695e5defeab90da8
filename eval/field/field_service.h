#pragma once
// The field suite's inference-server model: one vLLM engine (continuous
// batching, chunked prefill) serving an offered request rate, one second at a
// time. Decode steps stream the weights and the KV cache from HBM (a part
// that does not follow the SM clock) and run the matrix work (a part that
// does, φ); the batch follows Little's law (running = token demand × step
// time) up to max_batch, beyond which requests queue. What the engine does
// sets the GPU activities the physics model turns into clock and power.
// Sources: reference §5 ("decode-heavy serving is memory-bandwidth bound",
// DRAM 0.4-0.8, SM 0.6-0.95, tensor 0.1-0.4 in decode, 0.4-0.7 in prefill;
// occupancy 0.1-0.4) and vLLM's metric definitions (src/vocab/testdata).
//
// Pure functions and plain structs. Thread-compatible.

#include <string>

#include "eval/field/field_physics.h"

namespace gpucanary::eval::field {

// The served model and its deployment, per case.
struct ModelProfile {
  std::string model_name;           // vLLM's model_name label
  double t0_ms = 12;                // decode step at batch → 0 (weights read once)
  double k_ms = 0.12;               // extra step time per running sequence (KV reads)
  double compute_frac = 0.35;       // φ: share of step time that scales with 1/clock
  double prefill_ms_per_ktok = 40;  // prefill time per 1000 prompt tokens at full clock
  double prompt_mean = 800;         // tokens
  double out_mean = 300;            // tokens
  double max_tokens = 2048;         // requests stop here ("length")
  int max_batch = 256;
  double kv_capacity_tokens = 400000;
  int tp = 8;  // GPUs per engine
};

struct EngineState {
  double running = 0;  // sequences in the batch
  double waiting = 0;  // requests queued
};

// One second of one engine.
struct EngineSecond {
  double running = 0, waiting = 0;
  double tokens_per_s = 0;    // generated tokens
  double requests_per_s = 0;  // finished requests
  double step_ms = 0;         // decode step time
  double itl_mean_s = 0;      // mean inter-token latency (prefill chunks included)
  double ttft_mean_s = 0;
  double prefill_share = 0;  // share of GPU time spent in prefill
  double kv_usage = 0;       // 0..1
};

// Advances the engine by one second at `offered_rps` requests per second.
// `clock_ratio` = f_max / f of the slowest GPU of the engine (tensor
// parallelism waits for it); `sw_factor` > 1 slows every step (a software
// regression).
EngineSecond StepEngine(const ModelProfile& model, double offered_rps, double clock_ratio,
                        double sw_factor, EngineState& state);

// The activities of each GPU of the engine in that second. `tensor_scale`
// changes the tensor-pipe share (a release with other kernels).
Activity ActivityOf(const ModelProfile& model, const EngineSecond& second, double clock_ratio,
                    double tensor_scale, double toggle);

// DCGM_FI_PROF_SM_OCCUPANCY for that second.
double OccupancyOf(const EngineSecond& second);

}  // namespace gpucanary::eval::field
