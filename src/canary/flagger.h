#pragma once
// Flagger's webhooks (docs/canaries.md, "Flagger"), answered as Flagger's
// scheduler reads them. Written from fluxcd/flagger at 15bd6ad (2026-07-21):
// pkg/controller/webhook.go (`callWebhook`: a status above 202 is an
// error), scheduler_hooks.go and scheduler.go (what an error means per hook
// type):
//
//   confirm-rollout           error: the canary waits (phase Waiting), asked again
//   pre-rollout, rollout      error: one failed check; `threshold` of them roll back
//   ("rollout" is the type Flagger gives a webhook without one)
//   confirm-traffic-increase  error: the weight is held, asked again
//   confirm-promotion         error: phase WaitingPromotion, one more iteration, asked again
//   rollback                  success (<= 202): roll back now; error: go on
//   post-rollout, event       informational
//
// The payload is `{"name", "namespace", "phase", "checksum", "metadata"}`
// (CanaryWebhookPayload; metadata a map of strings). FlaggerReleases finds
// the release a webhook is about from it; AnswerHook says what gpucanary
// answers for where that release's canary stands.

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/mutex.h"
#include "core/status.h"
#include "store/meta_db.h"

namespace gpucanary::canary {

enum class FlaggerHook : std::uint8_t {
  kConfirmRollout,
  kPreRollout,
  kRollout,
  kConfirmTrafficIncrease,
  kConfirmPromotion,
  kPostRollout,
  kRollback,
  kEvent,
};

// The hook a path segment names (Flagger's type names); nullopt otherwise.
std::optional<FlaggerHook> ParseFlaggerHook(std::string_view name);
std::string_view FlaggerHookName(FlaggerHook hook);
// "confirm-rollout, pre-rollout, ..." for error messages.
std::string FlaggerHookList();

// What a webhook carries. Errors (kInvalidArgument) name the field:
// "the webhook body is not a JSON object", "field 'name': expected a string",
// "field 'metadata.canary': expected a string".
struct FlaggerPayload {
  std::string name;
  std::string namespace_;
  std::string phase;
  std::string checksum;
  std::map<std::string, std::string> metadata;
};
Result<FlaggerPayload> ParseFlaggerPayload(std::string_view body);

// Where the release stands, as the hooks read it.
enum class FlaggerStanding : std::uint8_t {
  kUnknown,       // no release annotation matches the webhook
  kNoCanary,      // the release is known, but names no GPUs to judge
  kUndecided,     // its canary runs, no verdict yet
  kPassing,       // its canary runs and the judge passed it (anytime-valid)
  kPassed,        // ended, passed
  kFailed,        // the judge failed it
  kInconclusive,  // ended without a verdict (its duration ran out)
  kAborted,       // stopped before a verdict
};
std::string_view FlaggerStandingName(FlaggerStanding s);

// What an inconclusive end means to the rollout: the canary's duration
// (canary.duration, default 10 min) is the extension a gate grants while
// the judge may still decide; after it, `rollback` (the default: nothing
// showed the release is safe) or `promote`. Set per Canary resource by the
// webhook metadata `on_inconclusive`.
enum class OnInconclusive : std::uint8_t { kRollback, kPromote };
// From the metadata; an unknown value is kInvalidArgument
// ("metadata 'on_inconclusive': expected rollback or promote, got 'x'").
Result<OnInconclusive> ParseOnInconclusive(const std::map<std::string, std::string>& metadata);

struct FlaggerAnswer {
  int status = 200;  // <= 202: Flagger goes on (for rollback: rolls back)
  bool go = true;    // what the status means for this hook
  std::string meaning;
};

// The answer to `hook` for a release standing at `standing`. Gates hold
// (403) while a verdict may still come and when the release failed;
// analysis hooks (pre-rollout, rollout) count a failed check (409) only
// for a failed release (or an inconclusive one under kRollback), never for
// a lack of information; rollback answers 200 for those same cases.
FlaggerAnswer AnswerHook(FlaggerHook hook, FlaggerStanding standing, OnInconclusive policy);

// Which release a webhook is about, thread-safe:
//  1. metadata `release` or `canary` names it (a release or canary id);
//  2. else the webhook's (namespace, name, checksum) bound earlier;
//  3. else the newest release annotation whose `workload` (else `service`)
//     equals the payload's `name` and whose `namespace`, when it has one,
//     equals the payload's, that no other checksum of that workload has
//     claimed. The checksum changes with each new revision of the Canary's
//     target, so a revision keeps its release, and a new revision whose
//     annotation has not arrived yet finds none rather than the last one.
// `confirm-rollout` is about the revision Flagger is about to start, but
// carries the checksum of the one before (Flagger writes the new one when
// the analysis starts, pkg/canary/status.go): with `next_revision` the
// newest unclaimed release is returned without binding it.
// Bindings live in memory; after a restart a revision binds again by rule 3.
class FlaggerReleases {
 public:
  explicit FlaggerReleases(store::MetaDb& meta) : meta_(meta) {}

  // The release id, or nullopt when none matches. Errors: the metadata
  // database's.
  Result<std::optional<std::string>> Find(const FlaggerPayload& payload, bool next_revision);

  // The on_inconclusive policy for `release`: the metadata's when it has
  // one (remembered for the release), else the one last seen for it on any
  // hook, else kRollback. Flagger's metadata is per webhook; the Canary
  // should give every gpucanary hook the same value (docs/ci-cd.md).
  Result<OnInconclusive> Policy(const std::optional<std::string>& release,
                                const std::map<std::string, std::string>& metadata);

 private:
  store::MetaDb& meta_;
  Mutex mu_;
  std::map<std::string, std::string> bound_ GUARDED_BY(mu_);  // ns/name/checksum -> release
  std::map<std::string, std::set<std::string>> claimed_ GUARDED_BY(mu_);  // ns/name -> releases
  std::map<std::string, OnInconclusive> policy_ GUARDED_BY(mu_);          // release -> policy
};

}  // namespace gpucanary::canary
