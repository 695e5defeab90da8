#include "analysis/correlate/sources.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "analysis/correlate/correlate.h"
#include "analysis/live/series_source.h"
#include "analysis/live/store_source.h"
#include "dcgm/fields.h"
#include "model/labels.h"
#include "model/matcher.h"
#include "vocab/service_measures.h"

namespace gpucanary::analysis::correlate {
namespace {

// Seconds per store query: 16 s slices (a live canary's) cost 2.31 s on
// two hours of 128 GPUs at 15 s, 600 s slices 0.71 s (each query matches
// every series and decodes each chunk it touches whole; chunks hold an hour
// of 15 s scrapes). Memory: the slice's samples, 600 per series at 1 s.
constexpr std::int64_t kStoreSliceS = 600;

// {__name__=~"DCGM_FI_DEV_SM_CLOCK|..."}: the series the correlation reads.
Result<model::Matcher> NameMatcher() {
  return model::Matcher::Make(model::Matcher::Type::kRegex, "__name__",
                              model::ExactAlternation(CorrelateInputNames()));
}

// Every series of `name` folded by FoldOf into buckets of `step_s` over
// [start_s, end_s) (start_s a multiple of step_s), each point at its
// bucket's last millisecond, with its __name__ put back (the *_over_time
// functions drop it).
Result<std::vector<promql::Series>> FetchFolded(const std::string& url,
                                                const promql::ClientOptions& client,
                                                const std::string& name, std::int64_t start_s,
                                                std::int64_t end_s, std::int64_t step_s) {
  std::string query(FoldOf(name));
  query += "_over_time(";
  query += name;
  query += '[';
  query += std::to_string(step_s);
  query += "s])";
  // Evaluated at a bucket's last millisecond, [step] covers exactly the
  // bucket: Prometheus's range is left-open, (t - step, t].
  Result<promql::QueryResult> r = promql::QueryRange(url, query, (start_s + step_s) * 1000 - 1,
                                                     end_s * 1000 - 1, step_s * 1000, client);
  if (!r) return Error(r.error());
  for (promql::Series& s : r->series) {
    std::erase_if(s.labels, [](const model::Label& l) { return l.name == "__name__"; });
    s.labels.push_back({"__name__", name});
    model::SortLabels(s.labels);
  }
  return std::move(r->series);
}

}  // namespace

std::string_view FoldOf(std::string_view name) {
  const std::string_view canonical = dcgm::CanonicalFieldName(name);
  if (canonical == "DCGM_FI_DEV_XID_ERRORS") return "max";
  if (canonical == "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS") return "last";
  const dcgm::FieldInfo* field = dcgm::FindFieldByName(canonical);
  if (field != nullptr && field->kind == dcgm::ValueKind::kCounter) return "last";
  for (const std::string_view suffix : {"_total", "_sum", "_count", "_bucket"}) {
    if (name.ends_with(suffix)) return "last";
  }
  if (vocab::IsServiceCounter(name)) return "last";
  return "avg";
}

std::int64_t FoldedResolution(std::int64_t from_s, std::int64_t to_s, std::int64_t resolution_s) {
  constexpr std::int64_t kWidths[] = {60, 120, 300, 600, 900, 1800, 3600};
  const std::int64_t range = std::max<std::int64_t>(1, to_s - from_s);
  for (const std::int64_t w : kWidths) {
    if (w >= resolution_s && range <= w * kMaxFoldedBuckets) return w;
  }
  return std::max<std::int64_t>(kWidths[std::size(kWidths) - 1], resolution_s);
}

Result<PrometheusRead> FetchPrometheusReplay(const std::string& url,
                                             const promql::ClientOptions& client,
                                             std::int64_t from_s, std::int64_t to_s,
                                             std::int64_t resolution_s) {
  PrometheusRead out;
  if (to_s - from_s <= kRawMaxS) {
    Result<model::Matcher> names = NameMatcher();
    if (!names) return Error(names.error());
    std::string selector = "{";
    selector += names->ToString();
    selector += '}';
    Result<promql::QueryResult> fetched =
        promql::QueryRaw(url, selector, from_s * 1000, to_s * 1000 - 1, client);
    if (!fetched) return Error(fetched.error());
    out.queries = 1;
    Result<std::unique_ptr<Replay>> replay =
        OpenSeriesReplay(std::move(fetched->series), url, from_s, to_s);
    if (!replay) return Error(replay.error());
    out.replay = std::move(*replay);
    return out;
  }
  // One query per name: the *_over_time functions drop __name__, so a
  // regex over the names would leave series that cannot be told apart.
  const std::int64_t step = FoldedResolution(from_s, to_s, resolution_s);
  const std::int64_t start = from_s - (((from_s % step) + step) % step);
  std::vector<promql::Series> all;
  for (const std::string& name : CorrelateInputNames()) {
    Result<std::vector<promql::Series>> folded = FetchFolded(url, client, name, start, to_s, step);
    if (!folded) return Error(folded.error());
    ++out.queries;
    for (promql::Series& s : *folded) all.push_back(std::move(s));
  }
  std::sort(all.begin(), all.end(),
            [](const promql::Series& a, const promql::Series& b) { return a.labels < b.labels; });
  Result<std::unique_ptr<Replay>> replay = OpenSeriesReplay(std::move(all), url, start, to_s);
  if (!replay) return Error(replay.error());
  out.replay = std::move(*replay);
  out.resolution_s = step;
  return out;
}

Result<std::unique_ptr<Replay>> OpenStoreCorrelationReplay(const store::Store& store,
                                                           std::int64_t from_s, std::int64_t to_s) {
  Result<model::Matcher> names = NameMatcher();
  if (!names) return Error(names.error());
  std::vector<LiveTickSource*> sources;
  auto replay =
      OpenStoreReplay(store, {{"the store", Role::kBaseline, {*names}, nullptr}}, from_s, &sources);
  if (!replay) return Error(replay.error());
  for (LiveTickSource* s : sources) {
    // The one input above reads the store.
    static_cast<StoreTickSource*>(s)->SetSliceSeconds(kStoreSliceS);
    s->SetReadyThrough(to_s - 1);
    s->Close();
  }
  return replay;
}

}  // namespace gpucanary::analysis::correlate
