#include "actions/bundle.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <system_error>

#include "core/time_format.h"

namespace gpucanary::actions {
namespace {

namespace fs = std::filesystem;

Status WriteFile(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.flush();
  if (!out) return Error(StatusCode::kIoError, path.string() + ": write failed");
  return Status::Ok();
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string DescribeFile(const std::string& name) {
  if (name == "incident.json") {
    return "the verdict, its causes and the release annotation (the body webhooks receive)";
  }
  if (name == "README.txt") return "this file";
  if (EndsWith(name, ".om") || EndsWith(name, ".om.gz")) {
    return "telemetry of the affected GPUs over the canary window, an OpenMetrics recording "
           "(read it with `gpucanary check`, `gpucanary summarize`, `gpucanary judge`)";
  }
  return "written by the daemon's telemetry writer";
}

std::string Readme(const Incident& incident, std::int64_t now_ms,
                   const std::vector<std::string>& files, const Status& telemetry) {
  std::string out = "gpucanary diagnostic bundle\n\n";
  out += "canary:   " + incident.canary_id + "\n";
  out += "release:  " + incident.release.id;
  if (!incident.release.service.empty()) out += " (service " + incident.release.service + ")";
  out += "\nverdict:  " + std::string(vocab::Name(incident.verdict)) + ", decided at " +
         FormatUtcMillis(static_cast<std::int64_t>(incident.decided_at * 1000.0)) + "\n";
  out += "written:  " + FormatUtcMillis(now_ms) + "\n\ncauses:\n";
  for (const IncidentCause& c : incident.causes) {
    out += "  - " + std::string(vocab::Name(c.kind)) + " (" + std::string(vocab::Name(c.scope)) +
           (c.node.empty() ? "" : ", " + c.node) + "): " + c.summary + "\n";
  }
  if (incident.causes.empty()) out += "  (none given)\n";
  out += "\nfiles:\n";
  std::size_t width = 0;
  for (const std::string& f : files) width = std::max(width, f.size());
  for (const std::string& f : files) {
    out += "  " + f + std::string(width - f.size() + 2, ' ') + DescribeFile(f) + "\n";
  }
  if (!telemetry.ok()) out += "\ntelemetry: not written: " + telemetry.message() + "\n";
  return out;
}

// The files directly in `dir` (the writer may add folders; they are listed
// by name too), sorted.
std::vector<std::string> ListFiles(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

Result<BundleResult> Fill(const fs::path& tmp, const Incident& incident, std::int64_t now_ms,
                          const TelemetryWriter& telemetry) {
  BundleResult result;
  GC_RETURN_IF_ERROR(WriteFile(tmp / "incident.json", IncidentToJson(incident, 2) + "\n"));
  if (telemetry) {
    try {
      result.telemetry = telemetry(tmp);
    } catch (const std::exception& e) {
      result.telemetry = Status(StatusCode::kInternal, std::string("threw: ") + e.what());
    }
  } else {
    result.telemetry = Status(StatusCode::kUnavailable, "no telemetry writer was given");
  }
  result.files = ListFiles(tmp);
  result.files.push_back("README.txt");
  std::sort(result.files.begin(), result.files.end());
  result.files.erase(std::unique(result.files.begin(), result.files.end()), result.files.end());
  GC_RETURN_IF_ERROR(
      WriteFile(tmp / "README.txt", Readme(incident, now_ms, result.files, result.telemetry)));
  return result;
}

}  // namespace

std::string BundleName(const std::string& canary_id, std::int64_t now_ms) {
  std::string name;
  for (char c : canary_id) {
    const bool safe =
        std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' || c == '-';
    name += safe ? c : '_';
  }
  if (name.empty() || name[0] == '.') name.insert(0, "canary");
  // "2026-12-02T13:00:34.006Z" -> "20261202T130034Z"
  std::string time;
  for (char c : FormatUtcMillis(now_ms).substr(0, 19)) {
    if (c != '-' && c != ':') time += c;
  }
  return name + "-" + time + "Z";
}

Result<BundleResult> WriteDiagnosticBundle(const fs::path& root, const Incident& incident,
                                           std::int64_t now_ms, const TelemetryWriter& telemetry) {
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) return Error(StatusCode::kIoError, root.string() + ": " + ec.message());
  const std::string name = BundleName(incident.canary_id, now_ms);
  // Hidden and per process, so a reader listing `root` never sees a half
  // written bundle and two processes never share one.
  const fs::path tmp = root / ("." + name + ".tmp-" + std::to_string(getpid()));
  fs::remove_all(tmp, ec);
  if (!fs::create_directory(tmp, ec) || ec) {
    return Error(StatusCode::kIoError, tmp.string() + ": " + ec.message());
  }
  auto result = Fill(tmp, incident, now_ms, telemetry);
  if (!result) {
    fs::remove_all(tmp, ec);
    return result;
  }
  for (int n = 1;; ++n) {
    const fs::path final_path = root / (n == 1 ? name : name + "-" + std::to_string(n));
    if (fs::exists(final_path, ec)) continue;
    fs::rename(tmp, final_path, ec);
    if (ec) {
      const std::string why = ec.message();
      fs::remove_all(tmp, ec);
      return Error(StatusCode::kIoError,
                   "rename " + tmp.string() + " -> " + final_path.string() + ": " + why);
    }
    result->path = final_path;
    return result;
  }
}

}  // namespace gpucanary::actions
