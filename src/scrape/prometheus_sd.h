#pragma once
// Discovery from an existing Prometheus (our extension, prometheus_sd_configs):
// a site that already scrapes its dcgm-exporters need not list them twice.
// We read GET <url>/api/v1/targets?state=active (docs/querying/api.md,
// "Targets"):
//
//   {"status":"success","data":{"activeTargets":[
//     {"labels":{"instance":"10.0.0.1:9400","job":"dcgm","node":"n1"},
//      "scrapeUrl":"http://10.0.0.1:9400/metrics", ...}], "droppedTargets":[]}}
//
// and keep the active targets whose labels.job is the configured job. Each
// becomes one target group: the address and path from scrapeUrl, the labels
// as Prometheus attached them (after its relabelling) except `job`, which is
// ours (the job_name of the scrape config), plus the "__meta_*" labels of its
// discoveredLabels (for our relabel_configs to read). An https scrapeUrl
// gives its group __scheme__ https: it is scraped over TLS with our job's
// tls_config (the other Prometheus's TLS settings are not in its answer).

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "scrape/config.h"
#include "scrape/target.h"

namespace gpucanary::scrape {

// Parses an /api/v1/targets answer. `job` empty keeps every active target.
// `source` names the answer in errors and groups ("http://prom:9090").
// Targets that cannot be used are skipped, their errors appended to
// `skipped` (may be null). Errors: kParseError for JSON that is not a
// successful targets answer.
Result<std::vector<TargetGroup>> ParsePrometheusTargets(std::string_view json, std::string_view job,
                                                        const std::string& source,
                                                        std::vector<Status>* skipped);

}  // namespace gpucanary::scrape
