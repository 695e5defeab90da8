#include "analysis/correlate/sources.h"

#include <utility>
#include <vector>

#include "analysis/correlate/correlate.h"
#include "analysis/live/series_source.h"
#include "analysis/live/store_source.h"
#include "model/matcher.h"

namespace gpucanary::analysis::correlate {
namespace {

// {__name__=~"DCGM_FI_DEV_SM_CLOCK|..."}: the series the correlation reads.
Result<model::Matcher> NameMatcher() {
  return model::Matcher::Make(model::Matcher::Type::kRegex, "__name__",
                              model::ExactAlternation(CorrelateInputNames()));
}

}  // namespace

Result<std::unique_ptr<Replay>> FetchPrometheusReplay(const std::string& url,
                                                      const promql::ClientOptions& client,
                                                      std::int64_t from_s, std::int64_t to_s) {
  Result<model::Matcher> names = NameMatcher();
  if (!names) return Error(names.error());
  Result<promql::QueryResult> fetched =
      promql::QueryRaw(url, "{" + names->ToString() + "}", from_s * 1000, to_s * 1000 - 1, client);
  if (!fetched) return Error(fetched.error());
  return OpenSeriesReplay(std::move(fetched->series), url, from_s, to_s);
}

Result<std::unique_ptr<Replay>> OpenStoreCorrelationReplay(const store::Store& store,
                                                           std::int64_t from_s, std::int64_t to_s) {
  Result<model::Matcher> names = NameMatcher();
  if (!names) return Error(names.error());
  std::vector<StoreTickSource*> sources;
  auto replay =
      OpenStoreReplay(store, {{"the store", Role::kBaseline, {*names}, nullptr}}, from_s, &sources);
  if (!replay) return Error(replay.error());
  for (StoreTickSource* s : sources) {
    s->SetReadyThrough(to_s - 1);
    s->Close();
  }
  return replay;
}

}  // namespace gpucanary::analysis::correlate
