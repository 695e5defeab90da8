// When each release reached each of its nodes (docs/analysis-method.md,
// "Attribution"): its nodes are its targets, else the nodes its selector's
// host matchers accept, else every node; it arrived on a node at the end of
// the first model-server restart there after it started, else at its start.

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "analysis/correlate/correlate_internal.h"
#include "model/matcher.h"

namespace gpucanary::analysis::correlate {
namespace {

// A release's nodes are reached within this long of its start (a staged
// rollout takes longer: announce each stage).
constexpr std::int64_t kRolloutS = 1800;

// The nodes a release names: its targets, else the nodes its selector's
// host matchers accept, else every node.
std::vector<int> ReleaseNodes(const releases::Release& r, const FleetSeries& fleet) {
  std::vector<int> out;
  if (!r.targets.empty()) {
    for (const std::string& t : r.targets) {
      for (std::size_t n = 0; n < fleet.nodes.size(); ++n) {
        if (fleet.nodes[n].host == t) out.push_back(static_cast<int>(n));
      }
    }
    return out;
  }
  std::vector<model::Matcher> host_matchers;
  if (!r.selector.empty()) {
    if (Result<std::vector<model::Matcher>> m = model::ParseSelector(r.selector)) {
      for (const model::Matcher& x : *m) {
        if (x.name() == "Hostname" || x.name() == "hostname") host_matchers.push_back(x);
      }
    }
  }
  for (std::size_t n = 0; n < fleet.nodes.size(); ++n) {
    bool ok = true;
    for (const model::Matcher& m : host_matchers) ok &= m.Matches(fleet.nodes[n].host);
    if (ok) out.push_back(static_cast<int>(n));
  }
  return out;
}

// When the first release after order[i] that names node `n` started
// (infinity: none does).
double ReplacedAt(const std::vector<const releases::Release*>& order,
                  const std::vector<std::vector<int>>& nodes_of, std::size_t i, int n) {
  const double start = order[i]->started_at;
  for (std::size_t j = i + 1; j < order.size(); ++j) {
    if (order[j]->started_at > start &&
        std::find(nodes_of[j].begin(), nodes_of[j].end(), n) != nodes_of[j].end()) {
      return order[j]->started_at;
    }
  }
  return std::numeric_limits<double>::infinity();
}

// When a release started at `start` reached node `n`: the end of the first
// restart there in [start - 5 s, until), and true; else `start`, and false.
std::pair<double, bool> ArrivalAt(const FleetSeries& fleet, int n, double start, double until) {
  if (static_cast<std::size_t>(n) < fleet.restarts.size()) {
    for (const Restart& rs : fleet.restarts[static_cast<std::size_t>(n)]) {
      if (static_cast<double>(rs.to_s) >= start - 5 && static_cast<double>(rs.from_s) < until) {
        return {static_cast<double>(rs.to_s), true};
      }
    }
  }
  return {start, false};
}

// Release order[i] and when it reached each of its nodes (nodes_of[i]),
// its nodes in the order it reached them.
Reach ReachOf(const std::vector<const releases::Release*>& order,
              const std::vector<std::vector<int>>& nodes_of, std::size_t i,
              const FleetSeries& fleet) {
  Reach reach;
  reach.release = order[i];
  const double start = order[i]->started_at;
  for (int n : nodes_of[i]) {
    const double replaced = ReplacedAt(order, nodes_of, i, n);
    const double until = std::min(start + kRolloutS, replaced);
    const auto [at, seen] = ArrivalAt(fleet, n, start, until);
    reach.arrival[n] = at;
    reach.observed[n] = seen;
    reach.replaced[n] = replaced;
    reach.nodes.push_back(n);
  }
  std::stable_sort(reach.nodes.begin(), reach.nodes.end(),
                   [&](int a, int b) { return reach.arrival[a] < reach.arrival[b]; });
  return reach;
}

}  // namespace

// When each release reached each of its nodes: the end of the first
// model-server restart there after it started (and before the next release
// that names the node started), else its start.
std::vector<Reach> ResolveReaches(const std::vector<releases::Release>& releases,
                                  const FleetSeries& fleet) {
  std::vector<const releases::Release*> order;
  order.reserve(releases.size());
  for (const releases::Release& r : releases) order.push_back(&r);
  std::stable_sort(order.begin(), order.end(),
                   [](const auto* a, const auto* b) { return a->started_at < b->started_at; });
  std::vector<std::vector<int>> nodes_of;
  nodes_of.reserve(order.size());
  for (const releases::Release* r : order) nodes_of.push_back(ReleaseNodes(*r, fleet));
  std::vector<Reach> out;
  for (std::size_t i = 0; i < order.size(); ++i) out.push_back(ReachOf(order, nodes_of, i, fleet));
  return out;
}

}  // namespace gpucanary::analysis::correlate
