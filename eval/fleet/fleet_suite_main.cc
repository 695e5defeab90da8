// fleet_suite: the fleet suite (eval/fleet/README.md) against `gpucanary
// correlate`. For each case: generate the fleet's recording, release log and
// labels into a temporary folder (or --out DIR/CASE, kept), run
// `GPUCANARY correlate --telemetry fleet.om --releases releases.jsonl
// --output json` as a subprocess, score its JSON against the labels, and
// print a markdown report on stdout; one progress line per case on stderr.
//
//   build/release/eval/fleet/fleet_suite [--seed N] [--jobs N] [--filter SUBSTR]
//       [--out DIR] [--gpucanary PATH] [--details]
//
// --gpucanary defaults to the build's own src/cli/gpucanary, so two builds
// of the CLI can be compared on the same cases.
//
// Exit status: 0 when the suite ran (whatever the scores), 3 on bad usage,
// a file that cannot be written or read, a correlate run that fails or
// prints something that is not its JSON.

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "eval/fleet/fleet_case.h"
#include "eval/fleet/fleet_generator.h"
#include "eval/fleet/fleet_score.h"

#ifndef GC_FLEET_GPUCANARY
#define GC_FLEET_GPUCANARY "gpucanary"
#endif

extern char** environ;

namespace {

namespace fleet = gpucanary::eval::fleet;
namespace fs = std::filesystem;

int Usage(const std::string& why) {
  std::fprintf(stderr,
               "fleet_suite: %s\nusage: fleet_suite [--seed N] [--jobs N] [--filter SUBSTR] "
               "[--out DIR] [--gpucanary PATH] [--details]\n",
               why.c_str());
  return 3;
}

struct Outcome {
  bool ran = false;
  std::string error;
  fleet::CaseScore score;
  double generate_s = 0;
  std::uint64_t bytes = 0;
};

// Runs `argv` with stdout and stderr to files; returns its exit status or -1.
int Spawn(const std::vector<std::string>& args, const std::string& out, const std::string& err) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool ReadFile(const std::string& path, std::string& text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream s;
  s << in.rdbuf();
  text = s.str();
  return true;
}

Outcome RunCase(const fleet::FleetCase& c, const std::string& dir, const std::string& gpucanary) {
  Outcome o;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    o.error = "cannot create " + dir + ": " + ec.message();
    return o;
  }
  const auto t0 = std::chrono::steady_clock::now();
  gpucanary::Result<fleet::FleetFiles> files = fleet::GenerateFleetCase(c, dir);
  const auto t1 = std::chrono::steady_clock::now();
  o.generate_s = std::chrono::duration<double>(t1 - t0).count();
  if (!files) {
    o.error = "generate: " + files.error().message();
    return o;
  }
  o.bytes = files->bytes;
  const std::string out = dir + "/correlate.json", err = dir + "/correlate.stderr";
  const int rc = Spawn({gpucanary, "correlate", "--telemetry", files->telemetry, "--releases",
                        files->releases, "--output", "json"},
                       out, err);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  std::string text, err_text;
  ReadFile(err, err_text);
  if (rc != 0) {
    o.error = "correlate exited " + std::to_string(rc) + ": " + err_text.substr(0, 300);
    return o;
  }
  if (!ReadFile(out, text)) {
    o.error = "cannot read " + out;
    return o;
  }
  gpucanary::Result<std::vector<fleet::Report>> reports = fleet::ParseCorrelateJson(text);
  if (!reports) {
    o.error = reports.error().message() + " (" + out + ")";
    return o;
  }
  o.score = fleet::ScoreCase(files->events, *reports, static_cast<double>(files->start_unix_s));
  o.score.correlate_s = wall;
  o.ran = true;
  return o;
}

std::string Ratio(int a, int b) { return std::to_string(a) + "/" + std::to_string(b); }

void PrintReport(const std::vector<fleet::FleetCase>& cases, const std::vector<Outcome>& outcomes,
                 std::uint64_t seed, bool details) {
  std::printf("# fleet suite, seed %llu\n\n", static_cast<unsigned long long>(seed));
  std::printf(
      "| case | class | events | reports | matched | noise | dup | found | top-1 | top-3 | false "
      "blames | kinds ok | correlate s |\n");
  std::printf(
      "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
      "|\n");
  fleet::CaseScore total;
  int ran = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Outcome& o = outcomes[i];
    const std::string cls(fleet::ClassName(cases[i].cls));
    if (!o.ran) {
      std::printf("| %s | %s | error: %s |\n", cases[i].name.c_str(), cls.c_str(), o.error.c_str());
      continue;
    }
    ++ran;
    const fleet::CaseScore& s = o.score;
    total.Add(s);
    std::printf("| %s | %s | %d | %d | %d | %d | %d | %s | %s | %s | %d | %s | %.1f |\n",
                cases[i].name.c_str(), cls.c_str(), s.events, s.reports, s.matched, s.noise, s.dup,
                Ratio(s.found, s.events).c_str(), Ratio(s.top1, s.release_found).c_str(),
                Ratio(s.top3, s.release_found).c_str(), s.false_blames,
                Ratio(s.kinds_ok, s.kinds_checked).c_str(), s.correlate_s);
  }
  std::printf("\n## Totals (%d cases)\n\n", ran);
  std::printf("| measure | value |\n| --- | ---: |\n");
  std::printf("| true events (must report) | %d |\n", total.events);
  std::printf("| reports | %d |\n", total.reports);
  std::printf("| reports per true event | %.2f |\n",
              total.events > 0 ? static_cast<double>(total.reports) / total.events : 0.0);
  std::printf("| matched reports | %d |\n", total.matched);
  std::printf("| noise reports (unmatched or on a no-report event) | %d |\n", total.noise);
  std::printf("| duplicate reports | %d |\n", total.dup);
  std::printf("| events found | %d / %d |\n", total.found, total.events);
  std::printf("| release events found | %d / %d |\n", total.release_found, total.release_events);
  std::printf("| guilty release top-1 (of found) | %d / %d |\n", total.top1, total.release_found);
  std::printf("| guilty release in top 3 (of found) | %d / %d |\n", total.top3,
              total.release_found);
  std::printf("| false blames | %d |\n", total.false_blames);
  std::printf("| cause kind right (of found) | %d / %d |\n", total.kinds_ok, total.kinds_checked);
  std::printf("| correlate wall time, all cases | %.1f s |\n", total.correlate_s);
  std::map<std::string, int> by_metric;
  for (const std::string& m : total.noise_metrics) ++by_metric[m];
  if (!by_metric.empty()) {
    std::printf("\nNoise reports by metric:\n\n| metric | noise reports |\n| --- | ---: |\n");
    std::vector<std::pair<int, std::string>> sorted;
    sorted.reserve(by_metric.size());
    for (const auto& [m, n] : by_metric) sorted.push_back({-n, m});
    std::sort(sorted.begin(), sorted.end());
    for (const auto& [n, m] : sorted) std::printf("| %s | %d |\n", m.c_str(), -n);
  }
  if (!details) return;
  std::printf("\n## Details\n");
  for (std::size_t i = 0; i < cases.size(); ++i) {
    std::printf("\n### %s\n\n%s\n\n", cases[i].name.c_str(), cases[i].description.c_str());
    for (const std::string& l : outcomes[i].score.lines) std::printf("- %s\n", l.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t seed = 1;
  int jobs = 1;
  bool details = false;
  std::string out_dir, filter, gpucanary = GC_FLEET_GPUCANARY;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    char* end = nullptr;
    if (arg == "--seed" && (v = value())) {
      seed = std::strtoull(v, &end, 10);
      if (*v == '\0' || *end != '\0')
        return Usage("--seed wants a number, got '" + std::string(v) + "'");
    } else if (arg == "--jobs" && (v = value())) {
      const std::int64_t j = std::strtoll(v, &end, 10);
      if (*v == '\0' || *end != '\0' || j < 1 || j > 64) {
        return Usage("--jobs wants 1..64, got '" + std::string(v) + "'");
      }
      jobs = static_cast<int>(j);
    } else if (arg == "--out" && (v = value())) {
      out_dir = v;
    } else if (arg == "--filter" && (v = value())) {
      filter = v;
    } else if (arg == "--gpucanary" && (v = value())) {
      gpucanary = v;
    } else if (arg == "--details") {
      details = true;
    } else {
      return Usage("unknown or incomplete argument '" + arg + "'");
    }
  }
  if (access(gpucanary.c_str(), X_OK) != 0) {
    return Usage("cannot run '" + gpucanary + "' (give --gpucanary PATH)");
  }
  std::vector<fleet::FleetCase> cases;
  for (fleet::FleetCase& c : fleet::MakeFleetSuite(seed)) {
    if (filter.empty() || c.name.find(filter) != std::string::npos) cases.push_back(std::move(c));
  }
  if (cases.empty()) return Usage("no case matches '" + filter + "'");
  std::string tmp_root;
  if (out_dir.empty()) {
    std::string tmpl = (fs::temp_directory_path() / "fleet_suite_XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) return Usage("cannot create a temporary folder");
    tmp_root = tmpl;
  } else {
    std::error_code ec;
    fs::create_directories(out_dir, ec);
    if (ec || access(out_dir.c_str(), W_OK) != 0) return Usage("cannot write to '" + out_dir + "'");
  }
  std::vector<Outcome> outcomes(cases.size());
  std::atomic<std::size_t> next{0};
  std::mutex log_mu;
  const auto started = std::chrono::steady_clock::now();
  auto worker = [&] {
    for (std::size_t i = next++; i < cases.size(); i = next++) {
      const std::string dir =
          (fs::path(out_dir.empty() ? tmp_root : out_dir) / cases[i].name).string();
      outcomes[i] = RunCase(cases[i], dir, gpucanary);
      if (out_dir.empty()) {
        std::error_code ec;
        fs::remove_all(dir, ec);
      }
      std::lock_guard<std::mutex> lock(log_mu);
      const Outcome& o = outcomes[i];
      std::fprintf(stderr,
                   "%-22s %s gen %.1f s, %.0f MB, correlate %.1f s: %d reports, %d/%d found%s%s\n",
                   cases[i].name.c_str(), o.ran ? "ok" : "FAILED", o.generate_s,
                   static_cast<double>(o.bytes) / 1e6, o.score.correlate_s, o.score.reports,
                   o.score.found, o.score.events, o.error.empty() ? "" : ": ", o.error.c_str());
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(jobs));
  for (int j = 0; j < jobs; ++j) threads.emplace_back(worker);
  for (std::thread& t : threads) t.join();
  if (!tmp_root.empty()) {
    std::error_code ec;
    fs::remove_all(tmp_root, ec);
  }
  PrintReport(cases, outcomes, seed, details);
  std::fprintf(stderr, "fleet_suite: %zu cases in %.0f s\n", cases.size(),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  for (const Outcome& o : outcomes) {
    if (!o.ran) {
      std::fprintf(stderr, "fleet_suite: %s\n", o.error.c_str());
      return 3;
    }
  }
  return 0;
}
