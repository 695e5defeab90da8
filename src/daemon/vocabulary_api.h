#pragma once
// The vocabulary endpoint of `gpucanary serve` (docs/http-api.md,
// "Vocabulary"): the words gpucanary's answers are made of (vocab/vocab.h),
// each with its description for people, so the dashboard and other clients
// read them from the daemon instead of keeping copies.
//
//   GET /api/v1/vocabulary
//   200 {"status":"success","data":{
//         "cause_kinds":[{"name":"thermal_throttle","description":"..."}, ...],
//         "scopes":[...], "verdicts":[...], "canary_states":[...]}}
//   405 (text/plain, Allow: GET, HEAD) for another method
//
// Every list holds every value of its enum once, in enum order.
//
// Thread-safe: the answer is built once, at construction.

#include <string>

#include "daemon/router.h"
#include "net/http_message.h"

namespace gpucanary::daemon {

// The `data` of the answer above, as JSON text.
std::string VocabularyJson();

class VocabularyApi {
 public:
  VocabularyApi();
  VocabularyApi(const VocabularyApi&) = delete;
  VocabularyApi& operator=(const VocabularyApi&) = delete;

  // Answers GET /api/v1/vocabulary; false (response untouched) for other
  // paths.
  bool Handle(const net::HttpRequest& request, net::HttpResponse& response) const;

 private:
  std::string data_;  // VocabularyJson()
  Router router_;     // its route answers data_
};

}  // namespace gpucanary::daemon
