#pragma once
// An anytime-valid test on two counting processes: events (errors, XIDs,
// requests slower than the baseline's p99) on the canary and on the baseline,
// against the canary's share of the exposure. docs/analysis-method.md,
// "Statistical comparisons", step 5.
//
// M. Lindon, A. Malek, "Anytime-Valid Inference for Multinomial Count Data",
// NeurIPS 2022 (the two-arm case is Netflix's "two integers" test: Lindon et
// al., Netflix TechBlog, "Sequential A/B Testing Keeps the World Streaming
// Netflix, Part 2: Counting Processes", 2024).
//
// Under the null the arms' event rates per unit of exposure are equal, so each
// event, given that it happened, is the canary's with probability p0 = canary
// exposure / total exposure. With x_i = 1 for a canary event and p0_i the share
// in force when event i happened, the Beta-mixture likelihood ratio
//
//   E_n = Integral  prod_i theta^x_i (1-theta)^(1-x_i) / ( p0_i^x_i (1-p0_i)^(1-x_i) ) dBeta(theta;
//   a0, b0)
//       = [ B(a0 + a, b0 + b) / B(a0, b0) ] / prod_i p0_i^x_i (1-p0_i)^(1-x_i)
//
// (a, b: canary and baseline events so far) is a nonnegative martingale of
// mean 1 under the null, for any p0_i fixed before event i is labelled. By
// Ville's inequality P(exists n: E_n >= 1/alpha) <= alpha: reject whenever
// E_n >= 1/alpha, as often as one looks. With a constant p0 it is the
// Beta-binomial Bayes factor B(a0+a, b0+b)/B(a0, b0) / (p0^a (1-p0)^b).
//
// Within one tick p0 is constant, so the tick's factor depends only on its
// two counts (the numerator depends only on the totals, whatever the order of
// events): a tick costs O(1), however many events it has.

#include <cstdint>

namespace gpucanary::analysis::stats {

// Thread-compatible. O(1) memory.
class CountTest {
 public:
  // The Beta(a0, b0) mixing prior over theta, the canary's share of events.
  // Beta(1, 1) (uniform) by default; a prior centred near the expected p0
  // with more mass (e.g. Beta(p0 k, (1 - p0) k)) detects small shifts sooner
  // and large ones later. REQUIRES: a0 > 0, b0 > 0.
  explicit CountTest(double prior_a = 1.0, double prior_b = 1.0);

  // The events of one tick: canary_events on the canary, baseline_events on
  // the baseline, with p0 the canary's share of the exposure during the tick.
  // p0 must not depend on which arm the tick's events fell on (else the
  // martingale property, and the error guarantee, are lost).
  // REQUIRES: counts >= 0; 0 < p0 < 1 (when the tick has events; a tick
  // without events changes nothing and p0 is ignored).
  void AddEvents(std::int64_t canary_events, std::int64_t baseline_events, double p0);

  std::int64_t canary_events() const { return a_; }
  std::int64_t baseline_events() const { return b_; }

  // log E_n (0 before any event).
  double log_e_value() const;

  // The canary's event rate over the baseline's, each per unit of exposure:
  // the Mantel-Haenszel rate ratio over ticks, sum_t a_t (1 - p0_t) /
  // sum_t b_t p0_t; with a constant p0 that is (a / b) (1 - p0) / p0.
  // +inf with canary events and no baseline events; NaN with no events.
  double RateRatioEstimate() const;

  // Two-sided: the canary's rate differs from the baseline's.
  // E_n >= 1/alpha. REQUIRES: 0 < alpha < 1.
  bool Rejects(double alpha) const;

  // One-sided, "the canary's rate is higher" (more errors): Rejects(alpha) and
  // RateRatioEstimate() > min_rate_ratio (1 = any increase; the policy's
  // margin, e.g. 1.2, to fail only on a practically relevant increase).
  //
  // Why this and not a prior concentrated above p0: the rejection region is a
  // subset of the two-sided test's, so the error bound alpha holds as is, and
  // it needs no truncated-Beta integrals with a p0 that changes per tick. The
  // price is power: the mixture spends about half its mass on theta < p0, which
  // costs about log 2 of log-evidence (a few more events) against a one-sided
  // prior. REQUIRES: 0 < alpha < 1, min_rate_ratio >= 0.
  bool RejectsHigher(double alpha, double min_rate_ratio = 1.0) const;

 private:
  double prior_a_;
  double prior_b_;
  std::int64_t a_ = 0;
  std::int64_t b_ = 0;
  double log_null_ = 0.0;        // sum over events of log p0_i^x_i (1 - p0_i)^(1 - x_i)
  double mh_numerator_ = 0.0;    // sum_t a_t (1 - p0_t)
  double mh_denominator_ = 0.0;  // sum_t b_t p0_t
};

// log B(x, y) = lgamma(x) + lgamma(y) - lgamma(x + y). REQUIRES: x, y > 0.
double LogBeta(double x, double y);

}  // namespace gpucanary::analysis::stats
