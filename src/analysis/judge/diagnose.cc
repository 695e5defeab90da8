#include "analysis/judge/diagnose.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>

namespace gpucanary::analysis {
namespace {

bool Below(double change, double by) { return !std::isnan(change) && change < -by; }
bool Above(double change, double by) { return !std::isnan(change) && change > by; }

std::string Percent(double change) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", std::fabs(change) * 100);
  return buf;
}

std::string Number(double v) {
  char buf[48];
  if (std::isnan(v)) return "n/a";
  const double a = std::fabs(v);
  if (a >= 1e9) {
    std::snprintf(buf, sizeof buf, "%.1f G", v / 1e9);
  } else if (a >= 100) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else if (a >= 1) {
    std::snprintf(buf, sizeof buf, "%.2f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.3g", v);
  }
  return buf;
}

const Evidence* Find(const Cause& c, std::string_view metric) {
  for (const Evidence& e : c.evidence) {
    if (e.metric == metric) return &e;
  }
  return nullptr;
}

// "1050 MHz (baseline 1980)"
std::string Versus(const Evidence* e, std::string_view unit) {
  if (e == nullptr) return "";
  std::string s = Number(e->canary);
  if (!unit.empty()) s += " " + std::string(unit);
  s += " (baseline " + Number(e->baseline) + ")";
  return s;
}

double Change(const Evidence* e) {
  if (e == nullptr || !(e->baseline > 0)) return NAN;
  return e->canary / e->baseline - 1;
}

}  // namespace

vocab::CauseKind ClassifyMetricFailure(std::string_view metric, bool gpu_metric,
                                       const Signature& s) {
  using vocab::CauseKind;
  if (metric.find("ECC") != std::string_view::npos) return CauseKind::kEccErrors;
  if (metric.find("REPLAY") != std::string_view::npos) return CauseKind::kPcieErrors;
  if (metric.find("XID") != std::string_view::npos) return CauseKind::kXidErrors;
  if (metric.find("PCIE") != std::string_view::npos) return CauseKind::kPcieDowntrain;
  // Memory thrash: DRAM activity grows much faster than the compute it
  // feeds (a slower service alone raises both alike).
  if (Above(s.dram, 0.10) && !std::isnan(s.tensor) && (1 + s.dram) / (1 + s.tensor) > 1.2) {
    return CauseKind::kMemoryThrash;
  }
  // Low occupancy: fewer resident warps while the SMs stay as busy (or
  // busier, as the kernels run longer).
  if (Below(s.occupancy, 0.15) && !Below(s.sm_active, 0.10)) return CauseKind::kLowOccupancy;
  if (metric.find("OCCUPANCY") != std::string_view::npos) return CauseKind::kLowOccupancy;
  // Slower clocks with no harmful reason the rules saw: the power cap.
  if (Below(s.sm_clock, 0.03))
    return s.power_capped ? CauseKind::kPowerCap : CauseKind::kHwSlowdown;
  if (gpu_metric && metric.find("CLOCK") != std::string_view::npos) return CauseKind::kHwSlowdown;
  // The service got slower, the hardware did not: software.
  return CauseKind::kSoftwareRegression;
}

std::string DescribeGpus(const std::vector<std::string>& gpus) {
  // host -> indices, in order.
  std::map<std::string, std::vector<std::string>> by_host;
  for (const std::string& g : gpus) {
    const std::size_t slash = g.rfind('/');
    if (slash == std::string::npos) {
      by_host[g];
      continue;
    }
    by_host[g.substr(0, slash)].push_back(g.substr(slash + 1));
  }
  std::string out;
  for (const auto& [host, idx] : by_host) {
    if (!out.empty()) out += ", ";
    out += host;
    if (idx.empty()) continue;
    out += "/";
    // Compress runs of consecutive integers: 0,1,2,3 -> 0-3.
    std::string part;
    std::size_t i = 0;
    while (i < idx.size()) {
      std::size_t j = i;
      char* end = nullptr;
      const std::int64_t first = std::strtoll(idx[i].c_str(), &end, 10);
      const bool numeric = end != nullptr && *end == '\0';
      if (numeric) {
        while (j + 1 < idx.size()) {
          char* e2 = nullptr;
          const std::int64_t next = std::strtoll(idx[j + 1].c_str(), &e2, 10);
          if (e2 == nullptr || *e2 != '\0' ||
              next != first + static_cast<std::int64_t>(j + 1 - i)) {
            break;
          }
          ++j;
        }
      }
      if (!part.empty()) part += ",";
      part += idx[i];
      if (j > i) part += "-" + idx[j];
      i = j + 1;
    }
    out += part;
  }
  return out;
}

std::string SummarizeCause(const Cause& c, std::string_view detail, double seconds) {
  using vocab::CauseKind;
  const std::string where = DescribeGpus(c.gpus);
  char held[64] = "";
  if (seconds > 0) std::snprintf(held, sizeof held, " for %.0f s", seconds);
  const Evidence* clock = Find(c, "DCGM_FI_DEV_SM_CLOCK");
  std::string s;
  if (c.kind == CauseKind::kPowerBrake) {
    s = "HW power brake (" + std::string(detail) + ") held SM clock at " + Versus(clock, "MHz") +
        " on " + where + held;
  } else if (c.kind == CauseKind::kThermalThrottle) {
    s = "Thermal throttling (" + std::string(detail) + ") at " +
        Versus(Find(c, "DCGM_FI_DEV_GPU_TEMP"), "C") + " cut SM clock to " + Versus(clock, "MHz") +
        " on " + where + held;
  } else if (c.kind == CauseKind::kHwSlowdown) {
    s = "HW slowdown (" + std::string(detail) + ") held SM clock at " + Versus(clock, "MHz") +
        " on " + where + held;
  } else if (c.kind == CauseKind::kPowerCap) {
    s = "SW power cap held power at " + Versus(Find(c, "DCGM_FI_DEV_POWER_USAGE"), "W");
    if (const Evidence* lim = Find(c, "DCGM_FI_DEV_ENFORCED_POWER_LIMIT")) {
      s += " against a " + Number(lim->canary) + " W limit";
    }
    if (clock != nullptr) s += " and SM clock at " + Versus(clock, "MHz");
    s += " on " + where + held;
  } else if (c.kind == CauseKind::kPcieDowntrain) {
    s = "PCIe link trained at " + std::string(detail) + " on " + where;
    if (const Evidence* rx = Find(c, "DCGM_FI_PROF_PCIE_RX_BYTES")) {
      s += "; PCIe RX " + Versus(rx, "B/s");
    }
  } else if (c.kind == CauseKind::kXidErrors) {
    s = std::string(detail) + " on " + where;
  } else if (c.kind == CauseKind::kEccErrors) {
    s = (detail.empty() ? std::string("ECC errors") : std::string(detail)) + " on " + where;
  } else {
    // Metric findings: the failing metric first, then the signature.
    const Evidence* main = c.evidence.empty() ? nullptr : &c.evidence.front();
    std::string what = main != nullptr ? main->metric : "service";
    const double ch = Change(main);
    s = what + (std::isnan(ch) ? " changed" : (ch < 0 ? " down " : " up ") + Percent(ch)) +
        (main != nullptr ? ": " + Versus(main, "") : "") + " on " + where;
    std::string sig;
    for (std::size_t i = 1; i < c.evidence.size(); ++i) {
      const double x = Change(&c.evidence[i]);
      if (std::isnan(x)) continue;
      if (!sig.empty()) sig += ", ";
      sig += c.evidence[i].metric +
             (std::fabs(x) < 0.02 ? " unchanged" : (x < 0 ? " -" : " +") + Percent(x));
    }
    if (!sig.empty()) s += " (" + sig + ")";
    if (c.kind == CauseKind::kSoftwareRegression) {
      s += ": the service is slower with clocks, throttling, PCIe and DRAM efficiency unchanged";
    } else if (c.kind == CauseKind::kMemoryThrash) {
      s += ": DRAM busier for less useful work (memory thrash)";
    } else if (c.kind == CauseKind::kLowOccupancy) {
      s += ": kernels keep fewer warps resident (low occupancy)";
    } else {
      s += ": " + std::string(vocab::Name(c.kind));
    }
  }
  if (c.scope == vocab::Scope::kNode) {
    s += ". Node fault";
    if (!detail.empty() && detail.find("already before") != std::string_view::npos) {
      s += " (already there before the release)";
    }
    s += ": isolate ";
    for (std::size_t i = 0; i < c.nodes.size(); ++i) s += (i > 0 ? ", " : "") + c.nodes[i];
  } else {
    s += ". Caused by the release";
  }
  s += ".";
  return s;
}

}  // namespace gpucanary::analysis
