// gpucanary changepoints --input FILE [--column NAME | --series SELECTOR]
//   [--method pelt|otava|online] [--output json|text]: where one series' level
// changes for good (docs/cli.md, src/analysis/cpd/cpd.h).
//
// The series comes from a CSV with a header, or, with --series, from a
// recorded telemetry file: the one series the selector matches, put on its
// scrape grid, a counter turned into its per-second rate. Prints
// {"change_points": [i, ...]}: 0-based indices of the first sample of each
// new segment (of the CSV's data rows, or of the grid's slots).
//
// Exit status: 0, or 3 for bad input or usage (a message on stderr, nothing
// on stdout), with FILE:LINE:COLUMN where the input is at fault.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/cpd/cpd.h"
#include "analysis/cpd/otava.h"
#include "cli/command.h"
#include "core/status.h"
#include "core/time_format.h"
#include "dcgm/fields.h"
#include "expfmt/reader.h"
#include "importers/csv_line.h"
#include "model/labels.h"
#include "model/matcher.h"

namespace gpucanary::cli {
namespace {

namespace cpd = analysis::cpd;

constexpr double kMissing = std::numeric_limits<double>::quiet_NaN();

struct ChangepointsArgs {
  std::string input;
  std::string series;  // a selector: the input is recorded telemetry
  std::string column = "value";
  std::string method = "pelt";
  std::string output = "json";
  cpd::OtavaOptions otava;
  bool column_given = false;
  bool otava_flags_given = false;
};

// One series on its index grid. `times[i]` says when sample i was taken, as
// the input wrote it; empty when the input has no times.
struct Series {
  std::vector<double> values;  // NaN = missing
  std::vector<std::string> times;
};

// ---- CSV ----------------------------------------------------------------

// One line's cells (importers/csv_line.h), with malformed quoting forgiven as
// this command always has. Views into `line` and `scratch`.
std::vector<importers::CsvCell> SplitCells(std::string_view line, std::string& scratch) {
  std::vector<importers::CsvCell> cells;
  // Lenient splitting has no error to return.
  (void)importers::SplitCsvLine(line, &cells, &scratch, {.lenient_quotes = true});
  return cells;
}

// The 1-based byte column where a cell's text starts.
std::size_t Column(const importers::CsvCell& cell) { return cell.offset + 1; }

// A whole field as a finite or non-finite double ("+1.5", "1e3", "NaN").
std::optional<double> ParseNumber(std::string_view text) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  double value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty()) return std::nullopt;
  return value;
}

// A time cell: a number (any unit; Unix seconds usually) or RFC 3339, as
// seconds for the order check.
std::optional<double> ParseTime(std::string_view text) {
  if (const std::optional<double> number = ParseNumber(text)) {
    if (std::isfinite(*number)) return number;
    return std::nullopt;
  }
  if (const std::optional<std::int64_t> ms = ParseRfc3339Millis(text)) {
    return static_cast<double>(*ms) / 1000.0;
  }
  return std::nullopt;
}

tl::unexpected<Status> CsvError(const std::string& file, std::size_t line, std::size_t column,
                                const std::string& message) {
  return Error(StatusCode::kParseError,
               file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + message);
}

// Where the value and time columns are.
struct CsvLayout {
  std::size_t fields = 0;
  std::size_t value = 0;
  std::optional<std::size_t> time;
};

Result<CsvLayout> ReadHeader(const std::string& name, std::string_view line,
                             const ChangepointsArgs& args) {
  if (!line.empty() && line.front() == '#') {
    return CsvError(name, 1, 1,
                    "this looks like recorded telemetry, not CSV: pass --series SELECTOR");
  }
  std::string scratch;
  const std::vector<importers::CsvCell> header = SplitCells(line, scratch);
  CsvLayout layout;
  layout.fields = header.size();
  std::optional<std::size_t> value;
  std::string names;
  for (std::size_t i = 0; i < header.size(); ++i) {
    if (header[i].text == args.column) value = i;
    if (header[i].text == "time") layout.time = i;
    names += (i == 0 ? "'" : ", '") + std::string(header[i].text) + "'";
  }
  // A lone column is the series whatever its name, unless --column says otherwise.
  if (!value && header.size() == 1 && !args.column_given) value = 0;
  if (!value) {
    return CsvError(name, 1, 1,
                    "no column '" + args.column + "' in the header (columns: " + names +
                        "); choose one with --column NAME");
  }
  layout.value = *value;
  if (layout.time == layout.value) layout.time.reset();
  return layout;
}

// Reads one data row into `series`; `last_time` carries the order check.
Status ReadRow(const std::string& name, std::size_t line_number, std::string_view line,
               const CsvLayout& layout, const std::string& column, Series& series,
               std::optional<double>& last_time) {
  std::string scratch;
  const std::vector<importers::CsvCell> fields = SplitCells(line, scratch);
  if (fields.size() != layout.fields) {
    return CsvError(name, line_number, line.size() + 1,
                    "expected " + std::to_string(layout.fields) +
                        " fields as in the header, found " + std::to_string(fields.size()));
  }
  const importers::CsvCell& value = fields[layout.value];
  if (value.text.empty()) {
    series.values.push_back(kMissing);  // a gap, not a zero
  } else if (const std::optional<double> v = ParseNumber(value.text)) {
    series.values.push_back(*v);
  } else {
    return CsvError(name, line_number, Column(value),
                    "bad number '" + std::string(value.text) + "' in column '" + column + "'");
  }
  if (!layout.time) return Status::Ok();
  const importers::CsvCell& time = fields[*layout.time];
  const std::optional<double> t = ParseTime(time.text);
  if (!t) {
    return CsvError(
        name, line_number, Column(time),
        "bad time '" + std::string(time.text) + "': expected a number or an RFC 3339 time");
  }
  if (last_time && *t <= *last_time) {
    return CsvError(name, line_number, Column(time),
                    "time '" + std::string(time.text) +
                        "' is not after the previous row's: times must increase");
  }
  last_time = t;
  series.times.emplace_back(time.text);
  return Status::Ok();
}

Result<Series> ReadCsvStream(std::istream& in, const std::string& name,
                             const ChangepointsArgs& args) {
  std::string line;
  if (!std::getline(in, line)) return CsvError(name, 1, 1, "empty input: expected a header line");
  if (line.starts_with("\xEF\xBB\xBF")) line.erase(0, 3);  // a UTF-8 byte order mark
  if (!line.empty() && line.back() == '\r') line.pop_back();
  Result<CsvLayout> layout = ReadHeader(name, line, args);
  if (!layout) return tl::unexpected(layout.error());
  Series series;
  std::optional<double> last_time;
  for (std::size_t number = 2; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;  // a blank line
    const Status row = ReadRow(name, number, line, *layout, args.column, series, last_time);
    if (!row.ok()) return tl::unexpected(row);
  }
  if (in.bad()) return Error(StatusCode::kIoError, name + ": read error");
  return series;
}

Result<Series> ReadCsv(const ChangepointsArgs& args) {
  if (args.input == "-") return ReadCsvStream(std::cin, "<stdin>", args);
  std::ifstream in(args.input, std::ios::binary);
  if (!in) {
    return Error(StatusCode::kIoError, "cannot open " + args.input + ": " + ErrnoMessage(errno));
  }
  return ReadCsvStream(in, args.input, args);
}

// ---- Recorded telemetry -----------------------------------------------------

struct TelemetrySeries {
  bool counter = false;
  bool dcgm = false;
  bool untimestamped = false;
  std::vector<std::pair<std::int64_t, double>> samples;  // (ms, value) in file order
};

bool Matches(const std::vector<model::Matcher>& matchers, const expfmt::SampleView& sample) {
  for (const model::Matcher& m : matchers) {
    const std::string_view value = m.name() == model::kMetricNameLabel
                                       ? sample.name
                                       : sample.Label(m.name()).value_or(std::string_view());
    if (!m.Matches(value)) return false;
  }
  return true;
}

std::string SeriesId(const expfmt::SampleView& sample) {
  model::Labels labels{{std::string(model::kMetricNameLabel), std::string(sample.name)}};
  for (const model::LabelView& l : sample.labels) {
    labels.push_back({std::string(l.name), std::string(l.value)});
  }
  model::SortLabels(labels);
  return model::LabelsToString(labels);
}

// Counters are cumulative: an OpenMetrics or Prometheus counter family, a
// histogram's buckets, count and sum, a name ending in _total, or a DCGM
// field the catalog calls a counter (DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION is
// exposed as "unknown").
bool IsCounter(const expfmt::SampleView& sample, model::MetricType type,
               const dcgm::FieldInfo* field) {
  if (type == model::MetricType::kCounter || type == model::MetricType::kHistogram) return true;
  if (sample.name.ends_with("_total")) return true;
  return field != nullptr && field->kind == dcgm::ValueKind::kCounter;
}

Result<std::map<std::string, TelemetrySeries>> CollectMatching(
    const std::string& path, const std::vector<model::Matcher>& matchers) {
  std::map<std::string, TelemetrySeries> found;
  const auto on_sample = [&](const expfmt::SampleView& sample, std::string_view /*family*/,
                             model::MetricType type) {
    if (!Matches(matchers, sample)) return;
    TelemetrySeries& series = found[SeriesId(sample)];
    const dcgm::FieldInfo* field = dcgm::FindFieldByName(sample.name);
    series.counter = IsCounter(sample, type, field);
    series.dcgm = field != nullptr;
    if (!sample.has_timestamp()) series.untimestamped = true;
    series.samples.emplace_back(sample.timestamp_ms, sample.value);
  };
  Result<expfmt::ReadReport> report = expfmt::ReadFile(path, expfmt::ReadOptions{}, on_sample);
  if (!report) return tl::unexpected(report.error());
  if (!report->ok()) {
    return Error(StatusCode::kParseError,
                 report->messages.empty() ? report->name + ": invalid" : report->messages[0]);
  }
  return found;
}

// The one series the selector must match, or an error naming up to five.
Result<std::pair<std::string, TelemetrySeries>> TheMatch(
    const std::string& name, const std::string& selector,
    std::map<std::string, TelemetrySeries> found) {
  if (found.empty()) {
    return Error(StatusCode::kNotFound, name + ": no series matches " + selector);
  }
  if (found.size() > 1) {
    std::string list;
    std::size_t shown = 0;
    for (const auto& [id, series] : found) {
      if (shown++ == 5) break;
      list += "\n  " + id;
    }
    if (found.size() > 5) list += "\n  ... and " + std::to_string(found.size() - 5) + " more";
    return Error(StatusCode::kInvalidArgument, name + ": " + std::to_string(found.size()) +
                                                   " series match " + selector +
                                                   "; the selector must match exactly one:" + list);
  }
  auto it = found.begin();
  if (it->second.untimestamped) {
    return Error(StatusCode::kParseError,
                 name + ": " + it->first +
                     " has samples without a timestamp; a recording needs one on every sample");
  }
  return std::pair(it->first, std::move(it->second));
}

// The scrape grid: slot k is at start + k * step, step the median spacing.
struct Grid {
  std::int64_t start_ms = 0;
  std::int64_t step_ms = 0;  // 0: a single slot
  std::size_t slots = 0;

  std::size_t Slot(std::int64_t t) const {
    return step_ms == 0 ? 0 : static_cast<std::size_t>((t - start_ms + step_ms / 2) / step_ms);
  }
};

// More slots than this is a recording with a gap of years, not a series.
constexpr std::size_t kMaxSlots = 100'000'000;

Result<Grid> MakeGrid(const std::string& id,
                      const std::vector<std::pair<std::int64_t, double>>& samples) {
  Grid grid;
  grid.start_ms = samples.front().first;
  std::vector<std::int64_t> spacing;
  for (std::size_t i = 1; i < samples.size(); ++i) {
    if (samples[i].first > samples[i - 1].first) {
      spacing.push_back(samples[i].first - samples[i - 1].first);
    }
  }
  if (!spacing.empty()) {
    const auto middle = spacing.begin() + static_cast<std::ptrdiff_t>(spacing.size() / 2);
    std::nth_element(spacing.begin(), middle, spacing.end());
    grid.step_ms = *middle;
  }
  const std::int64_t span = samples.back().first - grid.start_ms;
  if (grid.step_ms > 0 && span / grid.step_ms >= static_cast<std::int64_t>(kMaxSlots)) {
    return Error(StatusCode::kOutOfRange, id + ": " + std::to_string(span / grid.step_ms) +
                                              " scrape slots of " + std::to_string(grid.step_ms) +
                                              " ms: too many for one series");
  }
  grid.slots = grid.Slot(samples.back().first) + 1;
  return grid;
}

// Samples (or, for a counter, per-second rates) on the grid. A slot that no
// scrape fell in is missing; two scrapes in one slot (jitter): the first
// counts. A counter's rate at sample i is its increase since the previous
// present sample over the time between them; a decrease is a reset (the
// process restarted from 0), so the increase is the new value itself:
// Prometheus's rule for rate() and increase().
std::vector<double> OnGrid(const TelemetrySeries& series, const Grid& grid) {
  std::vector<double> values(grid.slots, kMissing);
  std::vector<bool> taken(grid.slots, false);
  std::optional<std::pair<std::int64_t, double>> previous;
  for (const auto& [t, raw] : series.samples) {
    const bool blank = series.dcgm && dcgm::IsBlankSentinel(raw);
    const double v = std::isfinite(raw) && !blank ? raw : kMissing;
    const std::size_t slot = grid.Slot(t);
    if (taken[slot]) continue;
    taken[slot] = true;
    if (!series.counter || std::isnan(v)) {
      values[slot] = v;
      continue;
    }
    if (previous) {
      const double increase = v >= previous->second ? v - previous->second : v;
      values[slot] = increase / (static_cast<double>(t - previous->first) / 1000.0);
    }
    previous.emplace(t, v);
  }
  return values;
}

Result<Series> ReadTelemetry(const ChangepointsArgs& args) {
  Result<std::vector<model::Matcher>> matchers = model::ParseSelector(args.series);
  if (!matchers) {
    return Error(StatusCode::kInvalidArgument, "--series: " + matchers.error().message());
  }
  auto found = CollectMatching(args.input, *matchers);
  if (!found) return tl::unexpected(found.error());
  const std::string name = args.input == "-" ? "<stdin>" : args.input;
  auto match = TheMatch(name, args.series, std::move(*found));
  if (!match) return tl::unexpected(match.error());
  auto& [id, series] = *match;
  // The validator keeps each series' timestamps non-decreasing; equal ones
  // are duplicates, of which the first is kept (stable sort, first per slot).
  std::stable_sort(series.samples.begin(), series.samples.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  Result<Grid> grid = MakeGrid(id, series.samples);
  if (!grid) return tl::unexpected(grid.error());
  Series out;
  out.values = OnGrid(series, *grid);
  out.times.reserve(grid->slots);
  for (std::size_t k = 0; k < grid->slots; ++k) {
    out.times.push_back(
        FormatUtcMillis(grid->start_ms + static_cast<std::int64_t>(k) * grid->step_ms));
  }
  return out;
}

// ---- Output -----------------------------------------------------------------

double MeanOf(const std::vector<double>& values, std::size_t begin, std::size_t end) {
  double sum = 0;
  std::size_t n = 0;
  for (std::size_t i = begin; i < end; ++i) {
    if (std::isnan(values[i])) continue;
    sum += values[i];
    ++n;
  }
  return n == 0 ? kMissing : sum / static_cast<double>(n);
}

std::string FormatNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// One line per change point: index, time when known, mean of the segment
// before -> mean of the segment after (missing samples left out).
void PrintText(const Series& series, const std::vector<std::size_t>& points, std::ostream& out) {
  for (std::size_t k = 0; k < points.size(); ++k) {
    const std::size_t begin = k == 0 ? 0 : points[k - 1];
    const std::size_t end = k + 1 < points.size() ? points[k + 1] : series.values.size();
    out << points[k];
    if (!series.times.empty()) out << " " << series.times[points[k]];
    out << " " << FormatNumber(MeanOf(series.values, begin, points[k])) << " -> "
        << FormatNumber(MeanOf(series.values, points[k], end)) << "\n";
  }
}

Status CheckFlags(const ChangepointsArgs& args) {
  if (args.method != "otava" && args.otava_flags_given) {
    return Status(StatusCode::kInvalidArgument,
                  "--window-len, --max-pvalue and --min-magnitude need --method otava");
  }
  if (!args.series.empty() && args.column_given) {
    return Status(StatusCode::kInvalidArgument,
                  "--column is for CSV input; --series selects from recorded telemetry");
  }
  return Status::Ok();
}

Status Run(const ChangepointsArgs& args, CommandContext& ctx) {
  if (Status flags = CheckFlags(args); !flags.ok()) return flags;
  Result<Series> series = args.series.empty() ? ReadCsv(args) : ReadTelemetry(args);
  if (!series) return series.error();
  std::vector<std::size_t> points;
  if (args.method == "otava") {
    points = cpd::OtavaChangePoints(series->values, args.otava);
  } else if (args.method == "online") {
    // Sample by sample, as a live stream would arrive: each change the
    // detector confirms, at the index it estimates the new level began.
    cpd::OnlineDetector detector;
    for (double v : series->values) {
      if (std::optional<cpd::OnlineChange> c = detector.Add(v)) {
        if (c->index > 0 && (points.empty() || c->index > points.back())) {
          points.push_back(c->index);
        }
      }
    }
  } else {
    points = cpd::Segment(series->values);
  }
  if (args.output == "text") {
    PrintText(*series, points, ctx.out);
  } else {
    ctx.out << nlohmann::json{{"change_points", points}}.dump() << "\n";
  }
  return Status::Ok();
}

}  // namespace

void RegisterChangepointsCommand(CLI::App& app, CommandContext& ctx) {
  auto args = std::make_shared<ChangepointsArgs>();
  CLI::App* cmd = app.add_subcommand(
      "changepoints", "Find where one series' level changes for good (CSV or recorded telemetry)");
  cmd->footer(
      "Prints {\"change_points\": [i, ...]}: 0-based indices of the first sample of each new "
      "segment (docs/cli.md). Exit status: 0 ok, 3 bad input or usage.");
  cmd->add_option("--input,-i", args->input,
                  "CSV with a header ('-' reads standard input), or with --series a recorded "
                  "telemetry file (.om, .prom, .gz)")
      ->type_name("FILE")
      ->required();
  CLI::Option* column = cmd->add_option(
      "--column", args->column,
      "CSV column of the series (default: value, or the only column); a 'time' column, if "
      "any, must increase");
  cmd->add_option("--series", args->series,
                  "Selector of the one telemetry series, e.g. "
                  "'{__name__=\"DCGM_FI_DEV_SM_CLOCK\",Hostname=\"node-4\",gpu=\"0\"}'")
      ->type_name("SELECTOR");
  cmd->add_option("--method", args->method,
                  "pelt (default: cpd::Segment), otava, or online (cpd::OnlineDetector, one "
                  "sample at a time)")
      ->check(CLI::IsMember({"pelt", "otava", "online"}));
  CLI::Option* window = cmd->add_option("--window-len", args->otava.window_len,
                                        "otava: samples per split window (default 50)")
                            ->check(CLI::Range(std::size_t{2}, std::size_t{1'000'000}));
  CLI::Option* pvalue = cmd->add_option("--max-pvalue", args->otava.max_pvalue,
                                        "otava: significance of a change point (default 0.001)")
                            ->check(CLI::Range(std::numeric_limits<double>::min(), 1.0));
  CLI::Option* magnitude =
      cmd->add_option("--min-magnitude", args->otava.min_magnitude,
                      "otava: smallest relative change of the mean (default 0)")
          ->check(CLI::Range(0.0, std::numeric_limits<double>::max()));
  cmd->add_option("--output,-o", args->output, "json (default) or text")
      ->check(CLI::IsMember({"json", "text"}));
  cmd->callback([args, column, window, pvalue, magnitude, &ctx] {
    args->column_given = column->count() > 0;
    args->otava_flags_given = window->count() + pvalue->count() + magnitude->count() > 0;
    const Status status = Run(*args, ctx);
    if (!status.ok()) {
      ctx.err << "gpucanary changepoints: " << status.message() << "\n";
      ctx.exit_code = kExitBadInput;
    }
  });
}

}  // namespace gpucanary::cli
