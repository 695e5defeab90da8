#include "eval/cpd/tcpd_metrics.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

namespace gpucanary::eval::cpd::tcpd {
namespace {

using Json = nlohmann::json;

// metrics.py works on Python sets that always hold 0: sorted, unique, with 0.
std::vector<std::size_t> WithZero(std::span<const std::size_t> points) {
  std::vector<std::size_t> out(points.begin(), points.end());
  out.push_back(0);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::size_t Distance(std::size_t a, std::size_t b) { return a > b ? a - b : b - a; }

// Half-open segment [begin, end) of a partition of [0, n_obs).
struct Interval {
  std::size_t begin = 0;
  std::size_t end = 0;
};

// metrics.py's `partition_from_cps`: the change points strictly inside
// (0, n_obs) cut [0, n_obs); others are ignored.
std::vector<Interval> Partition(std::span<const std::size_t> cps, std::size_t n_obs) {
  std::vector<std::size_t> cuts;
  for (std::size_t c : cps) {
    if (c > 0 && c < n_obs) cuts.push_back(c);
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  std::vector<Interval> out;
  std::size_t begin = 0;
  for (std::size_t c : cuts) {
    out.push_back({begin, c});
    begin = c;
  }
  out.push_back({begin, n_obs});
  return out;
}

// Jaccard index of two intervals.
double Overlap(const Interval& a, const Interval& b) {
  const std::size_t lo = std::max(a.begin, b.begin);
  const std::size_t hi = std::min(a.end, b.end);
  const std::size_t inter = hi > lo ? hi - lo : 0;
  const std::size_t uni = (a.end - a.begin) + (b.end - b.begin) - inter;
  return uni == 0 ? 0.0 : static_cast<double>(inter) / static_cast<double>(uni);
}

// metrics.py's `cover_single(Sprime = predicted, S = truth)`. Both partitions
// are sorted, so the predicted segments a true segment overlaps are a
// contiguous run: one sweep, O(|truth| + |predicted|).
double CoverSingle(std::span<const Interval> predicted, std::span<const Interval> truth,
                   std::size_t n_obs) {
  double sum = 0;
  std::size_t first = 0;  // first predicted segment that may overlap the current true one
  for (const Interval& r : truth) {
    while (first < predicted.size() && predicted[first].end <= r.begin) ++first;
    double best = 0;
    for (std::size_t j = first; j < predicted.size() && predicted[j].begin < r.end; ++j) {
      best = std::max(best, Overlap(r, predicted[j]));
    }
    sum += static_cast<double>(r.end - r.begin) * best;
  }
  return sum / static_cast<double>(n_obs);
}

}  // namespace

std::size_t TruePositives(std::span<const std::size_t> truth,
                          std::span<const std::size_t> predictions, std::size_t margin) {
  std::vector<std::size_t> t(truth.begin(), truth.end());
  std::sort(t.begin(), t.end());
  t.erase(std::unique(t.begin(), t.end()), t.end());
  std::vector<std::size_t> x(predictions.begin(), predictions.end());
  std::sort(x.begin(), x.end());
  x.erase(std::unique(x.begin(), x.end()), x.end());
  std::vector<bool> taken(x.size(), false);
  std::size_t matched = 0;
  for (std::size_t tau : t) {
    // Scanning x in ascending order with a strict "<" keeps the smaller
    // index on a tie, as metrics.py's sort of (distance, x) pairs does.
    std::size_t best = x.size();
    for (std::size_t j = 0; j < x.size(); ++j) {
      if (taken[j] || Distance(tau, x[j]) > margin) continue;
      if (best == x.size() || Distance(tau, x[j]) < Distance(tau, x[best])) best = j;
    }
    if (best == x.size()) continue;
    taken[best] = true;
    ++matched;
  }
  return matched;
}

FMeasureResult FMeasure(std::span<const ChangePoints> annotators,
                        std::span<const std::size_t> predictions, std::size_t margin) {
  const std::vector<std::size_t> x = WithZero(predictions);
  std::vector<std::size_t> all;
  double recall_sum = 0;
  for (const ChangePoints& a : annotators) {
    const std::vector<std::size_t> tk = WithZero(a);
    all.insert(all.end(), tk.begin(), tk.end());
    recall_sum +=
        static_cast<double>(TruePositives(tk, x, margin)) / static_cast<double>(tk.size());
  }
  const std::vector<std::size_t> union_set = WithZero(all);
  FMeasureResult r;
  r.precision =
      static_cast<double>(TruePositives(union_set, x, margin)) / static_cast<double>(x.size());
  r.recall = annotators.empty() ? 1.0 : recall_sum / static_cast<double>(annotators.size());
  // F = P R / (alpha R + (1 - alpha) P) with alpha = 1/2. P and R are both
  // positive: index 0 is in every set and always matches itself.
  r.f1 = 2 * r.precision * r.recall / (r.precision + r.recall);
  return r;
}

double Covering(std::span<const ChangePoints> annotators, std::span<const std::size_t> predictions,
                std::size_t n_obs) {
  if (n_obs == 0 || annotators.empty()) return 0;
  const std::vector<Interval> predicted = Partition(predictions, n_obs);
  double sum = 0;
  for (const ChangePoints& a : annotators) {
    sum += CoverSingle(predicted, Partition(a, n_obs), n_obs);
  }
  return sum / static_cast<double>(annotators.size());
}

// ---------------------------------------------------------------------------
// Loading. nlohmann's accessors throw on a type mismatch, so every field is
// checked before it is read: bad files are errors, never exceptions.

namespace {

Result<Json> ReadJson(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return Error(StatusCode::kIoError, "cannot open " + file.string());
  std::ostringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  Json j = Json::parse(s.begin(), s.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Error(StatusCode::kParseError, file.string() + ": not valid JSON");
  return j;
}

Status BadField(const std::filesystem::path& file, std::string_view field, std::string_view why) {
  return Status(StatusCode::kParseError,
                file.string() + ": field \"" + std::string(field) + "\": " + std::string(why));
}

// A JSON array of non-negative integers (indices).
Result<ChangePoints> ReadIndices(const Json& j, const std::filesystem::path& file,
                                 std::string_view field) {
  if (!j.is_array()) return Error(BadField(file, field, "not an array"));
  ChangePoints out;
  for (const Json& v : j) {
    if (!v.is_number_unsigned()) return Error(BadField(file, field, "not a 0-based index"));
    out.push_back(v.get<std::size_t>());
  }
  return out;
}

// A JSON array of numbers; null is a missing value (NaN).
Result<std::vector<double>> ReadValues(const Json& j, const std::filesystem::path& file,
                                       std::string_view field) {
  if (!j.is_array()) return Error(BadField(file, field, "not an array"));
  std::vector<double> out;
  out.reserve(j.size());
  for (const Json& v : j) {
    if (v.is_null()) {
      out.push_back(std::numeric_limits<double>::quiet_NaN());
    } else if (v.is_number()) {
      out.push_back(v.get<double>());
    } else {
      return Error(BadField(file, field, "not a number or null"));
    }
  }
  return out;
}

// One datasets/<name>.json file, without annotations.
Result<LabelledSeries> ReadSeries(const std::filesystem::path& file) {
  auto j = ReadJson(file);
  if (!j) return Error(j.error());
  const Json& doc = *j;
  if (!doc.is_object()) return Error(BadField(file, "(root)", "not an object"));
  LabelledSeries s;
  const auto name = doc.find("name");
  if (name == doc.end() || !name->is_string()) return Error(BadField(file, "name", "missing"));
  s.name = name->get<std::string>();
  const auto n_obs = doc.find("n_obs");
  if (n_obs == doc.end() || !n_obs->is_number_unsigned()) {
    return Error(BadField(file, "n_obs", "missing or not a count"));
  }
  s.n_obs = n_obs->get<std::size_t>();
  const auto series = doc.find("series");
  if (series == doc.end() || !series->is_array() || series->empty()) {
    return Error(BadField(file, "series", "missing or empty"));
  }
  for (const Json& dim : *series) {
    if (!dim.is_object() || !dim.contains("raw")) return Error(BadField(file, "series", "no raw"));
    auto values = ReadValues(dim["raw"], file, "series[].raw");
    if (!values) return Error(values.error());
    if (values->size() != s.n_obs) return Error(BadField(file, "series[].raw", "length != n_obs"));
    s.dims.push_back(std::move(*values));
  }
  return s;
}

using AnnotationMap = std::map<std::string, std::vector<ChangePoints>, std::less<>>;

Result<AnnotationMap> ReadAnnotations(const std::filesystem::path& file) {
  auto j = ReadJson(file);
  if (!j) return Error(j.error());
  if (!j->is_object()) return Error(BadField(file, "(root)", "not an object"));
  AnnotationMap out;
  for (const auto& [name, by_annotator] : j->items()) {
    if (!by_annotator.is_object()) return Error(BadField(file, name, "not an object"));
    std::vector<ChangePoints>& list = out[name];
    for (const auto& [id, cps] : by_annotator.items()) {
      auto points = ReadIndices(cps, file, name + "." + id);
      if (!points) return Error(points.error());
      list.push_back(std::move(*points));
    }
  }
  return out;
}

}  // namespace

Result<std::vector<LabelledSeries>> LoadDataset(const std::filesystem::path& dir) {
  auto annotations = ReadAnnotations(dir / "annotations.json");
  if (!annotations) return Error(annotations.error());
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  // The error_code overloads throughout: directory iteration never throws.
  std::filesystem::directory_iterator entry(dir / "datasets", ec);
  for (; !ec && entry != std::filesystem::directory_iterator(); entry.increment(ec)) {
    if (entry->path().extension() == ".json") files.push_back(entry->path());
  }
  if (ec) return Error(StatusCode::kIoError, (dir / "datasets").string() + ": " + ec.message());
  std::sort(files.begin(), files.end());
  std::vector<LabelledSeries> out;
  for (const auto& file : files) {
    auto s = ReadSeries(file);
    if (!s) return Error(s.error());
    const auto it = annotations->find(s->name);
    if (it == annotations->end()) {
      return Error(StatusCode::kNotFound, "no annotations for series " + s->name);
    }
    s->annotators = it->second;
    out.push_back(std::move(*s));
  }
  return out;
}

ScoreTable ScoreUnivariate(std::span<const LabelledSeries> data, const Detector& detector) {
  ScoreTable table;
  for (const LabelledSeries& s : data) {
    if (s.dims.size() != 1) continue;
    ScoreRow row;
    row.name = s.name;
    row.n_obs = s.n_obs;
    const std::vector<std::size_t> cps = detector(s.dims[0]);
    row.changes = cps.size();
    row.f1 = FMeasure(s.annotators, cps).f1;
    row.cover = Covering(s.annotators, cps, s.n_obs);
    row.zero_f1 = FMeasure(s.annotators, {}).f1;
    row.zero_cover = Covering(s.annotators, {}, s.n_obs);
    table.mean_f1 += row.f1;
    table.mean_cover += row.cover;
    table.zero_mean_f1 += row.zero_f1;
    table.zero_mean_cover += row.zero_cover;
    table.rows.push_back(std::move(row));
  }
  if (!table.rows.empty()) {
    const auto count = static_cast<double>(table.rows.size());
    table.mean_f1 /= count;
    table.mean_cover /= count;
    table.zero_mean_f1 /= count;
    table.zero_mean_cover /= count;
  }
  return table;
}

std::string FormatMarkdown(const ScoreTable& table) {
  std::string out =
      "| series | n | changes | F1 | Cover | zero F1 | zero Cover |\n"
      "| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  char line[256];
  for (const ScoreRow& r : table.rows) {
    std::snprintf(line, sizeof line, "| %s | %zu | %zu | %.4f | %.4f | %.4f | %.4f |\n",
                  r.name.c_str(), r.n_obs, r.changes, r.f1, r.cover, r.zero_f1, r.zero_cover);
    out += line;
  }
  std::snprintf(line, sizeof line,
                "| **mean (%zu series)** | | | **%.4f** | **%.4f** | %.4f | %.4f |\n",
                table.rows.size(), table.mean_f1, table.mean_cover, table.zero_mean_f1,
                table.zero_mean_cover);
  out += line;
  return out;
}

}  // namespace gpucanary::eval::cpd::tcpd
