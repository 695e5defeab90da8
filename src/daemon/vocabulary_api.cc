#include "daemon/vocabulary_api.h"

#include <string_view>

#include "daemon/api_format.h"
#include "vocab/service_measures.h"
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

std::string_view SourceTypeName(vocab::SourceType type) {
  switch (type) {
    case vocab::SourceType::kHistogram:
      return "histogram";
    case vocab::SourceType::kCounter:
      return "counter";
    case vocab::SourceType::kGauge:
      return "gauge";
    case vocab::SourceType::kCounterRatio:
      return "counter_ratio";
  }
  return "unknown";
}

// `"service_metrics":[{"server":...,"measure":...,"metric":...,"type":...,
// "scale":...,"selector":{...}|null}, ...]`: how each server exposes each
// measure (vocab/service_measures.h), for charts of a measure's series.
void AppendServiceMetrics(std::string& out) {
  out += R"("service_metrics":[)";
  bool first = true;
  for (const vocab::ServiceMetric& m : vocab::ServiceMetrics()) {
    if (!first) out += ',';
    first = false;
    out += R"({"server":)";
    AppendJsonString(out, vocab::Name(m.server));
    out += R"(,"measure":)";
    AppendJsonString(out, vocab::Name(m.measure));
    out += R"(,"metric":)";
    AppendJsonString(out, m.metric);
    out += R"(,"type":)";
    AppendJsonString(out, SourceTypeName(m.type));
    out += R"(,"scale":)";
    AppendPromValue(out, m.scale);
    out += R"(,"selector":)";
    if (m.selector.empty()) {
      out += "null";
    } else {
      out += '{';
      AppendJsonString(out, m.selector.name);
      out += ':';
      AppendJsonString(out, m.selector.value);
      out += '}';
    }
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
  out += ',';
  AppendWords<vocab::ServiceMeasure>(out, "service_measures");
  out += ',';
  AppendWords<vocab::GpuMeasure>(out, "gpu_measures");
  out += ',';
  AppendServiceMetrics(out);
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
