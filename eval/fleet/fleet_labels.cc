#include "eval/fleet/fleet_labels.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <utility>

namespace gpucanary::eval::fleet {

namespace {

using Json = nlohmann::ordered_json;

enum class Measure : std::uint8_t { kItl, kClock, kTokens, kDown };

std::string_view MeasureName(Measure m) {
  switch (m) {
    case Measure::kItl:
      return "per_token_latency";
    case Measure::kClock:
      return "sm_clock";
    case Measure::kTokens:
      return "tokens_per_s";
    case Measure::kDown:
      return "server_down_share";
  }
  return "?";
}

struct Sums {
  double tokens = 0, itl_w = 0, clock = 0, busy = 0, up = 0, seconds = 0;
};

Sums Sum(const SimTrace& tr, int node, double from, double to) {
  Sums s;
  const auto& v = tr.nodes[static_cast<std::size_t>(node)];
  const int a = std::max(0, static_cast<int>(std::floor(from)));
  const int b = std::min(tr.seconds, static_cast<int>(std::ceil(to)));
  for (int t = a; t < b; ++t) {
    const NodeSecond& x = v[static_cast<std::size_t>(t)];
    s.tokens += static_cast<double>(x.tokens);
    s.itl_w += static_cast<double>(x.itl_w);
    s.clock += static_cast<double>(x.clock_sum);
    s.busy += x.busy_gpus;
    s.up += x.up ? 1 : 0;
    s.seconds += 1;
  }
  return s;
}

// NaN when the window holds nothing to measure.
double Value(const Sums& s, Measure m) {
  const double nan = std::nan("");
  switch (m) {
    case Measure::kItl:
      return s.tokens > 0 ? s.itl_w / s.tokens : nan;
    case Measure::kClock:
      return s.busy > 0 ? s.clock / s.busy : nan;
    case Measure::kTokens:
      return s.seconds > 0 ? s.tokens / s.seconds : nan;
    case Measure::kDown:
      return s.seconds > 0 ? 1 - s.up / s.seconds : nan;
  }
  return nan;
}

struct Windows {
  double before_from, before_to, after_from, after_to;
};

// Relative change of `m` on each affected node (after against before),
// divided by the same change on the control nodes over the same windows
// (difference in differences; no control: plain before/after). Mean over
// the affected nodes with data; NaN when none.
double Change(const SimTrace& tr, const std::vector<int>& affected, const std::vector<Windows>& w,
              const std::vector<int>& control, Measure m) {
  double sum = 0;
  int n = 0;
  for (std::size_t i = 0; i < affected.size(); ++i) {
    const double before = Value(Sum(tr, affected[i], w[i].before_from, w[i].before_to), m);
    const double after = Value(Sum(tr, affected[i], w[i].after_from, w[i].after_to), m);
    if (!(before > 0) || !std::isfinite(after)) continue;
    double ctrl = 1;
    Sums cb, ca;
    for (int c : control) {
      const Sums b = Sum(tr, c, w[i].before_from, w[i].before_to);
      const Sums a = Sum(tr, c, w[i].after_from, w[i].after_to);
      cb.tokens += b.tokens, cb.itl_w += b.itl_w, cb.clock += b.clock, cb.busy += b.busy;
      cb.up += b.up, cb.seconds += b.seconds;
      ca.tokens += a.tokens, ca.itl_w += a.itl_w, ca.clock += a.clock, ca.busy += a.busy;
      ca.up += a.up, ca.seconds += a.seconds;
    }
    if (!control.empty()) {
      const double vb = Value(cb, m), va = Value(ca, m);
      if (vb > 0 && std::isfinite(va)) ctrl = va / vb;
    }
    sum += after / before / ctrl;
    ++n;
  }
  return n > 0 ? sum / n - 1 : std::nan("");
}

double MeanDown(const SimTrace& tr, const std::vector<int>& nodes, const std::vector<double>& from,
                const std::vector<double>& to) {
  double sum = 0;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    sum += Value(Sum(tr, nodes[i], from[i], to[i]), Measure::kDown);
  }
  return nodes.empty() ? 0 : sum / static_cast<double>(nodes.size());
}

// First second at or after `from` (and before `to`) with a thermal (or
// capped) GPU on `node`; -1 if none.
double FirstFlag(const SimTrace& tr, int node, double from, double to, bool thermal) {
  const auto& v = tr.nodes[static_cast<std::size_t>(node)];
  for (int t = std::max(0, static_cast<int>(from)); t < std::min(tr.seconds, static_cast<int>(to));
       ++t) {
    const NodeSecond& x = v[static_cast<std::size_t>(t)];
    if ((thermal ? x.thermal_gpus : x.capped_gpus) > 0) return t;
  }
  return -1;
}

std::vector<std::string> KindsOf(EffectKind k) {
  switch (k) {
    case EffectKind::kSlower:
      return {"software_regression"};
    case EffectKind::kPowerHungry:
      return {"power_cap"};
    case EffectKind::kMemoryThrash:
      return {"memory_thrash"};
    case EffectKind::kLowOccupancy:
      return {"low_occupancy"};
    case EffectKind::kXidCrashloop:
      return {"xid_errors"};
    case EffectKind::kNone:
      break;
  }
  return {};
}

class Labeller {
 public:
  Labeller(const FleetCase& c, const SimTrace& tr) : c_(c), tr_(tr) {}

  std::vector<FleetEvent> Run() {
    for (std::size_t r = 0; r < c_.releases.size(); ++r) ReleaseEvent(static_cast<int>(r));
    for (const NodeFault& f : c_.faults) FaultEvent(f);
    FleetEvents();
    for (const Restart& r : c_.restarts) {
      FleetEvent e = Base("node", {r.node}, {r.at_s}, Measure::kDown, Must::kNo);
      e.what = "server_restart";
      e.magnitude = MeanDown(tr_, {r.node}, {r.at_s}, {r.at_s + 900});
      e.end = Unix(r.at_s + r.length_s);
      e.description = "server restart with no release on " + Host(r.node);
      events_.push_back(std::move(e));
    }
    std::stable_sort(events_.begin(), events_.end(),
                     [](const FleetEvent& a, const FleetEvent& b) { return a.onset < b.onset; });
    return std::move(events_);
  }

 private:
  double Unix(double t) const { return static_cast<double>(tr_.start_unix_s) + t; }
  const std::string& Host(int n) const { return c_.hosts[static_cast<std::size_t>(n)]; }

  FleetEvent Base(std::string type, const std::vector<int>& nodes,
                  const std::vector<double>& onsets, Measure m, Must must) const {
    FleetEvent e;
    e.type = std::move(type);
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      e.nodes.push_back(Host(nodes[i]));
      e.node_onsets.push_back(Unix(onsets[i]));
    }
    e.onset = onsets.empty() ? 0 : Unix(*std::min_element(onsets.begin(), onsets.end()));
    e.end = Unix(tr_.seconds);
    e.measure = MeasureName(m);
    e.must = must;
    return e;
  }

  // Nodes that never ran release `r` and have no fault of their own.
  std::vector<int> ControlFor(const std::vector<int>& exclude) const {
    std::vector<int> out;
    for (int n = 0; n < c_.nodes; ++n) {
      if (std::find(exclude.begin(), exclude.end(), n) != exclude.end()) continue;
      bool faulty = false;
      for (const NodeFault& f : c_.faults) faulty |= f.node == n;
      if (!faulty) out.push_back(n);
    }
    return out;
  }

  void ReleaseEvent(int r) {
    const Release& rel = c_.releases[static_cast<std::size_t>(r)];
    if (rel.rollback_of >= 0 || rel.effect.kind == EffectKind::kNone) return;
    const auto& from = tr_.active_from[static_cast<std::size_t>(r)];
    std::vector<int> nodes, ever;
    std::vector<double> onsets, ends, deploys;
    for (int n = 0; n < c_.nodes; ++n) {
      const auto i = static_cast<std::size_t>(n);
      if (tr_.deploy_at[static_cast<std::size_t>(r)][i] >= 0) ever.push_back(n);
      if (from[i] < 0) continue;
      nodes.push_back(n);
      onsets.push_back(from[i]);
      const double to = tr_.active_to[static_cast<std::size_t>(r)][i];
      ends.push_back(to >= 0 ? to : tr_.seconds);
      deploys.push_back(tr_.deploy_at[static_cast<std::size_t>(r)][i]);
    }
    if (nodes.empty()) return;
    const Measure m = rel.effect.kind == EffectKind::kPowerHungry    ? Measure::kClock
                      : rel.effect.kind == EffectKind::kXidCrashloop ? Measure::kDown
                                                                     : Measure::kItl;
    FleetEvent e = Base("release", nodes, onsets, m, Must::kYes);
    e.release = rel.id;
    e.what = EffectName(rel.effect.kind);
    e.kinds = KindsOf(rel.effect.kind);
    e.end = Unix(*std::max_element(ends.begin(), ends.end()));
    if (m == Measure::kDown) {
      std::vector<double> to(onsets.size());
      for (std::size_t i = 0; i < onsets.size(); ++i) to[i] = std::min(ends[i], onsets[i] + 900);
      e.magnitude = MeanDown(tr_, nodes, onsets, to);
    } else {
      std::vector<Windows> w;
      for (std::size_t i = 0; i < nodes.size(); ++i) {
        w.push_back(
            {deploys[i] - 600, deploys[i] - 5, onsets[i] + 60, std::min(ends[i], onsets[i] + 660)});
      }
      e.magnitude = Change(tr_, nodes, w, ControlFor(ever), m);
    }
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s (%s, %zu nodes): %s %+.1f %%", rel.id.c_str(),
                  rel.rollout.c_str(), nodes.size(), e.measure.c_str(), 100 * e.magnitude);
    e.description = buf;
    events_.push_back(std::move(e));
  }

  void FaultEvent(const NodeFault& f) {
    const int n = f.node;
    const double end = std::min(static_cast<double>(tr_.seconds), f.start_s + f.length_s);
    FleetEvent e;
    char buf[200];
    switch (f.kind) {
      case NodeFaultKind::kAirflow: {
        const double first = FirstFlag(tr_, n, f.start_s, tr_.seconds, true);
        const double onset = first >= 0 ? first : f.start_s;
        e = Base("node", {n}, {onset}, Measure::kClock, first >= 0 ? Must::kYes : Must::kOptional);
        e.kinds = {"thermal_throttle"};
        e.magnitude = Change(tr_, {n}, {{f.start_s - 600, f.start_s - 5, onset + 30, onset + 630}},
                             ControlFor({n}), Measure::kClock);
        break;
      }
      case NodeFaultKind::kPcieDown:
        e = Base("node", {n}, {f.start_s}, Measure::kClock, Must::kYes);
        e.measure = "pcie_link_width";
        e.kinds = {"pcie_downtrain", "pcie_errors"};
        e.magnitude = f.pcie_width / static_cast<double>(c_.sku->pcie_width) *
                          (f.pcie_gen < c_.sku->pcie_gen ? 0.5 : 1.0) -
                      1;
        break;
      case NodeFaultKind::kHwSlowdown:
        e = Base("node", {n}, {f.start_s}, Measure::kClock, Must::kYes);
        e.kinds = {"hw_slowdown"};
        if ((f.hw_bits & field::kReasonHwPowerBrake) != 0) e.kinds.push_back("power_brake");
        e.magnitude = Change(
            tr_, {n},
            {{f.start_s - 600, f.start_s - 5, f.start_s + 10, std::min(end, f.start_s + 610)}},
            ControlFor({n}), Measure::kClock);
        break;
      case NodeFaultKind::kXid79:
        e = Base("node", {n}, {f.start_s}, Measure::kDown, Must::kYes);
        e.kinds = {"xid_errors"};
        e.magnitude = MeanDown(tr_, {n}, {f.start_s}, {f.start_s + 900});
        break;
      case NodeFaultKind::kEcc:
        e = Base("node", {n}, {f.start_s}, Measure::kDown, Must::kYes);
        e.kinds = {"ecc_errors", "xid_errors"};
        e.magnitude = MeanDown(tr_, {n}, {f.start_s}, {f.start_s + 900});
        break;
      case NodeFaultKind::kNone:
        return;
    }
    e.what = NodeFaultName(f.kind);
    e.end = Unix(end);
    std::snprintf(buf, sizeof buf, "%s on %s GPU %d: %s %+.1f %%", e.what.c_str(), Host(n).c_str(),
                  f.gpu, e.measure.c_str(), 100 * e.magnitude);
    e.description = buf;
    events_.push_back(std::move(e));
  }

  void FleetEvents() {
    std::vector<int> all(static_cast<std::size_t>(c_.nodes));
    std::iota(all.begin(), all.end(), 0);
    auto plain = [&](const std::vector<int>& nodes, const std::vector<double>& onsets, double start,
                     Measure m) {
      std::vector<Windows> w;
      w.reserve(onsets.size());
      for (double o : onsets) w.push_back({start - 600, start - 5, o + 60, o + 660});
      return Change(tr_, nodes, w, {}, m);
    };
    char buf[200];
    if (c_.heat_start_s >= 0) {
      const double stop = c_.heat_start_s + c_.heat_len_s + c_.heat_ramp_s;
      std::vector<int> nodes;
      std::vector<double> onsets;
      for (int n : all) {
        const double first = FirstFlag(tr_, n, c_.heat_start_s, stop, true);
        if (first < 0) continue;
        nodes.push_back(n);
        onsets.push_back(first);
      }
      if (nodes.empty()) {
        nodes = all;
        onsets.assign(all.size(), c_.heat_start_s);
      }
      FleetEvent e = Base("fleet", nodes, onsets, Measure::kClock, Must::kOptional);
      e.what = "heat";
      e.kinds = {"thermal_throttle"};
      e.magnitude = plain(nodes, onsets, c_.heat_start_s, Measure::kClock);
      e.end = Unix(std::min<double>(tr_.seconds, stop));
      std::snprintf(buf, sizeof buf, "heat event: %zu of %d nodes throttle, sm_clock %+.1f %%",
                    nodes.size(), c_.nodes, 100 * e.magnitude);
      e.description = buf;
      events_.push_back(std::move(e));
    }
    if (c_.cap_start_s >= 0) {
      std::vector<double> onsets;
      for (int n : all) {
        const double first = FirstFlag(tr_, n, c_.cap_start_s, tr_.seconds, false);
        onsets.push_back(first >= 0 ? first : c_.cap_start_s);
      }
      FleetEvent e = Base("fleet", all, onsets, Measure::kClock, Must::kOptional);
      e.what = "facility_power_cap";
      e.kinds = {"power_cap"};
      e.magnitude = plain(all, onsets, c_.cap_start_s, Measure::kClock);
      std::snprintf(buf, sizeof buf, "facility power cap %.0f W: sm_clock %+.1f %%", c_.cap_limit_w,
                    100 * e.magnitude);
      e.description = buf;
      events_.push_back(std::move(e));
    }
    if (c_.shift_start_s >= 0) {
      const std::vector<double> onsets(all.size(), c_.shift_start_s);
      FleetEvent e = Base("load", all, onsets, Measure::kTokens, Must::kNo);
      e.what = "load_shift";
      e.magnitude = plain(all, onsets, c_.shift_start_s, Measure::kTokens);
      std::snprintf(buf, sizeof buf, "traffic x%.2f: tokens/s %+.1f %%", c_.shift_factor,
                    100 * e.magnitude);
      e.description = buf;
      events_.push_back(std::move(e));
    }
  }

  const FleetCase& c_;
  const SimTrace& tr_;
  std::vector<FleetEvent> events_;
};

Status WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Status(StatusCode::kIoError, "cannot write " + path);
  out << text;
  out.close();
  if (!out) return Status(StatusCode::kIoError, "cannot write " + path);
  return Status::Ok();
}

Json Number(double x) { return std::isfinite(x) ? Json(std::round(x * 1e4) / 1e4) : Json(nullptr); }

}  // namespace

std::vector<FleetEvent> LabelEvents(const FleetCase& c, const SimTrace& trace) {
  return Labeller(c, trace).Run();
}

Status WriteReleasesJsonl(const FleetCase& c, std::int64_t start_unix_s, const std::string& path) {
  std::vector<const Release*> order;
  for (const Release& r : c.releases) order.push_back(&r);
  std::stable_sort(order.begin(), order.end(), [](const Release* a, const Release* b) {
    return a->started_at_s < b->started_at_s;
  });
  std::string text;
  for (const Release* r : order) {
    Json j;
    j["id"] = r->id;
    j["service"] = c.service;
    j["version"] = r->version;
    auto put = [&](const char* key, const std::string& v) {
      if (!v.empty()) j[key] = v;
    };
    put("model", r->model);
    put("checkpoint", r->checkpoint);
    put("quantization", r->quantization);
    put("cuda_version", r->cuda_version);
    if (!r->framework_version.empty()) j["framework"] = "vllm";
    put("framework_version", r->framework_version);
    put("driver_version", r->driver);  // not a contract field: kept as received
    j["environment"] = "prod";
    j["started_at"] = static_cast<double>(start_unix_s) + r->started_at_s;
    Json targets = Json::array();
    for (int n : r->announced) targets.push_back(c.hosts[static_cast<std::size_t>(n)]);
    j["targets"] = std::move(targets);
    j["previous"] = r->previous;
    text += j.dump() + "\n";
  }
  return WriteText(path, text);
}

Status WriteLabelsJson(const FleetCase& c, const FleetFiles& files, const std::string& path) {
  Json j;
  j["case"] = c.name;
  j["class"] = ClassName(c.cls);
  j["seed"] = c.seed;
  j["description"] = c.description;
  j["start"] = files.start_unix_s;
  j["end"] = files.start_unix_s + static_cast<std::int64_t>(c.duration_s);
  j["scrape_s"] = c.scrape_s;
  j["sku"] = c.sku->model_name;
  j["model"] = c.model.model_name;
  j["tp"] = c.model.tp;
  j["nodes"] = c.hosts;
  j["gpus_per_node"] = c.gpus_per_node;
  Json releases = Json::array();
  for (const Release& r : c.releases) {
    Json rj;
    rj["id"] = r.id;
    rj["type"] = ReleaseTypeName(r.type);
    rj["rollout"] = r.rollout;
    rj["effect"] = EffectName(r.effect.kind);
    if (r.effect.sw_factor != 1) rj["step_factor"] = Number(r.effect.sw_factor);
    Json deploys = Json::array();
    for (const Deploy& d : r.deploys) {
      deploys.push_back({{"node", c.hosts[static_cast<std::size_t>(d.node)]},
                         {"at", static_cast<double>(files.start_unix_s) + d.at_s},
                         {"restart_s", d.restart_s}});
    }
    rj["deploys"] = std::move(deploys);
    releases.push_back(std::move(rj));
  }
  j["releases"] = std::move(releases);
  Json events = Json::array();
  for (const FleetEvent& e : files.events) {
    Json ej;
    ej["type"] = e.type;
    if (!e.release.empty()) ej["release"] = e.release;
    ej["what"] = e.what;
    ej["nodes"] = e.nodes;
    Json onsets = Json::array();
    for (double o : e.node_onsets) onsets.push_back(o);
    ej["node_onsets"] = std::move(onsets);
    ej["onset"] = e.onset;
    ej["end"] = e.end;
    ej["measure"] = e.measure;
    ej["magnitude"] = Number(e.magnitude);
    ej["kinds"] = e.kinds;
    if (e.must == Must::kOptional) {
      ej["must_report"] = "optional";
    } else {
      ej["must_report"] = e.must == Must::kYes;
    }
    ej["description"] = e.description;
    events.push_back(std::move(ej));
  }
  j["events"] = std::move(events);
  return WriteText(path, j.dump(1) + "\n");
}

}  // namespace gpucanary::eval::fleet
