#include "daemon/process_metrics.h"

#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <charconv>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "daemon/api_format.h"
#include "model/family_writer.h"
#include "model/metric_type.h"

// Under AddressSanitizer the heap is ASan's, which mallinfo2 does not see.
#if defined(__SANITIZE_ADDRESS__)
#define GPUCANARY_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GPUCANARY_ASAN 1
#endif
#endif
#if defined(__GLIBC__) && !defined(GPUCANARY_ASAN) && \
    (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
#define GPUCANARY_HEAP_FIGURES 1
#endif

namespace gpucanary::daemon {
namespace {

std::optional<std::string> ReadAll(const char* path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::optional<double> Number(std::string_view field) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
  if (ec != std::errc() || end != field.data() + field.size()) return std::nullopt;
  return static_cast<double>(v);
}

// "btime" of /proc/stat: boot time in Unix seconds.
std::optional<double> BootTime() {
  const std::optional<std::string> text = ReadAll("/proc/stat");
  if (!text) return std::nullopt;
  std::istringstream lines(*text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("btime ", 0) == 0) return Number(std::string_view(line).substr(6));
  }
  return std::nullopt;
}

std::optional<double> OpenFds() {
  std::error_code ec;
  std::filesystem::directory_iterator it("/proc/self/fd", ec);
  if (ec) return std::nullopt;
  double n = 0;
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
    if (ec) return std::nullopt;
    ++n;
  }
  return n - 1;  // the descriptor of the listing itself
}

void Gauge(model::FamilyWriter& w, std::string_view name, model::MetricType type,
           std::string_view help, const std::optional<double>& v) {
  if (!v) return;
  w.Family(name, type, help);
  std::string text;
  AppendPromValue(text, *v);
  w.Sample({}, text);
}

}  // namespace

void ParseProcStat(std::string_view stat, double ticks_per_second, double page_size,
                   double boot_time_seconds, ProcessStats& out) {
  // pid (comm) state ppid ... : field 3 (state) is the first after ") ".
  const std::size_t close = stat.rfind(')');
  if (close == std::string_view::npos || close + 2 > stat.size()) return;
  std::vector<std::string_view> fields;  // fields[0] is field 3 (state)
  std::string_view rest = stat.substr(close + 2);
  while (!rest.empty()) {
    const std::size_t space = rest.find_first_of(" \n");
    fields.push_back(rest.substr(0, space));
    if (space == std::string_view::npos) break;
    rest.remove_prefix(space + 1);
    while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\n')) rest.remove_prefix(1);
  }
  // proc(5), 1-based: utime 14, stime 15, starttime 22, vsize 23, rss 24.
  auto field = [&](std::size_t n) -> std::optional<double> {
    if (n - 3 >= fields.size()) return std::nullopt;
    return Number(fields[n - 3]);
  };
  const std::optional<double> utime = field(14), stime = field(15), start = field(22),
                              vsize = field(23), rss = field(24);
  if (!utime || !stime || !start || !vsize || !rss || ticks_per_second <= 0) return;
  out.cpu_seconds = (*utime + *stime) / ticks_per_second;
  out.start_time_seconds = boot_time_seconds + *start / ticks_per_second;
  out.virtual_bytes = *vsize;
  out.resident_bytes = *rss * page_size;
}

ProcessStats ReadProcessStats() {
  ProcessStats s;
  const std::optional<std::string> stat = ReadAll("/proc/self/stat");
  const std::optional<double> boot = BootTime();
  if (stat && boot) {
    ParseProcStat(*stat, static_cast<double>(sysconf(_SC_CLK_TCK)),
                  static_cast<double>(sysconf(_SC_PAGESIZE)), *boot, s);
  }
  s.open_fds = OpenFds();
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    s.max_fds = static_cast<double>(limit.rlim_cur);
  }
#ifdef GPUCANARY_HEAP_FIGURES
  const struct mallinfo2 m = mallinfo2();
  s.heap_inuse_bytes = static_cast<double>(m.uordblks + m.hblkhd);
  s.heap_free_bytes = static_cast<double>(m.fordblks);
#endif
  return s;
}

void ReturnFreedHeap() {
#ifdef GPUCANARY_HEAP_FIGURES
  malloc_trim(0);
#endif
}

bool HeapFiguresAvailable() {
#ifdef GPUCANARY_HEAP_FIGURES
  return true;
#else
  return false;
#endif
}

void AppendProcessMetrics(std::string& out, const ProcessStats& s) {
  model::FamilyWriter w(out);
  using model::MetricType;
  Gauge(w, "process_cpu_seconds_total", MetricType::kCounter,
        "Total user and system CPU time spent in seconds.", s.cpu_seconds);
  Gauge(w, "process_resident_memory_bytes", MetricType::kGauge, "Resident memory size in bytes.",
        s.resident_bytes);
  Gauge(w, "process_virtual_memory_bytes", MetricType::kGauge, "Virtual memory size in bytes.",
        s.virtual_bytes);
  Gauge(w, "process_start_time_seconds", MetricType::kGauge,
        "Start time of the process since unix epoch in seconds.", s.start_time_seconds);
  Gauge(w, "process_open_fds", MetricType::kGauge, "Number of open file descriptors.", s.open_fds);
  Gauge(w, "process_max_fds", MetricType::kGauge, "Maximum number of open file descriptors.",
        s.max_fds);
  Gauge(w, "gpucanary_heap_inuse_bytes", MetricType::kGauge,
        "Heap bytes the program holds (glibc mallinfo2: uordblks + hblkhd).", s.heap_inuse_bytes);
  Gauge(w, "gpucanary_heap_free_bytes", MetricType::kGauge,
        "Heap bytes freed by the program that the allocator still holds (glibc mallinfo2: "
        "fordblks); resident only where touched.",
        s.heap_free_bytes);
}

}  // namespace gpucanary::daemon
