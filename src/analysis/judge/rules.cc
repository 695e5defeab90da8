#include "analysis/judge/rules.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <span>
#include <utility>

#include "analysis/judge/diagnose.h"

namespace gpucanary::analysis::judge_internal {
namespace {

constexpr double kWitnessSeconds = 30;  // a clean sibling this long on the release clears a node
// A reason the baseline held fleet-wide this recently explains the canary's:
// a minute for power events, five for heat (a room cools down in minutes,
// and a GPU a degree hotter than its peers throttles on after they stop).
constexpr std::int64_t kFleetWindowSeconds = 60;
constexpr std::int64_t kFleetHeatWindowSeconds = 300;
constexpr std::uint64_t kThermalBits = 0x20 | 0x40;
// A canary GPU throttling for heat within this of the baseline's hottest
// GPUs is as hot as its peers: the room, not the release.
constexpr double kFleetHeatDegrees = 3;
// Thermal reasons on a GPU cooler than this are no room's heat (the
// slowdown thresholds sit near 87 C and a heat event brings the GPUs to
// them; the hot spot runs 10-20 C above the reported temperature, and a
// GPU back from a restart reheats with the flag set at 66-70 C): a sensor,
// a HW fault or the release, whatever the baseline's temperature.
constexpr double kRoomHeatMinC = 60;
// A room warming: the baseline's hottest GPUs this much warmer than 15 to
// 60 s before. A heat event reaches the warmer racks first (a canary rack 2 C
// warmer throttles seconds to tens of seconds before the baseline), so a
// canary GPU throttling for heat while the baseline warms is watched this
// long for the baseline to follow before it is called the release's.
constexpr double kWarmingDegrees = 5;
constexpr std::int64_t kFleetWatchSeconds = 30;
// Throttle reasons that can come from the room rather than the GPU: SW power
// cap (facility capping), HW slowdown, SW/HW thermal (heat), power brake
// (a facility's brake signal).
constexpr std::uint64_t kFleetReasonBits = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;
constexpr std::uint64_t kSwPowerCapBit = 0x4;
// Without reasons, a GPU is taken as power capped at this fraction of its
// limit (Signature::PowerAtLimit's) with its clock this far below the top
// clock of its model group (a cap that binds holds the clock down; a
// workload at its limit at full clock is not capped).
constexpr double kAtLimit = 0.95;
constexpr double kHeldClock = 0.97;
// Power cap without reasons, limit or model (CanaryPowerPinned). At a lower
// clock the same work draws less power (dynamic power goes with f V^2): a
// canary held 3% below the top clock at no less than kSamePower of the busy
// baseline's power is drawing more power per cycle at a ceiling. Steadiness
// only rules out bursts (a clock caught between bursts): on the real traces
// (shared/data/gpu-traces) capped H100 PCIe GEMMs hold a 10-s power spread of
// up to 2.7% and A100 PCIe 1.4%, but uncapped ones are as steady (0.3-1%,
// vLLM inference on H100 SXM 1.6%), so steadiness cannot tell a cap alone;
// training bursts spread 14-35%.
constexpr double kSamePower = 0.98;
constexpr double kSteadyPower = 0.05;
constexpr std::int64_t kSteadySeconds = 10;
constexpr double kPowerAlpha = 1.0 / 30;

}  // namespace

HardRules::HardRules(const Policy& policy, Fleet& fleet, std::vector<MetricFinding>& findings)
    : policy_(policy), fleet_(fleet), findings_(findings) {}

void HardRules::Track(std::size_t gpus) {
  while (gpus_.size() < gpus) {
    GpuRules& r = gpus_.emplace_back();
    if (policy_.rules.throttle.enabled) r.throttle.emplace(policy_.rules.throttle);
    if (policy_.rules.pcie_link) r.pcie.emplace(policy_.rules.pcie_seconds);
  }
}

// ---------------------------------------------------------------------------
// The rule machines

void HardRules::Run(std::int64_t t) {
  TrackFleetReasons(t);
  TrackLinks();
  TrackCanaryPinned();
  pending_hits_.clear();
  for (std::size_t g = 0; g < gpus_.size(); ++g) FeedRules(gpus_[g], static_cast<int>(g), t);
  // Every hit of this tick is known before any is scoped: GPUs of one node
  // that fire together are not each other's clean witnesses.
  tick_hits_.assign(pending_hits_.begin(), pending_hits_.end());
  for (RuleHit& h : pending_hits_) OnHit(std::move(h), t);
  pending_hits_.clear();
  tick_hits_.clear();
  ResolvePending(t, false);
}

void HardRules::TrackFleetReasons(std::int64_t t) {
  last_t_ = t;
  const std::vector<GpuState>& gpus = fleet_.gpus();
  if (gpu_power_.size() < gpus.size()) {
    gpu_power_.resize(gpus.size());
    limit_fell_.resize(gpus.size());
    last_limit_.resize(gpus.size());
  }
  for (std::size_t g = 0; g < gpus.size(); ++g) {
    const GpuState& s = gpus[g];
    if (s.group < 0) continue;
    if (const std::optional<double> clock = fleet_.GpuValue(static_cast<int>(g), kClock)) {
      double& top = group_top_clock_[s.group];
      top = std::max(top, *clock);
    }
    if (const std::optional<double> limit = fleet_.GpuValue(static_cast<int>(g), kPowerLimit)) {
      if (last_limit_[g] && *limit < 0.99 * *last_limit_[g]) limit_fell_[g] = t;
      last_limit_[g] = limit;
    }
    const std::optional<double> watts = fleet_.GpuValue(static_cast<int>(g), kPower);
    if (watts && fleet_.GpuBusy(static_cast<int>(g))) {
      gpu_power_[g].Add(*watts);
      if (s.role == Role::kBaseline) group_base_power_[s.group].Add(*watts);
    }
  }
  for (std::size_t g = 0; g < gpus.size(); ++g) {
    const GpuState& s = gpus[g];
    if (s.role != Role::kBaseline || s.group < 0) continue;
    baseline_nodes_[s.group].insert(s.node);
    if (const std::optional<double> temp = fleet_.GpuValue(static_cast<int>(g), kTemp)) {
      auto& slot = baseline_temp_[s.node][static_cast<std::size_t>(t) % kTempRing];
      if (slot.first != t) slot = {t, *temp};
      slot.second = std::max(slot.second, *temp);
    }
    const std::optional<double> reasons = fleet_.GpuValue(static_cast<int>(g), kReasons);
    std::uint64_t bits = 0;
    if (reasons) {
      bits = static_cast<std::uint64_t>(*reasons) & kFleetReasonBits;
    } else if (InferredPowerCap(static_cast<int>(g))) {
      bits = kSwPowerCapBit;
    }
    for (int b = 0; b < 64; ++b) {
      if ((bits >> b) & 1U) baseline_reason_tick_[s.group][{b, s.node}] = t;
    }
  }
}

bool HardRules::InferredPowerCap(int gpu) const {
  const GpuState& s = fleet_.gpus()[static_cast<std::size_t>(gpu)];
  const std::optional<double> power = fleet_.GpuValue(gpu, kPower);
  const std::optional<double> clock = fleet_.GpuValue(gpu, kClock);
  const auto top = group_top_clock_.find(s.group);
  if (!power || !clock || top == group_top_clock_.end()) return false;
  std::optional<double> limit = fleet_.GpuValue(gpu, kPowerLimit);
  if (!limit || !(*limit > 0)) {
    const std::optional<Catalog>& catalog = fleet_.catalog();
    if (catalog && static_cast<std::size_t>(gpu) < catalog->gpus->size()) {
      limit = DefaultPowerLimitW((*catalog->gpus)[static_cast<std::size_t>(gpu)].model_name);
    }
  }
  return limit && *power >= kAtLimit * *limit && *clock <= kHeldClock * top->second;
}

void HardRules::PowerTrack::Add(double watts) {
  mean = n++ == 0 ? watts : mean + (kPowerAlpha * (watts - mean));
}

std::pair<double, double> HardRules::PowerWindow::MeanSd() const {
  const std::size_t k = std::min<std::size_t>(static_cast<std::size_t>(n), watts.size());
  if (k == 0) return {0, 0};
  double sum = 0;
  for (std::size_t i = 0; i < k; ++i) sum += watts[i];
  const double mean = sum / static_cast<double>(k);
  double ss = 0;
  for (std::size_t i = 0; i < k; ++i) ss += (watts[i] - mean) * (watts[i] - mean);
  return {mean, std::sqrt(ss / static_cast<double>(k))};
}

void HardRules::TrackCanaryPinned() {
  int with = 0, pinned = 0;
  for (std::size_t g = 0; g < gpu_power_.size() && g < fleet_.gpus().size(); ++g) {
    const GpuState& s = fleet_.gpus()[g];
    const PowerWindow& p = gpu_power_[g];
    const int gi = static_cast<int>(g);
    if (s.role != Role::kCanary || p.n < kSteadySeconds || !fleet_.GpuBusy(gi)) continue;
    ++with;
    const auto base = group_base_power_.find(s.group);
    const auto top = group_top_clock_.find(s.group);
    const std::optional<double> clock = fleet_.GpuValue(gi, kClock);
    const std::optional<double> temp = fleet_.GpuValue(gi, kTemp);
    if (base == group_base_power_.end() || top == group_top_clock_.end() || !clock) continue;
    const auto [mean, sd] = p.MeanSd();
    if (sd <= kSteadyPower * mean && mean >= kSamePower * base->second.mean &&
        *clock <= kHeldClock * top->second && !(temp && *temp >= kSlowdownTempC)) {
      ++pinned;
    }
  }
  if (with > 0) canary_pinned_ = 2 * pinned >= with;
}

bool HardRules::FleetPowerCapped() const {
  const int bit = std::countr_zero(kSwPowerCapBit);
  for (const auto& [group, seen] : baseline_reason_tick_) {
    const auto nodes = baseline_nodes_.find(group);
    if (nodes == baseline_nodes_.end()) continue;
    const int on = NodesHolding(seen, bit, last_t_, -1);
    if (on >= 2 && 4 * on >= static_cast<int>(nodes->second.size())) return true;
  }
  return false;
}

int HardRules::BaselineNodesAsHot(int group, int node, double temp, std::int64_t t) const {
  const auto nodes = baseline_nodes_.find(group);
  if (nodes == baseline_nodes_.end()) return 0;
  int hot = 0;
  for (int n : nodes->second) {
    const auto ring = baseline_temp_.find(n);
    if (n == node || ring == baseline_temp_.end()) continue;
    for (const auto& [tick, degrees] : ring->second) {
      if (t - tick <= kFleetWindowSeconds && tick <= t && degrees >= temp - kFleetHeatDegrees) {
        ++hot;
        break;
      }
    }
  }
  return hot;
}

bool HardRules::BaselineWarming(int group, int node, std::int64_t t) const {
  const auto nodes = baseline_nodes_.find(group);
  if (nodes == baseline_nodes_.end()) return false;
  int warming = 0;
  for (int n : nodes->second) {
    const auto ring = baseline_temp_.find(n);
    if (n == node || ring == baseline_temp_.end()) continue;
    std::optional<double> now, before;
    std::int64_t now_tick = 0;
    for (const auto& [tick, degrees] : ring->second) {
      if (tick > t) continue;
      if (t - tick <= 5 && (!now || tick > now_tick)) {
        now = degrees;
        now_tick = tick;
      }
      if (t - tick >= 15 && t - tick <= 60) before = std::min(before.value_or(degrees), degrees);
    }
    if (now && before && *now - *before >= kWarmingDegrees) ++warming;
  }
  return warming >= 2 && 4 * warming >= static_cast<int>(nodes->second.size());
}

bool HardRules::TooCoolForRoomHeat(int gpu) const {
  const std::optional<double> temp = fleet_.GpuValue(gpu, kTemp);
  return temp && *temp < kRoomHeatMinC;
}

bool HardRules::BaselineMayFollow(const RuleHit& hit, std::int64_t t) const {
  const GpuState& s = fleet_.gpus()[static_cast<std::size_t>(hit.gpu)];
  if ((hit.bits & kThermalBits) != 0 && !TooCoolForRoomHeat(hit.gpu) &&
      BaselineWarming(s.group, s.node, t)) {
    return true;
  }
  // A limit lowered under a baseline GPU within the minute: the facility's
  // (or an operator's) cap reaching its nodes one by one.
  if (s.role != Role::kBaseline || (hit.bits & kSwPowerCapBit) == 0) return false;
  const auto g = static_cast<std::size_t>(hit.gpu);
  return g < limit_fell_.size() && limit_fell_[g] && t - *limit_fell_[g] <= kFleetWindowSeconds;
}

void HardRules::TrackLinks() {
  const std::vector<GpuState>& gpus = fleet_.gpus();
  for (std::size_t g = 0; g < gpus.size(); ++g) {
    const int gi = static_cast<int>(g);
    const int group = gpus[g].group;
    if (group < 0) continue;
    if (const std::optional<double> w = fleet_.GpuValue(gi, kWidth)) {
      double& best = group_best_width_[group];
      best = std::max(best, *w);
    }
    if (const std::optional<double> gen = fleet_.GpuValue(gi, kGen); gen && fleet_.GpuBusy(gi)) {
      double& best = group_best_gen_[group];
      best = std::max(best, *gen);
    }
  }
}

bool HardRules::HaltsOnCanary(std::string_view rule) const {
  return (rule == "throttle" && policy_.rules.throttle.halt_on_canary) ||
         (rule == "pcie_link" && policy_.rules.pcie_halt_on_canary);
}

bool HardRules::SeenFleetWide(const RuleHit& hit, std::int64_t t) const {
  const GpuState& hs = fleet_.gpus()[static_cast<std::size_t>(hit.gpu)];
  std::uint64_t bits = hit.bits & kFleetReasonBits;
  // Heat: the baseline as hot as this GPU explains its thermal reasons (and
  // the HW slowdown that comes with them), throttling or not yet.
  if ((bits & kThermalBits) != 0) {
    if (TooCoolForRoomHeat(hit.gpu)) return false;
    if (const std::optional<double> temp = fleet_.GpuValue(hit.gpu, kTemp)) {
      const int hot = BaselineNodesAsHot(hs.group, hs.node, *temp, t);
      const auto total_it = baseline_nodes_.find(hs.group);
      const int total =
          total_it == baseline_nodes_.end() ? 0 : static_cast<int>(total_it->second.size());
      if (hot >= 2 && 4 * hot >= total) bits &= ~(kThermalBits | std::uint64_t{0x8});
      if (bits == 0) return true;
    }
  }
  const auto seen = baseline_reason_tick_.find(hs.group);
  const auto nodes = baseline_nodes_.find(hs.group);
  if (bits == 0 || seen == baseline_reason_tick_.end() || nodes == baseline_nodes_.end()) {
    return false;
  }
  const auto total = static_cast<int>(nodes->second.size());
  for (int b = 0; b < 64; ++b) {
    if (((bits >> b) & 1U) == 0) continue;
    const int on = NodesHolding(seen->second, b, t, hs.node);
    if (on < 2 || 4 * on < total) return false;
  }
  return true;
}

int HardRules::NodesHolding(const std::map<std::pair<int, int>, std::int64_t>& seen, int bit,
                            std::int64_t t, int except_node) {
  const std::int64_t window = ((std::uint64_t{1} << bit) & kThermalBits) != 0
                                  ? kFleetHeatWindowSeconds
                                  : kFleetWindowSeconds;
  int on = 0;
  for (auto it = seen.lower_bound({bit, -1}); it != seen.end() && it->first.first == bit; ++it) {
    if (it->first.second != except_node && t - it->second <= window) ++on;
  }
  return on;
}

// The GPU's rule machines this tick. The throttle rule compares against the
// matched baseline's majority reasons (none when no baseline GPU of the group
// has reasons); the XID field keeps the last code, so a hit is a change to a
// new non-zero code. A rule that fires records its hit (rare: out of line).
void HardRules::FeedRules(GpuRules& r, int gpu, std::int64_t t) {
  if (r.throttle) {
    const int group = fleet_.gpus()[static_cast<std::size_t>(gpu)].group;
    std::optional<std::uint64_t> mask;
    if (const std::optional<double> reasons = fleet_.GpuValue(gpu, kReasons)) {
      mask = static_cast<std::uint64_t>(*reasons);
    }
    const std::optional<std::uint64_t> majority[1] = {fleet_.BaselineMajority(group)};
    const std::span<const std::optional<std::uint64_t>> base =
        fleet_.BaselineWithReasons(group) > 0
            ? std::span<const std::optional<std::uint64_t>>(majority)
            : std::span<const std::optional<std::uint64_t>>();
    if (r.throttle->Add(t, mask, base)) AddThrottleHit(r, gpu, t);
  }
  if (r.pcie) {
    // The link the GPU should have: its max-link fields, else what its
    // model's peers (and its own past) show. An idle link drops its
    // generation to save power (nvidia-smi shows Gen1 at idle): only a busy
    // link's generation counts.
    const int group = fleet_.gpus()[static_cast<std::size_t>(gpu)].group;
    std::optional<double> max_width = fleet_.GpuValue(gpu, kMaxWidth);
    std::optional<double> max_gen = fleet_.GpuValue(gpu, kMaxGen);
    const bool inferred = !max_width || !max_gen;
    if (!max_width && group_best_width_.count(group) != 0) max_width = group_best_width_[group];
    if (!max_gen && group_best_gen_.count(group) != 0) max_gen = group_best_gen_[group];
    std::optional<double> gen = fleet_.GpuValue(gpu, kGen);
    // No busy peer's generation known yet: the width alone decides.
    if (!max_gen) max_gen = gen;
    if (gen && max_gen && !fleet_.GpuBusy(gpu)) gen = max_gen;
    if (r.pcie->Add(t, fleet_.GpuValue(gpu, kWidth), max_width, gen, max_gen,
                    inferred ? "peers" : "max")) {
      AddPcieHit(r, gpu, t);
    }
  }
  if (const std::optional<double> x = fleet_.GpuValue(gpu, kXid)) {
    const int code = static_cast<int>(std::lround(*x));
    if (code != r.last_xid && code > 0) AddXidHit(gpu, code, t);
    r.last_xid = code;
  }
  if (policy_.rules.ecc_dbe && r.dbe.Add(t, fleet_.GpuValue(gpu, kDbe))) AddEccHit(r, gpu, t);
}

void HardRules::AddThrottleHit(const GpuRules& r, int gpu, std::int64_t t) {
  RuleHit hit;
  hit.gpu = gpu;
  hit.rule = "throttle";
  hit.bits = r.throttle->bits();
  // Bits none of the throttle causes names (a policy's own harmful mask)
  // make no finding.
  const std::optional<vocab::CauseKind> kind = ThrottleCause(hit.bits);
  if (!kind) return;
  hit.kind = *kind;
  hit.onset = r.throttle->streak().streak_start();
  hit.fired = t;
  hit.critical = policy_.rules.throttle.critical;
  char buf[160];
  std::snprintf(buf, sizeof buf, "reasons 0x%llx", static_cast<unsigned long long>(hit.bits));
  hit.detail = buf;
  // HW slowdown with thermal reasons on a GPU far below the slowdown
  // thresholds is no heat: a HW slowdown signal (a sensor, the board, an
  // external input).
  if (hit.kind == vocab::CauseKind::kThermalThrottle && (hit.bits & 0x8U) != 0 &&
      TooCoolForRoomHeat(gpu)) {
    hit.kind = vocab::CauseKind::kHwSlowdown;
    std::snprintf(buf, sizeof buf,
                  "; thermal slowdown asserted at %.0f C, far below its thresholds",
                  *fleet_.GpuValue(gpu, kTemp));
    hit.detail += buf;
  }
  pending_hits_.push_back(std::move(hit));
}

void HardRules::AddPcieHit(const GpuRules& r, int gpu, std::int64_t t) {
  RuleHit hit;
  hit.gpu = gpu;
  hit.rule = "pcie_link";
  hit.kind = vocab::CauseKind::kPcieDowntrain;
  hit.onset = r.pcie->streak().streak_start();
  hit.fired = t;
  hit.critical = policy_.rules.pcie_critical;
  hit.detail = r.pcie->detail();
  pending_hits_.push_back(std::move(hit));
}

void HardRules::AddXidHit(int gpu, int code, std::int64_t t) {
  RuleHit hit;
  hit.gpu = gpu;
  hit.rule = "xid";
  hit.kind = vocab::CauseKind::kXidErrors;
  hit.onset = t;
  hit.fired = t;
  hit.critical = std::binary_search(policy_.rules.critical_xids.begin(),
                                    policy_.rules.critical_xids.end(), code);
  hit.detail = "XID " + std::to_string(code);
  pending_hits_.push_back(std::move(hit));
}

void HardRules::AddEccHit(const GpuRules& r, int gpu, std::int64_t t) {
  RuleHit hit;
  hit.gpu = gpu;
  hit.rule = "ecc_dbe";
  hit.kind = vocab::CauseKind::kEccErrors;
  hit.onset = t;
  hit.fired = t;
  hit.critical = policy_.rules.ecc_dbe_critical;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f new uncorrectable (DBE) errors", r.dbe.new_errors());
  hit.detail = buf;
  pending_hits_.push_back(std::move(hit));
}

// ---------------------------------------------------------------------------
// Hits become findings

void HardRules::OnHit(RuleHit hit, std::int64_t t) {
  GpuRules& r = gpus_[static_cast<std::size_t>(hit.gpu)];
  r.hit = true;
  if (!r.window.open) {
    r.window.open = true;
    r.window.start = hit.onset;
  }
  const FindingScope scope = ScopeOfNewHit(hit, t);
  // Out of the pools: the GPU, and its node's service (tensor parallel: one
  // bad GPU slows the node's server).
  if (scope == FindingScope::kNode) fleet_.ExcludeGpuAndItsNode(hit.gpu);
  MetricFinding f;
  f.kind = hit.kind;
  f.scope = scope;
  f.origin = "rule:" + hit.rule;
  f.units = {hit.gpu};
  f.unit_is_gpu = true;
  f.since = hit.onset;
  f.decided_at = t;
  f.critical = hit.critical;
  f.detail = hit.detail;
  f.bits = hit.bits;
  f.history = hit.history;
  f.measure = -1;
  findings_.push_back(std::move(f));
  hits_.push_back(std::move(hit));
}

// A baseline GPU's hit is its node's; a canary GPU's depends on where its
// node stands (history, switching, judged) and on the other canary GPUs.
FindingScope HardRules::ScopeOfNewHit(RuleHit& hit, std::int64_t t) {
  const GpuState& s = fleet_.gpus()[static_cast<std::size_t>(hit.gpu)];
  if (s.role == Role::kBaseline) {
    // The first baseline node a heat event or a facility power cap reaches
    // is no more at fault than the rest: watched for the others to follow.
    if (hit.rule != "throttle") return FindingScope::kNode;
    if (SeenFleetWide(hit, t)) return FindingScope::kFleet;
    return BaselineMayFollow(hit, t) ? FindingScope::kFleetWatch : FindingScope::kNode;
  }
  GpuRules& r = gpus_[static_cast<std::size_t>(hit.gpu)];
  const Phase phase = fleet_.PhaseOf(s.node, t);
  if (phase == Phase::kHistory) {
    hit.history = true;
    r.history_kinds.insert(hit.kind);
    return FindingScope::kNode;
  }
  // Before or after the node's switch: known when the switch is.
  if (phase == Phase::kSwitching) return FindingScope::kSwitching;
  if (r.history_kinds.count(hit.kind) != 0) {
    hit.history = true;  // it had this before the release
    return FindingScope::kNode;
  }
  if (hit.rule == "throttle" && SeenFleetWide(hit, t)) return FindingScope::kFleet;
  if (hit.rule == "throttle" && BaselineMayFollow(hit, t)) return FindingScope::kFleetWatch;
  // The seed's rule: throttling for more than 3 s on a canary GPU after its
  // release halts the canary, unless the GPU showed it before (above) or the
  // baseline shows it too. No clean sibling or witness excuses it.
  if (HaltsOnCanary(hit.rule)) {
    release_kinds_.insert(hit.kind);
    return FindingScope::kRelease;
  }
  const FindingScope scope = ScopeForRuleKind(hit.kind, hit, t);
  // A non-critical XID is a pattern only when it recurs on several GPUs.
  if (scope == FindingScope::kRelease) release_kinds_.insert(hit.kind);
  return scope;
}

// Scope of a rule hit on a canary GPU during the release (docs/analysis-method.md,
// "Release or node (scope)"): the release when the kind shows on enough canary nodes, or when no
// canary GPU that has run the release as long is clean; a node otherwise.
FindingScope HardRules::ScopeForRuleKind(vocab::CauseKind kind, const RuleHit& hit,
                                         std::int64_t t) const {
  if (release_kinds_.count(kind) != 0) return FindingScope::kRelease;
  std::set<int> affected_gpus;
  std::set<int> affected_nodes;
  AffectedBy(kind, t, &affected_gpus, &affected_nodes);
  const int hit_node = fleet_.gpus()[static_cast<std::size_t>(hit.gpu)].node;
  affected_gpus.insert(hit.gpu);
  affected_nodes.insert(hit_node);
  const int canary_nodes = fleet_.CanaryNodeCount();
  const int n_aff = static_cast<int>(affected_nodes.size());
  if (n_aff >= 2 && 2 * n_aff >= canary_nodes) return FindingScope::kRelease;
  if (CleanWitnessElsewhere(hit, affected_gpus, t)) return FindingScope::kNode;
  // Fewer than half of the node's GPUs, the others running the same release
  // as long: wait kWitnessSeconds for them to show it too (the release) or
  // not (the node).
  int on_node = 0;
  for (int g : affected_gpus) {
    on_node += fleet_.gpus()[static_cast<std::size_t>(g)].node == hit_node;
  }
  const NodeState& hn = fleet_.nodes()[static_cast<std::size_t>(hit_node)];
  if (2 * on_node < std::max(1, hn.gpu_count)) return FindingScope::kPending;
  return FindingScope::kRelease;
}

// The canary GPUs (and their nodes) that showed `kind` on the release: the
// earlier hits, and this tick's on nodes past their switch that did not have
// it before.
void HardRules::AffectedBy(vocab::CauseKind kind, std::int64_t t, std::set<int>* gpus,
                           std::set<int>* nodes) const {
  for (const RuleHit& h : hits_) {
    const GpuState& s = fleet_.gpus()[static_cast<std::size_t>(h.gpu)];
    if (h.kind != kind || h.history || s.role != Role::kCanary ||
        !fleet_.nodes()[static_cast<std::size_t>(s.node)].since) {
      continue;
    }
    gpus->insert(h.gpu);
    nodes->insert(s.node);
  }
  for (const RuleHit& h : tick_hits_) {
    const GpuState& s = fleet_.gpus()[static_cast<std::size_t>(h.gpu)];
    if (h.kind != kind || s.role != Role::kCanary || fleet_.PhaseOf(s.node, t) == Phase::kHistory ||
        fleet_.PhaseOf(s.node, t) == Phase::kSwitching ||
        gpus_[static_cast<std::size_t>(h.gpu)].history_kinds.count(kind) != 0) {
      continue;
    }
    gpus->insert(h.gpu);
    nodes->insert(s.node);
  }
}

// A clean GPU on another canary node that has run the release clearly
// longer than this one had when it showed the fault: the release runs fine
// there, so this is the node.
bool HardRules::CleanWitnessElsewhere(const RuleHit& hit, const std::set<int>& affected_gpus,
                                      std::int64_t t) const {
  const int hit_node = fleet_.gpus()[static_cast<std::size_t>(hit.gpu)].node;
  const NodeState& hn = fleet_.nodes()[static_cast<std::size_t>(hit_node)];
  const double exposure = hn.since ? static_cast<double>(hit.onset - *hn.since) : 0.0;
  const double need = std::min(std::max(exposure, 0.0), kWitnessSeconds) +
                      static_cast<double>(hit.fired - hit.onset) + kWitnessSeconds;
  const std::vector<GpuState>& gpus = fleet_.gpus();
  for (std::size_t g = 0; g < gpus.size(); ++g) {
    const GpuState& w = gpus[g];
    if (w.role != Role::kCanary || w.excluded || w.node == hit_node ||
        affected_gpus.count(static_cast<int>(g)) != 0 || !fleet_.gpu_has_data(g)) {
      continue;
    }
    const NodeState& wn = fleet_.nodes()[static_cast<std::size_t>(w.node)];
    if (!wn.since) continue;
    if (static_cast<double>(t - *wn.since) >= need) return true;
  }
  return false;
}

// The hit a rule finding was made of (the last one that matches).
RuleHit* HardRules::HitOf(const MetricFinding& f) {
  RuleHit* hit = nullptr;
  for (RuleHit& h : hits_) {
    if (h.gpu == f.units.front() && h.kind == f.kind && h.fired == f.decided_at) hit = &h;
  }
  return hit;
}

// Its rule hits while the node switched were history (before the switch: the
// old release) or the release's (after).
void HardRules::ResolveSwitching(int node, std::int64_t t) {
  const std::int64_t since = *fleet_.nodes()[static_cast<std::size_t>(node)].since;
  // Two passes: the findings from before the switch first, so that a later
  // streak of a kind the GPU already showed before the release is its own
  // (as for a hit after the switch), whatever order they were found in.
  for (const bool before : {true, false}) {
    ResolveSwitchingPass(node, since, t, before);
  }
}

void HardRules::ResolveSwitchingPass(int node, std::int64_t since, std::int64_t t,
                                     bool before_only) {
  for (MetricFinding& f : findings_) {
    if (f.scope != FindingScope::kSwitching) continue;
    const int gpu = f.units.front();
    if (fleet_.gpus()[static_cast<std::size_t>(gpu)].node != node) continue;
    RuleHit* hit = HitOf(f);
    // A link that retrained during the deploy (the restart resets the GPU)
    // came with the release, though the server was not back yet.
    const std::optional<std::int64_t>& release = fleet_.timeline().release_start;
    const bool deploy_retrain = f.origin == "rule:pcie_link" && release && f.since >= *release;
    // Nor is an XID after the release start "already before the release":
    // a GPU fault that crashes the server is the restart the switch reads
    // (an XID 56 s after the release was called the node's own history).
    const bool deploy_xid = f.origin == "rule:xid" && release && f.since >= *release;
    const bool history = f.since < since && !deploy_retrain && !deploy_xid;
    if (before_only != history) continue;
    if (history || gpus_[static_cast<std::size_t>(gpu)].history_kinds.count(f.kind) != 0) {
      f.scope = FindingScope::kNode;
      f.history = true;
      if (hit != nullptr) hit->history = true;
      gpus_[static_cast<std::size_t>(gpu)].history_kinds.insert(f.kind);
      fleet_.ExcludeGpuAndItsNode(gpu);
      continue;
    }
    const RuleHit probe = ProbeOf(f, hit);
    if (f.origin == "rule:throttle" && SeenFleetWide(probe, t)) {
      f.scope = FindingScope::kFleet;
      continue;
    }
    if (f.origin == "rule:throttle" && BaselineMayFollow(probe, t)) {
      f.scope = FindingScope::kFleetWatch;
      continue;
    }
    ScopeOnTheCanary(f, probe, t);
  }
}

RuleHit HardRules::ProbeOf(const MetricFinding& f, const RuleHit* hit) {
  RuleHit probe = hit != nullptr ? *hit : RuleHit{};
  probe.gpu = f.units.front();
  probe.kind = f.kind;
  probe.bits = f.bits;
  return probe;
}

void HardRules::ScopeOnTheCanary(MetricFinding& f, const RuleHit& probe, std::int64_t t) {
  const bool halts = f.origin.starts_with("rule:") && HaltsOnCanary(f.origin.substr(5));
  f.scope = halts ? FindingScope::kRelease : ScopeForRuleKind(f.kind, probe, t);
  if (f.scope == FindingScope::kRelease) {
    release_kinds_.insert(f.kind);
    f.decided_at = t;
  } else if (f.scope == FindingScope::kNode) {
    fleet_.ExcludeGpuAndItsNode(probe.gpu);
  }
}

// Pending hits (a minority of one node's GPUs): the release once enough GPUs
// or nodes show the kind, the node once kWitnessSeconds passed without.
void HardRules::ResolvePending(std::int64_t t, bool at_end) {
  for (MetricFinding& f : findings_) {
    // The switch never came.
    if (at_end && f.scope == FindingScope::kSwitching) f.scope = FindingScope::kNode;
    if (f.scope == FindingScope::kFleetWatch) ResolveFleetWatch(f, t, at_end);
    if (f.scope != FindingScope::kPending) continue;
    const int gpu = f.units.front();
    RuleHit probe;
    probe.gpu = gpu;
    probe.kind = f.kind;
    probe.onset = f.since;
    probe.fired = f.decided_at;
    const FindingScope scope = ScopeForRuleKind(f.kind, probe, t);
    if (scope == FindingScope::kRelease) {
      f.scope = FindingScope::kRelease;
      f.decided_at = t;
      release_kinds_.insert(f.kind);
    } else if (scope == FindingScope::kNode || at_end ||
               static_cast<double>(t - f.decided_at) >= kWitnessSeconds) {
      f.scope = FindingScope::kNode;
      fleet_.ExcludeGpuAndItsNode(gpu);
    }
  }
}

void HardRules::ResolveFleetWatch(MetricFinding& f, std::int64_t t, bool at_end) {
  const RuleHit probe = ProbeOf(f, HitOf(f));
  if (SeenFleetWide(probe, t)) {
    f.scope = FindingScope::kFleet;
    return;
  }
  if (!at_end && t - f.decided_at < kFleetWatchSeconds && BaselineMayFollow(probe, t)) {
    return;  // still watching
  }
  if (fleet_.gpus()[static_cast<std::size_t>(probe.gpu)].role == Role::kBaseline) {
    f.scope = FindingScope::kNode;
    fleet_.ExcludeGpuAndItsNode(probe.gpu);
    return;
  }
  ScopeOnTheCanary(f, probe, t);
}

// ---------------------------------------------------------------------------
// Evidence windows

void HardRules::UpdateWindows(std::int64_t t) {
  for (std::size_t g = 0; g < gpus_.size(); ++g) {
    GpuRules& r = gpus_[g];
    EvidenceWindow& w = r.window;
    bool streak = false;
    if (r.throttle && r.throttle->streak().active()) streak = true;
    if (r.pcie && r.pcie->streak().active()) streak = true;
    if (!streak && !r.hit) {
      if (w.open) {
        w.open = false;
        w.canary.fill(0);
        w.baseline.fill(0);
        w.n.fill(0);
        w.bits = 0;
      }
      continue;
    }
    if (!w.open) {
      w.open = true;
      w.start = t;
    }
    // After its hit the window stays open for later streaks, but only the
    // streaks' seconds are its evidence (an 8-s halving read as the clock
    // over the next 4 minutes was "1948 MHz for 260 s").
    if (!streak || !fleet_.gpu_has_data(g)) continue;
    w.last = t;
    const int group = fleet_.gpus()[g].group;
    for (std::size_t k = 0; k < kFixedGpuSlots; ++k) {
      const double v = fleet_.RawGpuValue(g, k);
      const std::optional<double> b = fleet_.BaselineMean(group, k);
      if (std::isnan(v) || !b) continue;
      w.canary[k] += v;
      w.baseline[k] += *b;
      w.n[k] += 1;
    }
    if (const std::optional<double> reasons = fleet_.GpuValue(static_cast<int>(g), kReasons)) {
      w.bits |= static_cast<std::uint64_t>(*reasons);
    }
    w.base_bits |= fleet_.BaselineMajority(group);
  }
}

bool HardRules::CanaryPowerCapped() const {
  for (std::size_t g = 0; g < gpus_.size(); ++g) {
    const EvidenceWindow& w = gpus_[g].window;
    if (fleet_.gpus()[g].role == Role::kCanary && (w.bits & 0x4U) != 0 &&
        (w.base_bits & 0x4U) == 0) {
      return true;
    }
  }
  return false;
}

}  // namespace gpucanary::analysis::judge_internal
