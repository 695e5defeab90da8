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

// A clock cause found from the metrics, with no throttle reason to quote:
// the numbers that named it.
std::string ClockDropSentence(const Cause& c, const std::string& where) {
  using vocab::CauseKind;
  const Evidence* clock = Find(c, "DCGM_FI_DEV_SM_CLOCK");
  const Evidence* power = Find(c, "DCGM_FI_DEV_POWER_USAGE");
  const Evidence* limit = Find(c, "DCGM_FI_DEV_ENFORCED_POWER_LIMIT");
  const Evidence* temp = Find(c, "DCGM_FI_DEV_GPU_TEMP");
  const Evidence* lead =
      clock != nullptr ? clock : (c.evidence.empty() ? nullptr : &c.evidence.front());
  std::string s;
  if (lead != nullptr) {
    const double ch = Change(lead);
    s = lead->metric + (std::isnan(ch) ? " changed" : (ch < 0 ? " down " : " up ") + Percent(ch)) +
        ": " + Versus(lead, lead == clock ? "MHz" : "") + " on " + where;
  } else {
    s = "Slower on " + where;
  }
  std::string power_text;
  if (power != nullptr) {
    power_text = "board power " + Versus(power, "W");
    if (limit != nullptr) {
      power_text += " against a " + Number(limit->canary) + " W limit";
      if (limit->unit.find("default") != std::string::npos) power_text += " (the model's default)";
    }
  }
  if (c.kind == CauseKind::kPowerCap) {
    // Without a limit to quote, the cap was read from a lower clock at no
    // less power than the baseline's (HardRules::CanaryPowerPinned).
    if (!power_text.empty() && limit == nullptr) {
      power_text += " held at its ceiling as the clock fell";
    }
    s += ", with " + (power_text.empty() ? std::string("the power at its limit") : power_text) +
         ": the power cap holds the clock (no throttle reason reported)";
  } else if (c.kind == CauseKind::kThermalThrottle) {
    s += ", at " + Versus(temp, "C") + ": thermal slowdown (no throttle reason reported)";
  } else {
    s += ": the clock fell for a reason the telemetry does not report (no throttle reason";
    if (!power_text.empty()) s += "; " + power_text;
    if (temp != nullptr) s += "; " + Versus(temp, "C");
    s += ")";
  }
  return s;
}

}  // namespace

std::optional<double> DefaultPowerLimitW(std::string_view model_name) {
  // NVIDIA's product briefs (default TGP / board power), most specific first.
  struct Row {
    std::string_view a, b;  // both must appear in the name ("" matches anything)
    double watts;
  };
  static constexpr Row kRows[] = {
      {"H100", "PCIe", 350},
      {"H100", "NVL", 400},
      {"H100", "", 700},
      {"H200", "NVL", 600},
      {"H200", "", 700},
      {"B200", "", 1000},
      {"A100", "PCIE-40GB", 250},
      {"A100", "PCIe-40GB", 250},
      {"A100", "PCIE", 300},
      {"A100", "PCIe", 300},
      {"A100", "", 400},
      {"L40S", "", 350},
      {"L40", "", 300},
      {"L4", "", 72},
      {"A10G", "", 300},
      {"A10", "", 150},
      {"V100", "PCIE", 250},
      {"V100", "", 300},
      {"T4", "", 70},
  };
  for (const Row& r : kRows) {
    if (model_name.find(r.a) != std::string_view::npos &&
        (r.b.empty() || model_name.find(r.b) != std::string_view::npos)) {
      return r.watts;
    }
  }
  return std::nullopt;
}

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
  // Slower clocks with no harmful reason the rules saw: the power cap when
  // 0x4 was seen or the power sits at its limit; a hot GPU's thermal
  // slowdown; else a slowdown whose reason the telemetry does not say.
  if (Below(s.sm_clock, 0.03)) {
    if (s.power_capped || s.PowerAtLimit()) return CauseKind::kPowerCap;
    if (s.temp_c >= kSlowdownTempC) return CauseKind::kThermalThrottle;
    return CauseKind::kHwSlowdown;
  }
  if (gpu_metric && metric.find("CLOCK") != std::string_view::npos) return CauseKind::kHwSlowdown;
  // The service got slower, the hardware did not: software.
  return CauseKind::kSoftwareRegression;
}

vocab::CauseKind ClassifyDramEfficiencyFailure(const Signature& s) {
  const double work = std::isnan(s.tensor) ? 0.0 : s.tensor;
  if (Above(s.dram, 0.05) && (1 + s.dram) / (1 + work) > 1.15)
    return vocab::CauseKind::kMemoryThrash;
  return ClassifyMetricFailure("tokens_per_dram_active", true, s);
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
  const bool from_metric = c.origin.rfind("metric:", 0) == 0;
  const bool clock_kind = c.kind == CauseKind::kPowerCap || c.kind == CauseKind::kHwSlowdown ||
                          c.kind == CauseKind::kThermalThrottle;
  std::string s;
  if (c.origin == "rule:idle" || c.origin == "rule:crashloop") {
    s = "On " + where + ": " + std::string(detail);
  } else if (from_metric && clock_kind && detail.empty()) {
    s = ClockDropSentence(c, where);
  } else if (c.kind == CauseKind::kPowerBrake) {
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
      const bool gpu_work = main != nullptr && (main->metric.rfind("DCGM_", 0) == 0 ||
                                                main->metric == "work_per_joule" ||
                                                main->metric == "tokens_per_dram_active");
      s += gpu_work ? ": the GPUs do less useful work with no clock, throttle or PCIe mechanism "
                      "in the telemetry"
                    : ": the service is slower with no clock, throttle or PCIe mechanism in the "
                      "telemetry";
    } else if (c.kind == CauseKind::kMemoryThrash) {
      s += ": DRAM busier for less useful work (memory thrash)";
    } else if (c.kind == CauseKind::kLowOccupancy) {
      s += ": kernels keep fewer warps resident (low occupancy)";
    } else {
      s += ": " + std::string(vocab::Name(c.kind));
    }
  }
  if (c.scope == vocab::Scope::kFleet) {
    s += ". Seen on the baseline too, on several nodes in the same minute: a fleet-wide event "
         "(heat, facility power), not the release; the release is judged on its comparison "
         "with the baseline";
  } else if (c.scope == vocab::Scope::kNode) {
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
