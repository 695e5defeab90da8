#include "eval/fleet/fleet_score.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

namespace gpucanary::eval::fleet {

namespace {

using Json = nlohmann::json;

constexpr double kBeforeOnsetS = 120;
constexpr double kAfterOnsetS = 900;

std::vector<std::string> ReleasesOf(const Json& list) {
  std::vector<std::string> out;
  if (!list.is_array()) return out;
  for (const Json& s : list) {
    if (s.is_object() && s.contains("release") && s["release"].is_string()) {
      out.push_back(s["release"].get<std::string>());
    }
  }
  return out;
}

int Rank(Must m) { return m == Must::kYes ? 0 : (m == Must::kOptional ? 1 : 2); }

// Shared nodes of a report and an event, and whether the report's time
// falls in the window of one of them.
struct Overlap {
  int shared = 0;
  bool in_window = false;
  double distance = 1e18;  // |at - onset| over the shared nodes
};

Overlap OverlapOf(const Report& r, const FleetEvent& e) {
  Overlap o;
  for (std::size_t i = 0; i < e.nodes.size(); ++i) {
    if (std::find(r.nodes.begin(), r.nodes.end(), e.nodes[i]) == r.nodes.end()) continue;
    ++o.shared;
    const double onset = e.node_onsets[i];
    if (r.at >= onset - kBeforeOnsetS && r.at <= onset + kAfterOnsetS) {
      o.in_window = true;
      o.distance = std::min(o.distance, std::fabs(r.at - onset));
    }
  }
  return o;
}

double Jaccard(const Report& r, const FleetEvent& e, int shared) {
  const double uni = static_cast<double>(r.nodes.size() + e.nodes.size()) - shared;
  return uni > 0 ? shared / uni : 0;
}

std::string Join(const std::vector<std::string>& v, std::size_t max) {
  std::string s;
  for (std::size_t i = 0; i < v.size() && i < max; ++i) s += (i ? "," : "") + v[i];
  if (v.size() > max) s += ",+" + std::to_string(v.size() - max);
  return s;
}

}  // namespace

Result<std::vector<Report>> ParseCorrelateJson(std::string_view text) {
  Json j = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Error(StatusCode::kParseError, "correlate output is not JSON");
  if (!j.is_object() || !j.contains("regressions") || !j["regressions"].is_array()) {
    return Error(StatusCode::kParseError, "correlate output has no 'regressions' array");
  }
  std::vector<Report> out;
  for (const Json& r : j["regressions"]) {
    if (!r.is_object() || !r.contains("at") || !r["at"].is_number()) {
      return Error(StatusCode::kParseError, "a regression without a numeric 'at'");
    }
    Report x;
    if (r.contains("metric") && r["metric"].is_string()) x.metric = r["metric"].get<std::string>();
    x.at = r["at"].get<double>();
    if (r.contains("change") && r["change"].is_number()) x.change = r["change"].get<double>();
    std::set<std::string> nodes;
    if (r.contains("nodes") && r["nodes"].is_array()) {
      for (const Json& n : r["nodes"]) {
        if (n.is_string()) nodes.insert(n.get<std::string>());
      }
    }
    if (r.contains("gpus") && r["gpus"].is_array()) {  // "host/0"
      for (const Json& g : r["gpus"]) {
        if (!g.is_string()) continue;
        const std::string s = g.get<std::string>();
        nodes.insert(s.substr(0, s.rfind('/')));
      }
    }
    x.nodes.assign(nodes.begin(), nodes.end());
    if (r.contains("suspects")) x.suspects = ReleasesOf(r["suspects"]);
    if (r.contains("candidates")) x.candidates = ReleasesOf(r["candidates"]);
    if (r.contains("causes") && r["causes"].is_array()) {
      for (const Json& c : r["causes"]) {
        if (c.is_object() && c.contains("kind") && c["kind"].is_string()) {
          x.kinds.push_back(c["kind"].get<std::string>());
        }
      }
    }
    out.push_back(std::move(x));
  }
  return out;
}

void CaseScore::Add(const CaseScore& o) {
  events += o.events;
  reports += o.reports;
  matched += o.matched;
  noise += o.noise;
  dup += o.dup;
  found += o.found;
  release_events += o.release_events;
  release_found += o.release_found;
  top1 += o.top1;
  top3 += o.top3;
  false_blames += o.false_blames;
  kinds_checked += o.kinds_checked;
  kinds_ok += o.kinds_ok;
  correlate_s += o.correlate_s;
  noise_metrics.insert(noise_metrics.end(), o.noise_metrics.begin(), o.noise_metrics.end());
}

CaseScore ScoreCase(const std::vector<FleetEvent>& events, const std::vector<Report>& reports,
                    double start_unix_s) {
  CaseScore s;
  s.reports = static_cast<int>(reports.size());
  std::vector<int> match(reports.size(), -1);
  std::vector<std::vector<int>> by_event(events.size());
  for (std::size_t ri = 0; ri < reports.size(); ++ri) {
    int best = -1;
    std::tuple<int, double, double> best_key{9, 0, 0};
    for (std::size_t ei = 0; ei < events.size(); ++ei) {
      const Overlap o = OverlapOf(reports[ri], events[ei]);
      if (o.shared == 0 || !o.in_window) continue;
      const std::tuple<int, double, double> key{
          Rank(events[ei].must), -Jaccard(reports[ri], events[ei], o.shared), o.distance};
      if (best < 0 || key < best_key) {
        best = static_cast<int>(ei);
        best_key = key;
      }
    }
    match[ri] = best;
    if (best >= 0) by_event[static_cast<std::size_t>(best)].push_back(static_cast<int>(ri));
    const bool is_noise = best < 0 || events[static_cast<std::size_t>(best)].must == Must::kNo;
    if (is_noise) {
      ++s.noise;
      s.noise_metrics.push_back(reports[ri].metric);
    } else {
      ++s.matched;
    }
    const bool blames_release =
        best >= 0 && events[static_cast<std::size_t>(best)].type == "release";
    if (!reports[ri].suspects.empty() && !blames_release) ++s.false_blames;
  }
  char buf[400];
  for (std::size_t ei = 0; ei < events.size(); ++ei) {
    const FleetEvent& e = events[ei];
    const std::vector<int>& mine = by_event[ei];
    if (e.must != Must::kNo && mine.size() > 1) s.dup += static_cast<int>(mine.size()) - 1;
    std::string verdict = "-";
    if (e.must == Must::kYes) {
      ++s.events;
      if (e.type == "release") ++s.release_events;
    }
    if (e.must == Must::kYes && !mine.empty()) {
      ++s.found;
      // The best report: largest node overlap, then nearest onset.
      int best = mine[0];
      auto key = [&](int ri) {
        const Overlap o = OverlapOf(reports[static_cast<std::size_t>(ri)], e);
        return std::make_pair(-Jaccard(reports[static_cast<std::size_t>(ri)], e, o.shared),
                              o.distance);
      };
      for (int ri : mine) {
        if (key(ri) < key(best)) best = ri;
      }
      const Report& r = reports[static_cast<std::size_t>(best)];
      verdict = "found";
      if (e.type == "release") {
        ++s.release_found;
        const bool top1 = !r.suspects.empty() && r.suspects[0] == e.release;
        const std::vector<std::string>& ranked = r.candidates.empty() ? r.suspects : r.candidates;
        bool top3 = false;
        for (std::size_t k = 0; k < ranked.size() && k < 3; ++k) top3 |= ranked[k] == e.release;
        s.top1 += top1 ? 1 : 0;
        s.top3 += top3 ? 1 : 0;
        verdict += top1 ? " top-1" : (top3 ? " top-3" : " not-top-3");
      }
      if (!e.kinds.empty()) {
        ++s.kinds_checked;
        bool ok = false;
        for (const std::string& k : r.kinds) {
          ok |= std::find(e.kinds.begin(), e.kinds.end(), k) != e.kinds.end();
        }
        s.kinds_ok += ok ? 1 : 0;
        verdict += ok ? " kind-ok" : " kind-wrong";
      }
    } else if (e.must == Must::kYes) {
      verdict = "MISSED";
    }
    std::snprintf(buf, sizeof buf,
                  "event %zu [%s %s, must %s] t+%.0f s, %zu nodes, %s: %s; %zu report(s): %s", ei,
                  e.type.c_str(), e.what.c_str(), std::string(MustName(e.must)).c_str(),
                  e.onset - start_unix_s, e.nodes.size(), e.description.c_str(),
                  Join(e.kinds, 4).c_str(), mine.size(), verdict.c_str());
    s.lines.push_back(buf);
  }
  for (std::size_t ri = 0; ri < reports.size(); ++ri) {
    const Report& r = reports[ri];
    std::snprintf(buf, sizeof buf,
                  "report %zu %s t+%.0f s change %+.3f on %zu node(s) [%s]; suspects [%s]; "
                  "causes [%s] -> %s",
                  ri, r.metric.c_str(), r.at - start_unix_s, r.change, r.nodes.size(),
                  Join(r.nodes, 3).c_str(), Join(r.suspects, 3).c_str(), Join(r.kinds, 3).c_str(),
                  match[ri] < 0 ? "noise (no event)"
                                : (events[static_cast<std::size_t>(match[ri])].must == Must::kNo
                                       ? ("noise (event " + std::to_string(match[ri]) + ")").c_str()
                                       : ("event " + std::to_string(match[ri])).c_str()));
    s.lines.push_back(buf);
  }
  return s;
}

}  // namespace gpucanary::eval::fleet
