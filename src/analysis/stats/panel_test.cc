#include "analysis/stats/panel.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <limits>
#include <random>
#include <vector>

namespace gpucanary::analysis::stats {
namespace {

// A fleet of `entities` nodes over `buckets` buckets: per-node offsets, a
// fleet-wide random walk every node shares, AR(1) noise per node (phi,
// sigma), and `effects` effects: `on(e, b, k)` says whether effect k is
// active, `size[k]` what it adds.
template <typename On>
Panel MakePanel(std::mt19937_64& rng, std::size_t entities, std::size_t buckets, double phi,
                double sigma, const std::vector<double>& size, On on) {
  std::normal_distribution<double> z(0, 1);
  Panel p(entities, buckets, size.size());
  std::vector<double> fleet(buckets);
  double walk = 0;
  for (std::size_t b = 0; b < buckets; ++b) {
    walk += 0.01 * z(rng);
    fleet[b] = walk;
  }
  for (std::size_t e = 0; e < entities; ++e) {
    const double offset = 0.05 * z(rng);
    double ar = sigma * z(rng) / std::sqrt(1 - phi * phi);
    for (std::size_t b = 0; b < buckets; ++b) {
      ar = phi * ar + sigma * z(rng);
      double y = offset + fleet[b] + ar;
      for (std::size_t k = 0; k < size.size(); ++k) {
        if (on(e, b, k)) {
          y += size[k];
          p.AddEffect(e, k, b, b + 1);
        }
      }
      p.Set(e, b, y);
    }
  }
  return p;
}

TEST(PanelTest, RecoversAReleaseEffectAmongOverlappingReleases) {
  std::mt19937_64 rng(7);
  // Release 0 on nodes 0-2 from bucket 300 (+5%); release 1 on nodes 2-5
  // from bucket 400 (harmless), replacing release 0 on node 2.
  const auto on = [](std::size_t e, std::size_t b, std::size_t k) {
    if (k == 1) return e >= 2 && e <= 5 && b >= 400;
    return e <= 2 && b >= 300 && !(e == 2 && b >= 400);
  };
  Panel p = MakePanel(rng, 10, 600, 0.8, 0.02, {0.05, 0.0}, on);
  const PanelFit fit = FitPanel(p);
  const EffectEstimate& r0 = fit.effects[0];
  const EffectEstimate& r1 = fit.effects[1];
  ASSERT_TRUE(r0.identified);
  ASSERT_TRUE(r1.identified);
  EXPECT_NEAR(r0.effect, 0.05, 3 * r0.se);
  EXPECT_GT(r0.effect / r0.se, 5);
  EXPECT_LT(std::fabs(r1.effect / r1.se), 3.3);
  EXPECT_EQ(r0.per_entity.size(), 3u);
  for (const EntityEffect& ee : r0.per_entity) EXPECT_GT(ee.effect, 0.02);
  EXPECT_EQ(r1.per_entity.size(), 4u);
}

// Two releases of different components on the same nodes add up: a driver
// (+4%) from bucket 200 and a model (-2%) from 350; each is told apart by
// the nodes and times it alone covers.
TEST(PanelTest, StackedReleasesAreToldApart) {
  std::mt19937_64 rng(17);
  const auto on = [](std::size_t e, std::size_t b, std::size_t k) {
    if (k == 0) return e < 5 && b >= 200;
    return e >= 3 && e < 8 && b >= 350;
  };
  Panel p = MakePanel(rng, 12, 600, 0.7, 0.02, {0.04, -0.02}, on);
  const PanelFit fit = FitPanel(p);
  ASSERT_TRUE(fit.effects[0].identified);
  ASSERT_TRUE(fit.effects[1].identified);
  EXPECT_NEAR(fit.effects[0].effect, 0.04, 3 * fit.effects[0].se);
  EXPECT_NEAR(fit.effects[1].effect, -0.02, 3 * fit.effects[1].se);
  EXPECT_GT(fit.effects[0].effect / fit.effects[0].se, 5);
  EXPECT_LT(fit.effects[1].effect / fit.effects[1].se, -3);
}

TEST(PanelTest, AFleetWideStepAndNodeOffsetsAreNotTheRelease) {
  std::mt19937_64 rng(11);
  std::normal_distribution<double> z(0, 1);
  // Every node +20% from bucket 350 (a heat wave, a load shift); the
  // release, harmless, reached nodes 0-1 at 340; they were 4% faster before.
  Panel p(8, 600, 1);
  for (std::size_t e = 0; e < 8; ++e) {
    const double offset = e <= 1 ? -0.04 : 0.0;
    for (std::size_t b = 0; b < 600; ++b) {
      p.Set(e, b, offset + (b >= 350 ? 0.2 : 0.0) + 0.01 * z(rng));
    }
    if (e <= 1) p.AddEffect(e, 0, 340, 600);
  }
  const PanelFit fit = FitPanel(p);
  ASSERT_TRUE(fit.effects[0].identified);
  EXPECT_NEAR(fit.effects[0].effect, 0.0, 0.01);
  EXPECT_LT(std::fabs(fit.effects[0].effect / fit.effects[0].se), 3.3);
}

// With no effect, |z| > 2.576 about 1% of the time under autocorrelated
// noise (phi 0.8): the standard error accounts for the autocorrelation and
// for the fleet's means, which carry the other nodes' noise. (With the
// lag-0 variance, or without the fleet's part, 6-10% of runs rejected.)
TEST(PanelTest, NullEffectsAreCalibratedUnderAutocorrelation) {
  std::mt19937_64 rng(2026);
  int rejected = 0;
  const int runs = 400;
  for (int i = 0; i < runs; ++i) {
    const auto on = [](std::size_t e, std::size_t b, std::size_t) { return e < 3 && b >= 200; };
    Panel p = MakePanel(rng, 12, 400, 0.8, 0.02, {0.0}, on);
    const PanelFit fit = FitPanel(p);
    ASSERT_TRUE(fit.effects[0].identified);
    if (std::fabs(fit.effects[0].effect / fit.effects[0].se) > 2.576) ++rejected;
  }
  EXPECT_LE(rejected, 12) << rejected << " of " << runs;  // nominal 4 of 400
}

TEST(PanelTest, MissingAndExcludedCellsAreLeftOutNotZero) {
  std::mt19937_64 rng(3);
  std::normal_distribution<double> z(0, 1);
  Panel p(6, 300, 1);
  for (std::size_t e = 0; e < 6; ++e) {
    for (std::size_t b = 0; b < 300; ++b) {
      const bool on = e < 2 && b >= 150;
      // Node 0 misses every third bucket (NaN) and a restart (excluded,
      // its value a zero that must not count).
      if (e == 0 && b % 3 == 0) {
        p.Set(e, b, std::nan(""));
      } else if (e == 0 && b >= 150 && b < 160) {
        p.Set(e, b, 0.0);
      } else {
        p.Set(e, b, 1.0 + (on ? 0.1 : 0.0) + 0.01 * z(rng));
      }
    }
    if (e < 2) p.AddEffect(e, 0, 150, 300);
  }
  p.Exclude(0, 150, 160);
  const PanelFit fit = FitPanel(p);
  EXPECT_NEAR(fit.effects[0].effect, 0.1, 0.01);
}

TEST(PanelTest, AnEffectSeenOnlyAloneIsNotIdentified) {
  Panel p(3, 100, 2);
  for (std::size_t e = 0; e < 3; ++e) {
    for (std::size_t b = 0; b < 100; ++b) p.Set(e, b, 1.0);
  }
  p.AddEffect(0, 0, 0, 100);  // node 0 ran release 0 throughout
  p.AddEffect(0, 1, 0, 100);  // and release 1, everywhere at once
  p.AddEffect(1, 1, 50, 100);
  p.AddEffect(2, 1, 50, 100);
  const PanelFit fit = FitPanel(p);
  EXPECT_FALSE(fit.effects[0].identified);
  EXPECT_TRUE(std::isinf(fit.effects[0].se));
  EXPECT_EQ(fit.effects[0].effect, 0);
}

// Release 0 deployed on every node at the same moment cannot be told from
// the fleet's own change then (tau): not identified, and it does not take
// a later release's effect with it.
TEST(PanelTest, AReleaseEverywhereAtOnceIsNotIdentified) {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> z(0, 1);
  Panel p(10, 300, 2);
  for (std::size_t e = 0; e < 10; ++e) {
    for (std::size_t b = 0; b < 300; ++b) {
      p.Set(e, b, (e < 3 && b >= 150 ? -0.3 : 0.0) + 0.01 * z(rng));
    }
    p.AddEffect(e, 0, 6, 300);
    if (e < 3) p.AddEffect(e, 1, 150, 300);
  }
  const PanelFit fit = FitPanel(p);
  EXPECT_FALSE(fit.effects[0].identified);
  ASSERT_TRUE(fit.effects[1].identified);
  EXPECT_NEAR(fit.effects[1].effect, -0.3, 0.01);
  EXPECT_GT(std::fabs(fit.effects[1].effect / fit.effects[1].se), 10);
}

// The exact solve and the sweeps are one least-squares fit: on a panel
// with missing cells, entities that come and go, stacked, overlapping and
// unidentified effects, they agree on every effect, error and residual.
TEST(PanelTest, TheExactSolveAndTheSweepsAgree) {
  std::mt19937_64 rng(41);
  std::bernoulli_distribution missing(0.1);
  const auto on = [](std::size_t e, std::size_t b, std::size_t k) {
    if (k == 0) return e < 6 && b >= 100 + 20 * e;         // staged
    if (k == 1) return e >= 4 && e < 9 && b >= 180;        // overlaps 0 on 4-5
    if (k == 2) return e % 3 == 0 && b >= 220 && b < 260;  // rolled back
    return b >= 150;                                       // everywhere at once
  };
  Panel p = MakePanel(rng, 12, 300, 0.7, 0.02, {0.04, -0.01, 0.02, 0.03}, on);
  for (std::size_t e = 0; e < 12; ++e) {
    for (std::size_t b = 0; b < 300; ++b) {
      if (missing(rng)) p.Set(e, b, std::numeric_limits<double>::quiet_NaN());
    }
  }
  p.Exclude(10, 0, 120);    // an entity that joins late
  p.Exclude(11, 200, 300);  // and one that leaves
  const PanelFit exact = FitPanel(p, PanelSolver::kExact);
  const PanelFit sweeps = FitPanel(p, PanelSolver::kSweeps);
  ASSERT_EQ(exact.effects.size(), sweeps.effects.size());
  for (std::size_t k = 0; k < exact.effects.size(); ++k) {
    EXPECT_EQ(exact.effects[k].identified, sweeps.effects[k].identified) << k;
    if (!exact.effects[k].identified) continue;
    EXPECT_NEAR(exact.effects[k].effect, sweeps.effects[k].effect, 1e-7) << k;
    EXPECT_NEAR(exact.effects[k].se, sweeps.effects[k].se, 1e-7) << k;
  }
  EXPECT_FALSE(exact.effects[3].identified);
  EXPECT_NEAR(exact.rss, sweeps.rss, 1e-9 * (1 + sweeps.rss));
  for (std::size_t i = 0; i < exact.residual.size(); ++i) {
    if (std::isnan(sweeps.residual[i])) {
      EXPECT_TRUE(std::isnan(exact.residual[i])) << i;
    } else {
      EXPECT_NEAR(exact.residual[i], sweeps.residual[i], 1e-7) << i;
    }
  }
}

}  // namespace
}  // namespace gpucanary::analysis::stats
