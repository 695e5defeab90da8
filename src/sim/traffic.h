#pragma once
// The fleet's request arrival rate over simulated time (docs/simulator.md,
// "Traffic"): the scenario's mean rate shaped by a diurnal sine, a slow
// random drift and occasional bursts. Routing the rate to nodes by release
// weights is the engine's job; turning a rate into requests (Poisson) is the
// serving model's. Deterministic for a seed. Thread-compatible.

#include <cstdint>
#include <random>

#include "sim/scenario.h"

namespace gpucanary::sim {

class TrafficProcess {
 public:
  TrafficProcess(const TrafficSpec& spec, std::uint64_t seed);

  // Advances by dt_s to simulated time elapsed_s (seconds since the scenario
  // began) and returns the fleet-wide arrival rate, requests/s, for that step:
  //   rps · (1 + A·sin(2π·t/P)) · exp(drift) · burst
  // drift: AR(1) on the log rate, sd 5%, time constant 10 min; bursts: a
  // Poisson process of `bursts.rate`, each multiplying the rate by 1.3-2.0
  // for 10-40 s. Never negative.
  double Step(double elapsed_s, double dt_s);

  // A load shift: the mean rate from the next step on.
  void set_rps(double rps) { spec_.rps = rps; }

  double rate() const { return rate_; }
  bool in_burst() const { return burst_left_s_ > 0; }

 private:
  TrafficSpec spec_;
  std::mt19937_64 rng_;
  double drift_ = 0;
  double burst_left_s_ = 0;
  double burst_factor_ = 1;
  double rate_ = 0;
};

}  // namespace gpucanary::sim
