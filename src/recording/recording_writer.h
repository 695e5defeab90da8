#pragma once
// RecordingWriter writes gpucanary's recorded telemetry files (docs/contracts.md §4):
// OpenMetrics 1.0 text in which every sample carries a timestamp, gzip-compressed
// when the path ends in ".gz", terminated by "# EOF\n".
//
// Layout ("time-blocked"): samples are written in the order they are appended,
// so a caller that appends every series of one tick before the next tick gets
// blocks of one timestamp each. A family's metadata is written once, right
// before its first sample:
//
//   # HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).
//   # TYPE DCGM_FI_DEV_GPU_TEMP gauge
//   DCGM_FI_DEV_GPU_TEMP{gpu="0",modelName="NVIDIA H100 80GB HBM3"} 34 1775016266.006
//   DCGM_FI_DEV_GPU_TEMP{gpu="1",modelName="NVIDIA H100 80GB HBM3"} 31 1775016266.006
//   DCGM_FI_DEV_GPU_TEMP{gpu="0",modelName="NVIDIA H100 80GB HBM3"} 35 1775016266.106
//   ...
//   # EOF
//
// Later samples of a family appear without metadata. OpenMetrics 1.0 asks that
// families not be interleaved; this layout deliberately interleaves them so a
// recording can be streamed and replayed in time order (promtool's backfill and
// gpucanary's own reader accept it). Within one series, timestamps never
// decrease: the writer refuses an append that would go back in time.
//
// Metric kinds and the OpenMetrics counter rule. OpenMetrics requires every
// sample of a counter family `x` to be named `x_total`. Hence:
//   kGauge                         -> "# TYPE <name> gauge", samples <name>
//   kCounter, name ends in "_total" -> family <name minus _total>, "# TYPE <family> counter",
//                                     samples <name>; values must be >= 0 and not NaN
//   kCounter, any other name       -> "# TYPE <name> unknown", samples <name>, so DCGM
//                                     counters such as DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION
//                                     keep their exact dcgm-exporter name
//   kUnknown                       -> "# TYPE <name> unknown"
//   kHistogram                     -> "# TYPE <name> histogram", samples <name>_bucket
//                                     (with an `le` label), <name>_count and <name>_sum;
//                                     _bucket and _count values must be >= 0 and not NaN.
//                                     The caller appends a histogram's lines of one
//                                     timestamp together, buckets in increasing `le`.
//
// Sample line: name{label="value",...} VALUE TIMESTAMP, labels in the order given,
// label values escaped (\\ \" \n), labels with an empty value omitted (Prometheus
// treats an empty label as absent), no braces when no label remains. VALUE is the
// shortest round-trip decimal, NaN, +Inf or -Inf; TIMESTAMP is seconds with three
// decimals. See openmetrics_text.h.
//
// Thread safety: none; one writer belongs to one thread.

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/status.h"
#include "core/string_map.h"
#include "model/label_view.h"
#include "model/metric_type.h"

namespace gpucanary::recording {

class RecordingWriter {
 public:
  // Opens `path` for writing, truncating it. "-" writes to standard output
  // (uncompressed); a path ending in ".gz" is gzip-compressed.
  // Returns kIoError when the file cannot be created.
  static Result<std::unique_ptr<RecordingWriter>> Open(const std::string& path);

  // Without a successful Close(), the destructor flushes what was appended and
  // closes the file WITHOUT "# EOF", so an abandoned recording reads as truncated.
  ~RecordingWriter();

  RecordingWriter(const RecordingWriter&) = delete;
  RecordingWriter& operator=(const RecordingWriter&) = delete;

  // Declares the metric `name` (the sample name) with its kind and help text
  // (empty help: no "# HELP" line). Nothing is written until its first sample.
  // Declaring the same name again with the same kind and help is a no-op.
  // Recordings hold gauges, counters, unknowns and histograms only.
  // Returns kInvalidArgument for an invalid metric name, help text that is not
  // UTF-8, any other type, a conflicting redeclaration, or a family name already used by
  // another metric (a gauge "x" and a counter "x_total" both need family "x").
  Status DeclareFamily(std::string_view name, model::MetricType kind, std::string_view help);

  // Appends one sample of a declared metric. The label views need to stay
  // valid for the duration of the call only.
  // Returns kInvalidArgument (and writes nothing) when the metric was not
  // declared, a label name is invalid or repeated, a label value is not UTF-8,
  // a counter value is negative or NaN, or `timestamp_ms` is older than the last
  // timestamp of the same series. Returns kIoError when the output fails; the
  // writer is then unusable and every later call returns that error.
  // Cost: when `labels` equal the previous call's (the usual pattern: every
  // metric of one GPU at one tick), they are not checked or rendered again.
  Status Append(std::string_view name, std::span<const model::LabelView> labels, double value,
                std::int64_t timestamp_ms);

  // Writes "# EOF\n", flushes and closes. Returns kIoError when any write,
  // flush or close failed (e.g. the disk is full). Calling it twice is an error.
  Status Close();

  std::uint64_t samples_written() const { return samples_written_; }
  // Number of distinct series seen so far.
  std::uint64_t series_count() const { return last_timestamp_.size(); }
  const std::string& path() const { return path_; }

 private:
  enum class SinkKind : std::uint8_t { kFile, kStdout, kGzip };

  // Sample names of histogram families ("x_bucket", "x_count", "x_sum") -> "x".
  StringMap<std::string> histogram_samples_;

  struct Family {
    std::string family_name;         // the name on # HELP / # TYPE
    model::MetricType kind;          // as declared
    model::MetricType exposed_kind;  // as written on # TYPE (see the counter rule above)
    std::string help;
    std::uint32_t index;  // declaration order, part of the series key
    bool metadata_written = false;
  };

  RecordingWriter(std::string path, SinkKind sink, std::FILE* file, void* gz);

  Status CheckUsable() const;
  Status ValidateLabels(std::span<const model::LabelView> labels) const;
  // Makes `labels` the current label set (label_text_, label_set_id_), checking
  // and rendering it unless it equals the previous call's.
  Status UseLabels(std::span<const model::LabelView> labels);
  void AppendMetadata(Family& family);
  Status FlushBuffer();
  Status Fail(Status status);

  std::string path_;
  SinkKind sink_;
  std::FILE* file_ = nullptr;  // kFile and kStdout
  void* gz_ = nullptr;         // kGzip: a gzFile, kept opaque to keep zlib.h out of this header
  StringMap<Family> families_;
  std::unordered_set<std::string> family_names_;
  StringMap<std::uint64_t> label_set_ids_;  // rendered label text -> label-set id
  std::unordered_map<std::uint64_t, std::int64_t> last_timestamp_;  // series key -> last ms
  // The current label set: a copy of the caller's labels, its rendering
  // ({a="1",b="2"} or empty) and its id.
  std::vector<std::pair<std::string, std::string>> last_labels_;
  bool has_last_labels_ = false;
  std::string label_text_;
  std::uint64_t label_set_id_ = 0;
  std::string timestamp_text_;  // rendering of timestamp_text_ms_
  std::int64_t timestamp_text_ms_ = 0;
  std::string buffer_;  // pending output
  std::uint64_t samples_written_ = 0;
  Status error_;  // sticky I/O error
  bool closed_ = false;
};

}  // namespace gpucanary::recording
