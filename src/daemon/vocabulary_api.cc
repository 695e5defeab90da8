#include "daemon/vocabulary_api.h"

#include <string_view>

#include "daemon/api_format.h"
#include "vocab/vocab.h"

namespace gpucanary::daemon {
namespace {

constexpr std::string_view kPath = "/api/v1/vocabulary";

// `"key":[{"name":...,"description":...}, ...]` for every value of E.
template <typename E>
void AppendWords(std::string& out, std::string_view key) {
  AppendJsonString(out, key);
  out += ":[";
  bool first = true;
  for (const vocab::Word<E>& w : vocab::Words<E>()) {
    if (!first) out += ',';
    first = false;
    out += R"({"name":)";
    AppendJsonString(out, w.name);
    out += R"(,"description":)";
    AppendJsonString(out, w.description);
    out += '}';
  }
  out += ']';
}

}  // namespace

std::string VocabularyJson() {
  std::string out = "{";
  AppendWords<vocab::CauseKind>(out, "cause_kinds");
  out += ',';
  AppendWords<vocab::Scope>(out, "scopes");
  out += ',';
  AppendWords<vocab::Verdict>(out, "verdicts");
  out += ',';
  AppendWords<vocab::CanaryState>(out, "canary_states");
  out += '}';
  return out;
}

VocabularyApi::VocabularyApi() : data_(VocabularyJson()) {
  router_.Add("GET, HEAD", kPath,
              [this](const net::HttpRequest&, std::string_view, net::HttpResponse& response) {
                ReplyApiData(response, 200, data_);
              });
}

bool VocabularyApi::Handle(const net::HttpRequest& request, net::HttpResponse& response) const {
  return router_.Handle(request, response);
}

}  // namespace gpucanary::daemon
