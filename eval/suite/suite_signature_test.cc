// The ground truth of every suite case shows in its telemetry: each case runs
// on simulated time and is read every second, as a 1 s scraper would read
// dcgm-exporter and vLLM, then
//   - release and regression cases: the expected cause's signature holds on
//     every canary GPU after the release and on no baseline GPU, and did not
//     hold on the canary before the release;
//   - node cases: it holds on the named node (or GPUs) and not on the rest,
//     the other canary node included; a fault older than the release shows in
//     the canary's history;
//   - aa cases: no canary GPU holds a harmful clock-event reason for more than
//     3 consecutive seconds (the judge's throttle rule), and the canary's
//     time per output token matches the baseline's.
// Each test prints one line of what it measured (scenarios/suite/README.md).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "eval/suite/suite.h"
#include "sim/engine.h"

namespace gpucanary::eval::suite {

// gtest prints a failing case by name, not as bytes.
void PrintTo(const SuiteCase& c, std::ostream* os) { *os << c.name; }

namespace {

constexpr std::uint32_t kSwPowerCap = 0x4;
constexpr std::uint32_t kHwSlowdown = 0x8;
constexpr std::uint32_t kSwThermal = 0x20;
constexpr std::uint32_t kHwThermal = 0x40;
constexpr std::uint32_t kHwPowerBrake = 0x80;
constexpr std::uint32_t kHarmful = kHwSlowdown | kSwThermal | kHwThermal | kHwPowerBrake;

// One GPU at one second, as scraped.
struct GpuSecond {
  bool present = false;
  std::uint32_t reasons = 0;
  double clock = 0;
  double dram = 0;
  double occupancy = 0;
  double replays = 0;
  double sbe = 0;
  double dbe = 0;
  bool link_down = false;  // width or generation below the maximum
  bool xid = false;
};

// One node's vLLM server at one second (absent while it restarts).
struct NodeSecond {
  bool up = false;
  std::uint64_t tpot_count = 0;
  double tpot_sum = 0;
};

struct Gpu {
  std::string id;  // "node-2/1"
  std::string node;
  bool canary = false;
  std::vector<GpuSecond> s;  // per second
};

class CaseRun {
 public:
  explicit CaseRun(const SuiteCase& c) : case_(c) {
    sim::Engine engine(c.scenario);
    for (std::size_t n = 0; n < engine.node_count(); ++n) {
      const sim::SimNode& node = engine.fleet().nodes()[n];
      const bool canary = std::find(c.canary_nodes.begin(), c.canary_nodes.end(), node.hostname) !=
                          c.canary_nodes.end();
      for (std::size_t g = 0; g < node.gpus.size(); ++g) {
        gpus_.push_back({node.hostname + "/" + std::to_string(g), node.hostname, canary, {}});
      }
      nodes_.push_back(node.hostname);
    }
    node_seconds_.resize(nodes_.size());
    const auto seconds = static_cast<int>(c.scenario.duration_s);
    for (int t = 0; t < seconds; ++t) {
      for (int k = 0; k < 10; ++k) engine.Step();
      Sample(engine);
    }
  }

  int seconds() const { return static_cast<int>(gpus_.front().s.size()); }
  const std::vector<Gpu>& gpus() const { return gpus_; }

  // Mean time per output token of `canary` (or baseline) nodes over [t0, t1),
  // from each server's histogram increase (servers restarted inside are skipped).
  double MeanTpot(bool canary, int t0, int t1) const {
    std::uint64_t count = 0;
    double sum = 0;
    for (std::size_t n = 0; n < nodes_.size(); ++n) {
      if (IsCanary(nodes_[n]) != canary) continue;
      const NodeSecond& a = node_seconds_[n][static_cast<std::size_t>(t0)];
      const NodeSecond& b = node_seconds_[n][static_cast<std::size_t>(t1 - 1)];
      if (!a.up || !b.up || b.tpot_count < a.tpot_count) continue;
      count += b.tpot_count - a.tpot_count;
      sum += b.tpot_sum - a.tpot_sum;
    }
    return count > 0 ? sum / static_cast<double>(count) : std::nan("");
  }

  bool IsCanary(const std::string& node) const {
    return std::find(case_.canary_nodes.begin(), case_.canary_nodes.end(), node) !=
           case_.canary_nodes.end();
  }

 private:
  void Sample(const sim::Engine& engine) {
    std::size_t k = 0;
    for (std::size_t n = 0; n < engine.node_count(); ++n) {
      const sim::SimNode& node = engine.fleet().nodes()[n];
      for (std::size_t g = 0; g < node.gpus.size(); ++g, ++k) {
        GpuSecond s;
        if (engine.GpuReported(n, g)) {
          const dcgm::Readings r = node.gpus[g].model.Read();
          const auto get = [&](dcgm::ExporterField f) { return r.Get(f).value_or(0); };
          s.present = true;
          s.reasons = static_cast<std::uint32_t>(get(dcgm::ExporterField::kClockEventReasons));
          s.clock = get(dcgm::ExporterField::kSmClock);
          s.dram = get(dcgm::ExporterField::kDramActive);
          s.occupancy = get(dcgm::ExporterField::kSmOccupancy);
          s.replays = get(dcgm::ExporterField::kPcieReplayCounter);
          s.sbe = get(dcgm::ExporterField::kEccSbeVolTotal);
          s.dbe = get(dcgm::ExporterField::kEccDbeVolTotal);
          s.link_down =
              get(dcgm::ExporterField::kPcieLinkGen) < get(dcgm::ExporterField::kPcieMaxLinkGen) ||
              get(dcgm::ExporterField::kPcieLinkWidth) <
                  get(dcgm::ExporterField::kPcieMaxLinkWidth);
          s.xid = r.Get(dcgm::ExporterField::kXidErrors).has_value();
        }
        gpus_[k].s.push_back(s);
      }
      NodeSecond ns;
      if (const sim::ServingNode* server = engine.server(n)) {
        ns.up = true;
        ns.tpot_count = server->state().time_per_output_token_seconds.count;
        ns.tpot_sum = server->state().time_per_output_token_seconds.sum;
      }
      node_seconds_[n].push_back(ns);
    }
  }

  const SuiteCase& case_;
  std::vector<Gpu> gpus_;
  std::vector<std::string> nodes_;
  std::vector<std::vector<NodeSecond>> node_seconds_;
};

// --- per-GPU measures over [t0, t1) ---------------------------------------

template <typename Pred>
int LongestStreak(const Gpu& g, int t0, int t1, Pred pred) {
  int best = 0;
  int run = 0;
  for (int t = t0; t < t1; ++t) {
    const GpuSecond& s = g.s[static_cast<std::size_t>(t)];
    run = s.present && pred(s) ? run + 1 : 0;
    best = std::max(best, run);
  }
  return best;
}

template <typename Pred>
double Share(const std::vector<const Gpu*>& gpus, int t0, int t1, Pred pred) {
  int hit = 0;
  int n = 0;
  for (const Gpu* g : gpus) {
    for (int t = t0; t < t1; ++t) {
      const GpuSecond& s = g->s[static_cast<std::size_t>(t)];
      if (!s.present) continue;
      hit += pred(s) ? 1 : 0;
      ++n;
    }
  }
  return n > 0 ? static_cast<double>(hit) / n : 0;
}

template <typename Get>
double Mean(const std::vector<const Gpu*>& gpus, int t0, int t1, Get get) {
  double sum = 0;
  int n = 0;
  for (const Gpu* g : gpus) {
    for (int t = t0; t < t1; ++t) {
      const GpuSecond& s = g->s[static_cast<std::size_t>(t)];
      if (!s.present) continue;
      sum += get(s);
      ++n;
    }
  }
  return n > 0 ? sum / n : std::nan("");
}

// Increase of a counter over the window (first and last present samples).
template <typename Get>
double Increase(const Gpu& g, int t0, int t1, Get get) {
  std::optional<double> first;
  double last = 0;
  for (int t = t0; t < t1; ++t) {
    const GpuSecond& s = g.s[static_cast<std::size_t>(t)];
    if (!s.present) continue;
    if (!first) first = get(s);
    last = get(s);
  }
  return first ? last - *first : 0;
}

// --- signatures -----------------------------------------------------------

// Whether `kind`'s signature holds on every GPU of `subject` against
// `reference` in [t0, t1), and what was measured.
struct Finding {
  bool holds = false;
  std::string measured;
};

[[gnu::format(printf, 1, 2)]] std::string Fmt(const char* format, ...) {
  char buf[160];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return buf;
}

// Bits that make a GPU's streak, by cause kind.
bool StreakBits(const std::string& kind, const GpuSecond& s) {
  if (kind == "power_brake") return (s.reasons & kHwPowerBrake) != 0;
  if (kind == "thermal_throttle") return (s.reasons & (kSwThermal | kHwThermal)) != 0;
  if (kind == "hw_slowdown") {
    return (s.reasons & kHwSlowdown) != 0 && (s.reasons & (kHwPowerBrake | kHwThermal)) == 0;
  }
  if (kind == "pcie_downtrain") return s.link_down;
  return false;
}

Finding StreakSignature(const std::string& kind, const std::vector<const Gpu*>& subject,
                        const std::vector<const Gpu*>& reference, int t0, int t1) {
  int shortest = 1 << 30;
  for (const Gpu* g : subject) {
    shortest = std::min(shortest, LongestStreak(*g, t0, t1, [&](const GpuSecond& s) {
                          return StreakBits(kind, s);
                        }));
  }
  const double ref =
      Share(reference, t0, t1, [&](const GpuSecond& s) { return StreakBits(kind, s); });
  return {shortest > 3 && ref < 0.1,
          Fmt("shortest subject streak %d s, reference share %.3f", shortest, ref)};
}

Finding Signature(vocab::CauseKind cause_kind, const CaseRun& run,
                  const std::vector<const Gpu*>& subject, const std::vector<const Gpu*>& reference,
                  int t0, int t1, double slowdown) {
  const std::string kind(vocab::Name(cause_kind));
  if (kind == "power_brake" || kind == "thermal_throttle" || kind == "hw_slowdown" ||
      kind == "pcie_downtrain") {
    return StreakSignature(kind, subject, reference, t0, t1);
  }
  if (kind == "power_cap") {
    const auto capped = [](const GpuSecond& s) { return (s.reasons & kSwPowerCap) != 0; };
    double least = 1;
    for (const Gpu* g : subject) least = std::min(least, Share({g}, t0, t1, capped));
    const double ref = Share(reference, t0, t1, capped);
    return {least > 0.5 && ref < 0.1, Fmt("least capped share %.2f, reference %.3f", least, ref)};
  }
  if (kind == "pcie_errors" || kind == "ecc_errors") {
    const auto count = [&](const GpuSecond& s) {
      return kind == "pcie_errors" ? s.replays : s.sbe + s.dbe;
    };
    const double secs = t1 - t0;
    double least = 1e300;
    for (const Gpu* g : subject) least = std::min(least, Increase(*g, t0, t1, count) / secs);
    double most_ref = 0;
    for (const Gpu* g : reference)
      most_ref = std::max(most_ref, Increase(*g, t0, t1, count) / secs);
    const double floor = kind == "pcie_errors" ? 5 : 0.01;
    return {least >= floor && most_ref < floor / 5,
            Fmt("least subject rate %.3f/s, most reference %.3f/s", least, most_ref)};
  }
  if (kind == "xid_errors") {
    int seen = 0;
    for (const Gpu* g : subject) seen += Share({g}, t0, t1, [](auto& s) { return s.xid; }) > 0;
    const double ref = Share(reference, t0, t1, [](const GpuSecond& s) { return s.xid; });
    return {seen == static_cast<int>(subject.size()) && ref == 0,
            Fmt("XID on %d subject GPUs, reference share %.3f", seen, ref)};
  }
  if (kind == "memory_thrash" || kind == "low_occupancy") {
    const auto get = [&](const GpuSecond& s) {
      return kind == "memory_thrash" ? s.dram : s.occupancy;
    };
    const double ratio = Mean(subject, t0, t1, get) / Mean(reference, t0, t1, get);
    return {kind == "memory_thrash" ? ratio > 1.3 : ratio < 0.75, Fmt("ratio %.3f", ratio)};
  }
  // software_regression: slower tokens, no hardware mechanism.
  const double tpot = run.MeanTpot(true, t0, t1) / run.MeanTpot(false, t0, t1);
  const double clock = Mean(subject, t0, t1, [](const GpuSecond& s) { return s.clock; }) /
                       Mean(reference, t0, t1, [](const GpuSecond& s) { return s.clock; });
  int streak = 0;
  for (const Gpu* g : subject) {
    streak = std::max(streak, LongestStreak(*g, t0, t1, [](const GpuSecond& s) {
                        return (s.reasons & kHarmful) != 0;
                      }));
  }
  const double expected = slowdown - 1;
  const bool holds = tpot >= 1 + 0.6 * expected && tpot <= 1 + 3 * expected &&
                     std::abs(clock - 1) < 0.02 && streak <= 3;
  return {holds, Fmt("TPOT ratio %.4f, clock ratio %.4f", tpot, clock)};
}

// Seconds after a fault begins before its signature is judged: heating takes
// a while (a 30 s thermal time constant).
// An XID 79 GPU vanishes 2 s after it fires, so XIDs are looked for at once.
int Settle(vocab::CauseKind cause_kind) {
  const std::string kind(vocab::Name(cause_kind));
  if (kind == "thermal_throttle") return 90;
  return kind == "xid_errors" ? 0 : 10;
}

bool InCause(const Gpu& g, const ExpectedCause& c) {
  if (g.node != c.node) return false;
  return c.gpus.empty() || std::find(c.gpus.begin(), c.gpus.end(), g.id) != c.gpus.end();
}

template <typename Pred>
std::vector<const Gpu*> Where(const CaseRun& run, Pred pred) {
  std::vector<const Gpu*> out;
  for (const Gpu& g : run.gpus()) {
    if (pred(g)) out.push_back(&g);
  }
  return out;
}

class SuiteSignatureTest : public ::testing::TestWithParam<SuiteCase> {};

void CheckReleaseCase(const SuiteCase& c, const CaseRun& run) {
  const auto canary = Where(run, [](const Gpu& g) { return g.canary; });
  const auto baseline = Where(run, [](const Gpu& g) { return !g.canary; });
  const double slowdown = c.scenario.releases.at(c.release).slowdown;
  // Both canary nodes serve the release 10 s apart after the deploy.
  const int serving = static_cast<int>(c.release_start_s) + 20;
  for (const ExpectedCause& cause : c.causes) {
    const Finding after = Signature(cause.kind, run, canary, baseline, serving + Settle(cause.kind),
                                    run.seconds(), slowdown);
    const Finding before =
        Signature(cause.kind, run, canary, baseline, 5, static_cast<int>(c.release_start_s), 1.0);
    std::printf("%s: %s after the release: %s; before: %s\n", c.name.c_str(),
                std::string(vocab::Name(cause.kind)).c_str(), after.measured.c_str(),
                before.measured.c_str());
    EXPECT_TRUE(after.holds) << cause.kind << ": " << after.measured;
    EXPECT_FALSE(before.holds) << cause.kind << " already before the release: " << before.measured;
  }
}

void CheckNodeCase(const SuiteCase& c, const CaseRun& run) {
  for (const ExpectedCause& cause : c.causes) {
    const auto subject = Where(run, [&](const Gpu& g) { return InCause(g, cause); });
    const auto reference = Where(run, [&](const Gpu& g) { return g.node != cause.node; });
    const int t0 = static_cast<int>(*c.onset_s) + Settle(cause.kind);
    const Finding on = Signature(cause.kind, run, subject, reference, t0, run.seconds(), 1.0);
    std::printf("%s: %s on %s: %s\n", c.name.c_str(), std::string(vocab::Name(cause.kind)).c_str(),
                cause.node.c_str(), on.measured.c_str());
    EXPECT_TRUE(on.holds) << cause.kind << " on " << cause.node << ": " << on.measured;
    if (*c.onset_s < c.release_start_s) {
      const Finding history = Signature(cause.kind, run, subject, reference, t0,
                                        static_cast<int>(c.release_start_s), 1.0);
      EXPECT_TRUE(history.holds) << "not in the history: " << history.measured;
    }
    // The rest of the node (a subset fault) and the other canary nodes stay clean.
    const auto rest = Where(run, [&](const Gpu& g) {
      return (g.node == cause.node && !InCause(g, cause)) || (g.canary && g.node != cause.node);
    });
    for (const Gpu* g : rest) {
      const Finding other = Signature(cause.kind, run, {g}, reference, t0, run.seconds(), 1.0);
      EXPECT_FALSE(other.holds) << g->id << " shows " << cause.kind << " too: " << other.measured;
    }
  }
}

// The longest streak of the judge's throttle rule on any of `gpus`, and where.
int LongestThrottle(const CaseRun& run, const std::vector<const Gpu*>& gpus,
                    const std::vector<const Gpu*>& baseline, std::string* where) {
  int longest = 0;
  for (const Gpu* g : gpus) {
    // The judge's throttle rule: harmful bits, and SW power cap only while
    // fewer than half the baseline GPUs are capped at the same second.
    int run_len = 0;
    for (int t = 0; t < run.seconds(); ++t) {
      const GpuSecond& s = g->s[static_cast<std::size_t>(t)];
      const bool base_capped = Share(baseline, t, t + 1, [](const GpuSecond& b) {
                                 return (b.reasons & kSwPowerCap) != 0;
                               }) >= 0.5;
      const bool bad = s.present && ((s.reasons & kHarmful) != 0 ||
                                     ((s.reasons & kSwPowerCap) != 0 && !base_capped));
      run_len = bad ? run_len + 1 : 0;
      if (run_len > longest) {
        longest = run_len;
        *where = g->id + " at " + std::to_string(t) + " s";
      }
    }
  }
  return longest;
}

void CheckAaCase(const SuiteCase& c, const CaseRun& run) {
  const auto baseline = Where(run, [](const Gpu& g) { return !g.canary; });
  std::string where;
  const int longest =
      LongestThrottle(run, Where(run, [](const Gpu& x) { return x.canary; }), baseline, &where);
  // A fleet-wide event (aa-33's heat) throttles the baseline too, on several
  // nodes: then the canary may throttle as well, and may be slower (the
  // label says not_fail, not pass).
  std::set<std::string> throttled_baseline_nodes;
  for (const Gpu* g : baseline) {
    std::string unused;
    if (LongestThrottle(run, {g}, baseline, &unused) > 3) throttled_baseline_nodes.insert(g->node);
  }
  const bool fleet_event = throttled_baseline_nodes.size() >= 2;
  const int t0 = static_cast<int>(c.release_start_s) + 40;
  const double tpot =
      run.MeanTpot(true, t0, run.seconds()) / run.MeanTpot(false, t0, run.seconds());
  std::printf("%s: longest canary throttle streak %d s%s; TPOT ratio %.4f\n", c.name.c_str(),
              longest, where.empty() ? "" : (" (" + where + ")").c_str(), tpot);
  if (fleet_event) {
    EXPECT_EQ(c.verdict, Verdict::kNotFail)
        << "a fleet-wide throttle event in a case labelled pass";
    return;
  }
  EXPECT_LE(longest, 3) << where;
  EXPECT_NEAR(tpot, 1.0, 0.03);
}

TEST_P(SuiteSignatureTest, TelemetryShowsTheLabel) {
  const SuiteCase& c = GetParam();
  const CaseRun run(c);
  switch (c.category) {
    case Category::kAa:
      CheckAaCase(c, run);
      break;
    case Category::kRelease:
    case Category::kRegression:
      CheckReleaseCase(c, run);
      break;
    case Category::kNode:
      CheckNodeCase(c, run);
      break;
  }
}

std::vector<SuiteCase> AllCases() {
  Result<std::vector<SuiteCase>> s =
      LoadSuite(std::string(GPUCANARY_SOURCE_DIR) + "/scenarios/suite/labels.yaml");
  return s ? *s : std::vector<SuiteCase>{};
}

std::string CaseName(const ::testing::TestParamInfo<SuiteCase>& info) {
  std::string name = info.param.name;
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

INSTANTIATE_TEST_SUITE_P(Suite, SuiteSignatureTest, ::testing::ValuesIn(AllCases()), CaseName);

}  // namespace
}  // namespace gpucanary::eval::suite
