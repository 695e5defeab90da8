#include "sim/serving.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/status.h"

namespace gpucanary::sim {
namespace {

// A batch of one still streams every weight each iteration, so the DRAM side
// is busy while the SMs mostly wait: its load is this share of a full batch's.
constexpr double kDecodeIntensityFloor = 0.3;
// Lengths are truncated at this multiple of the mean (a context-length limit).
constexpr double kMaxTokensOverMean = 8;

// Whole units of `per_unit_ns` nanoseconds in `seconds`, as a server holding
// integer nanoseconds divides them (Triton: ns / 1000 for us, / 1e6 for ms).
double WholeUnits(double seconds, std::int64_t per_unit_ns) {
  const std::int64_t units = std::llround(seconds * 1e9) / per_unit_ns;
  return static_cast<double>(units);
}

double ClampSpeed(double speed) {
  return speed > ServingNode::kMinSpeed ? speed : ServingNode::kMinSpeed;  // NaN too
}

// The lognormal whose mean is `mean`: E[X] = exp(mu + sigma^2 / 2).
std::lognormal_distribution<double> LognormalWithMean(double mean, double sigma) {
  return std::lognormal_distribution<double>(std::log(std::max(mean, 1.0)) - sigma * sigma / 2,
                                             sigma);
}

}  // namespace

double DecodeCapacityTokensPerS(const ServingProfile& p, double speed) {
  const double batch = static_cast<double>(p.max_num_seqs);
  return ClampSpeed(speed) * batch / (p.iter_base_s + p.iter_per_seq_s * batch);
}

double SustainableRequestRate(const ServingProfile& p, double speed) {
  const double s = ClampSpeed(speed);
  const double prefill_rate = p.prefill_tokens_per_s * s;
  const double decode = DecodeCapacityTokensPerS(p, s);
  const double prefill_limit = prefill_rate / p.prompt_tokens_mean;
  const double decode_limit =
      decode / (p.output_tokens_mean +
                decode * (1 - p.prefill_overlap) * p.prompt_tokens_mean / prefill_rate);
  return std::min(prefill_limit, decode_limit);
}

ServingNode::ServingNode(const ServingProfile& profile, std::string hostname, std::uint64_t seed,
                         VllmVersion version)
    : ServingNode(profile, std::move(hostname), seed,
                  ServerKind(version == VllmVersion::kLegacy ? vocab::Server::kVllmLegacy
                                                             : vocab::Server::kVllm)) {}

ServingNode::ServingNode(const ServingProfile& profile, std::string hostname, std::uint64_t seed,
                         ServerKind server)
    : profile_(profile),
      server_(server),
      rng_(seed),
      prompt_dist_(LognormalWithMean(profile.prompt_tokens_mean, profile.prompt_tokens_sigma)),
      output_dist_(LognormalWithMean(profile.output_tokens_mean, profile.output_tokens_sigma)) {
  GC_CHECK(profile.max_num_seqs > 0, "ServingProfile.max_num_seqs must be positive");
  GC_CHECK(profile.max_waiting > 0, "ServingProfile.max_waiting must be positive");
  profile_.prefill_overlap = std::clamp(profile.prefill_overlap, 0.0, 1.0);
  state_.version =
      server == vocab::Server::kVllmLegacy ? VllmVersion::kLegacy : VllmVersion::kCurrent;
  state_.model_name = profile.model_name;
  sglang_.model_name = profile.model_name;
  state_.hostname = std::move(hostname);
  next_arrival_credit_ = unit_exp_(rng_);
  decoding_.reserve(static_cast<std::size_t>(profile.max_num_seqs));
  waiting_buf_.resize(std::min<std::size_t>(1024, profile.max_waiting));
}

std::int32_t ServingNode::DrawTokens(std::lognormal_distribution<double>& dist, double mean) {
  const double cap = std::max(1.0, std::round(kMaxTokensOverMean * mean));
  return static_cast<std::int32_t>(std::clamp(std::round(dist(rng_)), 1.0, cap));
}

void ServingNode::PushWaiting(const Request& r) {
  if (waiting_size_ == waiting_buf_.size()) {
    // Full ring: unroll it into a buffer twice the size (up to the cap).
    std::vector<Request> grown(std::min(waiting_buf_.size() * 2, profile_.max_waiting));
    for (std::size_t i = 0; i < waiting_size_; ++i) {
      grown[i] = waiting_buf_[(waiting_head_ + i) % waiting_buf_.size()];
    }
    waiting_buf_.swap(grown);
    waiting_head_ = 0;
  }
  waiting_buf_[(waiting_head_ + waiting_size_) % waiting_buf_.size()] = r;
  ++waiting_size_;
}

ServingNode::Request ServingNode::PopWaiting() {
  const Request r = waiting_buf_[waiting_head_];
  waiting_head_ = (waiting_head_ + 1) % waiting_buf_.size();
  --waiting_size_;
  return r;
}

void ServingNode::Arrive(double t_s) {
  ++arrived_total_;
  Request r;
  r.arrival_s = t_s;
  r.prompt_tokens = DrawTokens(prompt_dist_, profile_.prompt_tokens_mean);
  r.output_tokens = DrawTokens(output_dist_, profile_.output_tokens_mean);
  if (server_ == vocab::Server::kTgi) tgi_.request_count += 1;
  if (waiting_size_ >= profile_.max_waiting) {
    ++rejected_total_;
    if (server_ == vocab::Server::kTritonTrtllm) triton_.request_failure += 1;
    return;
  }
  PushWaiting(r);
}

void ServingNode::Finish(const Request& r, double t_s) {
  const double e2e = t_s - r.arrival_s;
  state_.e2e_request_latency_seconds.Observe(e2e);
  state_.request_success_total += 1;
  kv_held_ -= r.prompt_tokens + r.output_tokens;
  if (!server_) return;
  switch (*server_) {
    case vocab::Server::kVllm:
    case vocab::Server::kVllmLegacy:
      break;
    case vocab::Server::kSglang:
      // The tokenizer manager counts a request's tokens when it finishes.
      sglang_.requests_finished += 1;
      sglang_.prompt_tokens_total += r.prompt_tokens;
      sglang_.generation_tokens_total += r.output_tokens;
      sglang_.e2e_request_latency_seconds.Observe(e2e);
      break;
    case vocab::Server::kTgi: {
      // server.rs: inference_time = now - start of its batch; time per token
      // = inference_time / generated tokens.
      const double inference = t_s - r.admitted_s;
      tgi_.request_success += 1;
      tgi_.request_duration.Observe(e2e);
      tgi_.request_queue_duration.Observe(r.admitted_s - r.arrival_s);
      tgi_.request_inference_duration.Observe(inference);
      tgi_.request_mean_time_per_token_duration.Observe(inference / r.output_tokens);
      tgi_.request_generated_tokens.Observe(r.output_tokens);
      break;
    }
    case vocab::Server::kTritonTrtllm:
      // infer_stats.cc: +1 success, +batch size (1), + request ns / 1000.
      triton_.request_success += 1;
      triton_.inference_count += 1;
      triton_.request_duration_us += WholeUnits(e2e, 1000);
      triton_.output_token_len.Observe(r.output_tokens);
      break;
  }
}

// The prefill produces the first token (vLLM samples it from the last prompt
// position), so TTFT is observed and one token counted here.
void ServingNode::StartDecode(Request& r, double t_s) {
  const double ttft = t_s - r.arrival_s;
  state_.time_to_first_token_seconds.Observe(ttft);
  if (server_ == vocab::Server::kSglang) {
    sglang_.time_to_first_token_seconds.Observe(ttft);
  } else if (server_ == vocab::Server::kTritonTrtllm) {
    // infer_response.cc: (now_ns - infer_start_ns) / NANOS_PER_MILLIS, integer ms.
    triton_.first_response_ms.Observe(WholeUnits(ttft, 1000000));
  }
  state_.generation_tokens_total += 1;
  generated_in_step_ += 1;
  kv_held_ += 1;
  r.start_s = t_s;
  r.progress = 1;
  if (r.output_tokens <= 1) {
    Finish(r, t_s);
    return;
  }
  decoding_.push_back(r);
}

// A single FIFO server over [t0, t1): the request in prefill, then the head of
// the waiting queue while a batch slot and KV room allow. Returns the seconds
// it spent processing prompts.
double ServingNode::RunPrefill(double t0, double t1, double rate) {
  double cursor = t0;
  double busy = 0;
  const auto max_seqs = static_cast<std::size_t>(profile_.max_num_seqs);
  while (true) {
    if (!prefilling_) {
      if (waiting_size_ == 0 || num_running() >= max_seqs) break;
      const Request& head = waiting_buf_[waiting_head_];
      const bool kv_room =
          static_cast<double>(kv_held_ + head.prompt_tokens) <= profile_.kv_cache_tokens;
      if (!kv_room && !decoding_.empty()) break;  // alone it is admitted anyway
      prefill_ = PopWaiting();
      prefill_.progress = 0;
      prefilling_ = true;
      kv_held_ += prefill_.prompt_tokens;
      cursor = std::max(cursor, prefill_.arrival_s);
      prefill_.admitted_s = cursor;
      ++admitted_total_;
    }
    const double before = std::floor(prefill_.progress);
    const double remaining = prefill_.prompt_tokens - prefill_.progress;
    const double finish = cursor + remaining / rate;
    if (finish > t1) {
      prefill_.progress += (t1 - cursor) * rate;
      state_.prompt_tokens_total += std::floor(prefill_.progress) - before;
      busy += t1 - cursor;
      break;
    }
    state_.prompt_tokens_total += prefill_.prompt_tokens - before;
    busy += finish - cursor;
    cursor = finish;
    prefilling_ = false;
    StartDecode(prefill_, finish);
  }
  return busy;
}

// Continuous batching over [t0, t1): every request in the batch advances at
// the same token rate; finished ones leave (swap-remove: order is irrelevant).
void ServingNode::RunDecode(double t0, double t1, double speed, double prefill_busy_s) {
  decode_active_ = 0;
  decode_batch_ = static_cast<double>(decoding_.size());
  if (decoding_.empty()) return;
  const double dt = t1 - t0;
  const double batch = decode_batch_;
  const double t_iter = (profile_.iter_base_s + profile_.iter_per_seq_s * batch) / speed;
  const double decode_share =
      std::max(0.0, dt - (1 - profile_.prefill_overlap) * prefill_busy_s) / dt;
  const double token_rate = decode_share / t_iter;  // tokens per second per request
  const double decoded_before = state_.generation_tokens_total;
  const bool sglang = server_ == vocab::Server::kSglang;
  double first_start = t1;
  double last_end = t0;
  for (std::size_t i = 0; i < decoding_.size();) {
    Request& r = decoding_[i];
    const double start = std::max(t0, r.start_s);
    const double before = std::floor(r.progress);
    const double need = r.output_tokens - r.progress;
    const double can = (t1 - start) * token_rate;
    first_start = std::min(first_start, start);
    if (need <= can) {
      const double end = start + need / token_rate;
      last_end = std::max(last_end, end);
      const double emitted = r.output_tokens - before;
      if (sglang) {
        ObserveSglangTokens(r, start, r.progress, static_cast<std::int64_t>(before) + 1,
                            r.output_tokens, token_rate);
      }
      state_.generation_tokens_total += emitted;
      generated_in_step_ += emitted;
      kv_held_ += static_cast<std::int64_t>(emitted);
      Finish(r, end);
      r = decoding_.back();
      decoding_.pop_back();
      continue;
    }
    last_end = t1;
    const double p0 = r.progress;
    r.progress += can;
    const double emitted = std::floor(r.progress) - before;
    if (sglang) {
      ObserveSglangTokens(r, start, p0, static_cast<std::int64_t>(before) + 1,
                          static_cast<std::int64_t>(std::floor(r.progress)), token_rate);
    }
    state_.generation_tokens_total += emitted;
    generated_in_step_ += emitted;
    kv_held_ += static_cast<std::int64_t>(emitted);
    ++i;
  }
  // vLLM's time per output token: each iteration, every request that gains a
  // token observes the time since its previous one. Every request in this
  // step's batch gets one token per 1 / token_rate seconds (the iteration
  // plus its share of prefill), so the step's tokens are one observation each
  // of that value: one aggregated call per step.
  const double decoded = state_.generation_tokens_total - decoded_before;
  if (decoded > 0) {
    state_.time_per_output_token_seconds.Observe(1 / token_rate,
                                                 static_cast<std::uint64_t>(decoded));
  }
  decode_active_ = std::clamp((last_end - first_start) / dt, 0.0, 1.0);
}

void ServingNode::ObserveSglangTokens(const Request& r, double start, double p0,
                                      std::int64_t k_first, std::int64_t k_last,
                                      double token_rate) {
  for (std::int64_t k = std::max<std::int64_t>(k_first, 2); k <= k_last; ++k) {
    const auto token = static_cast<double>(k);
    const double t_k = start + (token - p0) / token_rate;
    sglang_.time_per_output_token_seconds.Observe((t_k - r.start_s) / (token - 1));
  }
}

void ServingNode::UpdateServerGauges() {
  if (!server_) return;
  const auto running = static_cast<double>(num_running());
  const auto waiting = static_cast<double>(waiting_size_);
  const double kv_capacity = profile_.kv_cache_tokens;
  const double kv_used = std::clamp(static_cast<double>(kv_held_), 0.0, kv_capacity);
  switch (*server_) {
    case vocab::Server::kVllm:
    case vocab::Server::kVllmLegacy:
      break;
    case vocab::Server::kSglang:
      // log_stats after a batch: running and queued requests, the KV pool.
      sglang_.scheduled = admitted_total_ > 0;
      sglang_.num_running_reqs = running;
      sglang_.num_queue_reqs = waiting;
      sglang_.num_used_tokens = kv_used;
      sglang_.token_usage = kv_used / kv_capacity;
      sglang_.gen_throughput = tokens_per_second_;
      sglang_.cache_hit_rate = 0;
      break;
    case vocab::Server::kTgi:
      tgi_.batched = admitted_total_ > 0;
      tgi_.queue_size = waiting;
      tgi_.batch_current_size = running;
      break;
    case vocab::Server::kTritonTrtllm: {
      triton_.waiting = waiting;
      triton_.context = prefilling_ ? 1 : 0;
      triton_.scheduled = running;
      triton_.active = running;
      triton_.max = static_cast<double>(profile_.max_num_seqs);
      const double max_blocks = std::floor(kv_capacity / kTritonTokensPerBlock);
      const double used_blocks = std::min(max_blocks, std::ceil(kv_used / kTritonTokensPerBlock));
      triton_.kv_max = max_blocks;
      triton_.kv_used = used_blocks;
      triton_.kv_free = max_blocks - used_blocks;
      triton_.kv_fraction = max_blocks > 0 ? used_blocks / max_blocks : 0;
      break;
    }
  }
}

void RenderServerExposition(const ServingNode& node, std::string& out) {
  if (!node.server()) return;
  switch (*node.server()) {
    case vocab::Server::kVllm:
    case vocab::Server::kVllmLegacy:
      RenderVllmExposition(node.state(), out);
      return;
    case vocab::Server::kSglang:
      RenderSglangExposition(node.sglang(), out);
      return;
    case vocab::Server::kTgi:
      RenderTgiExposition(node.tgi(), out);
      return;
    case vocab::Server::kTritonTrtllm:
      RenderTritonExposition(node.triton(), out);
      return;
  }
}

void ServingNode::Step(double dt_s, double arrival_rate_per_s, double speed) {
  GC_CHECK(dt_s > 0, "ServingNode::Step needs dt_s > 0");
  const double s = ClampSpeed(speed);
  const double t0 = now_s_;
  const double t1 = now_s_ + dt_s;
  generated_in_step_ = 0;

  // Poisson arrivals: each gap is Exp(1) in integrated-rate time.
  if (arrival_rate_per_s > 0) {
    double budget = arrival_rate_per_s * dt_s;
    double t = t0;
    while (next_arrival_credit_ <= budget) {
      t += next_arrival_credit_ / arrival_rate_per_s;
      budget -= next_arrival_credit_;
      Arrive(std::min(t, t1));
      next_arrival_credit_ = unit_exp_(rng_);
    }
    next_arrival_credit_ -= budget;
  }

  // Requests that finished prefill this step join the decode batch mid-step.
  const double prefill_busy = RunPrefill(t0, t1, profile_.prefill_tokens_per_s * s);
  RunDecode(t0, t1, s, prefill_busy);

  const double batch_share =
      std::min(1.0, decode_batch_ / static_cast<double>(profile_.max_num_seqs));
  const double intensity = kDecodeIntensityFloor + (1 - kDecodeIntensityFloor) * batch_share;
  gpu_load_ = 1 - (1 - decode_active_ * intensity) * (1 - std::min(1.0, prefill_busy / dt_s));
  tokens_per_second_ = generated_in_step_ / dt_s;
  state_.num_requests_running = static_cast<double>(num_running());
  state_.num_requests_waiting = static_cast<double>(waiting_size_);
  state_.gpu_cache_usage_perc =
      std::clamp(static_cast<double>(kv_held_) / profile_.kv_cache_tokens, 0.0, 1.0);
  UpdateServerGauges();
  now_s_ = t1;
}

}  // namespace gpucanary::sim
