#include "daemon/release_api.h"

#include <charconv>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "core/mutex.h"
#include "daemon/api_format.h"
#include "model/family_writer.h"
#include "net/url.h"

namespace gpucanary::daemon {
namespace {

constexpr std::string_view kCollection = "/api/v1/releases";
constexpr int kDefaultLimit = 1000;
constexpr int kMaxLimit = 10000;

void ReplyId(net::HttpResponse& response, int status, std::string_view id) {
  std::string data = R"({"id":)";
  AppendJsonString(data, id);
  data += "}";
  ReplyApiData(response, status, data);
}

// The same annotation: equal as JSON values (key order, spacing and number
// spelling aside: 1764680000 and 1764680000.0 are the same time).
bool SameAnnotation(std::string_view stored, std::string_view received) {
  if (stored == received) return true;
  const auto a = nlohmann::json::parse(stored, nullptr, false);
  const auto b = nlohmann::json::parse(received, nullptr, false);
  return !a.is_discarded() && !b.is_discarded() && a == b;
}

struct ListParams {
  store::ReleaseFilter filter;
  std::optional<std::string> error;
};

ListParams ReadListParams(std::string_view query) {
  ListParams out;
  out.filter.limit = kDefaultLimit;
  auto form = net::ParseForm(query);
  if (!form) {
    out.error = "bad query string: " + form.error().message();
    return out;
  }
  for (const auto& [name, value] : *form) {
    if (name == "service") {
      out.filter.service = value;
    } else if (name == "from" || name == "to") {
      auto t = ParseApiTime(value);
      if (!t) {
        out.error = "invalid parameter \"" + name + "\": cannot parse \"" + value +
                    "\" to a valid timestamp";
        return out;
      }
      (name == "from" ? out.filter.from : out.filter.to) = static_cast<double>(*t) / 1000.0;
    } else if (name == "limit") {
      int n = 0;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc() || p != value.data() + value.size() || n < 1 || n > kMaxLimit) {
        out.error = "invalid parameter \"limit\": expected 1 to " + std::to_string(kMaxLimit) +
                    ", got \"" + value + "\"";
        return out;
      }
      out.filter.limit = n;
    }
  }
  if (out.filter.from && out.filter.to && *out.filter.to < *out.filter.from) {
    out.error = "invalid parameter \"to\": before \"from\"";
  }
  return out;
}

}  // namespace

ReleaseApi::ReleaseApi(store::MetaDb& meta, const Clock& clock, ReleasesConfig config,
                       releases::PublishConfig publish, std::function<void(std::string_view)> log)
    : meta_(meta),
      clock_(clock),
      config_(config),
      log_(std::move(log)),
      publisher_(std::move(publish), log_) {
  const std::string item = std::string(kCollection) + "/{id}";
  router_.Add("GET, HEAD", kCollection,
              [this](const net::HttpRequest& request, std::string_view /*arg*/,
                     net::HttpResponse& response) { List(request, response); });
  router_.Add("POST", kCollection,
              [this](const net::HttpRequest& request, std::string_view /*arg*/,
                     net::HttpResponse& response) { Post(request, response); });
  router_.Add("GET, HEAD", item,
              [this](const net::HttpRequest& /*request*/, std::string_view id,
                     net::HttpResponse& response) { Get(id, response); });
}

bool ReleaseApi::Handle(const net::HttpRequest& request, net::HttpResponse& response) {
  return router_.Handle(request, response);
}

void ReleaseApi::Post(const net::HttpRequest& request, net::HttpResponse& response) {
  if (request.body.size() > config_.max_body_bytes) {
    ReplyApiError(response, 413, "bad_data",
                  "annotation of " + std::to_string(request.body.size()) + " bytes is over the " +
                      std::to_string(config_.max_body_bytes) + "-byte limit (releases.max_body)");
    return;
  }
  auto release = releases::ParseRelease(request.body);
  if (!release) {
    ReplyApiError(response, 400, "bad_data", release.error().message());
    return;
  }
  MutexLock lock(post_mu_);
  auto existing = meta_.GetRelease(release->id);
  if (!existing) {
    ReplyApiError(response, 500, "internal", existing.error().message());
    return;
  }
  if (existing->has_value()) {
    if (SameAnnotation((*existing)->annotation, release->annotation)) {
      ReplyId(response, 200, release->id);
    } else {
      ReplyApiError(response, 409, "conflict",
                    "release '" + release->id + "' exists with a different annotation");
    }
    return;
  }
  const store::ReleaseRecord record{release->id, release->service, release->started_at,
                                    release->annotation};
  if (Status s = meta_.PutRelease(record); !s.ok()) {
    const bool conflict = s.code() == StatusCode::kInvalidArgument;
    ReplyApiError(response, conflict ? 409 : 500, conflict ? "conflict" : "internal", s.message());
    return;
  }
  Log("serve: release '" + release->id + "' announced" +
      (release->service.empty() ? "" : " for " + release->service));
  publisher_.Publish(*release);
  response.headers.emplace_back("Location",
                                std::string(kCollection) + "/" + net::UrlEncode(release->id));
  if (!on_release_) {
    ReplyId(response, 201, release->id);
    return;
  }
  std::string data = R"({"id":)";
  AppendJsonString(data, release->id);
  Result<std::optional<std::string>> canary = on_release_(*release);
  if (!canary) {
    Log("serve: release '" + release->id + "': no canary: " + canary.error().message());
    data += R"(,"canary":null,"canary_error":)";
    AppendJsonString(data, canary.error().message());
  } else if (canary->has_value()) {
    data += R"(,"canary":)";
    AppendJsonString(data, **canary);
  } else {
    data += R"(,"canary":null)";
  }
  ReplyApiData(response, 201, data + "}");
}

void ReleaseApi::List(const net::HttpRequest& request, net::HttpResponse& response) const {
  const ListParams params = ReadListParams(request.query);
  if (params.error) {
    ReplyApiError(response, 400, "bad_data", *params.error);
    return;
  }
  auto list = meta_.ListReleases(params.filter);
  if (!list) {
    ReplyApiError(response, 500, "internal", list.error().message());
    return;
  }
  std::string data = "[";
  for (std::size_t i = 0; i < list->size(); ++i) {
    if (i > 0) data += ',';
    data += (*list)[i].annotation;
  }
  data += ']';
  ReplyApiData(response, 200, data);
}

void ReleaseApi::Get(std::string_view encoded_id, net::HttpResponse& response) const {
  auto id = net::PathDecode(encoded_id);
  if (!id) {
    ReplyApiError(response, 400, "bad_data", "bad release id: " + id.error().message());
    return;
  }
  auto release = meta_.GetRelease(*id);
  if (!release) {
    ReplyApiError(response, 500, "internal", release.error().message());
    return;
  }
  if (!release->has_value()) {
    ReplyApiError(response, 404, "not_found", "release '" + *id + "' not found");
    return;
  }
  ReplyApiData(response, 200, (*release)->annotation);
}

void ReleaseApi::AppendMetrics(std::string& out) const {
  store::ReleaseFilter filter;
  filter.from = static_cast<double>(clock_.NowMs() - config_.info_window_ms) / 1000.0;
  filter.limit = kMaxLimit;
  auto list = meta_.ListReleases(filter);
  if (!list) Log("serve: /metrics: releases: " + list.error().message());
  std::vector<releases::Release> recent;
  if (list) {
    for (const store::ReleaseRecord& record : *list) {
      if (auto r = releases::ParseRelease(record.annotation)) recent.push_back(std::move(*r));
    }
  }
  model::FamilyWriter metrics(out);
  metrics.Family("gpucanary_release_info", model::MetricType::kGauge,
                 "A release announced to gpucanary that started within releases.info_window; "
                 "its fields as labels.");
  std::vector<model::LabelView> labels;
  for (const releases::Release& r : recent) {
    // An empty field is no label (Prometheus treats the two alike); the id
    // never is empty, so there is always one.
    labels.clear();
    for (const releases::StringField& f : releases::StringFields()) {
      if (f.name == "previous" || (r.*f.member).empty()) continue;
      labels.push_back({f.name, r.*f.member});
    }
    metrics.Sample(labels, "1");
  }
  metrics.Family("gpucanary_release_started_timestamp_seconds", model::MetricType::kGauge,
                 "When a release started (Unix seconds).");
  for (const releases::Release& r : recent) {
    std::string started;
    AppendPromValue(started, r.started_at);
    metrics.Sample({{"id", r.id}}, started);
  }
  publisher_.AppendMetrics(out);
}

}  // namespace gpucanary::daemon
