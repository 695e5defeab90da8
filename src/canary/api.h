#pragma once
// The live canaries over HTTP (docs/http-api.md, docs/canaries.md):
//
//   GET  /api/v1/canaries                 every canary, newest first
//   GET  /api/v1/canaries/{id}            state, hosts, the judge's report, actions taken
//   GET  /api/v1/canaries/{id}/verdict    always 200: {"verdict","decided","score","reason"}
//                                         (an Argo Rollouts Web metric, docs/contracts.md §8)
//   GET  /api/v1/canaries/{id}/verdicts   every committed verdict change, oldest first
//   POST /api/v1/canaries/{id}/stop       ends a running canary ("aborted")
//   POST /api/v1/flagger/{hook}           Flagger webhooks: confirm-promotion, rollback,
//                                         pre-rollout, event
//
// Flagger names the canary in the webhook's metadata (`canary: <release id>`,
// set in the Canary resource). Status codes follow Flagger's semantics: a
// confirm-promotion hook promotes only on 200, so it answers 200 once the
// canary passed and 403 until then; a rollback hook rolls back on 200, so it
// answers 200 once the canary failed and 409 otherwise; pre-rollout and event
// answer 200 and are logged.
//
// Authorization is the daemon's (write methods need the bearer token when
// one is configured). Thread-safe.

#include <functional>
#include <string_view>

#include "canary/manager.h"
#include "net/http_message.h"
#include "store/meta_db.h"

namespace gpucanary::canary {

class CanaryApi {
 public:
  CanaryApi(CanaryManager& manager, store::MetaDb& meta,
            std::function<void(std::string_view)> log = nullptr);

  // Fills `response` for the paths above; false for any other path.
  bool Handle(const net::HttpRequest& request, net::HttpResponse& response) const;

 private:
  void Flagger(std::string_view hook, const net::HttpRequest& request,
               net::HttpResponse& response) const;

  CanaryManager& manager_;
  store::MetaDb& meta_;
  std::function<void(std::string_view)> log_;
};

}  // namespace gpucanary::canary
