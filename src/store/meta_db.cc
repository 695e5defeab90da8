#include "store/meta_db.h"

#include <sqlite3.h>

#include <utility>

#include "core/mutex.h"

namespace gpucanary::store {
namespace {

// 1: releases, canaries, verdicts, causes. 2: canaries.detail, actions.
// 3: actions.incident.
constexpr int kSchemaVersion = 3;

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS releases (
  id TEXT PRIMARY KEY, service TEXT NOT NULL, started_at REAL NOT NULL, annotation TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS releases_by_time ON releases (started_at);
CREATE TABLE IF NOT EXISTS canaries (
  id TEXT PRIMARY KEY, release_id TEXT NOT NULL, started_at REAL NOT NULL, ended_at REAL,
  state TEXT NOT NULL, detail TEXT NOT NULL DEFAULT '{}');
CREATE INDEX IF NOT EXISTS canaries_by_release ON canaries (release_id);
CREATE TABLE IF NOT EXISTS actions (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, canary_id TEXT NOT NULL, name TEXT NOT NULL,
  kind TEXT NOT NULL, at REAL NOT NULL, duration_ms REAL NOT NULL, ok INTEGER NOT NULL,
  attempts INTEGER NOT NULL, detail TEXT NOT NULL, incident TEXT NOT NULL DEFAULT '');
CREATE INDEX IF NOT EXISTS actions_by_canary ON actions (canary_id);
CREATE TABLE IF NOT EXISTS verdicts (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, canary_id TEXT NOT NULL, at REAL NOT NULL,
  verdict TEXT NOT NULL, score REAL, report TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS verdicts_by_canary ON verdicts (canary_id);
CREATE TABLE IF NOT EXISTS causes (
  verdict_seq INTEGER NOT NULL, canary_id TEXT NOT NULL, kind TEXT NOT NULL,
  scope TEXT NOT NULL, since REAL, summary TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS causes_by_verdict ON causes (verdict_seq);
)sql";

// A prepared statement, finalized on scope exit.
class Stmt {
 public:
  Stmt(sqlite3* db, std::string_view sql) {
    rc_ = sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &stmt_, nullptr);
  }
  ~Stmt() { sqlite3_finalize(stmt_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  bool ok() const { return rc_ == SQLITE_OK; }
  Stmt& Bind(int i, std::string_view v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& Bind(int i, double v) {
    sqlite3_bind_double(stmt_, i, v);
    return *this;
  }
  Stmt& Bind(int i, std::int64_t v) {
    sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  Stmt& Bind(int i, const std::optional<double>& v) {
    if (v) {
      sqlite3_bind_double(stmt_, i, *v);
    } else {
      sqlite3_bind_null(stmt_, i);
    }
    return *this;
  }
  // SQLITE_ROW, SQLITE_DONE or an error code.
  int Step() { return sqlite3_step(stmt_); }
  std::string Text(int col) const {
    const auto* p = sqlite3_column_text(stmt_, col);
    return p == nullptr ? std::string()
                        : std::string(reinterpret_cast<const char*>(p),
                                      static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col)));
  }
  double Double(int col) const { return sqlite3_column_double(stmt_, col); }
  std::int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  std::optional<double> OptDouble(int col) const {
    if (sqlite3_column_type(stmt_, col) == SQLITE_NULL) return std::nullopt;
    return sqlite3_column_double(stmt_, col);
  }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  int rc_ = SQLITE_ERROR;
};

}  // namespace

Result<std::unique_ptr<MetaDb>> MetaDb::Open(const std::filesystem::path& file) {
  sqlite3* db = nullptr;
  const int rc =
      sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return Error(StatusCode::kIoError, file.string() + ": " + msg);
  }
  std::unique_ptr<MetaDb> meta(new MetaDb(db));
  sqlite3_busy_timeout(db, 5000);
  for (std::string_view pragma :
       {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL", "PRAGMA foreign_keys=ON"}) {
    if (Status s = meta->Exec(pragma); !s.ok()) return Error(s.WithPrefix(file.string()));
  }
  int version = 0;
  {
    Stmt st(db, "PRAGMA user_version");
    if (st.ok() && st.Step() == SQLITE_ROW) version = static_cast<int>(st.Int(0));
  }
  if (version > kSchemaVersion) {
    return Error(StatusCode::kInvalidArgument,
                 file.string() + ": schema version " + std::to_string(version) +
                     " is newer than this gpucanary's " + std::to_string(kSchemaVersion));
  }
  if (version == 1) {  // canaries gained `detail`; CREATE IF NOT EXISTS keeps old tables
    if (Status s = meta->Exec("ALTER TABLE canaries ADD COLUMN detail TEXT NOT NULL DEFAULT '{}'");
        !s.ok()) {
      return Error(s.WithPrefix(file.string() + ": upgrading schema 1 to 2"));
    }
  }
  if (version == 2) {  // actions gained `incident` (schema 1 has no actions table yet)
    if (Status s = meta->Exec("ALTER TABLE actions ADD COLUMN incident TEXT NOT NULL DEFAULT ''");
        !s.ok()) {
      return Error(s.WithPrefix(file.string() + ": upgrading schema 2 to 3"));
    }
  }
  if (Status s = meta->Exec(kSchema); !s.ok()) return Error(s.WithPrefix(file.string()));
  if (Status s = meta->Exec("PRAGMA user_version=" + std::to_string(kSchemaVersion)); !s.ok()) {
    return Error(s);
  }
  return meta;
}

MetaDb::~MetaDb() { sqlite3_close(db_); }

Status MetaDb::Check() {
  MutexLock lock(mu_);
  Stmt st(db_, "PRAGMA quick_check");
  if (!st.ok()) return Status(StatusCode::kIoError, sqlite3_errmsg(db_));
  std::string problems;
  for (int rc = st.Step(); rc == SQLITE_ROW; rc = st.Step()) {
    const std::string row = st.Text(0);
    if (row == "ok") continue;
    if (!problems.empty()) problems += "; ";
    problems += row;
  }
  if (problems.empty() && sqlite3_errcode(db_) != SQLITE_OK &&
      sqlite3_errcode(db_) != SQLITE_DONE && sqlite3_errcode(db_) != SQLITE_ROW) {
    problems = sqlite3_errmsg(db_);
  }
  if (!problems.empty()) return Status(StatusCode::kIoError, problems);
  return Status::Ok();
}

Status MetaDb::Backup(const std::filesystem::path& to) {
  const std::filesystem::path tmp = to.string() + ".tmp";
  sqlite3* dest = nullptr;
  if (sqlite3_open_v2(tmp.c_str(), &dest, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    std::string msg = dest != nullptr ? sqlite3_errmsg(dest) : "cannot open";
    sqlite3_close(dest);
    return Status(StatusCode::kIoError, tmp.string() + ": " + msg);
  }
  int rc = SQLITE_OK;
  {
    MutexLock lock(mu_);
    sqlite3_backup* b = sqlite3_backup_init(dest, "main", db_, "main");
    if (b == nullptr) {
      rc = sqlite3_errcode(dest);
    } else {
      rc = sqlite3_backup_step(b, -1);
      sqlite3_backup_finish(b);
    }
  }
  std::string msg = rc == SQLITE_DONE ? "" : sqlite3_errmsg(dest);
  sqlite3_close(dest);
  std::error_code ec;
  if (rc != SQLITE_DONE) {
    std::filesystem::remove(tmp, ec);
    return Status(StatusCode::kIoError, tmp.string() + ": backup: " + msg);
  }
  std::filesystem::rename(tmp, to, ec);
  if (ec) return Status(StatusCode::kIoError, to.string() + ": rename: " + ec.message());
  return Status::Ok();
}

Status MetaDb::Exec(std::string_view sql) {
  char* err = nullptr;
  const std::string text(sql);
  if (sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    Status s(StatusCode::kIoError, std::string("sqlite: ") + (err != nullptr ? err : "error"));
    sqlite3_free(err);
    return s;
  }
  return Status::Ok();
}

Status MetaDb::SqlError(std::string_view what) const {
  return Status(StatusCode::kIoError, "sqlite: " + std::string(what) + ": " + sqlite3_errmsg(db_));
}

Status MetaDb::PutRelease(const ReleaseRecord& r) {
  MutexLock lock(mu_);
  {
    Stmt get(db_, "SELECT annotation FROM releases WHERE id = ?1");
    if (!get.ok()) return SqlError("select release");
    get.Bind(1, r.id);
    if (get.Step() == SQLITE_ROW) {
      if (get.Text(0) == r.annotation) return Status::Ok();
      return Status(StatusCode::kInvalidArgument,
                    "release '" + r.id + "' exists with a different annotation");
    }
  }
  Stmt put(db_, "INSERT INTO releases (id, service, started_at, annotation) VALUES (?1,?2,?3,?4)");
  if (!put.ok()) return SqlError("insert release");
  put.Bind(1, r.id).Bind(2, r.service).Bind(3, r.started_at).Bind(4, r.annotation);
  if (put.Step() != SQLITE_DONE) return SqlError("insert release");
  return Status::Ok();
}

Result<std::optional<ReleaseRecord>> MetaDb::GetRelease(std::string_view id) {
  MutexLock lock(mu_);
  Stmt st(db_, "SELECT id, service, started_at, annotation FROM releases WHERE id = ?1");
  if (!st.ok()) return Error(SqlError("select release"));
  st.Bind(1, id);
  const int rc = st.Step();
  if (rc == SQLITE_DONE) return std::optional<ReleaseRecord>();
  if (rc != SQLITE_ROW) return Error(SqlError("select release"));
  return std::optional<ReleaseRecord>(
      ReleaseRecord{st.Text(0), st.Text(1), st.Double(2), st.Text(3)});
}

Result<std::vector<ReleaseRecord>> MetaDb::ListReleases(const ReleaseFilter& f) {
  MutexLock lock(mu_);
  Stmt st(db_,
          "SELECT id, service, started_at, annotation FROM releases "
          "WHERE (?1 = '' OR service = ?1) AND (?2 IS NULL OR started_at >= ?2) "
          "AND (?3 IS NULL OR started_at <= ?3) ORDER BY started_at DESC, id LIMIT ?4");
  if (!st.ok()) return Error(SqlError("list releases"));
  st.Bind(1, f.service).Bind(2, f.from).Bind(3, f.to).Bind(4, static_cast<std::int64_t>(f.limit));
  std::vector<ReleaseRecord> out;
  int rc = 0;
  while ((rc = st.Step()) == SQLITE_ROW) {
    out.push_back({st.Text(0), st.Text(1), st.Double(2), st.Text(3)});
  }
  if (rc != SQLITE_DONE) return Error(SqlError("list releases"));
  return out;
}

Status MetaDb::PutCanary(const CanaryRecord& c) {
  MutexLock lock(mu_);
  Stmt st(db_,
          "INSERT INTO canaries (id, release_id, started_at, ended_at, state, detail) "
          "VALUES (?1,?2,?3,?4,?5,?6) ON CONFLICT(id) DO UPDATE SET "
          "release_id = excluded.release_id, started_at = excluded.started_at, "
          "ended_at = excluded.ended_at, state = excluded.state, detail = excluded.detail");
  if (!st.ok()) return SqlError("put canary");
  st.Bind(1, c.id).Bind(2, c.release_id).Bind(3, c.started_at).Bind(4, c.ended_at).Bind(5, c.state);
  st.Bind(6, c.detail);
  if (st.Step() != SQLITE_DONE) return SqlError("put canary");
  return Status::Ok();
}

namespace {
CanaryRecord CanaryFrom(const Stmt& st) {
  return {st.Text(0), st.Text(1), st.Double(2), st.OptDouble(3), st.Text(4), st.Text(5)};
}
}  // namespace

Result<std::optional<CanaryRecord>> MetaDb::GetCanary(std::string_view id) {
  MutexLock lock(mu_);
  Stmt st(db_,
          "SELECT id, release_id, started_at, ended_at, state, detail FROM canaries WHERE id = ?1");
  if (!st.ok()) return Error(SqlError("get canary"));
  st.Bind(1, id);
  const int rc = st.Step();
  if (rc == SQLITE_DONE) return std::optional<CanaryRecord>();
  if (rc != SQLITE_ROW) return Error(SqlError("get canary"));
  return std::optional<CanaryRecord>(CanaryFrom(st));
}

Result<std::vector<CanaryRecord>> MetaDb::ListCanaries(std::string_view release_id) {
  MutexLock lock(mu_);
  Stmt st(db_,
          "SELECT id, release_id, started_at, ended_at, state, detail FROM canaries "
          "WHERE (?1 = '' OR release_id = ?1) ORDER BY started_at DESC, id");
  if (!st.ok()) return Error(SqlError("list canaries"));
  st.Bind(1, release_id);
  std::vector<CanaryRecord> out;
  int rc = 0;
  while ((rc = st.Step()) == SQLITE_ROW) out.push_back(CanaryFrom(st));
  if (rc != SQLITE_DONE) return Error(SqlError("list canaries"));
  return out;
}

Status MetaDb::AddAction(const ActionRecord& a) {
  MutexLock lock(mu_);
  Stmt st(db_,
          "INSERT INTO actions (canary_id, name, kind, at, duration_ms, ok, attempts, detail, "
          "incident) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9)");
  if (!st.ok()) return SqlError("insert action");
  st.Bind(1, a.canary_id).Bind(2, a.name).Bind(3, a.kind).Bind(4, a.at).Bind(5, a.duration_ms);
  st.Bind(6, std::int64_t{a.ok ? 1 : 0}).Bind(7, std::int64_t{a.attempts}).Bind(8, a.detail);
  st.Bind(9, a.incident);
  if (st.Step() != SQLITE_DONE) return SqlError("insert action");
  return Status::Ok();
}

Result<std::vector<ActionRecord>> MetaDb::Actions(std::string_view canary_id) {
  MutexLock lock(mu_);
  Stmt st(db_,
          "SELECT canary_id, name, kind, at, duration_ms, ok, attempts, detail, incident "
          "FROM actions WHERE canary_id = ?1 ORDER BY seq");
  if (!st.ok()) return Error(SqlError("list actions"));
  st.Bind(1, canary_id);
  std::vector<ActionRecord> out;
  int rc = 0;
  while ((rc = st.Step()) == SQLITE_ROW) {
    out.push_back({st.Text(0), st.Text(1), st.Text(2), st.Double(3), st.Double(4), st.Int(5) != 0,
                   static_cast<int>(st.Int(6)), st.Text(7), st.Text(8)});
  }
  if (rc != SQLITE_DONE) return Error(SqlError("list actions"));
  return out;
}

Status MetaDb::AddVerdict(const VerdictRecord& v) {
  MutexLock lock(mu_);
  if (Status s = Exec("BEGIN IMMEDIATE"); !s.ok()) return s;
  auto rollback = [&](Status s) REQUIRES(mu_) {
    (void)Exec("ROLLBACK");
    return s;
  };
  Stmt put(db_,
           "INSERT INTO verdicts (canary_id, at, verdict, score, report) VALUES (?1,?2,?3,?4,?5)");
  if (!put.ok()) return rollback(SqlError("insert verdict"));
  put.Bind(1, v.canary_id).Bind(2, v.at).Bind(3, v.verdict).Bind(4, v.score).Bind(5, v.report);
  if (put.Step() != SQLITE_DONE) return rollback(SqlError("insert verdict"));
  const std::int64_t seq = sqlite3_last_insert_rowid(db_);
  for (const CauseRecord& c : v.causes) {
    Stmt cause(db_,
               "INSERT INTO causes (verdict_seq, canary_id, kind, scope, since, summary) "
               "VALUES (?1,?2,?3,?4,?5,?6)");
    if (!cause.ok()) return rollback(SqlError("insert cause"));
    cause.Bind(1, seq)
        .Bind(2, v.canary_id)
        .Bind(3, c.kind)
        .Bind(4, c.scope)
        .Bind(5, c.since)
        .Bind(6, c.summary);
    if (cause.Step() != SQLITE_DONE) return rollback(SqlError("insert cause"));
  }
  return Exec("COMMIT");
}

Result<std::vector<VerdictRecord>> MetaDb::Verdicts(std::string_view canary_id) {
  MutexLock lock(mu_);
  Stmt st(db_,
          "SELECT seq, canary_id, at, verdict, score, report FROM verdicts WHERE canary_id = ?1 "
          "ORDER BY seq");
  if (!st.ok()) return Error(SqlError("list verdicts"));
  st.Bind(1, canary_id);
  std::vector<VerdictRecord> out;
  std::vector<std::int64_t> seqs;
  int rc = 0;
  while ((rc = st.Step()) == SQLITE_ROW) {
    seqs.push_back(st.Int(0));
    out.push_back({st.Text(1), st.Double(2), st.Text(3), st.OptDouble(4), st.Text(5), {}});
  }
  if (rc != SQLITE_DONE) return Error(SqlError("list verdicts"));
  for (std::size_t i = 0; i < out.size(); ++i) {
    Stmt cs(db_,
            "SELECT kind, scope, since, summary FROM causes WHERE verdict_seq = ?1 ORDER BY rowid");
    if (!cs.ok()) return Error(SqlError("list causes"));
    cs.Bind(1, seqs[i]);
    while ((rc = cs.Step()) == SQLITE_ROW) {
      out[i].causes.push_back({cs.Text(0), cs.Text(1), cs.OptDouble(2), cs.Text(3)});
    }
    if (rc != SQLITE_DONE) return Error(SqlError("list causes"));
  }
  return out;
}

}  // namespace gpucanary::store
