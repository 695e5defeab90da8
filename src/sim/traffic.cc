#include "sim/traffic.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace gpucanary::sim {
namespace {

constexpr double kDriftSd = 0.05;        // stationary sd of the log-rate drift
constexpr double kDriftTimeConst = 600;  // s
constexpr double kBurstMinFactor = 1.3;
constexpr double kBurstMaxFactor = 2.0;
constexpr double kBurstMinSeconds = 10;
constexpr double kBurstMaxSeconds = 40;

}  // namespace

TrafficProcess::TrafficProcess(const TrafficSpec& spec, std::uint64_t seed)
    : spec_(spec), rng_(seed) {}

double TrafficProcess::Step(double elapsed_s, double dt_s) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  const double phi = std::exp(-dt_s / kDriftTimeConst);
  drift_ = phi * drift_ + std::sqrt(1 - phi * phi) * kDriftSd * normal(rng_);

  if (burst_left_s_ > 0) {
    burst_left_s_ -= dt_s;
  } else if (spec_.burst_rate_per_s > 0 && uniform(rng_) < spec_.burst_rate_per_s * dt_s) {
    burst_factor_ = kBurstMinFactor + (kBurstMaxFactor - kBurstMinFactor) * uniform(rng_);
    burst_left_s_ = kBurstMinSeconds + (kBurstMaxSeconds - kBurstMinSeconds) * uniform(rng_);
  }
  const double burst = burst_left_s_ > 0 ? burst_factor_ : 1.0;
  const double diurnal =
      spec_.diurnal_period_s > 0
          ? 1 + spec_.diurnal_amplitude *
                    std::sin(2 * std::numbers::pi * elapsed_s / spec_.diurnal_period_s)
          : 1.0;
  rate_ = std::max(0.0, spec_.rps * diurnal * std::exp(drift_) * burst);
  return rate_;
}

}  // namespace gpucanary::sim
