#include "daemon/correlate_api.h"

#include <charconv>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/correlate/correlate.h"
#include "analysis/correlate/sources.h"
#include "daemon/api_format.h"
#include "net/url.h"
#include "releases/release.h"

namespace gpucanary::daemon {
namespace {

constexpr std::string_view kPath = "/api/v1/correlate";

struct Params {
  std::int64_t from_s = 0;
  std::int64_t to_s = 0;
  analysis::correlate::CorrelateOptions options;
  bool prometheus = false;
  std::optional<std::string> error;
};

Params ReadParams(std::string_view query, std::int64_t now_ms) {
  Params out;
  std::optional<std::int64_t> from_ms;
  std::optional<std::int64_t> to_ms;
  auto form = net::ParseForm(query);
  if (!form) {
    out.error = "bad query string: " + form.error().message();
    return out;
  }
  for (const auto& [name, value] : *form) {
    if (name == "from" || name == "to") {
      std::optional<std::int64_t> t = ParseApiTime(value);
      if (!t) {
        out.error = "invalid parameter \"" + name + "\": cannot parse \"" + value +
                    "\" to a valid timestamp";
        return out;
      }
      (name == "from" ? from_ms : to_ms) = *t;
    } else if (name == "resolution") {
      std::int64_t s = 0;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), s);
      if (ec != std::errc() || p != value.data() + value.size() || s < 1 || s > 86400) {
        out.error =
            "invalid parameter \"resolution\": expected 1 to 86400 seconds, got \"" + value + "\"";
        return out;
      }
      out.options.resolution_s = s;
    } else if (name == "source") {
      if (value != "store" && value != "prometheus") {
        out.error =
            "invalid parameter \"source\": expected store or prometheus, got \"" + value + "\"";
        return out;
      }
      out.prometheus = value == "prometheus";
    } else if (name == "min_score") {
      double x = 0;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), x);
      if (ec != std::errc() || p != value.data() + value.size() || !(x >= 0 && x <= 1)) {
        out.error = "invalid parameter \"min_score\": expected 0 to 1, got \"" + value + "\"";
        return out;
      }
      out.options.min_score = x;
    }
  }
  out.to_s = (to_ms.value_or(now_ms) + 999) / 1000;  // exclusive end, whole seconds
  out.from_s = from_ms ? *from_ms / 1000 : out.to_s - CorrelateApi::kDefaultRangeS;
  if (out.to_s <= out.from_s) {
    out.error = "invalid parameter \"to\": not after \"from\"";
  } else if (out.to_s - out.from_s > CorrelateApi::kMaxRangeS) {
    out.error = "range too long: at most " + std::to_string(CorrelateApi::kMaxRangeS / 86400) +
                " days between \"from\" and \"to\"";
  } else if (out.prometheus && out.to_s - out.from_s > CorrelateApi::kMaxPrometheusRangeS) {
    out.error = "range too long: at most 24 hours between \"from\" and \"to\" from a Prometheus";
  }
  out.options.from_s = out.from_s;
  out.options.to_s = out.to_s;
  return out;
}

// The releases that may explain [from_s, to_s): those started from
// kRolloutLookbackS before it up to its end.
Result<std::vector<releases::Release>> ReleasesAround(store::MetaDb& meta, const Params& params) {
  store::ReleaseFilter filter;
  filter.from = static_cast<double>(params.from_s - CorrelateApi::kRolloutLookbackS);
  filter.to = static_cast<double>(params.to_s);
  filter.limit = 10000;
  Result<std::vector<store::ReleaseRecord>> records = meta.ListReleases(filter);
  if (!records) return Error(records.error());
  std::vector<releases::Release> log;
  for (const store::ReleaseRecord& r : *records) {
    // Stored annotations were checked on the way in; one that no longer
    // parses (a newer daemon's field) is skipped rather than failing all.
    if (Result<releases::Release> parsed = releases::ParseRelease(r.annotation)) {
      log.push_back(std::move(*parsed));
    }
  }
  return log;
}

}  // namespace

CorrelateApi::CorrelateApi(const store::Store& store, store::MetaDb& meta, const Clock& clock,
                           canary::HistoryPrometheusOptions prometheus)
    : store_(store), meta_(meta), clock_(clock), prometheus_(std::move(prometheus)) {
  router_.Add("GET, HEAD", kPath,
              [this](const net::HttpRequest& request, std::string_view /*arg*/,
                     net::HttpResponse& response) { Correlate(request, response); });
}

bool CorrelateApi::Handle(const net::HttpRequest& request, net::HttpResponse& response) const {
  return router_.Handle(request, response);
}

void CorrelateApi::Correlate(const net::HttpRequest& request, net::HttpResponse& response) const {
  Params params = ReadParams(request.query, clock_.NowMs());
  if (params.error) {
    ReplyApiError(response, 400, "bad_data", *params.error);
    return;
  }
  Result<std::vector<releases::Release>> log = ReleasesAround(meta_, params);
  if (!log) {
    ReplyApiError(response, 500, "internal", "releases: " + log.error().message());
    return;
  }
  if (params.prometheus && prometheus_.url.empty()) {
    ReplyApiError(response, 400, "bad_data",
                  "source=prometheus: no Prometheus configured (canary.history_prometheus.url)");
    return;
  }
  analysis::correlate::CorrelateOptions options = params.options;
  std::unique_ptr<analysis::Replay> replay;
  if (params.prometheus) {
    // Raw up to 3 h, folded into buckets on the server beyond (sources.h).
    Result<analysis::correlate::PrometheusRead> read = analysis::correlate::FetchPrometheusReplay(
        prometheus_.url, prometheus_.client, params.from_s, params.to_s, options.resolution_s);
    if (!read) {
      ReplyApiError(response, 502, "unavailable", read.error().message());
      return;
    }
    if (read->resolution_s > 0) options.resolution_s = read->resolution_s;
    replay = std::move(read->replay);
  } else {
    Result<std::unique_ptr<analysis::Replay>> opened =
        analysis::correlate::OpenStoreCorrelationReplay(store_, params.from_s, params.to_s);
    if (!opened) {
      ReplyApiError(response, 500, "internal", opened.error().message());
      return;
    }
    replay = std::move(*opened);
  }
  Result<analysis::correlate::CorrelateReport> report =
      analysis::correlate::Correlate(*replay, *log, options);
  if (!report) {
    ReplyApiError(response, 500, "internal", report.error().message());
    return;
  }
  std::string json = analysis::correlate::CorrelateReportJson(*report);
  if (!json.empty() && json.back() == '\n') json.pop_back();
  ReplyApiData(response, 200, json);
}

}  // namespace gpucanary::daemon
