#pragma once
// Internal to analysis/correlate: what the steps of the correlation share,
// and nothing else should use. correlate.cc runs them in order (correlate.h
// gives the method); each step lives in its own file:
//   changes.cc     the lasting, material, abrupt changes of one series
//   episodes.cc    one GPU's changes close in time, and their mechanism
//   reach.cc       when each release reached each of its nodes
//   scoring.cc     a release scored on a group of episodes (time, space,
//                  dose, mechanism) and the reason in words
//   regression.cc  a group of episodes as a Regression: headline, evidence,
//                  suspects, scope and the sentence
//
// Thread-compatible: plain values and pure functions.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/correlate/correlate.h"
#include "analysis/correlate/series.h"
#include "releases/release.h"
#include "vocab/vocab.h"

namespace gpucanary::analysis::correlate {

// A change must hold at least this long to count (a burst that went away
// does not), and a step the segmentation cut into pieces shorter than this
// is one change.
inline constexpr std::int64_t kPersistS = 90;
// Onsets up to this long after a release's arrival count fully on time.
inline constexpr std::int64_t kPromptLagS = 120;

// One lasting, material change of one series.
struct Change {
  int metric = 0;
  std::size_t bucket = 0;  // the first bucket of the new level
  double before = 0;       // levels in the metric's own unit
  double after = 0;
  double change = 0;  // relative or absolute, per the metric
  bool harmful = false;
};

// One GPU's co-occurring changes, with the mechanism they point to.
struct Episode {
  int gpu = 0;
  int node = 0;
  std::size_t bucket = 0;  // onset
  std::vector<Change> changes;
  std::optional<vocab::CauseKind> kind;  // unset when no mechanism fits
  std::string detail;                    // XID code, reasons
  std::string headline;
};

// One release and the fleet nodes it reached.
struct Reach {
  const releases::Release* release = nullptr;
  std::vector<int> nodes;         // fleet node indices, in arrival order
  std::map<int, double> arrival;  // node -> Unix seconds
  std::map<int, bool> observed;
  std::map<int, double> replaced;  // node -> when the next release there started (inf: never)
};

// Episodes of one mechanism close in time: one regression to attribute.
struct Group {
  std::vector<const Episode*> episodes;
  std::map<int, double> node_onset;  // node -> earliest onset (Unix seconds)
};

// Every release scored on a group, in `reaches` order; `explained[i]`
// receives the nodes release i explains (on its nodes, on time).
struct Scored {
  std::vector<Suspect> suspects;
  std::vector<std::set<int>> explained;
};

// A change on `changed` of the fleet's `nodes` nodes is fleet-wide: at least
// 3 nodes and 80% of the fleet (a heat wave, a load shift).
inline bool FleetWide(std::size_t changed, std::size_t nodes) {
  return changed >= 3 && static_cast<double>(changed) >= 0.8 * static_cast<double>(nodes);
}

// correlate.cc: whether the fleet's own load explains a change of the
// service latency `metric` from `at_s` (Unix seconds) on `nodes` (host
// names, sorted; fleet-wide, else false): the nodes' mean log latency
// against their mean log load, per bucket, fitted by a quadratic over the
// whole range, steps less than the metric's floor at the change (medians
// of the residuals over 600 s either side).
bool FleetLoadExplains(std::string_view metric, double at_s, const std::vector<std::string>& nodes,
                       const FleetSeries& fleet);

// correlate.cc: a node's own fault is one report however often it flares.
// Regressions (in time order) with no suspect, not fleet-wide, on the same
// nodes and of one mechanism become the first of them (its GPUs the union,
// "; recurred N times until T" in its summary); so does a change of the same
// measure there with no mechanism named, within kRecurSpanS of the last
// flare.
inline constexpr std::int64_t kRecurSpanS = 1800;
std::vector<Regression> MergeRecurring(std::vector<Regression> regressions,
                                       const FleetSeries& fleet);

// The median of `v` (the mean of the two middle values for an even count);
// NaN for an empty `v`.
double Median(std::vector<double> v);

// changes.cc: the lasting, material, abrupt changes of one series
// (docs/analysis-method.md, "Change points").
std::vector<Change> DetectChanges(const EntitySeries& series, std::int64_t resolution_s);

// episodes.cc: every GPU's episodes, each named by its mechanism and dated
// by the mechanism's own metric.
std::vector<Episode> FindEpisodes(const FleetSeries& fleet);

// reach.cc: the releases by `started_at`, each with the nodes it names and
// when it reached each of them.
std::vector<Reach> ResolveReaches(const std::vector<releases::Release>& releases,
                                  const FleetSeries& fleet);

// scoring.cc: every release scored on `g`. REQUIRES: `g` has an episode and
// its node_onset is indexed.
Scored ScoreReleases(const Group& g, const std::vector<Reach>& reaches, const FleetSeries& fleet,
                     const CorrelateOptions& options);

// scoring.cc: how plausible it is that a release (rather than hardware)
// causes `kind` (`xid`: the XID code, for kXidErrors); 0.6 when no
// mechanism is named.
double MechanismPlausibility(std::optional<vocab::CauseKind> kind, std::uint32_t xid);

// regression.cc: the regression of `g` (evidence, headline, causes,
// suspects, summary) from its releases' scores. REQUIRES: as ScoreReleases.
Regression MakeRegression(const Group& g, std::vector<Suspect> scored, const FleetSeries& fleet,
                          const CorrelateOptions& options);

// One release's effect on one measure (effects.cc): log ratio for relative
// metrics, else a difference; z > 0 is harmful (for neutral metrics, up).
struct MeasureEffect {
  int metric = 0;  // into Metrics()
  bool identified = false;
  double effect = 0;
  double se = 0;
  double z = 0;
  // The raw mean on the release's nodes before it got there.
  double before = 0;
  std::vector<std::pair<int, double>> per_node;  // node -> its own effect
  int nodes_harmed = 0;                          // per_node entries in the harmful direction
  // The smallest harmful z with any one node left out (z itself with one
  // node): a fault of one node is not a release's effect on all of them.
  double robust_z = 0;
  double robust_effect = 0;  // the pooled effect without that node
  // The effect over each node's first kEarlyS in the release (after its
  // transition), averaged over the nodes: a release's effect is there from
  // the start; a fault that began later is not (NaN: no such cells).
  double early = std::numeric_limits<double>::quiet_NaN();
};

// The first seconds of a release on a node that its early effect is read on.
inline constexpr double kEarlyS = 300;

struct ReleaseEffect {
  std::size_t reach = 0;                // into the reaches
  std::vector<MeasureEffect> measures;  // the metrics with data, in Metrics() order
};

struct EffectsFit {
  std::vector<ReleaseEffect> releases;  // one per reach
  // d log(per-token latency) / d log(running batch), within nodes and time;
  // NaN without a running-batch series.
  double load_slope = std::numeric_limits<double>::quiet_NaN();
};

// effects.cc: the GPU gauges that follow the work (clocks, power,
// temperature, activities, throttling): read only while the node served
// tokens, since an idle GPU at 345 MHz is not a slower one.
bool FollowsWork(std::string_view metric);

// effects.cc: the metrics a regression may be headed by, the measures users
// care about (per-token latency, clocks, throttle and error states, the
// link); the others (power, activities, occupancy, temperature, tails,
// tokens/s) are evidence.
bool CanHeadRegression(std::string_view metric);

// effects.cc: every release's effect on every measure, from one two-way
// fixed-effects panel per measure over the fleet's nodes
// (docs/analysis-method.md, "Release effects").
EffectsFit EstimateReleaseEffects(const FleetSeries& fleet, const std::vector<Reach>& reaches);

// regression.cc: release `reach`'s regression from its effects, when one of
// its heading measures is significantly and materially worse on most of its
// nodes (`z_crit`: the one-sided bound after correction for the tests
// made); `others` ranks the candidates. Nullopt when none is.
std::optional<Regression> MakeReleaseRegression(const ReleaseEffect& effect,
                                                const std::vector<ReleaseEffect>& others,
                                                const std::vector<Reach>& reaches,
                                                const FleetSeries& fleet, double z_crit);

}  // namespace gpucanary::analysis::correlate
