#pragma once
// Releases, canaries, verdicts and causes: the records people and pipelines
// rely on, in SQLite (`meta.sqlite` in the data directory; schema in
// docs/storage-format.md). Every write is one transaction committed with
// synchronous=FULL in WAL journal mode, so once a call returns ok the record
// survives kill -9 and power loss.
//
// Thread-safe (one connection behind a mutex).

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/mutex.h"
#include "core/status.h"

struct sqlite3;

namespace gpucanary::store {

struct ReleaseRecord {
  std::string id;
  std::string service;     // may be empty
  double started_at = 0;   // Unix seconds
  std::string annotation;  // the JSON as received
};

struct CanaryRecord {
  std::string id;
  std::string release_id;
  double started_at = 0;
  std::optional<double> ended_at;
  std::string state;          // "running", "passed", "failed", "inconclusive", "aborted"
  std::string detail = "{}";  // JSON: what the canary needs to resume (hosts, options)
};

// One circuit-breaker action run for a canary (docs/actions.md).
struct ActionRecord {
  std::string canary_id;
  std::string name;  // as configured
  std::string kind;  // "webhook", "command", ...
  double at = 0;     // Unix seconds it started
  double duration_ms = 0;
  bool ok = false;
  int attempts = 0;
  std::string detail;    // status code, exit code or error
  std::string incident;  // "" for the canary's fail; "node:<host>" (actions::Incident::part)
};

struct CauseRecord {
  std::string kind;
  std::string scope;
  std::optional<double> since;
  std::string summary;
};

struct VerdictRecord {
  std::string canary_id;
  double at = 0;
  std::string verdict;
  std::optional<double> score;
  std::string report;  // the judge's JSON
  std::vector<CauseRecord> causes;
};

struct ReleaseFilter {
  std::string service;         // empty: any
  std::optional<double> from;  // started_at >= from
  std::optional<double> to;    // started_at <= to
  int limit = 1000;
};

class MetaDb {
 public:
  // Opens (creating) the database file. Errors: kIoError with SQLite's
  // message; kInvalidArgument when the file is a newer schema.
  // (No lock analysis: it sets up the schema before the MetaDb is shared, without mu_.)
  static Result<std::unique_ptr<MetaDb>> Open(const std::filesystem::path& file)
      NO_THREAD_SAFETY_ANALYSIS;
  ~MetaDb();
  MetaDb(const MetaDb&) = delete;

  // Whether the database reads back whole (PRAGMA quick_check). Errors:
  // kIoError naming what SQLite found ("file is not a database", a damaged
  // page).
  Status Check();

  // A consistent copy of the database at `to` (SQLite's online backup,
  // written to `to`.tmp and renamed), while writers go on. Errors: kIoError.
  Status Backup(const std::filesystem::path& to);
  MetaDb& operator=(const MetaDb&) = delete;

  // Stores a release. The same id again with the same annotation is a no-op;
  // with another annotation it is kInvalidArgument ("release 'x' exists with
  // a different annotation").
  Status PutRelease(const ReleaseRecord& release);
  Result<std::optional<ReleaseRecord>> GetRelease(std::string_view id);
  // Newest first.
  Result<std::vector<ReleaseRecord>> ListReleases(const ReleaseFilter& filter);

  // Inserts or updates a canary.
  Status PutCanary(const CanaryRecord& canary);
  Result<std::optional<CanaryRecord>> GetCanary(std::string_view id);
  Result<std::vector<CanaryRecord>> ListCanaries(std::string_view release_id);

  // Records an action's outcome; Actions lists a canary's in the order added.
  Status AddAction(const ActionRecord& action);
  Result<std::vector<ActionRecord>> Actions(std::string_view canary_id);

  // Adds a verdict and its causes in one transaction.
  Status AddVerdict(const VerdictRecord& verdict);
  // Oldest first, with causes.
  Result<std::vector<VerdictRecord>> Verdicts(std::string_view canary_id);

 private:
  explicit MetaDb(sqlite3* db) : db_(db) {}
  Status Exec(std::string_view sql) REQUIRES(mu_);
  Status SqlError(std::string_view what) const REQUIRES(mu_);

  Mutex mu_;
  sqlite3* db_ GUARDED_BY(mu_);
};

}  // namespace gpucanary::store
