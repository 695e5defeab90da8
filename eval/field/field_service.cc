#include "eval/field/field_service.h"

#include <algorithm>
#include <cmath>

namespace gpucanary::eval::field {

namespace {

// Decode step time (ms) at batch b: the memory part, then the clock-bound part
// stretched by f_max / f.
double StepMs(const ModelProfile& m, double b, double clock_ratio, double sw_factor) {
  const double base = m.t0_ms + m.k_ms * b;
  return base * ((1.0 - m.compute_frac) + m.compute_frac * clock_ratio) * sw_factor;
}

}  // namespace

EngineSecond StepEngine(const ModelProfile& m, double offered_rps, double clock_ratio,
                        double sw_factor, EngineState& state) {
  EngineSecond out;
  const double lambda = std::max(0.0, offered_rps);
  // Prefill is compute-bound: all of it follows the clock.
  const double prefill_ms =
      lambda * m.prompt_mean / 1000.0 * m.prefill_ms_per_ktok * clock_ratio * sw_factor;
  const double p = std::min(0.7, prefill_ms / 1000.0);
  const double demand = lambda * m.out_mean;  // tokens/s asked for
  const double bmax = m.max_batch;
  const double capacity = 1000.0 * bmax * (1.0 - p) / StepMs(m, bmax, clock_ratio, sw_factor);
  // Little's law for the batch that serves `demand`: b = demand · step(b) / (1 - p).
  const double s = (1.0 - m.compute_frac) + m.compute_frac * clock_ratio;
  const double denom = 1000.0 * (1.0 - p) - demand * m.k_ms * s * sw_factor;
  double target = denom > 1e-6 ? demand * m.t0_ms * s * sw_factor / denom : bmax;
  if (target > bmax || state.waiting > 0.5) target = bmax;
  // A sequence stays out_mean steps in the batch: the batch follows with that lag.
  const double residence_s = std::max(1.0, m.out_mean * StepMs(m, target, clock_ratio, sw_factor) /
                                               1000.0 / std::max(0.3, 1.0 - p));
  state.running += (target - state.running) * (1.0 - std::exp(-1.0 / residence_s));
  if (lambda <= 0 && state.running < 0.05) state.running = 0;
  const double step = StepMs(m, state.running, clock_ratio, sw_factor);
  double tokens = state.running > 0 ? 1000.0 * state.running * (1.0 - p) / step : 0.0;
  if (target >= bmax) {
    tokens = std::min(tokens, capacity);
    state.waiting = std::max(0.0, state.waiting + (demand - tokens) / m.out_mean);
  } else {
    state.waiting = std::max(0.0, state.waiting * 0.5 - 0.1);
  }
  out.running = state.running;
  out.waiting = state.waiting;
  out.tokens_per_s = tokens;
  out.requests_per_s = tokens / m.out_mean;
  out.step_ms = step;
  out.itl_mean_s = step / 1000.0 / std::max(0.3, 1.0 - p);
  const double served_rps = std::max(out.requests_per_s, 1e-3);
  out.ttft_mean_s =
      state.waiting / served_rps +
      m.prompt_mean / 1000.0 * m.prefill_ms_per_ktok * clock_ratio * sw_factor / 1000.0 +
      step / 1000.0;
  out.prefill_share = lambda > 0 ? p : 0.0;
  out.kv_usage =
      std::min(1.0, state.running * (m.prompt_mean + 0.5 * m.out_mean) / m.kv_capacity_tokens);
  return out;
}

Activity ActivityOf(const ModelProfile& m, const EngineSecond& sec, double clock_ratio,
                    double tensor_scale, double toggle) {
  Activity a;
  const double b = sec.running;
  // With Poisson arrivals the batch is empty for a share e^{-b} of the time.
  a.duty = b > 0.01 ? std::min(1.0, (1.0 - std::exp(-2.0 * b)) + sec.prefill_share) : 0.0;
  a.duty = std::min(1.0, a.duty);
  const double clock_share =
      m.compute_frac * clock_ratio / ((1.0 - m.compute_frac) + m.compute_frac * clock_ratio);
  a.sm = a.duty * (0.78 + 0.17 * b / (b + 32.0));
  a.tensor = std::min(
      0.95, a.duty * (0.10 + 0.22 * b / (b + 64.0) + 0.45 * sec.prefill_share) * tensor_scale);
  a.dram = a.duty * 0.8 * (1.0 - 0.5 * clock_share) * (0.55 + 0.45 * b / (b + 32.0)) *
           (1.0 - 0.5 * sec.prefill_share);
  a.toggle = toggle;
  return a;
}

double OccupancyOf(const EngineSecond& sec) {
  const double b = sec.running;
  if (b <= 0.01) return 0.0;
  return (1.0 - std::exp(-2.0 * b)) * (0.06 + 0.30 * b / (b + 48.0));
}

}  // namespace gpucanary::eval::field
