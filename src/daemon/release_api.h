#pragma once
// The release API of `gpucanary serve` (docs/http-api.md, "Releases"):
//
//   POST /api/v1/releases        one annotation (docs/contracts.md §5, releases/release.h)
//                                201 new, 200 the same again, 409 the same id with
//                                another annotation, 400 bad JSON or field, 413 too big
//   GET  /api/v1/releases        service, from, to (Unix seconds or RFC 3339), limit:
//                                the annotations as received, newest first
//   GET  /api/v1/releases/{id}   one annotation, or 404
//
// Releases live in the metadata database (store::MetaDb), so they survive
// restarts and kill -9. Each new release is handed to the publisher
// (releases/publisher.h: Grafana annotations, OTLP) without waiting for it,
// and shows on /metrics as gpucanary_release_info while it started within
// ReleasesConfig::info_window_ms. Authentication is the daemon's (daemon/auth.h).
//
// Thread-safe.

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "core/clock.h"
#include "core/mutex.h"
#include "daemon/router.h"
#include "daemon/serve_config.h"
#include "net/http_message.h"
#include "releases/publisher.h"
#include "store/meta_db.h"

namespace gpucanary::daemon {

class ReleaseApi {
 public:
  // `meta` and `clock` must outlive this. Starts the publisher's threads.
  ReleaseApi(store::MetaDb& meta, const Clock& clock, ReleasesConfig config,
             releases::PublishConfig publish, std::function<void(std::string_view)> log);

  // Answers the endpoints above (405 with Allow for another method); false
  // (response untouched) for other paths.
  bool Handle(const net::HttpRequest& request, net::HttpResponse& response);

  // gpucanary_release_info{id,service,version,...} 1 and
  // gpucanary_release_started_timestamp_seconds{id} for the releases that
  // started within the info window before the clock's now, then the
  // publisher's counters.
  void AppendMetrics(std::string& out) const;

  const releases::Publisher& publisher() const { return publisher_; }
  releases::Publisher& publisher() { return publisher_; }

  // Called for each new release once it is stored (not for a repeat): the
  // live canary service starts its canary there. Returns the canary id,
  // nullopt when the release names no canary, or why none could start; the
  // answer carries it ("canary" or "canary_error"), the release stays stored.
  using OnRelease =
      std::function<Result<std::optional<std::string>>(const releases::Release& release)>;
  void SetOnRelease(OnRelease on_release) { on_release_ = std::move(on_release); }

 private:
  void Post(const net::HttpRequest& request, net::HttpResponse& response);
  void List(const net::HttpRequest& request, net::HttpResponse& response) const;
  void Get(std::string_view encoded_id, net::HttpResponse& response) const;
  void Log(const std::string& line) const {
    if (log_) log_(line);
  }

  store::MetaDb& meta_;
  const Clock& clock_;
  const ReleasesConfig config_;
  const std::function<void(std::string_view)> log_;
  releases::Publisher publisher_;
  OnRelease on_release_;
  // One POST at a time: "is it new?" and "store it" must not interleave, or
  // two identical POSTs could both answer 201 and publish twice.
  Mutex post_mu_;
  Router router_;  // its routes call the members above
};

}  // namespace gpucanary::daemon
