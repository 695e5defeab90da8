#pragma once
// The inference server of one simulated node: a vLLM-like engine with
// continuous batching and chunked prefill, tensor-parallel over the node's
// GPUs (so the node runs at the pace of its slowest GPU), simulated request by
// request in fixed steps of simulated time (docs/simulator.md, "Serving model
// (vLLM)"). It produces what vLLM's /metrics shows (VllmState, kept whatever
// the node's server), what the node's own server shows when that is SGLang,
// TGI or Triton (sglang(), tgi(), triton(): the same requests, recorded as
// that server records them, some per request when it finishes), and the load
// its kernels put on the GPUs (gpu_load, for GpuModel's Workload.load).
//
// Requests. Arrivals are a Poisson process of the rate given at each step
// (exact for a piecewise-constant rate: exponential gaps in "integrated rate"
// time, so a step may hold 0, 1 or many arrivals at their own instants).
// Prompt and output lengths are lognormal with the profile's means and shapes
// (sigma of the log), rounded, at least 1 token and at most 8x the mean.
//
// Per step of dt seconds at relative speed s (1 = nominal):
//   1. Prefill. One FIFO server at prefill_tokens_per_s * s tokens/s: the
//      head of the waiting queue is admitted when a batch slot is free
//      (running < max_num_seqs) and the KV cache can hold its prompt; its
//      prompt is processed from max(arrival, server free); its first token
//      comes when its prefill completes (TTFT = that instant - arrival,
//      queueing included). A prompt may span steps (a chunked prefill).
//   2. Decode. Every running request past prefill gains one token per
//      iteration, t_iter = (iter_base_s + iter_per_seq_s * B) / s for a batch
//      of B. Prefill shares the GPUs: a fused iteration hides most prefill
//      compute under the weight streaming of decode, and the rest
//      ((1 - prefill_overlap) * prefill busy time) is taken from decode.
//      A request finishes at its output length: e2e = finish - arrival.
//      Each decode token observes its gap from the previous one (the
//      iteration time with prefill's share: t_iter / decode share) into
//      vllm:time_per_output_token_seconds, one Observe(value, count) a step.
// Gauges are those at the end of the step; generation and prompt token
// counters move in whole tokens as they are produced, so their rates are the
// token throughputs.
//
// Per request, for the other servers (no random draw depends on it): its
// arrival, the start of its prefill (the start of its batch, TGI's queue
// time), its first token (TTFT), every later token (SGLang's running mean
// gap), its end (e2e, its lengths): see sglang_render.h, tgi_render.h,
// triton_render.h for what each records when.
//
// Not modelled: KV-cache preemption (admission reserves the prompt, decode
// grows past the capacity without evicting; the gauge saturates at 1),
// prefix caching, speculative decoding, request cancellation.
//
// Thread-compatible. Deterministic: the same profile, seed and inputs give
// the same state, bit for bit.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "sim/server_kind.h"
#include "sim/sglang_render.h"
#include "sim/tgi_render.h"
#include "sim/triton_render.h"
#include "sim/vllm_render.h"

namespace gpucanary::sim {

// One model server; defaults for a 70B model on 8xH100, TP=8.
struct ServingProfile {
  std::string model_name = "meta-llama/Llama-3.1-70B-Instruct";
  double prompt_tokens_mean = 512;   // per request, lognormal...
  double prompt_tokens_sigma = 0.5;  // ...with this sd of ln(tokens)
  double output_tokens_mean = 200;
  double output_tokens_sigma = 0.3;
  int max_num_seqs = 256;            // vLLM's batch limit: requests beyond it wait in the queue
  double iter_base_s = 0.012;        // decode iteration time at speed 1: weights streamed once...
  double iter_per_seq_s = 0.000015;  // ...plus KV-cache reads growing with batch size
  double prefill_tokens_per_s = 40000;  // prompt processing rate at speed 1 (compute-bound)
  double prefill_overlap = 0.8;         // share of prefill time hidden under decode (0..1)
  double kv_cache_tokens = 400000;      // KV capacity: gpu_cache_usage_perc = tokens held / this
  std::size_t max_waiting = 100000;     // waiting-queue cap; arrivals beyond it are rejected
};

// Decode throughput (tokens/s) with a full batch at `speed`, prefill ignored.
double DecodeCapacityTokensPerS(const ServingProfile& profile, double speed);

// The request rate (req/s) a node sustains at `speed` with mean-sized
// requests: the smaller of the prefill limit R*s/P and the decode limit
// C/(O + C*(1 - overlap)*P/(R*s)), C = DecodeCapacityTokensPerS. Offered
// load above it grows the waiting queue without bound.
double SustainableRequestRate(const ServingProfile& profile, double speed);

class ServingNode {
 public:
  // Speeds at or below this (and NaN) are taken as this: the node crawls but
  // never divides by zero.
  static constexpr double kMinSpeed = 1e-3;

  // `version`: which vLLM's metric names state() is rendered with.
  ServingNode(const ServingProfile& profile, std::string hostname, std::uint64_t seed,
              VllmVersion version = VllmVersion::kCurrent);
  // `server`: the server the node exposes (vLLM's version, or SGLang, TGI,
  // Triton, whose state is then kept too; none: vLLM's state only, for
  // tests and the control API). The dynamics and draws are the same for all.
  ServingNode(const ServingProfile& profile, std::string hostname, std::uint64_t seed,
              ServerKind server);

  // Advances dt_s seconds of simulated time. Requests arrive as a Poisson
  // process of rate `arrival_rate_per_s` (<= 0 or NaN: none, e.g. cordoned).
  // `speed` is the node's relative speed this step (1 = nominal): min over its
  // GPUs of GpuModel::throughput() over the release's software slowdown.
  // REQUIRES: dt_s > 0.
  void Step(double dt_s, double arrival_rate_per_s, double speed);

  // What the kernels did in the last step, for Workload.load next step:
  //   load = 1 - (1 - decode_active * intensity) * (1 - prefill_busy)
  // decode_active: fraction of the step with a non-empty decode batch;
  // intensity = 0.3 + 0.7 * min(1, B / max_num_seqs) (a batch of one still
  // streams all weights, but leaves the SMs mostly waiting); prefill_busy:
  // fraction of the step spent on prompts (compute-bound, full intensity).
  // 0 when idle, 1 when saturated with a full batch or a prefill backlog.
  double gpu_load() const { return gpu_load_; }
  double tokens_per_second() const { return tokens_per_second_; }  // generated, last step
  const VllmState& state() const { return state_; }
  ServerKind server() const { return server_; }
  // The node's own server's metrics; kept only when server() is that server
  // (otherwise as constructed: nothing recorded).
  const SglangState& sglang() const { return sglang_; }
  const TgiState& tgi() const { return tgi_; }
  const TritonState& triton() const { return triton_; }

  double now_s() const { return now_s_; }
  std::size_t num_waiting() const { return waiting_size_; }
  std::size_t num_running() const { return decoding_.size() + (prefilling_ ? 1U : 0U); }
  std::int64_t kv_tokens_held() const { return kv_held_; }
  // Arrivals refused because the waiting queue held max_waiting requests
  // (a counter; not a vLLM metric: vLLM's queue is unbounded).
  std::uint64_t rejected_total() const { return rejected_total_; }
  std::uint64_t arrived_total() const { return arrived_total_; }
  const ServingProfile& profile() const { return profile_; }

 private:
  struct Request {
    double arrival_s = 0;
    double admitted_s = 0;  // when its prefill began (it left the waiting queue)
    double start_s = 0;     // decode: when its first token came
    double progress = 0;    // prefill: prompt tokens done; decode: tokens generated
    std::int32_t prompt_tokens = 0;
    std::int32_t output_tokens = 0;
  };

  void Arrive(double t_s);
  std::int32_t DrawTokens(std::lognormal_distribution<double>& dist, double mean);
  double RunPrefill(double t0, double t1, double rate);  // returns busy seconds
  void StartDecode(Request& r, double t_s);
  void Finish(const Request& r, double t_s);
  void RunDecode(double t0, double t1, double speed, double prefill_busy_s);
  // SGLang: tokens k_first..k_last of `r` (k >= 2 only), reached from progress
  // p0 at `start` at token_rate, each observe (t_k - t_first) / (k - 1).
  void ObserveSglangTokens(const Request& r, double start, double p0, std::int64_t k_first,
                           std::int64_t k_last, double token_rate);
  // The servers' gauges at the end of a step.
  void UpdateServerGauges();
  // Waiting queue: a ring over waiting_buf_, grown by doubling up to max_waiting.
  void PushWaiting(const Request& r);
  Request PopWaiting();

  ServingProfile profile_;
  ServerKind server_;
  VllmState state_;
  SglangState sglang_;
  TgiState tgi_;
  TritonState triton_;
  std::mt19937_64 rng_;
  std::exponential_distribution<double> unit_exp_{1.0};
  std::lognormal_distribution<double> prompt_dist_;
  std::lognormal_distribution<double> output_dist_;

  double now_s_ = 0;
  double next_arrival_credit_ = 0;  // integrated rate still to go before the next arrival
  std::vector<Request> waiting_buf_;
  std::size_t waiting_head_ = 0;
  std::size_t waiting_size_ = 0;
  bool prefilling_ = false;
  Request prefill_;  // the request whose prompt is being processed
  std::vector<Request> decoding_;
  std::int64_t kv_held_ = 0;  // prompt + generated tokens of admitted requests
  std::uint64_t rejected_total_ = 0;
  std::uint64_t arrived_total_ = 0;
  std::uint64_t admitted_total_ = 0;  // requests whose prefill began
  double generated_in_step_ = 0;
  double decode_active_ = 0;  // fraction of the last step with a decode batch
  double decode_batch_ = 0;   // its size (requests that decoded in the last step)
  double gpu_load_ = 0;
  double tokens_per_second_ = 0;
};

// Appends the /metrics text of the server `node` runs (vLLM's version,
// SGLang, TGI or Triton) to `out`; nothing for a node without one (none).
void RenderServerExposition(const ServingNode& node, std::string& out);

// histogram_quantile(q, h) as Prometheus computes it (promql/quantile.go,
// bucketQuantile): rank = q * count; the first bucket whose cumulative count
// reaches the rank holds the quantile, interpolated linearly between its
// lower bound (0 for the first bucket, as the bounds are positive) and its
// upper bound. A rank in the +Inf bucket returns the highest finite bound.
// q < 0: -Inf; q > 1: +Inf; NaN q or no observations: NaN.
template <std::size_t N>
double HistogramQuantile(const VllmHistogram<N>& h, double q) {
  if (q != q) return std::numeric_limits<double>::quiet_NaN();
  if (q < 0) return -std::numeric_limits<double>::infinity();
  if (q > 1) return std::numeric_limits<double>::infinity();
  if (h.count == 0) return std::numeric_limits<double>::quiet_NaN();
  double rank = q * static_cast<double>(h.count);
  std::uint64_t below = 0;  // cumulative count of the buckets before i
  for (std::size_t i = 0; i < N; ++i) {
    const std::uint64_t cumulative = below + h.buckets[i];
    if (static_cast<double>(cumulative) >= rank) {
      const double start = i == 0 ? 0.0 : (*h.bounds)[i - 1];
      const double end = (*h.bounds)[i];
      rank -= static_cast<double>(below);
      return start + (end - start) * (rank / static_cast<double>(h.buckets[i]));
    }
    below = cumulative;
  }
  return (*h.bounds)[N - 1];
}

// The observations made between two readings of one histogram, as
// Prometheus's increase() over a window sees them. REQUIRES: `later` was
// taken after `earlier` from the same histogram.
template <std::size_t N>
VllmHistogram<N> HistogramDelta(const VllmHistogram<N>& later, const VllmHistogram<N>& earlier) {
  VllmHistogram<N> d{later.bounds};
  for (std::size_t i = 0; i < N; ++i) d.buckets[i] = later.buckets[i] - earlier.buckets[i];
  d.count = later.count - earlier.count;
  d.sum = later.sum - earlier.sum;
  return d;
}

}  // namespace gpucanary::sim
