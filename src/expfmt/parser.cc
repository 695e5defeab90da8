#include "expfmt/parser.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstring>

#include "expfmt/scan.h"
#include "model/utf8.h"

namespace gpucanary::expfmt {
namespace {

// Character classes. Metric names: [a-zA-Z_:][a-zA-Z0-9_:]*; label names:
// [a-zA-Z_][a-zA-Z0-9_]* (exposition_formats.md; OpenMetrics ABNF metricname /
// label-name).
enum : std::uint8_t { kNameStart = 1, kNameChar = 2, kLabelStart = 4, kLabelChar = 8 };

constexpr std::array<std::uint8_t, 256> MakeTable() {
  std::array<std::uint8_t, 256> t{};
  for (int c = 0; c < 256; ++c) {
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    const bool digit = c >= '0' && c <= '9';
    std::uint8_t v = 0;
    if (alpha || c == '_') v |= kNameStart | kNameChar | kLabelStart | kLabelChar;
    if (c == ':') v |= kNameStart | kNameChar;
    if (digit) v |= kNameChar | kLabelChar;
    t[static_cast<std::size_t>(c)] = v;
  }
  return t;
}
constexpr std::array<std::uint8_t, 256> kTable = MakeTable();

inline bool Is(char c, std::uint8_t cls) {
  return (kTable[static_cast<unsigned char>(c)] & cls) != 0;
}
inline bool IsBlank(char c) { return c == ' ' || c == '\t'; }

// True at the end of the current line: its '\n' or the end of the buffer.
inline bool AtEol(const char* p, const char* e) { return p == e || *p == '\n'; }

// OpenMetrics token: up to ' ' or the end of the line.
inline const char* ScanToken(const char* p, const char* e) {
  while (p < e && *p != ' ' && *p != '\n') ++p;
  return p;
}

// Prometheus 0.0.4 token: up to a blank or the end of the line.
inline const char* ScanBlankToken(const char* p, const char* e) {
  while (p < e && *p != ' ' && *p != '\t' && *p != '\n') ++p;
  return p;
}

inline const char* SkipBlanks(const char* p, const char* e) {
  while (p < e && IsBlank(*p)) ++p;
  return p;
}

// Scans [start, e) for a metric name; returns the end of the name (== start when none).
inline const char* ScanMetricName(const char* p, const char* e) {
  if (p >= e || !Is(*p, kNameStart)) return p;
  return scan::SkipNameChars(p + 1, e, true);
}

inline const char* ScanLabelName(const char* p, const char* e) {
  if (p >= e || !Is(*p, kLabelStart)) return p;
  return scan::SkipNameChars(p + 1, e, false);
}

bool EqualsIgnoreCase(std::string_view a, std::string_view lower) {
  if (a.size() != lower.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char c = a[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != lower[i]) return false;
  }
  return true;
}

// Decimal real number: [sign] (digits [. digits*] | . digits) [(e|E) [sign] digits].
// Rejects hex, '_', 'p' and anything from_chars would stop at.
bool ParseDecimal(std::string_view t, double& out) {
  std::size_t i = 0;
  bool negative = false;
  if (i < t.size() && (t[i] == '+' || t[i] == '-')) {
    negative = t[i] == '-';
    ++i;
  }
  if (i >= t.size()) return false;
  const char c = t[i];
  if (!((c >= '0' && c <= '9') || c == '.')) return false;
  const char* first = t.data() + i;
  const char* last = t.data() + t.size();
  double v = 0;
  auto [ptr, ec] = std::from_chars(first, last, v, std::chars_format::general);
  if (ptr != last) return false;
  if (ec == std::errc::result_out_of_range) {
    // from_chars reports overflow/underflow; follow strtod: +-HUGE_VAL or 0.
    v = std::strtod(std::string(first, last).c_str(), nullptr);
  } else if (ec != std::errc()) {
    return false;
  }
  out = negative ? -v : v;
  return true;
}

}  // namespace

bool ParseValue(std::string_view t, Format format, double& out) {
  if (t.empty()) return false;
  const char c = t[0];
  if ((c >= '0' && c <= '9') ||
      ((c == '-' || c == '+') && t.size() > 1 && t[1] >= '0' && t[1] <= '9')) {
    // Fast path for plain integers, the commonest dcgm-exporter value.
    if (t.size() <= 15) {
      std::size_t i = (c == '-' || c == '+') ? 1 : 0;
      std::int64_t v = 0;
      std::size_t j = i;
      for (; j < t.size(); ++j) {
        const char d = t[j];
        if (d < '0' || d > '9') break;
        v = v * 10 + (d - '0');
      }
      if (j == t.size()) {
        out = static_cast<double>(c == '-' ? -v : v);
        return true;
      }
    }
    return ParseDecimal(t, out);
  }
  if (c == '.' || ((c == '-' || c == '+') && t.size() > 1 && t[1] == '.')) {
    return ParseDecimal(t, out);
  }
  // OpenMetrics: number = realnumber / [SIGN] ("inf" / "infinity") / "nan",
  // case-insensitive. Go's ParseFloat (0.0.4) accepts the same spellings.
  std::string_view body = t;
  bool negative = false;
  bool has_sign = false;
  if (c == '+' || c == '-') {
    negative = c == '-';
    has_sign = true;
    body.remove_prefix(1);
  }
  if (EqualsIgnoreCase(body, "inf") || EqualsIgnoreCase(body, "infinity")) {
    out = negative ? -HUGE_VAL : HUGE_VAL;
    return true;
  }
  if (EqualsIgnoreCase(body, "nan") && (!has_sign || format == Format::kPrometheusText)) {
    out = std::nan("");
    return true;
  }
  return false;
}

bool ParseTimestamp(std::string_view t, Format format, std::int64_t& out_ms, bool& clamped) {
  clamped = false;
  if (t.empty()) return false;
  if (format == Format::kPrometheusText) {
    // "timestamp is an int64 (milliseconds since epoch)", read like Go's ParseInt.
    std::string_view digits = t;
    if (digits[0] == '+') digits.remove_prefix(1);
    if (digits.empty() || digits[0] == '+') return false;
    std::int64_t v = 0;
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (ec != std::errc() || ptr != digits.data() + digits.size()) return false;
    out_ms = v;
    return true;
  }
  // OpenMetrics: timestamp = realnumber (seconds); NaN and Inf are not allowed.
  // Exact path for the common "-?\d+(\.\d*)?" form: milliseconds without
  // binary rounding (1775016266.006 -> 1775016266006).
  std::size_t i = 0;
  const bool negative = t[0] == '-';
  if (t[0] == '-' || t[0] == '+') i = 1;
  std::size_t int_begin = i;
  std::int64_t secs = 0;
  while (i < t.size() && t[i] >= '0' && t[i] <= '9' && i - int_begin < 15) {
    secs = secs * 10 + (t[i] - '0');
    ++i;
  }
  bool exact = i > int_begin || (i < t.size() && t[i] == '.');
  std::int64_t frac_ms = 0;
  if (exact && i < t.size() && t[i] == '.') {
    ++i;
    std::size_t frac_begin = i;
    std::int64_t scale = 100;
    bool round_up = false;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') {
      if (scale > 0) {
        frac_ms += (t[i] - '0') * scale;
        scale /= 10;
      } else if (i == frac_begin + 3) {
        round_up = t[i] >= '5';
      }
      ++i;
    }
    if (i == frac_begin && i == int_begin + 1) exact = false;  // "." alone
    if (round_up) ++frac_ms;
  }
  if (exact && i == t.size() && (i > int_begin)) {
    std::int64_t ms = secs * 1000 + frac_ms;
    out_ms = negative ? -ms : ms;
    return true;
  }
  double secs_f = 0;
  if (!ParseDecimal(t, secs_f)) return false;
  const double ms = std::nearbyint(secs_f * 1000.0);
  constexpr double kMax = 9.2e18;
  if (!(ms > -kMax && ms < kMax)) {
    clamped = true;
    out_ms = ms < 0 ? -static_cast<std::int64_t>(kMax) : static_cast<std::int64_t>(kMax);
    return true;
  }
  out_ms = static_cast<std::int64_t>(ms);
  return true;
}

Parser::Parser(std::string_view text, Format format, std::uint64_t first_line) : format_(format) {
  sample_.labels.reserve(16);
  Reset(text, first_line);
}

void Parser::Reset(std::string_view text, std::uint64_t first_line) {
  pos_ = text.data();
  end_ = text.data() + text.size();
  next_line_no_ = first_line;
}

Entry Parser::Fail(const char* at, std::string message) {
  error_.line = line_no_;
  error_.column = static_cast<std::uint32_t>(at - line_begin_) + 1;
  error_.message = std::move(message);
  return Entry::kError;
}

Entry Parser::Next() {
  while (pos_ < end_) {
    line_begin_ = pos_;
    line_no_ = next_line_no_++;
    line_end_ = nullptr;
    Entry entry;
    if (eof_seen_) {
      // OpenMetrics: exposition = metricset HASH SP eof [ LF ]; nothing may follow.
      entry = Fail(line_begin_, "unexpected text after '# EOF'");
    } else {
      entry = ParseLine(line_begin_, end_);
    }
    // A parsed sample or comment knows where its line ends; after an error
    // the rest of the line is skipped.
    const char* line_end = line_end_ != nullptr ? line_end_ : scan::FindNewline(line_begin_, end_);
    line_len_ = static_cast<std::size_t>(line_end - line_begin_);
    pos_ = line_end < end_ ? line_end + 1 : end_;
    if (entry == Entry::kComment && format_ == Format::kPrometheusText) continue;
    if (entry == Entry::kEnd) continue;  // blank 0.0.4 line
    return entry;
  }
  return Entry::kEnd;
}

// The parse functions below take e = the end of the whole buffer, not of the
// line: a line ends at '\n' (no token scanner accepts it) or at e. Not finding
// the line end first saves a pass over every byte.
Entry Parser::ParseLine(const char* p, const char* e) {
  if (AtEol(p, e)) {
    line_end_ = p;
    if (format_ == Format::kOpenMetrics) return Fail(p, "blank line (not allowed in OpenMetrics)");
    return Entry::kEnd;
  }
  const char c = *p;
  if (c == '#') return ParseComment(p, scan::FindNewline(p, e));
  if (IsBlank(c)) {
    if (format_ == Format::kOpenMetrics) {
      return Fail(p, "leading whitespace (not allowed in OpenMetrics)");
    }
    const char* q = SkipBlanks(p, e);
    if (AtEol(q, e)) {  // whitespace-only line: blank
      line_end_ = q;
      return Entry::kEnd;
    }
    if (*q == '#') return ParseComment(q, scan::FindNewline(q, e));  // indented comment
    // Prometheus itself reads "   m 1" as an invalid metric name; so do we.
    return Fail(p, "leading whitespace before metric name");
  }
  if (c == '\r') return FailCarriageReturn(p);
  return ParseSample(p, e);
}

Entry Parser::FailCarriageReturn(const char* at) {
  return Fail(at, "carriage return before line break (CRLF line endings are not allowed)");
}

// A token [v, p) that did not parse: name it, or point at a CRLF line end.
Entry Parser::FailToken(const char* v, const char* p, const char* what, const char* expected) {
  if (p > v && p[-1] == '\r') return FailCarriageReturn(p - 1);
  return Fail(v, std::string("invalid ") + what + " '" + std::string(v, p) + "'" + expected);
}

Entry Parser::ParseSample(const char* p, const char* e) {
  const bool om = format_ == Format::kOpenMetrics;
  const char* name_end = ScanMetricName(p, e);
  if (name_end == p) return Fail(p, "expected metric name");
  sample_.name = std::string_view(p, static_cast<std::size_t>(name_end - p));
  sample_.labels.clear();
  sample_.timestamp_ms = kNoTimestamp;
  sample_.timestamp_clamped = false;
  sample_.has_exemplar = false;
  p = name_end;
  sample_.label_text = {};
  if (p < e && *p == '{') {
    const char* open = p;
    p = ParseLabels(p, e, sample_.labels, label_scratch_);
    if (p == nullptr) return Entry::kError;
    sample_.label_text = std::string_view(open, static_cast<std::size_t>(p - open));
  }
  // Separator before the value: one SP in OpenMetrics, any run of blanks in 0.0.4.
  if (AtEol(p, e)) return Fail(p, "missing value");
  if (om ? *p != ' ' : !IsBlank(*p)) {
    return Fail(p, std::string("expected ' ' before the value, found '") + *p + "'");
  }
  ++p;
  if (!om) p = SkipBlanks(p, e);
  const char* v = p;
  p = om ? ScanToken(p, e) : ScanBlankToken(p, e);
  if (p == v) return Fail(v, "missing value");
  if (!ParseValue(std::string_view(v, static_cast<std::size_t>(p - v)), format_, sample_.value)) {
    return FailToken(v, p, "value", "");
  }
  if (om) {
    if (AtEol(p, e)) return Sample(p);
    ++p;  // the ' '
    if (p < e && *p == '#') return ParseExemplar(p, e);
    const char* ts = p;
    p = ScanToken(p, e);
    if (p == ts) {
      return Fail(ts, "expected timestamp after ' ' (trailing whitespace is not allowed)");
    }
    if (!ParseTimestamp(std::string_view(ts, static_cast<std::size_t>(p - ts)), format_,
                        sample_.timestamp_ms, sample_.timestamp_clamped)) {
      return FailToken(ts, p, "timestamp", " (OpenMetrics wants seconds as a decimal number)");
    }
    if (AtEol(p, e)) return Sample(p);
    ++p;
    if (p < e && *p == '#') return ParseExemplar(p, e);
    return Fail(p, "expected end of line or an exemplar after the timestamp");
  }
  p = SkipBlanks(p, e);
  if (AtEol(p, e)) return Sample(p);
  const char* ts = p;
  p = ScanBlankToken(p, e);
  if (!ParseTimestamp(std::string_view(ts, static_cast<std::size_t>(p - ts)), format_,
                      sample_.timestamp_ms, sample_.timestamp_clamped)) {
    return FailToken(ts, p, "timestamp", " (Prometheus text wants integer milliseconds)");
  }
  p = SkipBlanks(p, e);
  if (!AtEol(p, e)) return Fail(p, "unexpected text after the timestamp");
  return Sample(p);
}

const char* Parser::ParseLabels(const char* p, const char* e, std::vector<model::LabelView>& labels,
                                std::deque<std::string>& scratch) {
  const bool om = format_ == Format::kOpenMetrics;
  ++p;  // '{'
  if (!om) p = SkipBlanks(p, e);
  if (p < e && *p == '}') return p + 1;
  for (;;) {
    const char* n = p;
    const char* n_end = ScanLabelName(p, e);
    if (n_end == n) {
      if (p < e && *p == '}') {
        Fail(p, "trailing ',' before '}' (not allowed in OpenMetrics)");
      } else if (AtEol(p, e)) {
        Fail(p, "unterminated label set: expected '}'");
      } else {
        Fail(p, "expected label name");
      }
      return nullptr;
    }
    std::string_view name(n, static_cast<std::size_t>(n_end - n));
    p = n_end;
    if (!om) p = SkipBlanks(p, e);
    if (p >= e || *p != '=') {
      Fail(p, "expected '=' after label name '" + std::string(name) + "'");
      return nullptr;
    }
    ++p;
    if (!om) p = SkipBlanks(p, e);
    if (p >= e || *p != '"') {
      Fail(p, "expected '\"' to open the value of label '" + std::string(name) + "'");
      return nullptr;
    }
    for (const model::LabelView& l : labels) {
      if (l.name == name) {
        Fail(n, "duplicate label name '" + std::string(name) + "'");
        return nullptr;
      }
    }
    std::string_view value;
    if (scratch.size() <= labels.size()) scratch.resize(labels.size() + 1);
    p = ParseLabelValue(p + 1, e, value, scratch[labels.size()]);
    if (p == nullptr) return nullptr;
    labels.push_back(model::LabelView{name, value});
    if (!om) p = SkipBlanks(p, e);
    if (p < e && *p == ',') {
      ++p;
      if (!om) {
        p = SkipBlanks(p, e);
        if (p < e && *p == '}') return p + 1;  // 0.0.4 allows a trailing comma
      }
      continue;
    }
    if (p < e && *p == '}') return p + 1;
    if (AtEol(p, e)) {
      Fail(p, "unterminated label set: expected '}'");
    } else {
      Fail(p, std::string("expected ',' or '}' after label value, found '") + *p + "'");
    }
    return nullptr;
  }
}

const char* Parser::ParseLabelValue(const char* p, const char* e, std::string_view& value,
                                    std::string& scratch) {
  const char* start = p;
  const char* stop = scan::FindQuoteOrSpecial(p, e);
  if (stop < e && *stop == '"') {  // plain ASCII without escapes: the common case
    value = std::string_view(start, static_cast<std::size_t>(stop - start));
    return stop + 1;
  }
  // Slow path: find the closing quote that is not escaped, then decode. A label
  // value never spans lines (a line break inside it is written as \n).
  const char* r = stop;
  while (r < e && *r != '"' && *r != '\n') {
    r += (*r == '\\' && r + 1 < e && r[1] != '\n') ? 2 : 1;
  }
  if (r >= e || *r == '\n') {
    Fail(start - 1, "unterminated label value: missing closing '\"'");
    return nullptr;
  }
  const std::string_view raw(start, static_cast<std::size_t>(r - start));
  value = std::memchr(raw.data(), '\\', raw.size()) != nullptr ? Unescape(raw, scratch, true) : raw;
  if (!model::IsValidUtf8(value)) {
    Fail(start, "label value is not valid UTF-8");
    return nullptr;
  }
  return r + 1;
}

// Label values (both formats) and OpenMetrics HELP: \\ \" \n are escapes;
// Prometheus 0.0.4 HELP has only \\ and \n. A backslash before any other
// character is kept as is (Prometheus and the OpenMetrics ABNF agree).
std::string_view Parser::Unescape(std::string_view raw, std::string& out, bool quote_escape) {
  out.clear();
  for (std::size_t i = 0; i < raw.size(); ++i) {
    const char c = raw[i];
    if (c == '\\' && i + 1 < raw.size()) {
      const char n = raw[i + 1];
      if (n == '\\' || n == 'n' || (n == '"' && quote_escape)) {
        out += n == 'n' ? '\n' : n;
        ++i;
        continue;
      }
    }
    out += c;
  }
  return out;
}

Entry Parser::ParseExemplar(const char* p, const char* e) {
  // exemplar = SP HASH SP labels SP number [SP timestamp]
  ExemplarView& ex = sample_.exemplar;
  ex.labels.clear();
  ex.timestamp_ms = kNoTimestamp;
  ++p;  // '#'
  if (AtEol(p, e) || *p != ' ') return Fail(p, "expected ' ' after '#' of an exemplar");
  ++p;
  if (AtEol(p, e) || *p != '{') return Fail(p, "expected '{' to open the exemplar label set");
  p = ParseLabels(p, e, ex.labels, exemplar_scratch_);
  if (p == nullptr) return Entry::kError;
  if (AtEol(p, e) || *p != ' ') {
    return Fail(p, "expected ' ' and a value after the exemplar labels");
  }
  ++p;
  const char* v = p;
  p = ScanToken(p, e);
  if (p == v ||
      !ParseValue(std::string_view(v, static_cast<std::size_t>(p - v)), format_, ex.value)) {
    return FailToken(v, p, "exemplar value", "");
  }
  if (!AtEol(p, e)) {
    ++p;
    const char* ts = p;
    p = ScanToken(p, e);
    bool clamped = false;
    if (p == ts || !AtEol(p, e) ||
        !ParseTimestamp(std::string_view(ts, static_cast<std::size_t>(p - ts)), format_,
                        ex.timestamp_ms, clamped)) {
      return Fail(ts,
                  "invalid exemplar timestamp '" + std::string(ts, scan::FindNewline(ts, e)) + "'");
    }
  }
  sample_.has_exemplar = true;
  return Sample(p);
}

Entry Parser::ParseComment(const char* p, const char* line_end) {
  line_end_ = line_end;
  return format_ == Format::kOpenMetrics ? ParseOpenMetricsComment(p, line_end)
                                         : ParsePrometheusComment(p, line_end);
}

namespace {

bool ParseTypeName(std::string_view t, Format format, model::MetricType& out) {
  if (t == "counter")
    out = model::MetricType::kCounter;
  else if (t == "gauge")
    out = model::MetricType::kGauge;
  else if (t == "histogram")
    out = model::MetricType::kHistogram;
  else if (t == "summary")
    out = model::MetricType::kSummary;
  else if (format == Format::kPrometheusText) {
    if (t != "untyped") return false;
    out = model::MetricType::kUnknown;
  } else if (t == "gaugehistogram")
    out = model::MetricType::kGaugeHistogram;
  else if (t == "info")
    out = model::MetricType::kInfo;
  else if (t == "stateset")
    out = model::MetricType::kStateSet;
  else if (t == "unknown")
    out = model::MetricType::kUnknown;
  else
    return false;
  return true;
}

}  // namespace

Entry Parser::ParseOpenMetricsComment(const char* p, const char* e) {
  // metric-descriptor = "# TYPE " name SP type LF / "# HELP " name SP escaped-string LF
  //                   / "# UNIT " name SP *metricname-char LF;  and "# EOF".
  const std::string_view line(p, static_cast<std::size_t>(e - p));
  if (line == "# EOF") {
    // Whatever follows is reported on its own lines (see Next()), so a reader
    // that receives the input in chunks reports exactly the same errors.
    eof_seen_ = true;
    return Entry::kEof;
  }
  MetadataKind kind;
  if (line.starts_with("# HELP "))
    kind = MetadataKind::kHelp;
  else if (line.starts_with("# TYPE "))
    kind = MetadataKind::kType;
  else if (line.starts_with("# UNIT "))
    kind = MetadataKind::kUnit;
  else
    return Fail(
        p, "invalid comment: OpenMetrics allows only '# HELP', '# TYPE', '# UNIT' and '# EOF'");
  p += 7;
  const char* n_end = ScanMetricName(p, e);
  if (n_end == p) return Fail(p, "expected metric family name");
  metadata_.kind = kind;
  metadata_.name = std::string_view(p, static_cast<std::size_t>(n_end - p));
  p = n_end;
  if (p >= e || *p != ' ') return Fail(p, "expected ' ' after the metric family name");
  ++p;
  const std::string_view rest(p, static_cast<std::size_t>(e - p));
  switch (kind) {
    case MetadataKind::kHelp:
      metadata_.text = rest;
      if (scan::FindBackslashOrHigh(p, e) != e) {
        metadata_.text = Unescape(rest, help_scratch_, true);
        if (!model::IsValidUtf8(metadata_.text)) return Fail(p, "HELP text is not valid UTF-8");
      }
      return Entry::kMetadata;
    case MetadataKind::kType:
      if (!ParseTypeName(rest, format_, metadata_.type)) {
        return Fail(p, "invalid metric type '" + std::string(rest) +
                           "' (expected counter, gauge, histogram, gaugehistogram, stateset, "
                           "info, summary or unknown)");
      }
      return Entry::kMetadata;
    case MetadataKind::kUnit:
      for (const char* q = p; q < e; ++q) {
        if (!Is(*q, kNameChar)) return Fail(q, "invalid character in unit");
      }
      metadata_.text = rest;
      return Entry::kMetadata;
  }
  return Fail(p, "internal: unreachable metadata kind");
}

Entry Parser::ParsePrometheusComment(const char* p, const char* e) {
  // "Lines with a # as the first non-whitespace character are comments. They are
  // ignored unless the first token after # is either HELP or TYPE."
  const char* q = SkipBlanks(p + 1, e);
  const char* t = q;
  while (q < e && !IsBlank(*q)) ++q;
  const std::string_view token(t, static_cast<std::size_t>(q - t));
  MetadataKind kind;
  if (token == "HELP")
    kind = MetadataKind::kHelp;
  else if (token == "TYPE")
    kind = MetadataKind::kType;
  else
    return Entry::kComment;
  q = SkipBlanks(q, e);
  const char* n_end = ScanMetricName(q, e);
  if (n_end == q) return Fail(q, "expected metric name after # " + std::string(token));
  if (n_end < e && !IsBlank(*n_end)) return Fail(n_end, "invalid character in metric name");
  metadata_.kind = kind;
  metadata_.name = std::string_view(q, static_cast<std::size_t>(n_end - q));
  q = SkipBlanks(n_end, e);
  const std::string_view rest(q, static_cast<std::size_t>(e - q));
  if (kind == MetadataKind::kHelp) {
    // 0.0.4 HELP: only \\ and \n are escapes. An empty docstring is accepted
    // (dcgm-exporter builds print "# HELP NAME" with nothing after it).
    metadata_.text = rest;
    if (scan::FindBackslashOrHigh(q, e) != e) {
      metadata_.text = Unescape(rest, help_scratch_, false);
      if (!model::IsValidUtf8(metadata_.text)) return Fail(q, "HELP text is not valid UTF-8");
    }
    return Entry::kMetadata;
  }
  const char* type_end = q;
  while (type_end < e && !IsBlank(*type_end)) ++type_end;
  const std::string_view type_name(q, static_cast<std::size_t>(type_end - q));
  if (type_name.empty())
    return Fail(q, "missing metric type after # TYPE " + std::string(metadata_.name));
  if (!ParseTypeName(type_name, format_, metadata_.type)) {
    return Fail(q, "invalid metric type '" + std::string(type_name) +
                       "' (expected counter, gauge, histogram, summary or untyped)");
  }
  if (SkipBlanks(type_end, e) != e) return Fail(type_end, "unexpected text after metric type");
  return Entry::kMetadata;
}

}  // namespace gpucanary::expfmt
