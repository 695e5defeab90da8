#include "expfmt/validator.h"

#include <cmath>
#include <span>
#include <string_view>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "expfmt/parser.h"

namespace gpucanary::expfmt {
namespace {

using Suffixes = std::span<const std::string_view>;

constexpr std::string_view kBare[] = {""};
constexpr std::string_view kPromHistogram[] = {"_bucket", "_count", "_sum"};
constexpr std::string_view kPromSummary[] = {"", "_count", "_sum"};
constexpr std::string_view kCounter[] = {"_total", "_created"};
constexpr std::string_view kHistogram[] = {"_bucket", "_count", "_sum", "_created"};
constexpr std::string_view kGaugeHistogram[] = {"_bucket", "_gcount", "_gsum"};
constexpr std::string_view kSummary[] = {"", "_count", "_sum", "_created"};
constexpr std::string_view kInfo[] = {"_info"};

// Sample-name suffixes each family type allows (OpenMetrics 1.0, "Metric types";
// for 0.0.4, the histogram and summary conventions of exposition_formats.md).
Suffixes AllowedSuffixes(model::MetricType type, Format format) {
  if (format == Format::kPrometheusText) {
    switch (type) {
      case model::MetricType::kHistogram:
        return kPromHistogram;
      case model::MetricType::kSummary:
        return kPromSummary;
      default:
        return kBare;
    }
  }
  switch (type) {
    case model::MetricType::kCounter:
      return kCounter;
    case model::MetricType::kHistogram:
      return kHistogram;
    case model::MetricType::kGaugeHistogram:
      return kGaugeHistogram;
    case model::MetricType::kSummary:
      return kSummary;
    case model::MetricType::kInfo:
      return kInfo;
    default:
      return kBare;
  }
}

bool MatchSuffix(std::string_view family, model::MetricType type, Format format,
                 std::string_view sample, std::string_view& suffix) {
  if (!sample.starts_with(family)) return false;
  const std::string_view rest = sample.substr(family.size());
  for (std::string_view s : AllowedSuffixes(type, format)) {
    if (rest == s) {
      suffix = s;
      return true;
    }
  }
  return false;
}

std::string ExpectedNames(std::string_view family, model::MetricType type) {
  std::string out;
  for (std::string_view s : AllowedSuffixes(type, Format::kOpenMetrics)) {
    if (!out.empty()) out += ", ";
    out += family;
    out += s;
  }
  return out;
}

// le and quantile values: a real number, or +Inf spelled canonically (the suite
// rejects le="+INF" while accepting non-canonical finite numbers).
bool ParseBound(std::string_view text, double& out) {
  if (text == "+Inf") {
    out = HUGE_VAL;
    return true;
  }
  if (text == "-Inf") {
    out = -HUGE_VAL;
    return true;
  }
  if (text.empty()) return false;
  const char c = text[0];
  const char d = text.size() > 1 ? text[1] : '\0';
  const bool numeric = (c >= '0' && c <= '9') || c == '.' ||
                       ((c == '-' || c == '+') && ((d >= '0' && d <= '9') || d == '.'));
  return numeric && ParseValue(text, Format::kOpenMetrics, out);
}

std::size_t CodePoints(std::string_view s) {
  std::size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

}  // namespace

// One label's hash is XXH3 of the bytes `name="value` (unescaped value). When the
// parser's views are adjacent in the input (the common case) those bytes are
// hashed in place; otherwise they are assembled first, giving the same hash.
std::uint64_t HashLabel(const model::LabelView& l) {
  const char* begin = l.name.data();
  if (l.value.data() == begin + l.name.size() + 2 && begin[l.name.size()] == '=' &&
      begin[l.name.size() + 1] == '"') {
    return XXH3_64bits(begin, l.name.size() + 2 + l.value.size());
  }
  thread_local std::string joined;
  joined.assign(l.name);
  joined += "=\"";
  joined += l.value;
  return XXH3_64bits(joined.data(), joined.size());
}

std::uint64_t HashLabels(const std::vector<model::LabelView>& labels, std::string_view skip) {
  // Sum: independent of label order, as Prometheus sorts labels.
  std::uint64_t sum = 0x9E3779B97F4A7C15ULL;
  for (const model::LabelView& l : labels) {
    if (l.value.empty() || l.name == skip) continue;
    sum += HashLabel(l);
  }
  return sum;
}

std::uint64_t HashSeries(std::string_view name, const std::vector<model::LabelView>& labels) {
  return XXH3_64bits_withSeed(name.data(), name.size(), HashLabels(labels, {}));
}

std::uint64_t Validator::LabelsHash(const SampleView& s) {
  if (s.label_text.empty()) return HashLabels(s.labels, {});
  // Exporters print the same label block for a GPU in every family (and the
  // same block at every tick of a recording): hash the raw bytes once, and
  // look up the order-independent hash computed the first time.
  const std::uint64_t raw =
      FlatHashMap<std::uint64_t>::NonZero(XXH3_64bits(s.label_text.data(), s.label_text.size()));
  if (const std::uint64_t* cached = label_hash_cache_.Find(raw)) return *cached;
  if (label_hash_cache_.size() >= kLabelHashCacheSize) label_hash_cache_.Clear();
  bool inserted = false;
  std::uint64_t& slot = label_hash_cache_.FindOrInsert(raw, inserted);
  slot = HashLabels(s.labels, {});
  return slot;
}

Validator::Validator(Format format) : format_(format) {
  // Sized for a large scrape; bigger inputs grow the tables as they go.
  families_.reserve(256);
  series_.Reserve(2048);
  label_hash_cache_.Reserve(1024);
}

std::vector<Violation> Validator::TakeDeferred() {
  std::vector<Violation> out;
  out.swap(deferred_);
  return out;
}

std::string_view Validator::current_family() const {
  return current_ < 0 ? std::string_view() : families_[static_cast<std::size_t>(current_)].name;
}

model::MetricType Validator::current_type() const {
  return current_ < 0 ? model::MetricType::kUnknown
                      : families_[static_cast<std::size_t>(current_)].type;
}

int Validator::NewFamily(std::string_view name, Violation& v) {
  const std::string key(name);
  if (format_ == Format::kOpenMetrics) {
    auto clash = family_by_sample_name_.find(key);
    if (clash != family_by_sample_name_.end()) {
      v.message = "metric family '" + key + "' clashes with a sample name of family '" +
                  families_[static_cast<std::size_t>(clash->second)].name + "'";
      return -1;
    }
  }
  const int index = static_cast<int>(families_.size());
  families_.emplace_back();
  families_.back().name = key;
  family_by_name_.emplace(key, index);
  ++stats_.families;
  if (!RegisterSampleNames(index, v)) return -1;
  return index;
}

bool Validator::RegisterSampleNames(int index, Violation& v) {
  const Family& f = families_[static_cast<std::size_t>(index)];
  for (std::string_view suffix : AllowedSuffixes(f.type, format_)) {
    std::string sample_name = f.name + std::string(suffix);
    if (format_ == Format::kOpenMetrics && !suffix.empty()) {
      auto other = family_by_name_.find(sample_name);
      if (other != family_by_name_.end() && other->second != index) {
        v.message = "sample name '" + sample_name + "' of " +
                    std::string(model::MetricTypeName(f.type)) + " family '" + f.name +
                    "' clashes with metric family '" + sample_name + "'";
        return false;
      }
    }
    auto [it, inserted] = family_by_sample_name_.emplace(sample_name, index);
    if (!inserted && it->second != index && format_ == Format::kOpenMetrics) {
      v.message = "sample name '" + sample_name + "' is claimed by two families: '" +
                  families_[static_cast<std::size_t>(it->second)].name + "' and '" + f.name + "'";
      return false;
    }
  }
  return true;
}

void Validator::SwitchTo(int family) {
  if (family == current_) return;
  if (current_ >= 0) {
    Family& old = families_[static_cast<std::size_t>(current_)];
    ClosePoint(old);
    old.has_current_group = false;
  }
  current_ = family;
}

bool Validator::OnMetadata(const MetadataView& m, std::uint64_t line, Violation& v) {
  (void)line;
  const int index = FamilyForMetadata(m, v);
  if (index < 0) return false;
  Family& f = families_[static_cast<std::size_t>(index)];
  const bool om = format_ == Format::kOpenMetrics;
  const char* what = m.kind == MetadataKind::kHelp   ? "HELP"
                     : m.kind == MetadataKind::kType ? "TYPE"
                                                     : "UNIT";
  if (om && f.has_samples) {
    v.message = std::string("# ") + what + " for metric family '" + f.name +
                "' after its samples (metadata must come first)";
    return false;
  }
  bool& seen = m.kind == MetadataKind::kHelp   ? f.has_help
               : m.kind == MetadataKind::kType ? f.has_type
                                               : f.has_unit;
  if (seen && (om || m.kind == MetadataKind::kType)) {
    if (om) {
      v.message = std::string("repeated # ") + what + " for metric family '" + f.name + "'";
      return false;
    }
    if (m.type != f.type) {
      // Prometheus keeps the first TYPE line; changing it would reinterpret samples.
      v.message = "second # TYPE for metric '" + f.name + "' with a different type";
      return false;
    }
  }
  seen = true;
  if (m.kind == MetadataKind::kType) return OnType(index, m.type, v);
  if (m.kind == MetadataKind::kUnit) return OnUnit(f, m.text, v);
  return true;
}

int Validator::FamilyForMetadata(const MetadataView& m, Violation& v) {
  if (current_ >= 0 && families_[static_cast<std::size_t>(current_)].name == m.name) {
    return current_;
  }
  int index;
  auto it = family_by_name_.find(m.name);
  if (it != family_by_name_.end()) {
    if (format_ != Format::kPrometheusText) {
      v.message = "metadata for metric family '" + std::string(m.name) +
                  "' after the family ended (families must not be repeated or interleaved)";
      return -1;
    }
    index = it->second;  // Prometheus accepts metadata anywhere
  } else {
    index = NewFamily(m.name, v);
    if (index < 0) return -1;
  }
  SwitchTo(index);
  return index;
}

bool Validator::OnType(int index, model::MetricType type, Violation& v) {
  Family& f = families_[static_cast<std::size_t>(index)];
  f.type = type;
  // The bare family name was registered as a sample name while the type was
  // unknown; drop it when the new type does not allow it (counter, histogram).
  bool bare_allowed = false;
  for (std::string_view sfx : AllowedSuffixes(f.type, format_)) bare_allowed |= sfx.empty();
  if (!bare_allowed) {
    auto bare = family_by_sample_name_.find(f.name);
    if (bare != family_by_sample_name_.end() && bare->second == index) {
      family_by_sample_name_.erase(bare);
    }
  }
  if (format_ == Format::kOpenMetrics && f.has_unit && !f.unit.empty() &&
      (f.type == model::MetricType::kInfo || f.type == model::MetricType::kStateSet)) {
    v.message = std::string(model::MetricTypeName(f.type)) + " family '" + f.name +
                "' must not have a unit";
    return false;
  }
  return RegisterSampleNames(index, v);
}

bool Validator::OnUnit(Family& f, std::string_view unit, Violation& v) {
  f.unit = std::string(unit);
  if (f.unit.empty()) return true;
  if (f.type == model::MetricType::kInfo || f.type == model::MetricType::kStateSet) {
    v.message = std::string(model::MetricTypeName(f.type)) + " family '" + f.name +
                "' must not have a unit";
    return false;
  }
  if (!std::string_view(f.name).ends_with(f.unit)) {
    v.message = "unit '" + f.unit + "' must be a suffix of the metric family name '" + f.name + "'";
    return false;
  }
  return true;
}

int Validator::ResolveFamily(const SampleView& s, std::string_view& suffix, Violation& v) {
  if (current_ >= 0) {
    Family& f = families_[static_cast<std::size_t>(current_)];
    if (MatchSuffix(f.name, f.type, format_, s.name, suffix)) return current_;
  }
  auto it = family_by_sample_name_.find(s.name);
  if (it != family_by_sample_name_.end() &&
      MatchSuffix(families_[static_cast<std::size_t>(it->second)].name,
                  families_[static_cast<std::size_t>(it->second)].type, format_, s.name, suffix)) {
    Family& f = families_[static_cast<std::size_t>(it->second)];
    if (format_ == Format::kOpenMetrics && !(f.all_timestamped && s.has_timestamp())) {
      v.message = "sample '" + std::string(s.name) + "' of metric family '" + f.name +
                  "' after the family ended (families must not be interleaved)";
      return -1;
    }
    SwitchTo(it->second);
    return it->second;
  }
  auto named = family_by_name_.find(s.name);
  if (named != family_by_name_.end() && format_ == Format::kOpenMetrics) {
    const Family& f = families_[static_cast<std::size_t>(named->second)];
    v.message = "sample name '" + std::string(s.name) + "' does not fit " +
                std::string(model::MetricTypeName(f.type)) + " family '" + f.name + "' (expected " +
                ExpectedNames(f.name, f.type) + ")";
    return -1;
  }
  const int index = named != family_by_name_.end() ? named->second : NewFamily(s.name, v);
  if (index < 0) return -1;
  SwitchTo(index);
  suffix = {};
  return index;
}

bool Validator::OnSample(const SampleView& s, std::uint64_t line, Violation& v) {
  std::string_view suffix;
  const int index = ResolveFamily(s, suffix, v);
  if (index < 0) return false;
  Family& f = families_[static_cast<std::size_t>(index)];
  f.has_samples = true;
  f.all_timestamped = f.all_timestamped && s.has_timestamp();
  const std::uint64_t labels_hash = LabelsHash(s);
  if (format_ == Format::kOpenMetrics) {
    if (!CheckSampleValue(f, suffix, s, v)) return false;
    if (!CheckGroup(f, suffix, s, labels_hash, line, v)) return false;
  }
  if (!TrackSeries(s, labels_hash, v)) return false;
  ++stats_.samples;
  if (s.has_timestamp()) {
    if (stats_.timestamped_samples == 0 || s.timestamp_ms < stats_.min_timestamp_ms) {
      stats_.min_timestamp_ms = s.timestamp_ms;
    }
    if (stats_.timestamped_samples == 0 || s.timestamp_ms > stats_.max_timestamp_ms) {
      stats_.max_timestamp_ms = s.timestamp_ms;
    }
    ++stats_.timestamped_samples;
  }
  return true;
}

bool Validator::TrackSeries(const SampleView& s, std::uint64_t labels_hash, Violation& v) {
  bool inserted = false;
  const std::uint64_t series = XXH3_64bits_withSeed(s.name.data(), s.name.size(), labels_hash);
  SeriesState& st = series_.FindOrInsert(FlatHashMap<SeriesState>::NonZero(series), inserted);
  if (inserted) {
    ++stats_.series;
    st.last_ts = s.timestamp_ms;
    return true;
  }
  if (!s.has_timestamp() || st.last_ts == kNoTimestamp) {
    if (format_ == Format::kOpenMetrics) {
      v.message = "duplicate sample for series '" + std::string(s.name) +
                  "' (a repeated series needs increasing timestamps)";
      return false;
    }
    ++stats_.duplicate_samples;
    return true;
  }
  if (s.timestamp_ms < st.last_ts) {
    v.message = "timestamp " + std::to_string(s.timestamp_ms) + " ms of series '" +
                std::string(s.name) + "' is older than its previous sample (" +
                std::to_string(st.last_ts) + " ms): timestamps must not go backwards";
    return false;
  }
  st.last_ts = s.timestamp_ms;
  return true;
}

namespace {

// False, with the message, when `s`'s value is NaN or negative.
bool NotNegative(const SampleView& s, const char* what, Violation& v) {
  if (std::isnan(s.value) || s.value < 0) {
    v.message = std::string(what) + " '" + std::string(s.name) + "' must not be NaN or negative";
    return false;
  }
  return true;
}

bool CheckHistogramValue(const std::string& family, model::MetricType type, std::string_view suffix,
                         const SampleView& s, Violation& v) {
  const bool bucket = suffix == "_bucket";
  if (!bucket && s.Label("le")) {
    v.message = "label 'le' is only allowed on _bucket samples of histogram '" + family + "'";
    return false;
  }
  if (bucket || suffix == "_count" || suffix == "_gcount" ||
      (suffix == "_sum" && type == model::MetricType::kHistogram)) {
    if (!NotNegative(s, "histogram sample", v)) return false;
  }
  if (suffix == "_gsum" && std::isnan(s.value)) {
    v.message = "gauge histogram '" + std::string(s.name) + "' must not be NaN";
    return false;
  }
  return true;
}

bool CheckSummaryValue(const std::string& family, std::string_view suffix, const SampleView& s,
                       Violation& v) {
  if (!suffix.empty()) {
    if (s.Label("quantile")) {
      v.message =
          "label 'quantile' is only allowed on the quantile samples of summary '" + family + "'";
      return false;
    }
    return !((suffix == "_count" || suffix == "_sum") && !NotNegative(s, "summary sample", v));
  }
  auto q = s.Label("quantile");
  double qv = 0;
  if (!q) {
    v.message = "summary sample '" + std::string(s.name) + "' needs a 'quantile' label";
    return false;
  }
  if (!ParseBound(*q, qv) || std::isnan(qv) || qv < 0 || qv > 1) {
    v.message =
        "quantile '" + std::string(*q) + "' of summary '" + family + "' is not a number in [0, 1]";
    return false;
  }
  if (s.value < 0) {
    v.message = "summary quantile value of '" + std::string(s.name) + "' must not be negative";
    return false;
  }
  return true;
}

bool CheckStateSetValue(const std::string& family, const SampleView& s, Violation& v) {
  if (!s.Label(family)) {
    v.message =
        "stateset sample '" + std::string(s.name) + "' needs a label named '" + family + "'";
    return false;
  }
  if (s.value != 0 && s.value != 1) {
    v.message = "stateset value of '" + std::string(s.name) + "' must be 0 or 1";
    return false;
  }
  return true;
}

// `allowed`: the sample is a counter's _total or a histogram's _bucket.
bool CheckExemplar(const SampleView& s, bool allowed, Violation& v) {
  if (!allowed) {
    v.message =
        "exemplars are only allowed on counter _total and histogram _bucket samples, "
        "not on '" +
        std::string(s.name) + "'";
    return false;
  }
  std::size_t points = 0;
  for (const model::LabelView& l : s.exemplar.labels)
    points += CodePoints(l.name) + CodePoints(l.value);
  if (points > 128) {
    v.message =
        "exemplar labels have " + std::to_string(points) + " code points; at most 128 are allowed";
    return false;
  }
  return true;
}

}  // namespace

bool Validator::CheckSampleValue(Family& f, std::string_view suffix, const SampleView& s,
                                 Violation& v) {
  bool exemplar_ok = false;
  switch (f.type) {
    case model::MetricType::kCounter:
      if (suffix == "_total") {
        exemplar_ok = true;
        if (!NotNegative(s, "counter", v)) return false;
      }
      break;
    case model::MetricType::kHistogram:
    case model::MetricType::kGaugeHistogram:
      exemplar_ok = suffix == "_bucket";
      if (!CheckHistogramValue(f.name, f.type, suffix, s, v)) return false;
      break;
    case model::MetricType::kSummary:
      if (!CheckSummaryValue(f.name, suffix, s, v)) return false;
      break;
    case model::MetricType::kInfo:
      if (s.value != 1) {
        v.message = "info metric '" + std::string(s.name) + "' must have the value 1";
        return false;
      }
      break;
    case model::MetricType::kStateSet:
      if (!CheckStateSetValue(f.name, s, v)) return false;
      break;
    default:
      break;
  }
  return !s.has_exemplar || CheckExemplar(s, exemplar_ok, v);
}

bool Validator::CheckGroup(Family& f, std::string_view suffix, const SampleView& s,
                           std::uint64_t labels_hash, std::uint64_t line, Violation& v) {
  std::string_view skip;
  if (suffix == "_bucket")
    skip = "le";
  else if (f.type == model::MetricType::kSummary && suffix.empty())
    skip = "quantile";
  else if (f.type == model::MetricType::kStateSet)
    skip = f.name;
  // The label-set hash is a sum, so leaving a label out is a subtraction.
  std::uint64_t group = labels_hash;
  if (!skip.empty()) {
    for (const model::LabelView& l : s.labels) {
      if (l.name == skip && !l.value.empty()) group -= HashLabel(l);
    }
  }
  if (!f.has_current_group || f.current_group != group) {
    ClosePoint(f);
    f.current_group = group;
    f.has_current_group = true;
    f.current_state = &f.groups[group];  // unordered_map references are stable
    if (f.current_state->used && !(f.current_state->timestamped && s.has_timestamp())) {
      v.message = "samples of metric '" + std::string(s.name) +
                  "' with this label set are not contiguous (interleaved with another label set)";
      return false;
    }
  }
  GroupState& g = *f.current_state;
  if (g.used && g.timestamped != s.has_timestamp()) {
    v.message = "metric '" + std::string(s.name) + "' mixes samples with and without timestamps";
    return false;
  }
  if (g.used && s.has_timestamp() && s.timestamp_ms < g.last_ts) {
    v.message = "timestamp of '" + std::string(s.name) + "' goes backwards within its metric (" +
                std::to_string(s.timestamp_ms) + " ms < " + std::to_string(g.last_ts) + " ms)";
    return false;
  }
  g.used = true;
  g.timestamped = s.has_timestamp();
  g.last_ts = s.timestamp_ms;
  return AddToPoint(f, suffix, s, line, v);
}

bool Validator::AddToPoint(Family& f, std::string_view suffix, const SampleView& s,
                           std::uint64_t line, Violation& v) {
  const bool histogram =
      f.type == model::MetricType::kHistogram || f.type == model::MetricType::kGaugeHistogram;
  if (!histogram && f.type != model::MetricType::kSummary) return true;
  PointState& p = f.point;
  if (p.open && s.has_timestamp() && s.timestamp_ms != p.ts) ClosePoint(f);
  if (!p.open) {
    p = PointState{};
    p.open = true;
    p.ts = s.timestamp_ms;
    p.line = line;
  }
  const std::string name(s.name);
  if (suffix == "_bucket") {
    auto le_text = s.Label("le");
    double le = 0;
    if (!le_text) {
      v.message = "histogram bucket '" + name + "' needs an 'le' label";
      return false;
    }
    if (!ParseBound(*le_text, le) || std::isnan(le)) {
      v.message = "le=\"" + std::string(*le_text) + "\" of '" + name +
                  "' is not a number (+Inf must be spelled '+Inf')";
      return false;
    }
    if (p.any_bucket && !(le > p.last_le)) {
      v.message = "histogram buckets of '" + f.name + "' must be in increasing 'le' order";
      return false;
    }
    if (p.any_bucket && s.value < p.last_bucket) {
      v.message = "histogram bucket counts of '" + f.name +
                  "' must not decrease as 'le' grows (buckets are cumulative)";
      return false;
    }
    p.any_bucket = true;
    p.last_le = le;
    p.last_bucket = s.value;
    if (le < 0) p.negative_bucket = true;
    if (std::isinf(le) && le > 0) {
      p.inf_bucket = true;
      p.inf_value = s.value;
    }
    return true;
  }
  bool* seen = nullptr;
  double* slot = nullptr;
  if (suffix == "_count" || suffix == "_gcount") {
    seen = &p.has_count;
    slot = &p.count;
  } else if (suffix == "_sum" || suffix == "_gsum") {
    seen = &p.has_sum;
    slot = &p.sum;
  }
  if (seen != nullptr) {
    if (*seen) {
      v.message = "duplicate '" + name + "' in one " + std::string(model::MetricTypeName(f.type)) +
                  " point";
      return false;
    }
    *seen = true;
    *slot = s.value;
  }
  return true;
}

void Validator::ClosePoint(Family& f) {
  PointState& p = f.point;
  if (!p.open) return;
  p.open = false;
  Violation v;
  v.line = p.line;
  if (f.type == model::MetricType::kHistogram || f.type == model::MetricType::kGaugeHistogram) {
    const bool gauge = f.type == model::MetricType::kGaugeHistogram;
    const std::string count_name = f.name + (gauge ? "_gcount" : "_count");
    const std::string sum_name = f.name + (gauge ? "_gsum" : "_sum");
    if (!p.inf_bucket) {
      v.message = "histogram '" + f.name + "' has no le=\"+Inf\" bucket";
      deferred_.push_back(std::move(v));
      return;
    }
    if (p.has_count && p.count != p.inf_value) {
      v.message = "'" + count_name + "' (" + std::to_string(p.count) +
                  ") differs from the +Inf bucket (" + std::to_string(p.inf_value) + ")";
      deferred_.push_back(std::move(v));
      return;
    }
    if (p.has_sum != p.has_count) {
      v.message = "histogram '" + f.name + "' has " + (p.has_sum ? sum_name : count_name) +
                  " without " + (p.has_sum ? count_name : sum_name);
      deferred_.push_back(std::move(v));
      return;
    }
    if (!gauge && p.negative_bucket && p.has_sum) {
      v.message =
          "histogram '" + f.name + "' has negative buckets, so it must not have " + sum_name;
      deferred_.push_back(std::move(v));
      return;
    }
    if (gauge && p.has_sum && p.sum < 0 && !p.negative_bucket) {
      v.message = "negative " + sum_name + " needs a negative bucket";
      deferred_.push_back(std::move(v));
      return;
    }
  }
}

bool Validator::OnEnd(bool eof_seen, Violation& v) {
  if (current_ >= 0) ClosePoint(families_[static_cast<std::size_t>(current_)]);
  if (format_ == Format::kOpenMetrics && !eof_seen) {
    v.message = "OpenMetrics input must end with '# EOF'";
    return false;
  }
  return true;
}

}  // namespace gpucanary::expfmt
