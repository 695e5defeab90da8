#pragma once
// The standard normal distribution: its CDF and its quantile function.
// Pure functions, thread-safe.

namespace gpucanary::analysis::stats {

// Phi(x) = P(Z <= x) for Z ~ N(0, 1), as 0.5 * erfc(-x / sqrt(2)): erfc keeps
// full relative precision in the lower tail, where 1 - 0.5 * erfc(x / sqrt(2))
// would cancel. Phi(-inf) = 0, Phi(+inf) = 1, Phi(NaN) = NaN.
double NormalCdf(double x);

// Phi^-1(p), by Wichura's algorithm AS 241 (PPND16): M. J. Wichura, "Algorithm
// AS 241: The Percentage Points of the Normal Distribution", Applied
// Statistics 37(3):477-484, 1988. Relative accuracy about 1e-16 over (0, 1).
// Returns -inf at p = 0, +inf at p = 1, NaN outside [0, 1] or for NaN.
double NormalQuantile(double p);

}  // namespace gpucanary::analysis::stats
