#pragma once

// The process's own resources as /metrics families: the `process_*` families
// every Prometheus client library exports (names, types and units as
// client_golang's process collector: CPU seconds, resident and virtual
// memory, open and maximum descriptors, start time), read from /proc/self,
// and glibc's heap in use and held free (mallinfo2), which tells memory the
// program holds from memory the allocator keeps after a free.
//
// A value that cannot be read (no /proc, another libc) is left out: no
// data, never a zero.

#include <optional>
#include <string>
#include <string_view>

namespace gpucanary::daemon {

struct ProcessStats {
  std::optional<double> cpu_seconds;         // utime + stime
  std::optional<double> resident_bytes;      // RSS
  std::optional<double> virtual_bytes;       // vsize
  std::optional<double> start_time_seconds;  // Unix seconds
  std::optional<double> open_fds;
  std::optional<double> max_fds;           // soft RLIMIT_NOFILE
  std::optional<double> heap_inuse_bytes;  // mallinfo2: uordblks + hblkhd
  std::optional<double> heap_free_bytes;   // mallinfo2: fordblks (held, not returned)
};

// Parses the text of /proc/<pid>/stat (the fields after the parenthesised
// command name, which may itself hold spaces and parentheses). Fills
// cpu_seconds, virtual_bytes, resident_bytes and start_time_seconds given the
// clock ticks per second, the page size and the boot time (Unix seconds);
// leaves them empty when the text is not a stat line.
void ParseProcStat(std::string_view stat, double ticks_per_second, double page_size,
                   double boot_time_seconds, ProcessStats& out);

// Whether the heap figures and ReturnFreedHeap work in this build: glibc's
// allocator, not AddressSanitizer's.
bool HeapFiguresAvailable();

// Reads this process's figures now.
ProcessStats ReadProcessStats();

// Gives the pages of freed heap memory back to the system (glibc
// malloc_trim(0), every arena). glibc keeps what a thread freed in that
// thread's arena for the next allocation there; a transient peak on one of
// the HTTP threads stays resident for good otherwise (issue 22's soak: 55 MB
// per canary start, held in each handler thread's arena). No-op elsewhere.
void ReturnFreedHeap();

// Appends the families of `stats` to `out` (text format 0.0.4).
void AppendProcessMetrics(std::string& out, const ProcessStats& stats);

}  // namespace gpucanary::daemon
