#pragma once
// A seeded random source for the field suite: mt19937_64 and the few
// distributions it needs, written out (not std::*_distribution, whose
// output differs between standard libraries) so a seed gives the same suite
// everywhere.

#include <cmath>
#include <cstdint>
#include <random>

namespace gpucanary::eval::field {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : engine_(seed) {}

  // Uniform in [0, 1).
  double Unit() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  double Uniform(double lo, double hi) { return lo + (hi - lo) * Unit(); }
  // Uniform integer in [lo, hi].
  int Int(int lo, int hi) {
    return lo + static_cast<int>(Unit() * static_cast<double>(hi - lo + 1));
  }
  bool Chance(double p) { return Unit() < p; }
  double Normal() {  // Box-Muller
    const double u1 = 1.0 - Unit();
    const double u2 = Unit();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  double Normal(double mean, double sigma) { return mean + sigma * Normal(); }
  // Poisson by inversion for small means, normal approximation above 50.
  std::int64_t Poisson(double mean) {
    if (mean <= 0) return 0;
    if (mean > 50) {
      const double x = std::round(Normal(mean, std::sqrt(mean)));
      return x < 0 ? 0 : static_cast<std::int64_t>(x);
    }
    const double limit = std::exp(-mean);
    double p = Unit();
    std::int64_t k = 0;
    while (p > limit) {
      p *= Unit();
      ++k;
    }
    return k;
  }
  // Binomial(n, p): exact below 40 trials, normal approximation above.
  std::int64_t Binomial(std::int64_t n, double p) {
    if (n <= 0 || p <= 0) return 0;
    if (p >= 1) return n;
    if (n < 40) {
      std::int64_t k = 0;
      for (std::int64_t i = 0; i < n; ++i) k += Chance(p) ? 1 : 0;
      return k;
    }
    const double nd = static_cast<double>(n);
    const double x = std::round(Normal(nd * p, std::sqrt(nd * p * (1 - p))));
    return x < 0 ? 0 : (x > nd ? n : static_cast<std::int64_t>(x));
  }
  std::uint64_t Bits() { return engine_(); }

 private:
  std::mt19937_64 engine_;
};

}  // namespace gpucanary::eval::field
