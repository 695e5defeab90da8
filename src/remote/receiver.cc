#include "remote/receiver.h"

#include <bit>
#include <exception>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace gpucanary::remote {
namespace {

net::HttpResponse Text(int status, std::string body) {
  net::HttpResponse response;
  response.status = status;
  response.content_type = "text/plain; charset=utf-8";
  response.body = std::move(body);
  if (!response.body.empty() && response.body.back() != '\n') response.body += '\n';
  return response;
}

int HttpStatusFor(WriteError reason) {
  switch (reason) {
    case WriteError::kUnsupportedMediaType:
      return 415;
    case WriteError::kBodyTooLarge:
      return 413;
    case WriteError::kStoreUnavailable:
      return 503;
    case WriteError::kInternal:
      return 500;
    default:
      return 400;
  }
}

// The problems of one request: the first few messages and how many in all.
class Problems {
 public:
  explicit Problems(std::size_t max_listed) : max_listed_(max_listed) {}

  void Add(std::string message) {
    if (messages_.size() <= max_listed_) messages_.push_back(std::move(message));
    ++total_;
  }
  bool empty() const { return total_ == 0; }

  // Prometheus logs only the first line of an error body (up to 1 KiB), so
  // that line holds the first problem and the totals.
  std::string Body(std::size_t series_kept, std::size_t series, std::uint64_t samples_kept,
                   std::size_t samples) const {
    std::string body = messages_.front() + " (" + std::to_string(total_) +
                       (total_ == 1 ? " problem" : " problems") + "; kept " +
                       std::to_string(series_kept) + " of " + std::to_string(series) + " series, " +
                       std::to_string(samples_kept) + " of " + std::to_string(samples) +
                       " samples)\n";
    for (std::size_t i = 1; i < messages_.size(); ++i) body += messages_[i] + '\n';
    if (total_ > messages_.size()) {
      body += "... and " + std::to_string(total_ - messages_.size()) + " more\n";
    }
    return body;
  }

 private:
  std::size_t max_listed_;
  std::vector<std::string> messages_;
  std::size_t total_ = 0;
};

std::string SampleWhere(std::size_t series, std::size_t sample) {
  return "timeseries[" + std::to_string(series) + "].samples[" + std::to_string(sample) + "]: ";
}

// The store marks "no sample yet" with the earliest int64 timestamp
// (store/head.h kNoTime), so it holds none at that time.
constexpr std::int64_t kEarliestStorable = std::numeric_limits<std::int64_t>::min() + 1;

// a - b for a >= b, exact even where the signed difference would overflow.
std::uint64_t Distance(std::int64_t a, std::int64_t b) {
  return static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b);
}

const Clock& SystemClock() {
  static const RealClock clock;
  return clock;
}

}  // namespace

// One request's trip into the store: the Appender, what was kept and what was
// refused (and why).
class Receiver::Batch {
 public:
  Batch(Receiver& receiver, const WriteRequest& request, store::Appendable& into)
      : receiver_(receiver),
        into_(into),
        request_(request),
        problems_(receiver.options_.max_listed_errors) {
    const ReceiverOptions& o = receiver.options_;
    now_ = receiver.clock_.NowMs();
    latest_ = now_ > std::numeric_limits<std::int64_t>::max() - o.creation_grace_period_ms
                  ? std::numeric_limits<std::int64_t>::max()
                  : now_ + o.creation_grace_period_ms;
    earliest_ = o.past_grace_period_ms > 0 && now_ >= kEarliestStorable + o.past_grace_period_ms
                    ? now_ - o.past_grace_period_ms
                    : kEarliestStorable;
  }

  net::HttpResponse Run() {
    for (std::size_t i = 0; i < request_.timeseries.size(); ++i) {
      samples_ += request_.timeseries[i].samples.size();
      if (Status st = AddSeries(i); !st.ok()) return Abort(st);
    }
    return Finish();
  }

 private:
  // Returns an error only for failures that void the whole request.
  Status AddSeries(std::size_t index) {
    const TimeSeries& series = request_.timeseries[index];
    if (Status st = CheckSeriesLabels(series.labels, index); !st.ok()) {
      Reject(WriteError::kInvalidLabels, 1, series.samples.size(), st.message());
      return Status::Ok();
    }
    WriteError over = WriteError::kLabelLimit;
    if (Status st = CheckLabelLimits(series.labels, index, receiver_.options_.label_limits, &over);
        !st.ok()) {
      Reject(over, 1, series.samples.size(), st.message());
      return Status::Ok();
    }
    if (series.samples.empty()) {
      ++series_kept_;
      return Status::Ok();
    }
    if (appender_ == nullptr) {
      appender_ = into_.NewAppender();
      GC_CHECK(appender_ != nullptr, "Appendable::NewAppender returned null");
    }
    Result<store::SeriesRef> ref = appender_->Series(series.labels);
    if (!ref) {
      const StatusCode code = ref.error().code();
      if (code != StatusCode::kOutOfRange && code != StatusCode::kInvalidArgument) {
        return ref.error();
      }
      Reject(
          code == StatusCode::kOutOfRange ? WriteError::kSeriesLimit : WriteError::kInvalidLabels,
          1, series.samples.size(),
          "timeseries[" + std::to_string(index) + "]: " + ref.error().message());
      return Status::Ok();
    }
    ++series_kept_;
    return AppendSamples(index, *ref);
  }

  // Samples of one series must come in time order (spec 1.0); one that does
  // not is refused alone, and an exact repeat of the last one appended is
  // dropped silently, as the store drops one. A sample outside the time
  // window is refused alone too.
  Status AppendSamples(std::size_t index, store::SeriesRef ref) {
    const std::vector<Sample>& samples = request_.timeseries[index].samples;
    const Sample* last = nullptr;
    for (std::size_t j = 0; j < samples.size(); ++j) {
      const Sample& s = samples[j];
      if (!InWindow(index, j, s.timestamp_ms)) continue;
      if (last != nullptr && s.timestamp_ms <= last->timestamp_ms) {
        if (s.timestamp_ms == last->timestamp_ms &&
            std::bit_cast<std::uint64_t>(s.value) == std::bit_cast<std::uint64_t>(last->value)) {
          continue;
        }
        const bool same = s.timestamp_ms == last->timestamp_ms;
        Reject(same ? WriteError::kDuplicateSample : WriteError::kOutOfOrderSample, 1, 1,
               SampleWhere(index, j) +
                   (same ? "duplicate sample for timestamp " + std::to_string(s.timestamp_ms)
                         : "out of order sample: timestamp " + std::to_string(s.timestamp_ms) +
                               " is before " + std::to_string(last->timestamp_ms)));
        continue;
      }
      GC_RETURN_IF_ERROR(appender_->Append(ref, s.timestamp_ms, s.value));
      last = &s;
      ++pending_;
    }
    return Status::Ok();
  }

  // Whether timeseries[index].samples[j], at `t`, is inside the accepted
  // window; refuses it when not.
  bool InWindow(std::size_t index, std::size_t j, std::int64_t t) {
    const ReceiverOptions& o = receiver_.options_;
    if (t > latest_) {
      Reject(WriteError::kSampleTooFarInFuture, 1, 1,
             SampleWhere(index, j) + "sample too far in the future: timestamp " +
                 std::to_string(t) + " is " + std::to_string(Distance(t, now_)) +
                 " ms after now (" + std::to_string(now_) + "), creation_grace_period " +
                 std::to_string(o.creation_grace_period_ms) + " ms");
      return false;
    }
    if (t < earliest_) {
      std::string why = SampleWhere(index, j) + "sample too far in the past: timestamp " +
                        std::to_string(t) + " is ";
      if (earliest_ == kEarliestStorable) {
        why += "before the earliest the store holds (" + std::to_string(kEarliestStorable) + ")";
      } else {
        why += std::to_string(Distance(now_, t)) + " ms before now (" + std::to_string(now_) +
               "), past_grace_period " + std::to_string(o.past_grace_period_ms) + " ms";
      }
      Reject(WriteError::kSampleTooFarInPast, 1, 1, std::move(why));
      return false;
    }
    return true;
  }

  void Reject(WriteError reason, std::uint64_t count, std::size_t samples, std::string message) {
    receiver_.Count(reason, count);
    rejected_ += samples;
    problems_.Add(std::move(message));
  }

  // A failure that voids the whole request: nothing is kept.
  net::HttpResponse Abort(const Status& st) {
    if (appender_ != nullptr) appender_->Rollback();
    const bool retryable =
        st.code() == StatusCode::kIoError || st.code() == StatusCode::kUnavailable;
    const WriteError reason = retryable ? WriteError::kStoreUnavailable : WriteError::kInternal;
    receiver_.Count(reason);
    receiver_.samples_rejected_ += TotalSamples();
    return Text(HttpStatusFor(reason), "store: " + st.ToString() +
                                           " (nothing of this request was kept" +
                                           (retryable ? "; retry later)" : ")"));
  }

  std::size_t TotalSamples() const {
    std::size_t n = 0;
    for (const TimeSeries& ts : request_.timeseries) n += ts.samples.size();
    return n;
  }

  net::HttpResponse Finish() {
    std::uint64_t appended = 0;
    if (pending_ > 0) {
      Result<store::CommitResult> commit = appender_->Commit();
      if (!commit) return Abort(commit.error());
      appended = commit->appended;
      if (commit->out_of_order > 0) {
        receiver_.Count(WriteError::kOutOfOrderSample, commit->out_of_order);
      }
      if (commit->duplicates > 0) receiver_.Count(WriteError::kDuplicateSample, commit->duplicates);
      const std::size_t refused = commit->out_of_order + commit->duplicates;
      if (refused > 0 || !commit->first_error.ok()) {
        rejected_ += refused;
        problems_.Add("store refused " + std::to_string(refused) + " samples (" +
                      std::to_string(commit->out_of_order) + " out of order, " +
                      std::to_string(commit->duplicates) +
                      " duplicate), the first: " + commit->first_error.message());
      }
    } else if (appender_ != nullptr) {
      appender_->Rollback();
    }
    receiver_.samples_appended_ += appended;
    receiver_.samples_rejected_ += rejected_;
    if (problems_.empty()) {
      ++receiver_.requests_accepted_;
      net::HttpResponse response;
      response.status = 204;
      return response;
    }
    return Text(400, problems_.Body(series_kept_, request_.timeseries.size(), appended, samples_));
  }

  Receiver& receiver_;
  store::Appendable& into_;
  const WriteRequest& request_;
  Problems problems_;
  std::unique_ptr<store::Appender> appender_;
  std::size_t samples_ = 0;      // samples in the request (so far)
  std::size_t pending_ = 0;      // samples appended, not yet committed
  std::size_t rejected_ = 0;     // samples refused
  std::size_t series_kept_ = 0;  // series whose labels passed
  // The accepted window: [earliest_, latest_] around the clock's now_ (ms).
  std::int64_t now_ = 0;
  std::int64_t earliest_ = kEarliestStorable;
  std::int64_t latest_ = 0;
};

Receiver::Receiver(store::Appendable& appendable, const Clock& clock, ReceiverOptions options)
    : appendable_(appendable), clock_(clock), options_(options) {
  GC_CHECK(options_.creation_grace_period_ms >= 0 && options_.past_grace_period_ms >= 0,
           "ReceiverOptions: grace periods must not be negative");
}

Receiver::Receiver(store::Appendable& appendable, ReceiverOptions options)
    : Receiver(appendable, SystemClock(), options) {}

net::HttpResponse Receiver::Handle(const net::HttpRequest& request) {
  return Handle(request, appendable_);
}

net::HttpResponse Receiver::Handle(const net::HttpRequest& request, store::Appendable& into) {
  ++requests_;
  if (request.method != "POST") {
    net::HttpResponse response = Text(405, "remote_write takes POST, not " + request.method);
    response.headers.emplace_back("Allow", "POST");
    return response;
  }
  try {
    WriteError reason = WriteError::kInternal;
    Result<WriteRequest> decoded =
        DecodeWriteRequest(request.body, request.Header("content-encoding"),
                           request.Header("content-type"), options_.limits, &reason);
    if (!decoded) {
      Count(reason);
      return Text(HttpStatusFor(reason), decoded.error().message());
    }
    series_received_ += decoded->timeseries.size();
    metadata_dropped_ += decoded->metadata;
    std::uint64_t samples = 0;
    for (const TimeSeries& ts : decoded->timeseries) {
      samples += ts.samples.size();
      exemplars_dropped_ += ts.exemplars;
      histograms_dropped_ += ts.histograms;
    }
    samples_received_ += samples;
    return Ingest(*decoded, into);
  } catch (const std::exception& e) {
    Count(WriteError::kInternal);
    return Text(500, std::string("internal error: ") + e.what());
  }
}

net::HttpResponse Receiver::Ingest(const WriteRequest& request, store::Appendable& into) {
  Batch batch(*this, request, into);
  return batch.Run();
}

net::Handler Receiver::HttpHandler() {
  return [this](const net::HttpRequest& request, net::HttpResponse& response) {
    response = Handle(request);
  };
}

void Receiver::Count(WriteError reason, std::uint64_t n) {
  errors_[static_cast<std::size_t>(reason)] += n;
}

ReceiverStats Receiver::stats() const {
  ReceiverStats s;
  s.requests = requests_.load();
  s.requests_accepted = requests_accepted_.load();
  s.series_received = series_received_.load();
  s.samples_received = samples_received_.load();
  s.samples_appended = samples_appended_.load();
  s.samples_rejected = samples_rejected_.load();
  s.exemplars_dropped = exemplars_dropped_.load();
  s.histograms_dropped = histograms_dropped_.load();
  s.metadata_dropped = metadata_dropped_.load();
  for (std::size_t i = 0; i < kWriteErrorCount; ++i) s.errors[i] = errors_[i].load();
  return s;
}

}  // namespace gpucanary::remote
