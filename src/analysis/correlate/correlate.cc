// The correlation, step by step (correlate.h gives the method): series,
// episodes, groups of episodes, and each group attributed to the releases
// that explain it. The steps themselves live in the files
// correlate_internal.h lists.

#include "analysis/correlate/correlate.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "analysis/correlate/correlate_internal.h"
#include "analysis/correlate/series.h"

namespace gpucanary::analysis::correlate {
namespace {

Status CheckOptions(const CorrelateOptions& options) {
  if (options.resolution_s < 0 || options.max_lag_s <= kPromptLagS || options.min_score < 0 ||
      options.min_score > 1 || options.group_window_s < 0 || options.warmup_s < 0) {
    return Status(StatusCode::kInvalidArgument,
                  "correlate options out of range (resolution >= 0, max lag > 120 s, "
                  "0 <= min score <= 1)");
  }
  if (options.from_s && options.to_s && *options.from_s >= *options.to_s) {
    return Status(StatusCode::kInvalidArgument, "empty time range: from must be before to");
  }
  return Status::Ok();
}

// The releases considered, with where and when each arrived, for the report.
std::vector<ReleaseReach> DescribeReaches(const std::vector<Reach>& reaches,
                                          const FleetSeries& fleet) {
  std::vector<ReleaseReach> out;
  for (const Reach& r : reaches) {
    ReleaseReach rr;
    rr.release = r.release->id;
    rr.started_at = r.release->started_at;
    for (int n : r.nodes) {
      rr.arrivals.push_back(
          {fleet.nodes[static_cast<std::size_t>(n)].host, r.arrival.at(n), r.observed.at(n)});
    }
    out.push_back(std::move(rr));
  }
  return out;
}

// Groups episodes by mechanism (or headline, when none) and time: an
// episode joins its key's last group when it began within group_window_s
// of that group's last episode. REQUIRES: `episodes` sorted by onset; they
// outlive the groups.
std::vector<Group> GroupEpisodes(const std::vector<Episode>& episodes, const FleetSeries& fleet,
                                 const CorrelateOptions& options) {
  std::map<std::string, std::vector<Group>> by_key;
  const double window = static_cast<double>(options.group_window_s);
  for (const Episode& e : episodes) {
    // Keyed by the kind's name: the groups' order, and so the order of
    // regressions that tie on onset and metric, stays the names' order.
    const std::string key = e.kind ? std::string(vocab::Name(*e.kind)) : "metric:" + e.headline;
    std::vector<Group>& list = by_key[key];
    const double t = fleet.BucketStart(e.bucket);
    if (!list.empty() && t - fleet.BucketStart(list.back().episodes.back()->bucket) <= window) {
      list.back().episodes.push_back(&e);
    } else {
      list.push_back(Group{{&e}, {}});
    }
  }
  std::vector<Group> groups;
  for (auto& [key, list] : by_key) std::move(list.begin(), list.end(), std::back_inserter(groups));
  return groups;
}

void IndexNodes(Group& g, const FleetSeries& fleet) {
  g.node_onset.clear();
  for (const Episode* e : g.episodes) {
    const double t = fleet.BucketStart(e->bucket);
    auto [it, inserted] = g.node_onset.emplace(e->node, t);
    if (!inserted) it->second = std::min(it->second, t);
  }
}

// The nodes the best-scoring release explains, when it is a suspect and
// explains some but not all of `g`'s changed nodes; else null.
const std::set<int>* PartlyExplained(const Group& g, const Scored& scored,
                                     const CorrelateOptions& options) {
  double best = -1;
  const std::set<int>* best_nodes = nullptr;
  for (std::size_t i = 0; i < scored.suspects.size(); ++i) {
    if (scored.suspects[i].score > best) {
      best = scored.suspects[i].score;
      best_nodes = &scored.explained[i];
    }
  }
  // With no release, best_nodes stays null (and best -1, below any valid
  // min_score).
  if (best_nodes != nullptr && best >= options.min_score && !best_nodes->empty() &&
      best_nodes->size() < g.node_onset.size()) {
    return best_nodes;
  }
  return nullptr;
}

// Attributes each group; where the best release explains only some nodes,
// splits the rest off and attributes them on their own.
std::vector<Regression> Attribute(std::vector<Group> work, const std::vector<Reach>& reaches,
                                  const FleetSeries& fleet, const CorrelateOptions& options) {
  std::vector<Regression> out;
  while (!work.empty()) {
    Group g = std::move(work.back());
    work.pop_back();
    IndexNodes(g, fleet);
    Scored scored = ScoreReleases(g, reaches, fleet, options);
    if (const std::set<int>* explained = PartlyExplained(g, scored, options)) {
      Group in;
      Group rest;
      for (const Episode* e : g.episodes) {
        (explained->contains(e->node) ? in : rest).episodes.push_back(e);
      }
      work.push_back(std::move(rest));
      IndexNodes(in, fleet);
      out.push_back(
          MakeRegression(in, ScoreReleases(in, reaches, fleet, options).suspects, fleet, options));
      continue;
    }
    out.push_back(MakeRegression(g, std::move(scored.suspects), fleet, options));
  }
  std::sort(out.begin(), out.end(), [](const Regression& a, const Regression& b) {
    return std::tie(a.at, a.metric) < std::tie(b.at, b.metric);
  });
  return out;
}

}  // namespace

Result<CorrelateReport> Correlate(Replay& replay, const std::vector<releases::Release>& releases,
                                  const CorrelateOptions& options) {
  GC_RETURN_IF_ERROR(CheckOptions(options));
  Result<FleetSeries> built =
      BuildSeries(replay, options.resolution_s, options.from_s, options.to_s, options.warmup_s,
                  CorrelateOptions::kMaxBuckets);
  if (!built) return Error(built.error());
  const FleetSeries& fleet = *built;

  CorrelateReport report;
  report.resolution_s = fleet.resolution_s;
  report.gpus = static_cast<int>(fleet.gpus.size());
  report.nodes = static_cast<int>(fleet.nodes.size());
  const std::vector<Reach> reaches = ResolveReaches(releases, fleet);
  report.releases = DescribeReaches(reaches, fleet);
  // No data in range: the releases considered, the range asked for, nothing
  // else (missing telemetry is no regression, not a zero).
  if (fleet.buckets == 0) {
    report.from = static_cast<double>(options.from_s.value_or(0));
    report.to = static_cast<double>(options.to_s.value_or(0));
    return report;
  }
  report.from = static_cast<double>(fleet.first_tick);
  report.to = static_cast<double>(fleet.last_tick + 1);

  std::vector<Episode> episodes = FindEpisodes(fleet);
  std::sort(episodes.begin(), episodes.end(), [](const Episode& a, const Episode& b) {
    return std::tie(a.bucket, a.gpu) < std::tie(b.bucket, b.gpu);
  });
  report.regressions = Attribute(GroupEpisodes(episodes, fleet, options), reaches, fleet, options);
  return report;
}

}  // namespace gpucanary::analysis::correlate
