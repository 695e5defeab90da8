// A group of episodes as a Regression (docs/analysis-method.md, "Episodes,
// mechanisms, regressions" and "Attribution"): its headline metric, when and
// where it began, the evidence of every metric that moved, the releases
// scored on it, its scope and the sentence that sums it up.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "analysis/correlate/correlate_internal.h"
#include "analysis/judge/diagnose.h"
#include "core/time_format.h"

namespace gpucanary::analysis::correlate {
namespace {

// The headline is the one most of its episodes carry.
std::string HeadlineMetric(const Group& g) {
  std::map<std::string, int> votes;
  for (const Episode* e : g.episodes) ++votes[e->headline];
  return std::max_element(votes.begin(), votes.end(),
                          [](const auto& a, const auto& b) { return a.second < b.second; })
      ->first;
}

std::vector<std::string> GpuKeys(const Group& g, const FleetSeries& fleet) {
  std::set<std::string> keys;
  for (const Episode* e : g.episodes) keys.insert(fleet.gpus[static_cast<std::size_t>(e->gpu)].key);
  return {keys.begin(), keys.end()};
}

std::vector<std::string> NodeHosts(const Group& g, const FleetSeries& fleet) {
  std::vector<std::string> nodes;
  for (const auto& [node, onset] : g.node_onset) {
    nodes.push_back(fleet.nodes[static_cast<std::size_t>(node)].host);
  }
  std::sort(nodes.begin(), nodes.end());
  return nodes;
}

// One metric's changes summed up: medians of its levels and changes.
MetricChange Summarize(int metric, const std::vector<const Change*>& changes) {
  const MetricDef& def = Metrics()[static_cast<std::size_t>(metric)];
  MetricChange mc;
  mc.metric = std::string(def.name);
  mc.unit = std::string(def.unit);
  mc.relative = def.relative;
  std::vector<double> b;
  std::vector<double> a;
  std::vector<double> c;
  for (const Change* ch : changes) {
    b.push_back(ch->before);
    a.push_back(ch->after);
    c.push_back(ch->change);
  }
  mc.before = Median(b);
  mc.after = Median(a);
  mc.change = Median(c);
  mc.entities = static_cast<int>(changes.size());
  return mc;
}

// Evidence: per metric, medians over the episodes that moved it (a
// node-level change counts once per node), by metric.
std::vector<MetricChange> Evidence(const Group& g) {
  std::map<int, std::vector<const Change*>> by_metric;
  std::set<std::pair<int, int>> node_seen;  // (metric, node)
  for (const Episode* e : g.episodes) {
    for (const Change& c : e->changes) {
      const MetricDef& def = Metrics()[static_cast<std::size_t>(c.metric)];
      if (def.level == Level::kNode && !node_seen.emplace(c.metric, e->node).second) continue;
      by_metric[c.metric].push_back(&c);
    }
  }
  std::vector<MetricChange> out;
  out.reserve(by_metric.size());
  for (const auto& [metric, changes] : by_metric) out.push_back(Summarize(metric, changes));
  return out;
}

// The evidence, headline metric first; the regression's change is the
// headline's.
void AddEvidence(const Group& g, Regression& out) {
  out.evidence = Evidence(g);
  for (const MetricChange& mc : out.evidence) {
    if (mc.metric == out.metric) {
      out.change = mc.change;
      out.change_relative = mc.relative;
    }
  }
  std::stable_sort(out.evidence.begin(), out.evidence.end(),
                   [&](const MetricChange& x, const MetricChange& y) {
                     return (x.metric == out.metric) > (y.metric == out.metric);
                   });
}

// Candidates: every release scoring above 0.05, best first; suspects: those
// reaching min_score.
void RankReleases(std::vector<Suspect> scored, const CorrelateOptions& options, Regression& out) {
  for (Suspect& s : scored) {
    if (s.score > 0.05) out.candidates.push_back(std::move(s));
  }
  std::stable_sort(out.candidates.begin(), out.candidates.end(),
                   [](const Suspect& a, const Suspect& b) { return a.score > b.score; });
  for (const Suspect& s : out.candidates) {
    if (s.score >= options.min_score) out.suspects.push_back(s);
  }
}

// Scope: the release's, when one explains it; the fleet's when (nearly)
// every node changed at once; else the nodes'.
vocab::Scope ScopeOf(const Group& g, const Regression& out, const FleetSeries& fleet) {
  if (!out.suspects.empty()) return vocab::Scope::kRelease;
  if (g.node_onset.size() >= 3 &&
      static_cast<double>(g.node_onset.size()) >= 0.8 * static_cast<double>(fleet.nodes.size())) {
    return vocab::Scope::kFleet;
  }
  return vocab::Scope::kNode;
}

// The sentence.
std::string Sentence(const Regression& out, std::optional<vocab::CauseKind> kind,
                     vocab::Scope scope) {
  char change[64] = "";
  if (std::isfinite(out.change)) {
    if (out.change_relative) {
      std::snprintf(change, sizeof change, "%+.0f%%", 100 * out.change);
    } else {
      std::snprintf(change, sizeof change, "%+.3g", out.change);
    }
  }
  std::string sentence = std::string(kind ? vocab::Name(*kind) : "change") + " on " +
                         DescribeGpus(out.gpus) + " from " +
                         FormatUtcMillis(static_cast<std::int64_t>(out.at * 1000)) + ": " +
                         out.metric + " " + change;
  if (!out.suspects.empty()) {
    char score[32];
    std::snprintf(score, sizeof score, "%.2f", out.suspects.front().score);
    sentence += "; suspect " + out.suspects.front().release + " (score " + score + ")";
  } else {
    sentence += scope == vocab::Scope::kFleet ? "; no release explains this (fleet-wide, at once)"
                                              : "; no release explains this";
  }
  return sentence;
}

}  // namespace

// Builds the regression of `g` (evidence, headline, causes, suspects) from
// its releases' scores.
Regression MakeRegression(const Group& g, std::vector<Suspect> scored, const FleetSeries& fleet,
                          const CorrelateOptions& options) {
  Regression out;
  const Episode& first = *g.episodes.front();
  const std::optional<vocab::CauseKind> kind = first.kind;
  std::string detail = first.detail;
  out.metric = HeadlineMetric(g);
  out.at = std::numeric_limits<double>::infinity();
  for (const Episode* e : g.episodes) out.at = std::min(out.at, fleet.BucketStart(e->bucket));
  out.gpus = GpuKeys(g, fleet);
  out.nodes = NodeHosts(g, fleet);
  AddEvidence(g, out);
  RankReleases(std::move(scored), options, out);
  const vocab::Scope scope = ScopeOf(g, out, fleet);
  out.causes.push_back({kind, scope, detail});
  out.summary = Sentence(out, kind, scope);
  return out;
}

}  // namespace gpucanary::analysis::correlate
