#pragma once
// A pull parser for Prometheus text 0.0.4 and OpenMetrics 1.0 expositions.
//
// It is zero-copy: names, label names and unescaped label values are views into
// the input; only values that contain escapes are copied, into scratch space
// that is reused from sample to sample. It checks the grammar of each line
// (one line at a time); rules that span lines (metric families, grouping,
// histogram consistency) are the Validator's job (expfmt/validator.h).
//
// Errors do not stop the parser: after Entry::kError the next Next() call goes
// on with the following line, so the caller decides whether to skip or stop.
//
// Thread-compatible: one parser per thread.

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "expfmt/types.h"

namespace gpucanary::expfmt {

enum class Entry : std::uint8_t {
  kSample,    // sample() is valid
  kMetadata,  // metadata() is valid (HELP, TYPE or UNIT)
  kComment,   // a 0.0.4 comment line; nothing to read
  kEof,       // OpenMetrics "# EOF"
  kEnd,       // no more input in this buffer
  kError,     // error() is valid; the offending line was skipped
};

class Parser {
 public:
  // REQUIRES: `text` stays alive and unchanged while entries are read.
  // `first_line` is the line number of text[0] (streaming readers feed chunks
  // that end at a line break).
  Parser(std::string_view text, Format format, std::uint64_t first_line = 1);

  // Replaces the buffer, keeping scratch space and the "# EOF seen" state.
  void Reset(std::string_view text, std::uint64_t first_line);

  Entry Next();

  const SampleView& sample() const { return sample_; }
  const MetadataView& metadata() const { return metadata_; }
  const ParseError& error() const { return error_; }

  // The 1-based line number of the entry Next() returned last.
  std::uint64_t line() const { return line_no_; }
  // The raw bytes of that line, without its line break.
  std::string_view line_text() const { return std::string_view(line_begin_, line_len_); }
  // The line number the next buffer passed to Reset() should start with.
  std::uint64_t next_line() const { return next_line_no_; }
  bool eof_seen() const { return eof_seen_; }
  Format format() const { return format_; }

 private:
  Entry ParseLine(const char* p, const char* e);
  Entry ParseSample(const char* p, const char* e);
  Entry ParseComment(const char* p, const char* e);
  Entry ParseOpenMetricsComment(const char* p, const char* e);
  Entry ParsePrometheusComment(const char* p, const char* e);
  // Parses "{...}" at p into `labels`; returns the position after '}' or null on error.
  const char* ParseLabels(const char* p, const char* e, std::vector<model::LabelView>& labels,
                          std::deque<std::string>& scratch);
  const char* ParseLabelValue(const char* p, const char* e, std::string_view& value,
                              std::string& scratch);
  Entry ParseExemplar(const char* p, const char* e);
  Entry Fail(const char* at, std::string message);
  Entry FailCarriageReturn(const char* at);
  Entry FailToken(const char* v, const char* p, const char* what, const char* expected);
  // A sample ends at `line_end` ('\n' or the end of the buffer).
  Entry Sample(const char* line_end) {
    line_end_ = line_end;
    return Entry::kSample;
  }
  // Decodes escapes of `raw` into `out` and returns a view of it.
  static std::string_view Unescape(std::string_view raw, std::string& out, bool quote_escape);

  Format format_;
  const char* pos_ = nullptr;
  const char* end_ = nullptr;
  const char* line_begin_ = nullptr;
  const char* line_end_ = nullptr;  // set once the current line's end is known
  std::size_t line_len_ = 0;
  std::uint64_t line_no_ = 0;
  std::uint64_t next_line_no_ = 1;
  bool eof_seen_ = false;

  SampleView sample_;
  MetadataView metadata_;
  ParseError error_;
  // Decoded copies of escaped text, reused from line to line: one buffer per
  // label position; a deque never moves its elements, so views into earlier
  // labels of a sample stay valid while later ones are added.
  std::deque<std::string> label_scratch_;
  std::deque<std::string> exemplar_scratch_;
  std::string help_scratch_;
};

// Number parsing, exposed for the validator and tests.
// ParseValue: a sample value ("1.5", "-Inf", "NaN", ...) under `format`'s grammar.
bool ParseValue(std::string_view token, Format format, double& out);
// ParseTimestamp: 0.0.4 int64 milliseconds, or OpenMetrics float seconds
// converted to milliseconds. Sets `clamped` when the OM value exceeds int64 ms.
bool ParseTimestamp(std::string_view token, Format format, std::int64_t& out_ms, bool& clamped);

}  // namespace gpucanary::expfmt
