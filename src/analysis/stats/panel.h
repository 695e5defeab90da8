#pragma once
// Release effects on a panel: entities (a fleet's nodes) observed in time
// buckets, each cell under the effects (releases) active on that entity
// then. The model is two-way fixed effects with additive effects,
//
//   y[e][b] = alpha[e] + tau[b] + sum of beta[k] over the effects k active at (e, b) + noise.
//
// Effects stack: a driver release and a model release on one node add up;
// which one ends another is the caller's business (it sets each effect's
// interval). alpha takes out each entity's own level (a node 4% faster than
// the rest stays 4% faster), tau everything the fleet shares in a bucket (a
// heat wave, a load shift, the diurnal curve), so beta[k] is a difference in
// differences: how the entities under k moved against the same entities
// without it and the others at the same time. Fitted by least squares over
// the used cells (finite y, not excluded): exactly (PanelSolver::kExact, tau
// profiled out, Cholesky on alpha and beta) for up to 512 entities, by block
// coordinate descent beyond (each block's least-squares update in turn).
//
// Standard errors respect each entity's autocorrelation. By
// Frisch-Waugh-Lovell, beta[k] = sum(c y) with c = D~ / sum(D~^2), D~ the
// residual of k's indicator fitted by every other term; its variance is the
// sum over entities of their long-run variance times their sum of c^2 (c is
// constant over long stretches of an entity). An entity's long-run variance
// is estimated from its residuals as the larger of non-overlapping batch
// means (batches of max(4, sqrt(n)) cells: longer memory) and an AR(1) fit
// (gamma0 (1 + rho) / (1 - rho): batch means of a few dozen cells miss part
// of a strong short-range correlation), never below the lag-0 variance.
// Shocks that every entity shares are in tau, not in the error.
//
//   Panel p(entities, buckets, /*effects=*/2);
//   p.Set(e, b, std::log(latency));
//   p.AddEffect(e, /*effect=*/0, from_bucket, to_bucket);
//   Result<PanelFit> fit = FitPanel(p);
//   // fit->effects[0].effect, .se, .per_entity
//
// Thread-compatible; FitPanel is a pure function.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/status.h"

namespace gpucanary::analysis::stats {

class Panel {
 public:
  Panel(std::size_t entities, std::size_t buckets, std::size_t effects);

  // y of one cell (NaN: no data). Out-of-range cells are ignored.
  void Set(std::size_t entity, std::size_t bucket, double y);
  // Leaves the entity's buckets [from, to) out of the fit.
  void Exclude(std::size_t entity, std::size_t from, std::size_t to);
  // Effect `effect` is active on the entity's buckets [from, to).
  void AddEffect(std::size_t entity, std::size_t effect, std::size_t from, std::size_t to);

  std::size_t entities() const { return entities_; }
  std::size_t buckets() const { return buckets_; }
  std::size_t effects() const { return effects_; }
  double y(std::size_t e, std::size_t b) const { return y_[e * buckets_ + b]; }
  bool used(std::size_t e, std::size_t b) const;
  bool active(std::size_t e, std::size_t b, std::size_t effect) const;
  // The effects active in a cell, ascending.
  const std::vector<std::uint32_t>& ActiveAt(std::size_t e, std::size_t b) const;

 private:
  friend struct PanelAccess;
  std::size_t entities_;
  std::size_t buckets_;
  std::size_t effects_;
  std::vector<double> y_;
  std::vector<bool> excluded_;
  // Per cell, an index into sets_ (the distinct active sets; 0 is empty).
  std::vector<std::uint32_t> set_;
  std::vector<std::vector<std::uint32_t>> sets_;
};

struct EntityEffect {
  std::size_t entity = 0;
  double effect = 0;       // this entity's own difference in differences
  std::int64_t cells = 0;  // its used cells under the effect
  double weight = 0;       // its weight in the pooled effect: n_in n_out / (n_in + n_out)
};

struct EffectEstimate {
  double effect = 0;  // beta; 0 when unidentified
  double se = 0;      // standard error (autocorrelation-aware); +inf: unidentified
  std::int64_t cells = 0;
  // The entities seen both with and without it, with their own estimates.
  std::vector<EntityEffect> per_entity;
  bool identified = false;
};

struct PanelFit {
  std::vector<EffectEstimate> effects;  // by effect index
  std::vector<double> alpha;            // per entity (NaN: no cell)
  std::vector<double> tau;              // per bucket (NaN: no cell)
  std::vector<double> residual;         // per cell, entity-major (NaN: unused)
  int iterations = 0;
  double rss = 0;  // residual sum of squares
};

// How the least squares are solved; both give the same fit (to 1e-9).
enum class PanelSolver : std::uint8_t {
  kAuto,    // kExact up to 512 entities, kSweeps beyond
  kExact,   // tau profiled out, the normal equations of alpha and beta by
            // Cholesky: O(buckets x entities^2 + (entities + effects)^3)
  kSweeps,  // block coordinate descent: O(cells) per sweep, hundreds of sweeps
};

PanelFit FitPanel(const Panel& panel, PanelSolver solver = PanelSolver::kAuto);

}  // namespace gpucanary::analysis::stats
