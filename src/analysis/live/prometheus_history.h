#pragma once
// The history window of a live replay read from a Prometheus (or Thanos,
// Mimir, VictoriaMetrics) when the embedded store lacks it: a daemon that
// has only just started scraping, or hosts it scraped slowly before
// (docs/canaries.md, "History from Prometheus").
//
// One PrometheusHistory per replay input: promql::QueryRaw of the input's
// hosts and the series the judge reads, over [from_s, until_s), run on a
// thread of its own so that neither the release POST nor the canary loop
// waits on the network. The input's StoreTickSource (store_source.h) stalls
// until the fetch is done, then files each host's fetched samples up to the
// first second the store has data for that host, and the store's from
// there on: the two never overlap, and nothing is filled in between.
//
//   auto history = PrometheusHistory::Start({url, client}, "Hostname", {"node-4"},
//                                           JudgeInputNames(policy), from_s, until_s);
//   inputs.push_back({"canary ...", Role::kCanary, matchers, history});
//
// A fetch that fails (Prometheus down, a bad answer) leaves status() with the
// error and no samples: the replay goes on with the store's own history.
//
// Thread-safety: Start and Done may be called from any thread; once Done()
// is true the rest belongs to one thread at a time (the replay's).

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "promql/client.h"

namespace gpucanary::analysis {

class PrometheusHistory {
 public:
  struct Server {
    std::string url;               // base URL of the HTTP API ("http://prometheus:9090")
    promql::ClientOptions client;  // bearer token, headers (X-Scope-OrgID), timeouts
  };

  // Starts reading the samples with from_s <= t < until_s (Unix seconds) of
  // the series whose `host_label` is one of `hosts` and whose name is one of
  // `names` (a DCGM field also under its DCGM 4.6 name; empty: every name).
  // REQUIRES: `hosts` not empty, from_s < until_s.
  static std::shared_ptr<PrometheusHistory> Start(Server server, std::string host_label,
                                                  std::vector<std::string> hosts,
                                                  const std::vector<std::string>& names,
                                                  std::int64_t from_s, std::int64_t until_s);

  // Waits for the fetch (each HTTP exchange is bounded by client.timeout_ms).
  ~PrometheusHistory();
  PrometheusHistory(const PrometheusHistory&) = delete;
  PrometheusHistory& operator=(const PrometheusHistory&) = delete;

  // True once the fetch has finished, with samples or an error.
  bool Done() const { return done_.load(std::memory_order_acquire); }

  // REQUIRES: Done(). Ok, or why there are no samples (the client's error:
  // "GET http://...: connect: Connection refused").
  const Status& status() const { return status_; }
  // REQUIRES: Done(). The fetched series (labels with __name__, samples in
  // time order); emptied by Release.
  const std::vector<promql::Series>& series() const { return series_; }
  std::size_t fetched_samples() const { return fetched_samples_; }
  // Frees the samples once the replay is past the window; the counts below
  // are final from then on.
  void Release();
  bool released() const { return released_; }

  // What the replay did with the samples, per host: filed (`used`) or left
  // out because the store had data for the host from an earlier second
  // (`shadowed`). Updated by the source, read by whoever reports.
  struct HostCounts {
    std::uint64_t used = 0;
    std::uint64_t shadowed = 0;
  };
  std::map<std::string, HostCounts, std::less<>>& host_counts() { return host_counts_; }

  const std::string& url() const { return server_.url; }
  const std::string& selector() const { return selector_; }
  const std::string& host_label() const { return host_label_; }
  const std::vector<std::string>& hosts() const { return hosts_; }
  std::int64_t from_s() const { return from_s_; }
  std::int64_t until_s() const { return until_s_; }

 private:
  PrometheusHistory(Server server, std::string host_label, std::vector<std::string> hosts,
                    std::string selector, std::int64_t from_s, std::int64_t until_s);
  void Fetch();

  const Server server_;
  const std::string host_label_;
  const std::vector<std::string> hosts_;
  const std::string selector_;
  const std::int64_t from_s_;
  const std::int64_t until_s_;

  // Written by the fetch thread before done_ is set, read after.
  Status status_;
  std::vector<promql::Series> series_;
  std::size_t fetched_samples_ = 0;
  std::atomic<bool> done_{false};
  std::thread thread_;

  std::map<std::string, HostCounts, std::less<>> host_counts_;
  bool released_ = false;
};

// The PromQL selector of `names` (each DCGM field with its DCGM 4.6 alias)
// on series whose `host_label` is one of `hosts`, regex-quoted and escaped:
// {Hostname=~"node-4|node\\.5",__name__=~"DCGM_FI_DEV_GPU_TEMP|..."}.
// `host_label` "instance" (kInstanceLabel) selects, as the replay files
// them, series with no host label whose scrape instance names a host, with
// or without a port (model::InstanceHostMatchers).
inline constexpr std::string_view kInstanceLabel = "instance";
std::string HistorySelector(const std::string& host_label, const std::vector<std::string>& hosts,
                            const std::vector<std::string>& names);

}  // namespace gpucanary::analysis
