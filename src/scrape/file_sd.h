#pragma once
// File-based service discovery, Prometheus's file_sd format
// (prometheus.io/docs/guides/file-sd/): a JSON or YAML file holding a list of
// target groups,
//
//   [ { "targets": ["10.0.0.1:9400", ...], "labels": { "site": "a", ... } }, ... ]
//
// read from every file matching the configured globs. Files are re-read when
// their modification time or size changes (polled, not inotify: works on
// every filesystem and in containers with mounted config maps). A file that
// fails to parse keeps its last good groups and reports its error as
// FILE:LINE:COL; a file that disappears takes its groups with it.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "scrape/config.h"
#include "scrape/target.h"

namespace gpucanary::scrape {

// Parses one target file; `file_name` picks the format (.json: JSON, else
// YAML) and names it in errors ("targets.json:3:14: [0].targets[1]: ...").
// Each group's `source` is "FILE:LINE:COL" of the group. Errors: kParseError.
Result<std::vector<TargetGroup>> ParseTargetFile(std::string_view text,
                                                 const std::string& file_name);

// The files matching `patterns` now (glob(3)), sorted and deduplicated; a
// pattern matching nothing contributes nothing.
std::vector<std::string> ExpandFilePatterns(const std::vector<std::string>& patterns);

// One file_sd_configs entry. Thread-compatible.
class FileSd {
 public:
  explicit FileSd(FileSdConfig config) : config_(std::move(config)) {}

  // Expands the globs again and re-reads the files that are new or changed
  // (every file when `force`). Returns whether the groups changed. Errors of
  // unreadable or bad files are appended to `errors`; those files keep their
  // last good groups.
  bool Refresh(bool force, std::vector<Status>* errors);

  // The groups of every file, in file name order, each labelled
  // __meta_filepath with its file's path, as Prometheus's file SD does.
  std::vector<TargetGroup> Groups() const;

  // The errors of the files whose last read failed (they serve older groups).
  std::vector<Status> CurrentErrors() const;

  const FileSdConfig& config() const { return config_; }

 private:
  struct FileState {
    std::int64_t mtime_ns = -1;
    std::int64_t size = -1;
    std::vector<TargetGroup> groups;  // the last good ones
    Status error;                     // of the last read; ok when it was good
  };

  FileSdConfig config_;
  std::map<std::string, FileState> files_;
};

}  // namespace gpucanary::scrape
