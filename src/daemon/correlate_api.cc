#include "daemon/correlate_api.h"

#include <charconv>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "analysis/correlate/correlate.h"
#include "analysis/correlate/sources.h"
#include "daemon/query_api.h"
#include "net/url.h"
#include "releases/release.h"

namespace gpucanary::daemon {
namespace {

constexpr std::string_view kPath = "/api/v1/correlate";

void Fail(net::HttpResponse& response, int status, std::string_view type,
          const std::string& message) {
  response.status = status;
  response.content_type = "application/json";
  response.body = R"({"status":"error","errorType":")";
  response.body += type;
  response.body += R"(","error":)";
  AppendJsonString(response.body, message);
  response.body += "}";
}

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

}  // namespace

bool CorrelateApi::Handle(const net::HttpRequest& request, net::HttpResponse& response) const {
  if (request.path != kPath) return false;
  if (request.method != "GET" && request.method != "HEAD") {
    response.status = 405;
    response.headers.emplace_back("Allow", "GET, HEAD");
    response.content_type = "text/plain";
    response.body = "method not allowed\n";
    return true;
  }
  Params params = ReadParams(request.query, clock_.NowMs());
  if (params.error) {
    Fail(response, 400, "bad_data", *params.error);
    return true;
  }

  store::ReleaseFilter filter;
  filter.from = static_cast<double>(params.from_s - kRolloutLookbackS);
  filter.to = static_cast<double>(params.to_s);
  filter.limit = 10000;
  Result<std::vector<store::ReleaseRecord>> records = meta_.ListReleases(filter);
  if (!records) {
    Fail(response, 500, "internal", "releases: " + records.error().message());
    return true;
  }
  std::vector<releases::Release> log;
  for (const store::ReleaseRecord& r : *records) {
    // Stored annotations were checked on the way in; one that no longer
    // parses (a newer daemon's field) is skipped rather than failing all.
    if (Result<releases::Release> parsed = releases::ParseRelease(r.annotation)) {
      log.push_back(std::move(*parsed));
    }
  }

  if (params.prometheus && prometheus_.url.empty()) {
    Fail(response, 400, "bad_data",
         "source=prometheus: no Prometheus configured (canary.history_prometheus.url)");
    return true;
  }
  Result<std::unique_ptr<analysis::Replay>> replay =
      params.prometheus
          ? analysis::correlate::FetchPrometheusReplay(prometheus_.url, prometheus_.client,
                                                       params.from_s, params.to_s)
          : analysis::correlate::OpenStoreCorrelationReplay(store_, params.from_s, params.to_s);
  if (!replay) {
    if (params.prometheus) {
      Fail(response, 502, "unavailable", replay.error().message());
    } else {
      Fail(response, 500, "internal", replay.error().message());
    }
    return true;
  }
  Result<analysis::correlate::CorrelateReport> report =
      analysis::correlate::Correlate(**replay, log, params.options);
  if (!report) {
    Fail(response, 500, "internal", report.error().message());
    return true;
  }
  std::string json = analysis::correlate::CorrelateReportJson(*report);
  if (!json.empty() && json.back() == '\n') json.pop_back();
  response.content_type = "application/json";
  response.body = R"({"status":"success","data":)" + json + "}";
  return true;
}

}  // namespace gpucanary::daemon
