// When each release reached each of its nodes (docs/analysis-method.md,
// "Attribution"): its nodes are its targets, else the nodes its selector's
// host matchers accept, else every node; it arrived on a node at the end of
// the first model-server restart there after it started, else at its start.

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
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

// The components a release changes, as its annotation says: "model"
// (model, checkpoint), "quantization", "cuda", "framework" (framework,
// framework_version), "driver" (an unknown driver_version or driver field).
std::set<std::string> Components(const releases::Release& r) {
  std::set<std::string> out;
  if (!r.model.empty() || !r.checkpoint.empty()) out.insert("model");
  if (!r.quantization.empty()) out.insert("quantization");
  if (!r.cuda_version.empty()) out.insert("cuda");
  if (!r.framework.empty() || !r.framework_version.empty()) out.insert("framework");
  const nlohmann::json j = nlohmann::json::parse(r.annotation, nullptr, false);
  if (j.is_object() && (j.contains("driver_version") || j.contains("driver"))) {
    out.insert("driver");
  }
  return out;
}

// Whether `later`, deployed on a node after `earlier`, ends `earlier`'s
// effect there: it names it as its `previous` (an upgrade, a rollback); or
// it changes a component `earlier` changed (a new image replaces the old);
// or neither says what it changes (a deploy replaces what ran). Releases of
// different components (a driver, then a model) stack. A release that says
// nothing but its `previous` ends only that one.
bool Supersedes(const releases::Release& later, const releases::Release& earlier) {
  if (!later.previous.empty() && later.previous == earlier.id) return true;
  const std::set<std::string> a = Components(later);
  const std::set<std::string> b = Components(earlier);
  if (a.empty()) return later.previous.empty();
  if (b.empty()) return true;
  return std::any_of(a.begin(), a.end(), [&](const std::string& c) { return b.contains(c); });
}

// Per node, the releases naming it (indices into `order`, by start) matched
// to its model-server restarts, both in time order: release j may take a
// restart that ended at or after its start (less 5 s) and began within
// kRolloutS of it. Of the order-keeping matchings, the one that matches the
// most releases, and among those the one with the least total wait from
// start to restart: interleaved staged rollouts each get their own restart,
// and a restart goes to the release that started just before it, not to
// an older one that never got there. Unmatched: nullopt.
std::vector<std::optional<double>> MatchRestarts(const std::vector<const releases::Release*>& order,
                                                 const std::vector<std::size_t>& mine,
                                                 const std::vector<Restart>& restarts) {
  const std::size_t nj = mine.size();
  const std::size_t nr = restarts.size();
  const auto fits = [&](std::size_t j, std::size_t k) {
    const double start = order[mine[j]]->started_at;
    return static_cast<double>(restarts[k].to_s) >= start - 5 &&
           static_cast<double>(restarts[k].from_s) < start + static_cast<double>(kRolloutS);
  };
  // best[j][k]: (matches, -wait) over releases j.. and restarts k..
  using Score = std::pair<int, double>;
  std::vector<std::vector<Score>> best(nj + 1, std::vector<Score>(nr + 1, {0, 0.0}));
  for (std::size_t j = nj; j-- > 0;) {
    for (std::size_t k = nr + 1; k-- > 0;) {
      Score s = best[j + 1][k];  // release j unmatched
      if (k < nr) {
        s = std::max(s, best[j][k + 1]);  // restart k to no one
        if (fits(j, k)) {
          const double wait = static_cast<double>(restarts[k].to_s) - order[mine[j]]->started_at;
          const Score take = {best[j + 1][k + 1].first + 1, best[j + 1][k + 1].second - wait};
          s = std::max(s, take);
        }
      }
      best[j][k] = s;
    }
  }
  std::vector<std::optional<double>> out(nj);
  std::size_t j = 0;
  std::size_t k = 0;
  while (j < nj && k < nr) {
    if (fits(j, k)) {
      const double wait = static_cast<double>(restarts[k].to_s) - order[mine[j]]->started_at;
      const Score take = {best[j + 1][k + 1].first + 1, best[j + 1][k + 1].second - wait};
      if (take == best[j][k]) {
        out[j] = static_cast<double>(restarts[k].to_s);
        ++j;
        ++k;
        continue;
      }
    }
    if (best[j + 1][k] == best[j][k]) {
      ++j;
    } else {
      ++k;
    }
  }
  return out;
}

}  // namespace

// When each release reached each of its nodes: its restart there (matched
// in order with the other releases naming the node), else its start; a node
// of a release seen restarting elsewhere that never restarted for it, while
// its server was scraped, was not reached (a rollout that stopped). A
// release's effect on a node ends when a release that supersedes it arrives
// there.
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

  // Per node: the releases naming it and their matched restarts.
  std::vector<std::map<std::size_t, std::optional<double>>> matched(fleet.nodes.size());
  for (std::size_t n = 0; n < fleet.nodes.size(); ++n) {
    std::vector<std::size_t> mine;
    for (std::size_t i = 0; i < order.size(); ++i) {
      if (std::find(nodes_of[i].begin(), nodes_of[i].end(), static_cast<int>(n)) !=
          nodes_of[i].end()) {
        mine.push_back(i);
      }
    }
    static const std::vector<Restart> kNone;
    const std::vector<Restart>& restarts = n < fleet.restarts.size() ? fleet.restarts[n] : kNone;
    const std::vector<std::optional<double>> at = MatchRestarts(order, mine, restarts);
    for (std::size_t j = 0; j < mine.size(); ++j) matched[n][mine[j]] = at[j];
  }
  const auto served = [&](std::size_t n) {
    return n < fleet.node_series.size() && !fleet.node_series[n].empty();
  };

  std::vector<Reach> out(order.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    Reach& reach = out[i];
    reach.release = order[i];
    bool any_observed = false;
    for (int n : nodes_of[i]) any_observed |= matched[static_cast<std::size_t>(n)][i].has_value();
    for (int n : nodes_of[i]) {
      const std::optional<double>& at = matched[static_cast<std::size_t>(n)][i];
      if (!at && any_observed && served(static_cast<std::size_t>(n))) continue;  // not reached
      reach.arrival[n] = at.value_or(order[i]->started_at);
      reach.observed[n] = at.has_value();
      reach.nodes.push_back(n);
    }
    std::stable_sort(reach.nodes.begin(), reach.nodes.end(),
                     [&](int a, int b) { return reach.arrival[a] < reach.arrival[b]; });
  }
  // Each release's end on each node: the first later arrival there of a
  // release that supersedes it.
  for (std::size_t i = 0; i < out.size(); ++i) {
    for (int n : out[i].nodes) {
      double end = std::numeric_limits<double>::infinity();
      for (std::size_t j = 0; j < out.size(); ++j) {
        if (j == i) continue;
        auto it = out[j].arrival.find(n);
        if (it == out[j].arrival.end() || it->second <= out[i].arrival[n]) continue;
        if (it->second < end && Supersedes(*order[j], *order[i])) end = it->second;
      }
      out[i].replaced[n] = end;
    }
  }
  return out;
}

}  // namespace gpucanary::analysis::correlate
