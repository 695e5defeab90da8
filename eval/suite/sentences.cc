#include "eval/suite/sentences.h"

#include <cmath>
#include <regex>
#include <string>

namespace gpucanary::eval::suite {
namespace {

const analysis::Evidence* Find(const analysis::Cause& c, const std::string& metric) {
  for (const analysis::Evidence& e : c.evidence) {
    if (e.metric == metric) return &e;
  }
  return nullptr;
}

// The evidence's relative change; NaN when it cannot be computed.
double Change(const analysis::Evidence& e) {
  if (!(e.baseline > 0) || std::isnan(e.canary)) return NAN;
  return e.canary / e.baseline - 1;
}

}  // namespace

std::vector<std::string> SummaryContradictions(const analysis::Cause& cause) {
  std::vector<std::string> out;
  const std::string& s = cause.summary;
  const auto check = [&](const std::string& metric, int sign, int percent) {
    const analysis::Evidence* e = Find(cause, metric);
    if (e == nullptr) return;
    const double ch = Change(*e);
    if (std::isnan(ch)) return;
    const auto shown = static_cast<double>(sign * percent);
    if ((sign > 0 && ch <= 0) || (sign < 0 && ch >= 0) || std::fabs(ch * 100 - shown) > 1.0) {
      out.push_back(metric + " said " + std::to_string(sign * percent) + "% but its evidence is " +
                    std::to_string(e->canary) + " against " + std::to_string(e->baseline) +
                    " in \"" + s + "\"");
    }
  };
  static const std::regex kUpDown(R"(([A-Za-z_:][A-Za-z0-9_:]*) (up|down) (\d+)%)");
  for (std::sregex_iterator it(s.begin(), s.end(), kUpDown), end; it != end; ++it) {
    check((*it)[1].str(), (*it)[2].str() == "up" ? 1 : -1, std::stoi((*it)[3].str()));
  }
  static const std::regex kSigned(R"(([A-Za-z_:][A-Za-z0-9_:]*) ([+-])(\d+)%)");
  for (std::sregex_iterator it(s.begin(), s.end(), kSigned), end; it != end; ++it) {
    check((*it)[1].str(), (*it)[2].str() == "+" ? 1 : -1, std::stoi((*it)[3].str()));
  }
  static const std::regex kUnchanged(R"(([A-Za-z_:][A-Za-z0-9_:]*) unchanged)");
  for (std::sregex_iterator it(s.begin(), s.end(), kUnchanged), end; it != end; ++it) {
    const analysis::Evidence* e = Find(cause, (*it)[1].str());
    if (e == nullptr) continue;
    const double ch = Change(*e);
    if (!std::isnan(ch) && std::fabs(ch) >= 0.02) {
      out.push_back((*it)[1].str() + " said unchanged but changed " + std::to_string(ch * 100) +
                    "% in \"" + s + "\"");
    }
  }
  if (s.find("DRAM busier") != std::string::npos) {
    if (const analysis::Evidence* e = Find(cause, "DCGM_FI_PROF_DRAM_ACTIVE")) {
      if (!(Change(*e) > 0))
        out.push_back("\"DRAM busier\" with DRAM activity not up in \"" + s + "\"");
    }
  }
  return out;
}

}  // namespace gpucanary::eval::suite
