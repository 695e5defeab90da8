#include "analysis/stats/count_test.h"

#include <math.h>  // lgamma_r (glibc): lgamma writes the global signgam

#include <cmath>
#include <limits>

#include "core/status.h"

namespace gpucanary::analysis::stats {

namespace {

// log Gamma(x) for x > 0, thread-safe: std::lgamma sets the global signgam,
// a data race when several judges run on threads.
double LogGamma(double x) {
  int sign = 0;
  return ::lgamma_r(x, &sign);
}

}  // namespace

double LogBeta(double x, double y) {
  GC_CHECK(x > 0.0 && y > 0.0, "LogBeta: arguments must be > 0");
  return LogGamma(x) + LogGamma(y) - LogGamma(x + y);
}

CountTest::CountTest(double prior_a, double prior_b) : prior_a_(prior_a), prior_b_(prior_b) {
  GC_CHECK(prior_a > 0.0 && prior_b > 0.0 && std::isfinite(prior_a) && std::isfinite(prior_b),
           "CountTest: Beta prior parameters must be finite and > 0");
}

void CountTest::AddEvents(std::int64_t canary_events, std::int64_t baseline_events, double p0) {
  GC_CHECK(canary_events >= 0 && baseline_events >= 0, "CountTest::AddEvents: negative count");
  if (canary_events == 0 && baseline_events == 0) return;
  GC_CHECK(p0 > 0.0 && p0 < 1.0, "CountTest::AddEvents: p0 outside (0, 1)");
  const auto ca = static_cast<double>(canary_events);
  const auto cb = static_cast<double>(baseline_events);
  // The null's probability of this tick's labels: p0^a_t (1 - p0)^b_t.
  // log1p keeps precision for the small p0 of tail tests (1% of requests).
  log_null_ += ca * std::log(p0) + cb * std::log1p(-p0);
  mh_numerator_ += ca * (1.0 - p0);
  mh_denominator_ += cb * p0;
  a_ += canary_events;
  b_ += baseline_events;
}

double CountTest::log_e_value() const {
  // The mixture's marginal likelihood from the totals (exact at any event
  // order), rather than a running sum of per-event predictive terms that
  // would accumulate rounding error over millions of events.
  const double log_mixture =
      LogBeta(prior_a_ + static_cast<double>(a_), prior_b_ + static_cast<double>(b_)) -
      LogBeta(prior_a_, prior_b_);
  return log_mixture - log_null_;
}

double CountTest::RateRatioEstimate() const {
  if (a_ == 0 && b_ == 0) return std::numeric_limits<double>::quiet_NaN();
  if (mh_denominator_ == 0.0) return std::numeric_limits<double>::infinity();
  return mh_numerator_ / mh_denominator_;
}

bool CountTest::Rejects(double alpha) const {
  GC_CHECK(alpha > 0.0 && alpha < 1.0, "CountTest::Rejects: alpha outside (0, 1)");
  return log_e_value() >= -std::log(alpha);
}

bool CountTest::RejectsHigher(double alpha, double min_rate_ratio) const {
  GC_CHECK(min_rate_ratio >= 0.0, "CountTest::RejectsHigher: negative min_rate_ratio");
  return Rejects(alpha) && RateRatioEstimate() > min_rate_ratio;
}

}  // namespace gpucanary::analysis::stats
