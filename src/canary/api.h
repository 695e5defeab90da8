#pragma once
// The live canaries over HTTP (docs/http-api.md, docs/canaries.md):
//
//   GET  /api/v1/canaries                 every canary, newest first
//   GET  /api/v1/canaries/{id}            state, hosts, the judge's report, actions taken
//   GET  /api/v1/canaries/{id}/verdict    always 200: {"verdict","decided","score","reason"}
//                                         (an Argo Rollouts Web metric, docs/contracts.md §8)
//   GET  /api/v1/canaries/{id}/verdicts   every committed verdict change, oldest first
//   POST /api/v1/canaries/{id}/stop       ends a running canary ("aborted")
//   POST /api/v1/flagger/{hook}           Flagger webhooks: confirm-rollout, pre-rollout,
//                                         rollout, confirm-traffic-increase,
//                                         confirm-promotion, post-rollout, rollback, event
//
// Flagger's hooks are answered as Flagger's scheduler reads a status
// (canary/flagger.h): the release is found from the payload (metadata
// `release`/`canary`, else the Canary's namespace, name and checksum
// against the release annotations' `namespace` and `workload`/`service`);
// gates hold while a verdict may still come, analysis hooks fail a check
// only for a failed release, `rollback` answers 200 for a failed one; an
// inconclusive end follows the metadata's `on_inconclusive` (rollback by
// default). docs/canaries.md has the table.
//
// Authorization is the daemon's (write methods need the bearer token when
// one is configured). Thread-safe.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "canary/flagger.h"
#include "canary/manager.h"
#include "net/http_message.h"
#include "store/meta_db.h"

namespace gpucanary::canary {

class CanaryApi {
 public:
  CanaryApi(CanaryManager& manager, store::MetaDb& meta,
            std::function<void(std::string_view)> log = nullptr);
  ~CanaryApi();
  CanaryApi(const CanaryApi&) = delete;
  CanaryApi& operator=(const CanaryApi&) = delete;

  // Fills `response` for the paths above; false for any other path.
  bool Handle(const net::HttpRequest& request, net::HttpResponse& response) const;

 private:
  void Flagger(std::string_view hook, const net::HttpRequest& request,
               net::HttpResponse& response) const;
  std::optional<CanaryView> CanaryOf(const std::string& id) const;

  CanaryManager& manager_;
  store::MetaDb& meta_;
  std::function<void(std::string_view)> log_;
  std::unique_ptr<FlaggerReleases> flagger_releases_;  // thread-safe: Handle is const
};

}  // namespace gpucanary::canary
