#pragma once
// Reading whole expositions: a scrape body in memory, or a recorded telemetry
// file (docs/contracts.md §4) streamed from disk, plain or gzip, or standard input.
//
// Files are read in chunks cut at line breaks, so memory stays bounded by the
// chunk size (1 MiB) plus the series table, whatever the file size. Each entry
// goes through the Parser (grammar) and the Validator (cross-line rules).
//
// Error policy is the caller's: with skip_bad_lines=false reading stops at the
// first bad line and the report says where; with true, bad lines are skipped,
// counted, and the first few messages are kept. Either way every message reads
// "FILE:LINE:COLUMN: message".

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "expfmt/parser.h"
#include "expfmt/validator.h"

namespace gpucanary::expfmt {

// Called for every accepted sample, with the family it belongs to.
using SampleCallback =
    std::function<void(const SampleView& sample, std::string_view family, model::MetricType type)>;

struct ReadOptions {
  std::optional<Format> format;  // forced; otherwise detected (see DetectFormat)
  bool skip_bad_lines = false;
  std::size_t max_messages = 20;  // error messages kept in the report
  std::size_t chunk_bytes = 1 << 20;
  std::size_t max_line_bytes = 64u << 20;  // a longer line is an error, not an allocation
};

struct ReadReport {
  std::string name;  // file name as given ("-" shows as "<stdin>")
  Format format = Format::kPrometheusText;
  ExpositionStats stats;
  std::uint64_t lines = 0;
  std::uint64_t bytes = 0;            // uncompressed bytes read
  std::uint64_t bad_lines = 0;        // lines rejected (skipped when skip_bad_lines)
  bool stopped_early = false;         // reading stopped at the first error
  std::vector<std::string> messages;  // "FILE:LINE:COLUMN: message", first max_messages

  bool ok() const { return bad_lines == 0; }
};

// Drives Parser and Validator over an exposition fed as chunks of whole lines.
class ExpositionReader {
 public:
  ExpositionReader(Format format, std::string name, const ReadOptions& options,
                   SampleCallback callback);

  // Feeds bytes that end at a line break (or the final bytes when `last`).
  // Returns false once reading must stop (an error with skip_bad_lines=false).
  bool Feed(std::string_view lines, bool last);
  // Finishes (end-of-input rules such as OpenMetrics "# EOF") and returns the report.
  ReadReport Finish();

 private:
  void Report(std::uint64_t line, std::uint32_t column, const std::string& message);

  ReadOptions options_;
  Parser parser_;
  Validator validator_;
  SampleCallback callback_;
  ReadReport report_;
  std::uint64_t next_line_ = 1;
  bool stop_ = false;
};

// Parses an in-memory exposition (a scrape body).
ReadReport ReadBuffer(std::string_view text, Format format, std::string name,
                      const ReadOptions& options, const SampleCallback& callback = {});

// The format docs/contracts.md §4 prescribes: OpenMetrics when the input ends with
// "# EOF" (optionally followed by one line break) or the name ends in .om or
// .om.gz; Prometheus 0.0.4 otherwise.
Format DetectFormat(std::string_view name, std::string_view tail);

// Reads a file ("-" = standard input; ".gz" = gzip) and returns its report.
// Errors in the data are in the report; the Status is for I/O problems only
// (missing file, unreadable, corrupt gzip stream).
Result<ReadReport> ReadFile(const std::string& path, const ReadOptions& options,
                            const SampleCallback& callback = {});

}  // namespace gpucanary::expfmt
