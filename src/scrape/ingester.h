#pragma once
// Turns one target's scrapes into samples in the store: parsing, the scrape
// cache, staleness markers and the synthetic per-scrape series. No I/O of
// its own: the scraper hands it bodies (or failures) and scheduled times.
//
// The scrape cache (like Prometheus's scrapeCache) maps the raw series text
// of a line (`name{labels}` exactly as written) to its store SeriesRef, so a
// steady-state scrape costs one hash and one lookup per line: no label sets
// built, sorted or hashed. A miss builds the labels once (Prometheus's rules:
// empty label values dropped, target labels attached, clashes renamed
// `exported_<name>` unless honor_labels) and asks the store for the series.
//
// Staleness (Prometheus's staleness, docs "Staleness"): a series present in
// the previous scrape and absent from this one gets a stale marker
// (store::StaleNaN) at this scrape's time; a failed scrape marks every series
// of the previous scrape stale; EndOfRun marks everything stale, the
// synthetic series included. Samples with an explicit timestamp that is
// honoured are not tracked (as in Prometheus). Missing data is never written
// as a number.
//
// Limits (Prometheus's, scrape/config.h ScrapeLimits): more samples than
// sample_limit after metric relabeling, or a new series over a label limit,
// fail the scrape like a malformed body (nothing of it kept, the previous
// series marked stale, up 0). As Prometheus does, a sample whose honoured
// timestamp is more than 10 minutes after the scrape is dropped and counted
// (out of bounds); the rest of the scrape is kept.
//
// Thread-compatible: one thread at a time (the scrape of one target).

#include <array>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/flat_hash_map.h"
#include "core/mutex.h"
#include "core/status.h"
#include "core/string_map.h"
#include "expfmt/types.h"
#include "model/labels.h"
#include "model/metric_type.h"
#include "model/relabel.h"
#include "scrape/config.h"
#include "store/appender.h"

namespace gpucanary::scrape {

struct IngestOptions {
  bool honor_labels = false;     // scraped labels win over target labels
  bool honor_timestamps = true;  // use timestamps written in the exposition
  // metric_relabel_configs: applied to each new series' labels (target labels
  // attached) before the store sees them, as Prometheus does. A dropped series
  // is remembered in the scrape cache and costs one lookup per scrape; a
  // series left without a valid __name__ or with an invalid label name fails
  // the scrape (Prometheus's "invalid metric name or label names").
  std::vector<model::RelabelRule> metric_relabel = {};
  // sample_limit and the label limits (body_size_limit is the scraper's).
  ScrapeLimits limits = {};
};

// Prometheus drops a sample whose own timestamp is more than this after the
// scrape's (scrape.go maxAheadTime, storage.ErrOutOfBounds).
inline constexpr std::int64_t kMaxAheadMs = 10LL * 60 * 1000;

// Which limit failed a scrape.
enum class LimitExceeded : std::uint8_t { kNone, kSampleLimit, kLabelLimits, kBodySizeLimit };
// "none", "sample_limit", "label_limits", "body_size_limit".
std::string_view LimitExceededName(LimitExceeded limit);

// What one scrape did: the values of the synthetic series and the counts the
// scraper keeps per target.
struct ScrapeOutcome {
  bool up = false;
  std::size_t samples = 0;  // scrape_samples_scraped: sample lines read
  // scrape_samples_post_metric_relabeling: samples appended after metric
  // relabeling (not dropped, not a duplicate, not refused by the store).
  std::size_t post_relabel = 0;
  std::size_t series_added = 0;  // scrape_series_added: series new to the cache
  std::size_t stale_markers = 0;
  std::size_t duplicates = 0;       // a series twice in one exposition: the first kept
  std::size_t relabel_dropped = 0;  // samples metric_relabel_configs dropped
  std::size_t rejected = 0;         // samples the store refused (Series, Append or Commit)
  std::size_t out_of_bounds = 0;    // honoured timestamps over kMaxAheadMs ahead: dropped
  Status error;                     // why up is 0 (a fetch error or an exposition error)
  bool exposition_error = false;
  LimitExceeded exceeded = LimitExceeded::kNone;  // the limit that failed the scrape
  Status store_error;                             // the first sample the store refused, if any
};

// The format to parse a response with, from its Content-Type, as Prometheus
// picks it: application/openmetrics-text is OpenMetrics; anything else
// (dcgm-exporter sends text/plain with no version, or none) text 0.0.4.
expfmt::Format FormatForContentType(std::string_view content_type);

// One metric family's TYPE, HELP and UNIT lines, as a target exposes them
// (sent with remote_write out, docs/remote-write-out.md).
struct MetricMetadata {
  std::string family;
  model::MetricType type = model::MetricType::kUnknown;
  std::string help;
  std::string unit;

  friend bool operator==(const MetricMetadata&, const MetricMetadata&) = default;
};

class Ingester {
 public:
  // `target_labels` sorted, without __name__. `store` must outlive this.
  Ingester(store::Appendable& store, model::Labels target_labels, IngestOptions options);
  ~Ingester();
  Ingester(const Ingester&) = delete;
  Ingester& operator=(const Ingester&) = delete;

  // A successful fetch: parses `body` in `format` and appends every sample at
  // t_ms (or its own timestamp when honoured), stale markers, and the
  // synthetic series with `duration_s`, in one Commit. An exposition error
  // ("line 3:7: ...") drops the body's samples and counts as a failed scrape.
  ScrapeOutcome Ingest(std::string_view body, expfmt::Format format, std::int64_t t_ms,
                       double duration_s);

  // A failed fetch: stale markers for the previous scrape's series, up=0.
  ScrapeOutcome Fail(Status why, std::int64_t t_ms, double duration_s);

  // The target is gone: stale markers at t_ms for every series it wrote,
  // synthetic ones included. Later calls start afresh.
  void EndOfRun(std::int64_t t_ms);

  // The metadata of the families a successful scrape described, by family
  // name: read from one scrape a minute, a snapshot replaced only when it
  // changes. Thread-safe (the other calls are not).
  std::shared_ptr<const std::vector<MetricMetadata>> metadata() const;

  // Series in the scrape cache (tests, stats).
  std::size_t cached_series() const { return entries_.size(); }

 private:
  struct Entry {
    std::string raw;  // name{labels} as written: guards against hash collisions
    store::SeriesRef ref = 0;
    std::uint64_t last_seen = 0;  // the iteration that last saw it
    bool dropped = false;         // metric relabeling drops it: no ref
  };

  ScrapeOutcome Fail(Status why, std::int64_t t_ms, double duration_s, bool exposition,
                     LimitExceeded exceeded = LimitExceeded::kNone);
  store::Appender& appender();
  // The cached entry for a sample line, or null when it cannot be cached (the
  // store refused the series, or a hash collision: then *ref is set directly).
  Entry* Lookup(const expfmt::SampleView& s, std::string_view raw, ScrapeOutcome& out,
                store::SeriesRef* ref, bool* ok);
  // The series of a sample line: 0 with ok when relabeling drops it.
  Result<store::SeriesRef> SeriesFor(const expfmt::SampleView& s, bool* dropped);
  void BuildLabels(const expfmt::SampleView& s);
  // scratch_ against the label limits, in Prometheus's words.
  Status CheckLabelLimits() const;
  void AppendOne(store::SeriesRef ref, std::int64_t t_ms, double v, ScrapeOutcome& out);
  void MarkPreviousStale(std::int64_t t_ms, ScrapeOutcome& out);
  void AppendReport(std::int64_t t_ms, double duration_s, const ScrapeOutcome& o,
                    ScrapeOutcome& out);
  void Commit(ScrapeOutcome& out);
  void Compact();
  // A HELP, TYPE or UNIT line of this scrape.
  void NoteMetadata(const expfmt::MetadataView& m);
  // After a successful scrape: families it did not describe go, and the
  // snapshot is replaced when anything changed.
  void PublishMetadata();

  store::Appendable& store_;
  std::unique_ptr<store::Appender> appender_;
  model::Labels target_labels_;
  IngestOptions options_;

  std::vector<Entry> entries_;
  FlatHashMap<std::uint32_t> index_;  // hash of raw text -> entries_ position + 1
  std::uint64_t iteration_ = 0;
  std::vector<std::uint32_t> previous_;  // entries tracked in the last successful scrape
  std::vector<std::uint32_t> current_;
  model::Labels scratch_;  // labels of a cache miss, reused
  // Set by SeriesFor when a new series fails the scrape: metric relabeling
  // left invalid labels, or the labels are over a limit (series_limit_).
  Status series_error_;
  LimitExceeded series_limit_ = LimitExceeded::kNone;
  // The synthetic series: up, scrape_duration_seconds, scrape_samples_scraped,
  // scrape_samples_post_metric_relabeling, scrape_series_added; valid when
  // report_ready_.
  std::array<store::SeriesRef, 5> report_refs_{};
  bool report_ready_ = false;
  bool reported_ = false;  // written since the last EndOfRun
  struct FamilySeen {
    MetricMetadata metadata;
    std::uint64_t last_seen = 0;  // the iteration that last described it
  };
  StringMap<FamilySeen> families_;
  bool families_changed_ = false;
  // Metadata is read from one successful scrape every kMetadataEveryMs.
  static constexpr std::int64_t kMetadataEveryMs = 60'000;
  static constexpr std::int64_t kNoMetadataYet = INT64_MIN;
  std::int64_t metadata_at_ms_ = kNoMetadataYet;
  mutable Mutex metadata_mu_;
  std::shared_ptr<const std::vector<MetricMetadata>> metadata_ GUARDED_BY(metadata_mu_);
  std::size_t batch_size_ = 0;  // samples appended since the last Commit
};

}  // namespace gpucanary::scrape
