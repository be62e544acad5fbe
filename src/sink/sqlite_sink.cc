// The SQLite dialect and connection of SqlApplier (sink/sql_applier.cc writes the SQL):
//   upsert   INSERT INTO t(<present cols>) VALUES(?...)
//              ON CONFLICT(<pk>) DO UPDATE SET c=excluded.c... | DO NOTHING   (PK tables)
//   no PK    UPDATE t SET c=?... WHERE rowid=(SELECT rowid FROM t WHERE c IS ? AND ... LIMIT 1)
//            DELETE FROM t WHERE rowid=(SELECT rowid FROM t WHERE c IS ? AND ... LIMIT 1)
// One statement per row: with an in-process database, a prepared statement run again is
// cheaper than building a multi-row one.
#include "sink/sqlite_sink.h"

#include "checkpoint/checkpoint.h"

#include <unistd.h>

#include <filesystem>
#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <condition_variable>
#include <cstdint>
#include <limits>
#include <mutex>
#include <thread>
#include <nlohmann/json.hpp>

#include "schema/sql_tokenizer.h"
#include "schema/text_value.h"

namespace sluice {

namespace {

// `v` as an SQLite literal (for DEFAULT clauses).
std::string SqlLiteral(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kInt:
    case Value::Kind::kUInt:
    case Value::Kind::kFloat:
    case Value::Kind::kDouble: return v.ToText();
    case Value::Kind::kText: {
      std::string out = "'";
      for (char c : v.s) out += c == '\'' ? std::string("''") : std::string(1, c);
      return out + "'";
    }
    case Value::Kind::kBytes: {
      std::string out = "X'";
      for (unsigned char c : v.s) out += fmt::format("{:02X}", c);
      return out + "'";
    }
    case Value::Kind::kNull:
    case Value::Kind::kAbsent: break;
  }
  return "NULL";
}

// What the caller does next after SQLite result `rc` (system_errno: the OS error behind an
// I/O error): busy/locked and a full disk are transient (kUnavailable: wait, then apply the
// same transaction again); a read-only or unreadable file, a permission error and other I/O
// errors are definite (kFailedPrecondition).
StatusCode CodeFor(int rc, int system_errno) {
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_FULL:
    case SQLITE_PROTOCOL:
      return StatusCode::kUnavailable;
    case SQLITE_IOERR:
      if (system_errno == ENOSPC || system_errno == EDQUOT) return StatusCode::kUnavailable;
      return StatusCode::kFailedPrecondition;
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH:
      return StatusCode::kFailedPrecondition;
    case SQLITE_CONSTRAINT:
    case SQLITE_MISMATCH:
    case SQLITE_TOOBIG:
    case SQLITE_RANGE:
      return StatusCode::kInvalidArgument;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return StatusCode::kCorruption;
    default:
      return StatusCode::kInternal;
  }
}

// A few words on what `rc` means for the user, or "".
std::string Explain(int rc, int system_errno) {
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return "the database is locked by another connection";
    case SQLITE_FULL:
      return "disk full";
    case SQLITE_IOERR:
      if (system_errno == ENOSPC || system_errno == EDQUOT) return "disk full";
      if (system_errno != 0) return fmt::format("I/O error: {}", std::strerror(system_errno));
      return "I/O error";
    case SQLITE_READONLY:
    case SQLITE_PERM:
      return "the database file is not writable (read-only file, directory or file system, or permissions)";
    case SQLITE_CANTOPEN:
      return system_errno != 0 ? fmt::format("cannot open the database file: {}", std::strerror(system_errno))
                               : "cannot open the database file";
    default:
      return "";
  }
}

Status MakeStatus(StatusCode code, std::string msg) {
  switch (code) {
    case StatusCode::kUnavailable:
      return Status::Unavailable(std::move(msg));
    case StatusCode::kInvalidArgument:
      return Status::InvalidArgument(std::move(msg));
    case StatusCode::kCorruption:
      return Status::Corruption(std::move(msg));
    case StatusCode::kFailedPrecondition:
      return Status::FailedPrecondition(std::move(msg));
    default:
      return Status::Internal(std::move(msg));
  }
}

}  // namespace

std::string SqliteTableName(const TableSchema& table) { return table.db + "." + table.table; }

std::string SqliteQuote(std::string_view name) {
  std::string out;
  out.reserve(name.size() + 2);
  out.push_back('"');
  for (char c : name) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

std::string SqliteColumnType(const ColumnDesc& c) {
  const SqlType t = c.type;
  if (t == SqlType::kBigInt) return c.is_unsigned ? "" : "INTEGER";
  if (IsIntegerType(t) || t == SqlType::kYear) return "INTEGER";
  if (t == SqlType::kBit) return c.numeric_precision >= 1 && c.numeric_precision <= 63 ? "INTEGER" : "";
  if (t == SqlType::kFloat || t == SqlType::kDouble) return "REAL";
  if (t == SqlType::kDecimal || IsTemporalType(t) || IsCharacterType(t) || t == SqlType::kEnum ||
      t == SqlType::kSet || t == SqlType::kJson || IsFixedBinaryTextType(t)) {
    return "TEXT";
  }
  if (IsBinaryType(t) || IsGeometryType(t)) return "BLOB";
  return "";  // unknown: no affinity, so whatever is bound is stored unchanged
}


namespace {

// SqlColumn::bind_kind: the column's affinity.
constexpr uint8_t kAffInteger = 'I';
constexpr uint8_t kAffReal = 'R';
constexpr uint8_t kAffText = 'T';
constexpr uint8_t kAffBlob = 'B';

// Checkpoints the WAL into the database file on a thread and a connection of its own, so the
// applying thread never waits for a checkpoint's copying and syncs (SQLite's automatic
// checkpoint runs in the COMMIT that crosses 1000 WAL pages: with synchronous=FULL two more
// fsyncs there, most of a snapshot's wall time into SQLite: BENCHMARKS.md). The applying
// connection's WAL hook, which replaces the automatic checkpoint, wakes it once the WAL holds
// kWakeBytes of frames; PASSIVE checkpoints never wait for the writer or block it. A checkpoint
// is an ordinary SQLite operation: SIGKILL or power loss at any moment leaves the database as
// at any other moment (committed transactions are in the WAL, synced per `synchronous`).
// Should it fall far behind (kInlineBytes), the applying thread checkpoints itself, as SQLite
// would. Both are bytes, so they hold whatever the database's page size.
class Checkpointer {
 public:
  static constexpr int64_t kWakeBytes = 1000 * 4096;       // SQLite's own wal_autocheckpoint at 4 KiB
  static constexpr int64_t kInlineBytes = int64_t{256} << 20;  // WAL size the writer checkpoints itself at

  // Null when the second connection cannot be opened (the caller keeps SQLite's automatic
  // checkpoint).
  static std::unique_ptr<Checkpointer> Start(const std::string& path, bool synchronous_full) {
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK ||
        sqlite3_exec(db, synchronous_full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL", nullptr,
                     nullptr, nullptr) != SQLITE_OK ||
        // A checkpoint copies frames from the WAL into the database file through a buffer
        // of its own; the page cache serves it little, so it is kept small and known.
        sqlite3_exec(db, "PRAGMA cache_size=-1024", nullptr, nullptr, nullptr) != SQLITE_OK) {
      sqlite3_close_v2(db);
      return nullptr;
    }
    return std::unique_ptr<Checkpointer>(new Checkpointer(db));
  }
  ~Checkpointer() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_one();
    thread_.join();
    sqlite3_close_v2(db_);
  }
  void Wake() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      pending_ = true;
    }
    cv_.notify_one();
  }

 private:
  explicit Checkpointer(sqlite3* db) : db_(db), thread_([this] { Loop(); }) {}
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      cv_.wait(lock, [&] { return pending_ || stop_; });
      if (stop_) return;
      pending_ = false;
      lock.unlock();
      // SQLITE_BUSY (another checkpoint running) or an I/O error: the next wake-up tries
      // again; the data stays in the WAL meanwhile.
      (void)sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
      lock.lock();
    }
  }

  sqlite3* db_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool pending_ = false;
  bool stop_ = false;
  std::thread thread_;  // last: starts once the members above exist
};

// What SqliteStatement::Bind binds for `v` in a column of bind kind `bind_kind` (BindKind;
// -1: not known): tag 'n' NULL, 'i' the int64 `i`, 'd' the double `d`, 't' text or 'b' a
// blob `s` (a view of v.s, or of *scratch: the decimal text of an unsigned value above
// INT64_MAX). One place for the live binding and the snapshot's encoded reads
// (SqliteReadEncoder), so that both bind the same.
struct SqliteArg {
  char tag = 'n';
  int64_t i = 0;
  double d = 0;
  std::string_view s;
};

Status SqliteArgOf(const Value& v, int bind_kind, std::string* scratch, SqliteArg* a) {
  switch (v.kind) {
    case Value::Kind::kNull: a->tag = 'n'; return Status::Ok();
    case Value::Kind::kAbsent: return Status::Internal("absent value bound");
    case Value::Kind::kInt:
      a->tag = 'i';
      a->i = v.i;
      return Status::Ok();
    case Value::Kind::kUInt:
      if (v.u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        a->tag = 'i';
        a->i = static_cast<int64_t>(v.u);
        return Status::Ok();
      }
      if (bind_kind == kAffInteger || bind_kind == kAffReal)
        return Status::InvalidArgument(fmt::format("unsigned value {} does not fit its INTEGER column", v.u));
      *scratch = std::to_string(v.u);
      a->tag = 't';
      a->s = *scratch;
      return Status::Ok();
    case Value::Kind::kFloat:
    case Value::Kind::kDouble:
      if (std::isnan(v.d)) return Status::InvalidArgument("NaN cannot be stored");  // SQLite: NULL
      a->tag = 'd';
      a->d = v.d;
      return Status::Ok();
    case Value::Kind::kText:
    case Value::Kind::kBytes:
      a->tag = v.kind == Value::Kind::kText ? 't' : 'b';
      a->s = v.s;
      return Status::Ok();
  }
  return Status::Internal("unknown value kind");
}

// Encoded reads (SqlConnection::LoadEncodedReads): per value its SqliteArg tag, then 'i' and
// 'd' 8 bytes (host order: encoded and read by one process), 't' and 'b' an 8-byte length
// and the bytes, 'n' nothing; rows one after the other, no header.
void AppendEncodedBytes(char tag, std::string_view bytes, std::string* out) {
  const uint64_t n = bytes.size();
  out->push_back(tag);
  out->append(reinterpret_cast<const char*>(&n), sizeof n);
  out->append(bytes);
}

void AppendEncodedArg(const SqliteArg& a, std::string* out) {
  switch (a.tag) {
    case 'i':
      out->push_back('i');
      out->append(reinterpret_cast<const char*>(&a.i), sizeof a.i);
      return;
    case 'd':
      out->push_back('d');
      out->append(reinterpret_cast<const char*>(&a.d), sizeof a.d);
      return;
    case 't':
    case 'b': AppendEncodedBytes(a.tag, a.s, out); return;
    default: out->push_back('n'); return;
  }
}

class SqliteConnection;

class SqliteStatement : public SqlStatement {
 public:
  SqliteStatement(SqliteConnection* conn, sqlite3_stmt* s) : conn_(conn), s_(s) {}
  ~SqliteStatement() override { sqlite3_finalize(s_); }
  Status Bind(int index, const Value& v, const SqlColumn* column) override;
  Result<int64_t> Execute() override;
  Result<std::vector<std::vector<std::optional<std::string>>>> Query() override;
  sqlite3_stmt* handle() const { return s_; }

 private:
  SqliteConnection* conn_;
  sqlite3_stmt* s_;
};

class SqliteConnection : public SqlConnection {
 public:
  explicit SqliteConnection(SqliteSinkOptions options) : options_(std::move(options)) {}
  ~SqliteConnection() override {
    checkpointer_.reset();
    prepared_.clear();  // finalize before closing
    if (db_ != nullptr) sqlite3_close_v2(db_);
  }

  Status Open() {
    // SQLite counts every allocation under a global mutex unless told not to (about 2 % of
    // the snapshot's insert thread); nothing here reads those counts. Only possible before
    // SQLite initialises: later calls fail harmlessly (SQLITE_MISUSE).
    static std::once_flag memstatus_off;
    std::call_once(memstatus_off, [] { (void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); });
    const std::string& path = options_.path;
    int rc = sqlite3_open_v2(path.c_str(), &db_,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc != SQLITE_OK) return SqlError("open", rc);
    sqlite3_extended_result_codes(db_, 1);
    sqlite3_busy_timeout(db_, options_.busy_timeout_ms);
    // Takes effect only while the file holds no page yet (a new database); must come before
    // WAL mode, which fixes the page size. SQLite ignores a size that is not a power of two.
    RETURN_IF_ERROR(Exec(fmt::format("PRAGMA page_size={}", options_.page_size)));
    // journal_mode answers with the mode in force; anything but WAL means no WAL here.
    {
      ASSIGN_OR_RETURN(SqlStatement * s, Prepare("PRAGMA journal_mode=WAL"));
      ASSIGN_OR_RETURN(auto rows, s->Query());
      const std::string mode = !rows.empty() && !rows[0].empty() && rows[0][0] ? *rows[0][0] : "";
      if (mode != "wal" && !(path == ":memory:" && mode == "memory")) {
        return Status::FailedPrecondition(
            fmt::format("sqlite {}: cannot switch to WAL journal mode (got \"{}\")", path, mode));
      }
    }
    RETURN_IF_ERROR(Exec(options_.synchronous_full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL"));
    {
      ASSIGN_OR_RETURN(SqlStatement * s, Prepare("PRAGMA page_size"));
      ASSIGN_OR_RETURN(auto rows, s->Query());
      if (!rows.empty() && !rows[0].empty() && rows[0][0])
        page_size_ = std::max<int64_t>(std::strtoll(rows[0][0]->c_str(), nullptr, 10), 512);
    }
    // 32 MiB of page cache (SqlitePageCacheBytes) instead of SQLite's 2 MB: catching up, the
    // default re-read the tables' index pages from the OS at every group (a fifth of the run
    // in read() calls). Negative: KiB.
    RETURN_IF_ERROR(Exec(fmt::format("PRAGMA cache_size=-{}", std::max<size_t>(options_.cache_bytes >> 10, 64))));
    if (path != ":memory:" && !path.empty()) {
      checkpointer_ = Checkpointer::Start(path, options_.synchronous_full);
      if (checkpointer_) sqlite3_wal_hook(db_, &SqliteConnection::WalHook, this);
    }
    ASSIGN_OR_RETURN(begin_, Prepare("BEGIN IMMEDIATE"));
    ASSIGN_OR_RETURN(commit_, Prepare("COMMIT"));
    ASSIGN_OR_RETURN(rollback_, Prepare("ROLLBACK"));
    return Status::Ok();
  }

  Status SqlError(std::string_view what, int rc) const {
    const char* msg = db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    const int sys = db_ != nullptr ? sqlite3_system_errno(db_) : 0;
    const std::string why = Explain(rc, sys);
    return MakeStatus(CodeFor(rc, sys), fmt::format("sqlite {}: {}{}{}: {} ({})", options_.path, why,
                                                    why.empty() ? "" : ": ", what, msg, rc));
  }

  Status Exec(const std::string& sql) override {
    char* err = nullptr;
    int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
    if (rc == SQLITE_OK) return Status::Ok();
    std::string msg = err != nullptr ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    const int sys = sqlite3_system_errno(db_);
    const std::string why = Explain(sqlite3_extended_errcode(db_), sys);
    return MakeStatus(CodeFor(sqlite3_extended_errcode(db_), sys),
                      fmt::format("sqlite {}: {}{}{}: {}", options_.path, why, why.empty() ? "" : ": ", sql, msg));
  }

  Result<SqlStatement*> Prepare(const std::string& sql) override {
    auto it = prepared_.find(sql);
    if (it != prepared_.end()) return it->second.get();
    sqlite3_stmt* s = nullptr;
    int rc = sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &s,
                                nullptr);
    if (rc != SQLITE_OK) return SqlError("prepare " + sql, rc);
    auto stmt = std::make_unique<SqliteStatement>(this, s);
    SqlStatement* out = stmt.get();
    prepared_.emplace(sql, std::move(stmt));
    return out;
  }

  Status Begin() override { return begin_->Execute().status(); }
  Status Commit() override { return commit_->Execute().status(); }
  void Rollback() override {
    if (sqlite3_get_autocommit(db_) == 0) (void)rollback_->Execute();
  }
  std::string Describe() const override { return "sqlite " + options_.path; }

  Status LoadEncodedReads(SqlStatement* upsert, size_t columns, size_t rows, std::string_view in) override {
    sqlite3_stmt* s = static_cast<SqliteStatement*>(upsert)->handle();
    const char* p = in.data();
    const char* const end = p + in.size();
    const auto malformed = [&] {
      return Status::Internal(fmt::format("encoded snapshot reads: malformed at byte {} of {}", p - in.data(), in.size()));
    };
    for (size_t r = 0; r < rows; ++r) {
      for (size_t c = 1; c <= columns; ++c) {
        if (p == end) return malformed();
        const char tag = *p++;
        int rc = SQLITE_OK;
        const int index = static_cast<int>(c);
        if (tag == 'n') {
          rc = sqlite3_bind_null(s, index);
        } else if (tag == 'i' || tag == 'd') {
          if (end - p < 8) return malformed();
          if (tag == 'i') {
            int64_t v;
            std::memcpy(&v, p, sizeof v);
            rc = sqlite3_bind_int64(s, index, v);
          } else {
            double v;
            std::memcpy(&v, p, sizeof v);
            rc = sqlite3_bind_double(s, index, v);
          }
          p += 8;
        } else if (tag == 't' || tag == 'b') {
          uint64_t n;
          if (end - p < 8) return malformed();
          std::memcpy(&n, p, sizeof n);
          p += 8;
          if (static_cast<uint64_t>(end - p) < n) return malformed();
          rc = tag == 't' ? sqlite3_bind_text64(s, index, p, n, SQLITE_STATIC, SQLITE_UTF8)
                          : sqlite3_bind_blob64(s, index, p, n, SQLITE_STATIC);
          p += n;
        } else {
          return malformed();
        }
        if (rc != SQLITE_OK) return SqlError("bind", rc);
      }
      int rc;
      while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
      }
      Status st;
      if (rc != SQLITE_DONE) st = SqlError(sqlite3_sql(s), rc);
      sqlite3_reset(s);
      RETURN_IF_ERROR(st);
    }
    if (p != end) return malformed();
    return Status::Ok();
  }

  sqlite3* db() const { return db_; }

 private:
  // After each commit, with the WAL's frame count (Checkpointer above).
  static int WalHook(void* self, sqlite3* db, const char* name, int frames) {
    auto* conn = static_cast<SqliteConnection*>(self);
    const int64_t bytes = int64_t{frames} * conn->page_size_;
    if (bytes >= Checkpointer::kInlineBytes)
      (void)sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
    else if (bytes >= Checkpointer::kWakeBytes)
      conn->checkpointer_->Wake();
    return SQLITE_OK;
  }

  SqliteSinkOptions options_;
  sqlite3* db_ = nullptr;
  int64_t page_size_ = 4096;  // the database's, read once it is open
  std::unique_ptr<Checkpointer> checkpointer_;
  std::unordered_map<std::string, std::unique_ptr<SqliteStatement>> prepared_;
  SqlStatement* begin_ = nullptr;
  SqlStatement* commit_ = nullptr;
  SqlStatement* rollback_ = nullptr;
};

Status SqliteStatement::Bind(int index, const Value& v, const SqlColumn* column) {
  SqliteArg a;
  std::string scratch;
  RETURN_IF_ERROR(SqliteArgOf(v, column != nullptr ? column->bind_kind : -1, &scratch, &a));
  int rc = SQLITE_OK;
  switch (a.tag) {
    case 'i': rc = sqlite3_bind_int64(s_, index, a.i); break;
    case 'd': rc = sqlite3_bind_double(s_, index, a.d); break;
    case 't':
      rc = sqlite3_bind_text64(s_, index, a.s.data(), a.s.size(), scratch.empty() ? SQLITE_STATIC : SQLITE_TRANSIENT,
                               SQLITE_UTF8);
      break;
    case 'b': rc = sqlite3_bind_blob64(s_, index, a.s.data(), a.s.size(), SQLITE_STATIC); break;
    default: rc = sqlite3_bind_null(s_, index); break;
  }
  if (rc != SQLITE_OK) return conn_->SqlError("bind", rc);
  return Status::Ok();
}

Result<int64_t> SqliteStatement::Execute() {
  int rc;
  while ((rc = sqlite3_step(s_)) == SQLITE_ROW) {
  }
  Status st;
  if (rc != SQLITE_DONE) st = conn_->SqlError(sqlite3_sql(s_), rc);
  sqlite3_reset(s_);
  RETURN_IF_ERROR(st);
  return static_cast<int64_t>(sqlite3_changes(conn_->db()));
}

Result<std::vector<std::vector<std::optional<std::string>>>> SqliteStatement::Query() {
  std::vector<std::vector<std::optional<std::string>>> rows;
  int rc;
  while ((rc = sqlite3_step(s_)) == SQLITE_ROW) {
    auto& row = rows.emplace_back();
    const int n = sqlite3_column_count(s_);
    for (int i = 0; i < n; ++i) {
      if (sqlite3_column_type(s_, i) == SQLITE_NULL) {
        row.emplace_back();
        continue;
      }
      const unsigned char* text = sqlite3_column_text(s_, i);
      row.emplace_back(std::string(reinterpret_cast<const char*>(text),
                                   static_cast<size_t>(sqlite3_column_bytes(s_, i))));
    }
  }
  Status st;
  if (rc != SQLITE_DONE) st = conn_->SqlError(sqlite3_sql(s_), rc);
  sqlite3_reset(s_);
  RETURN_IF_ERROR(st);
  return rows;
}

class SqliteDialect : public SqlDialect {
 public:
  explicit SqliteDialect(size_t rows_per_statement) : rows_per_statement_(std::max<size_t>(1, rows_per_statement)) {}
  size_t MaxRowsPerStatement() const override { return rows_per_statement_; }
  std::string_view name() const override { return "sqlite"; }
  std::string Quote(std::string_view identifier) const override { return SqliteQuote(identifier); }
  std::string Placeholder(int) const override { return "?"; }
  SqlTableName TableName(const TableSchema& table) const override {
    SqlTableName n;
    n.key = SqliteTableName(table);
    n.quoted = SqliteQuote(n.key);
    n.display = n.key;
    n.table_name = n.key;
    return n;
  }
  bool NamesEqual(std::string_view a, std::string_view b) const override { return sql::EqualsIgnoreAsciiCase(a, b); }
  Result<std::string> ColumnType(const ColumnDesc& column) const override { return SqliteColumnType(column); }
  uint8_t BindKind(const ColumnDesc& column) const override {
    const std::string type = SqliteColumnType(column);
    return type == "INTEGER" ? kAffInteger : type == "REAL" ? kAffReal : type == "TEXT" ? kAffText : kAffBlob;
  }
  Result<std::string> Literal(const Value& v, const ColumnDesc&) const override { return SqlLiteral(v); }
  std::string NullSafeEquals(const std::string& quoted_column, const std::string& param) const override {
    return quoted_column + " IS " + param;
  }
  // SQLite's SQLITE_MAX_COLUMN (2000 as built by Debian): a wider table was refused by
  // sqlite3_prepare with "too many columns" at the end of a 34 KB "Internal" error (a new
  // user's probe, 2,101 columns).
  Status CheckNames(const TableSchema& table) const override {
    constexpr size_t kMaxColumns = 2000;
    if (table.columns.size() > kMaxColumns)
      return Status::FailedPrecondition(fmt::format(
          "table {}.{} has {} columns; an SQLite table holds at most {}: leave it out (source.exclude) or use "
          "another sink (PostgreSQL holds 1600, MySQL/MariaDB 4096)",
          table.db, table.table, table.columns.size(), kMaxColumns));
    return Status::Ok();
  }
  Result<std::string> RowLocator(const TableSchema& schema) const override {
    for (const char* alias : {"rowid", "_rowid_", "oid"})
      if (schema.ColumnIndex(alias) < 0) return std::string(alias);
    return Status::NotSupported(
        "has no primary key and columns named rowid, _rowid_ and oid, so SQLite's row id, which finds its rows, "
        "has no name left: give the table a primary key at the source, add it to source.exclude, or use another sink");
  }
  std::vector<std::string> CreateMetadataSql() const override {
    return {"CREATE TABLE IF NOT EXISTS _sluice_checkpoint(id INTEGER PRIMARY KEY CHECK(id = 1), state TEXT NOT NULL)",
            "CREATE TABLE IF NOT EXISTS _sluice_tables(name TEXT PRIMARY KEY COLLATE NOCASE, source_db TEXT NOT NULL, "
            "source_table TEXT NOT NULL, columns TEXT NOT NULL)",
            "CREATE TABLE IF NOT EXISTS _sluice_schemas(ref TEXT PRIMARY KEY, history TEXT NOT NULL)"};
  }
  std::string MetaSql(SqlMeta which) const override {
    switch (which) {
      case SqlMeta::kLoadCheckpoint: return "SELECT state FROM _sluice_checkpoint WHERE id = 1";
      case SqlMeta::kSaveCheckpoint:
        return "INSERT INTO _sluice_checkpoint(id, state) VALUES(1, ?) "
               "ON CONFLICT(id) DO UPDATE SET state = excluded.state";
      case SqlMeta::kLookupTable: return "SELECT source_db, source_table FROM _sluice_tables WHERE name = ?";
      case SqlMeta::kStoreTable:
        return "INSERT OR REPLACE INTO _sluice_tables(name, source_db, source_table, columns) VALUES(?, ?, ?, ?)";
      case SqlMeta::kForgetTable: return "DELETE FROM _sluice_tables WHERE name = ?";
      case SqlMeta::kLoadSchemas: return "SELECT history FROM _sluice_schemas WHERE ref = ?";
      case SqlMeta::kSaveSchemas: return "INSERT OR REPLACE INTO _sluice_schemas(ref, history) VALUES(?, ?)";
      case SqlMeta::kDropOtherSchemas: return "DELETE FROM _sluice_schemas WHERE ref <> ?";
    }
    return "";
  }
  Result<std::optional<std::vector<SqlExistingColumn>>> DescribeTable(SqlConnection& conn,
                                                                      const SqlTableName& table) const override {
    return DescribeByQuery(conn, "SELECT name, type, pk FROM pragma_table_info(?) ORDER BY cid", {table.key});
  }
  std::vector<std::string> RenameTableSql(const SqlTableName& from, const SqlTableName& to) const override {
    // Through a scratch name: SQLite refuses a rename that only changes letter case.
    static const std::string kScratch = SqliteQuote("_sluice_rename");
    return {"ALTER TABLE " + from.quoted + " RENAME TO " + kScratch, "ALTER TABLE " + kScratch + " RENAME TO " + to.quoted};
  }

 private:
  size_t rows_per_statement_;
};

}  // namespace

size_t SqlitePageCacheBytes(size_t max_buffered_bytes) {
  constexpr size_t kDefault = 32u << 20, kMin = 64u << 10;
  if (max_buffered_bytes == 0) return kDefault;
  return std::clamp(max_buffered_bytes / 8, kMin, kDefault);
}

size_t SqliteChangeDataBytes(size_t max_buffered_bytes) {
  return max_buffered_bytes - std::min(SqlitePageCacheBytes(max_buffered_bytes), max_buffered_bytes / 2);
}

namespace {

// A snapshot chunk's rows encoded on its read worker as the values SqliteStatement::Bind
// would bind (SqliteArgOf), so that the sink's one writing thread, the snapshot's bottleneck
// into SQLite, only binds and steps (BENCHMARKS.md). Cells whose Value is known without
// building it (TextCellFormOf) are encoded straight from the connector's buffer; the others
// go through ValueFromText. Errors are those of the Rows path: ValueFromText's with the table
// as context, and Bind's naming table and column.
class SqliteReadEncoder final : public ReadTextFormatter {
 public:
  SqliteReadEncoder(TableSchemaPtr table, const SqlDialect& dialect)
      : table_(std::move(table)), display_(dialect.TableName(*table_).display) {
    for (const ColumnDesc& c : table_->columns) {
      kinds_.push_back(dialect.BindKind(c));
      forms_.push_back(TextCellFormOf(c));
    }
  }
  void Begin(const SourceInfo&) override {}
  Status Append(const std::vector<std::optional<std::string_view>>& cells, std::string* out) override {
    if (cells.size() != kinds_.size())
      return Status::Internal(fmt::format("table {}: {} cells for {} columns", display_, cells.size(), kinds_.size()));
    const size_t start = out->size();
    for (size_t i = 0; i < cells.size(); ++i) {
      const std::optional<std::string_view>& cell = cells[i];
      if (cell) {
        if (forms_[i] == TextCellForm::kText) {
          AppendEncodedBytes('t', *cell, out);
          continue;
        }
        if ((forms_[i] == TextCellForm::kInteger || forms_[i] == TextCellForm::kUnsigned) &&
            CanonicalInteger(*cell, forms_[i] == TextCellForm::kInteger)) {
          int64_t v = 0;
          std::from_chars(cell->data(), cell->data() + cell->size(), v);
          SqliteArg a;
          a.tag = 'i';
          a.i = v;
          AppendEncodedArg(a, out);
          continue;
        }
      }
      Result<Value> v = ValueFromText(table_->columns[i], cell);
      if (!v.ok()) {
        out->resize(start);
        return v.status().WithContext(table_->QualifiedName());
      }
      Status st = Encode(*v, i, out);
      if (!st.ok()) {
        out->resize(start);
        return st;
      }
    }
    return Status::Ok();
  }
  // The Rows of a chunk read as Values (one filtered by watermarks).
  Status EncodeRow(const Row& row, std::string* out) {
    if (row.size() != kinds_.size())
      return Status::Internal(fmt::format("table {}: {} values for {} columns", display_, row.size(), kinds_.size()));
    for (size_t i = 0; i < row.size(); ++i) RETURN_IF_ERROR(Encode(row[i], i, out));
    return Status::Ok();
  }

 private:
  Status Encode(const Value& v, size_t column, std::string* out) {
    SqliteArg a;
    Status st = SqliteArgOf(v, kinds_[column], &scratch_, &a);
    if (!st.ok()) return st.WithContext(fmt::format("table {}: column {}", display_, table_->columns[column].name));
    AppendEncodedArg(a, out);
    return Status::Ok();
  }

  TableSchemaPtr table_;
  std::string display_;
  std::vector<uint8_t> kinds_;
  std::vector<TextCellForm> forms_;
  std::string scratch_;
};

class SqliteSnapshotPreformatter final : public Preformatter {
 public:
  std::unique_ptr<ReadTextFormatter> NewReadTextFormatter(const TableSchemaPtr& table) override {
    return std::make_unique<SqliteReadEncoder>(table, dialect_);
  }
  Status Format(Transaction& txn) override {
    (void)txn;
    return Status::Internal("SQLite formats nothing ahead of the stream");
  }
  Status FormatReads(const TableSchemaPtr& table, std::vector<Row>& rows, const SourceInfo& source,
                     Transaction& txn) override {
    (void)source;
    SqliteReadEncoder encoder(table, dialect_);
    std::string out;
    for (const Row& row : rows) RETURN_IF_ERROR(encoder.EncodeRow(row, &out));
    txn.preformatted = std::move(out);
    return Status::Ok();
  }

 private:
  const SqliteDialect dialect_{1};
};

}  // namespace

std::unique_ptr<Preformatter> SqliteSink::NewSnapshotPreformatter() const {
  return std::make_unique<SqliteSnapshotPreformatter>();
}

Result<std::unique_ptr<SqliteSink>> SqliteSink::Open(SqliteSinkOptions options) {
  if (options.path.empty()) return Status::InvalidArgument("sqlite sink: database path is empty");
  const bool drop_tables = options.drop_tables;
  const size_t rows_per_statement = options.rows_per_statement;
  auto conn = std::make_unique<SqliteConnection>(std::move(options));
  RETURN_IF_ERROR(conn->Open());
  std::unique_ptr<SqliteSink> sink(
      new SqliteSink(std::make_unique<SqliteDialect>(rows_per_statement), std::move(conn)));
  sink->set_drop_tables(drop_tables);
  RETURN_IF_ERROR(sink->Init());
  return sink;
}

Result<sqlite3*> OpenSqliteReader(const std::string& path) {
  auto open = [&](const std::string& name, int flags) -> Result<sqlite3*> {
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(name.c_str(), &db, flags, nullptr) != SQLITE_OK) {
      Status st = Status::Unavailable(
          fmt::format("cannot open SQLite replica {}: {}", path, db ? sqlite3_errmsg(db) : "out of memory"));
      sqlite3_close(db);
      return st;
    }
    sqlite3_busy_timeout(db, 5000);  // a running pipeline may hold a write lock briefly
    return db;
  };
  ASSIGN_OR_RETURN(sqlite3 * db, open(path, SQLITE_OPEN_READONLY));
  // A WAL database opens, then fails at the first read when its -shm cannot be created.
  const int rc = sqlite3_exec(db, "SELECT 1 FROM sqlite_master LIMIT 1", nullptr, nullptr, nullptr);
  if (rc == SQLITE_OK) return db;
  const std::string msg = sqlite3_errmsg(db);
  sqlite3_close(db);
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir.push_back('.');  // (= "." trips GCC 12's -Wrestrict false positive)
  std::error_code ec;
  const auto wal_size = std::filesystem::file_size(path + "-wal", ec);
  const bool wal_empty = ec || wal_size == 0;
  if ((rc & 0xff) == SQLITE_CANTOPEN && ::access(dir.c_str(), W_OK) != 0 && std::filesystem::exists(path)) {
    // Immutable reads the database file alone: not when a WAL holds pages not yet in it.
    if (!wal_empty)
      return Status::Unavailable(fmt::format(
          "cannot read SQLite replica {}: its directory is not writable, so SQLite cannot open its -shm file, and "
          "its -wal file ({} bytes) holds changes not yet in the database file; open it once where it can be "
          "written (or copy the three files to a writable place)",
          path, wal_size));
    // file: URI: '%', '?' and '#' in the path are escaped.
    std::string uri = "file:";
    for (char c : std::filesystem::absolute(path).string()) {
      if (c == '%' || c == '?' || c == '#') uri += fmt::format("%{:02X}", static_cast<unsigned char>(c));
      else uri.push_back(c);
    }
    uri += "?immutable=1";
    return open(uri, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI);
  }
  return Status::Unavailable(fmt::format("cannot read SQLite replica {}: {}", path, msg));
}

Result<size_t> CheckSqliteTables(
    const std::string& path, const std::vector<std::pair<std::string, std::string>>& tables,
    const std::function<Result<TableSchema>(const std::string& db, const std::string& table)>& load) {
  ASSIGN_OR_RETURN(sqlite3 * db, OpenSqliteReader(path));
  const SqliteDialect dialect(1);
  size_t existing = 0;
  Status result;
  for (const auto& [source_db, source_table] : tables) {
    TableSchema named;
    named.db = source_db;
    named.table = source_table;
    const std::string key = SqliteTableName(named);
    std::vector<SqlExistingColumn> have;
    sqlite3_stmt* s = nullptr;
    int rc = sqlite3_prepare_v2(db, "SELECT name, type, pk FROM pragma_table_info(?) ORDER BY cid", -1, &s, nullptr);
    if (rc == SQLITE_OK) {
      sqlite3_bind_text64(s, 1, key.data(), key.size(), SQLITE_STATIC, SQLITE_UTF8);
      while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        auto text = [s](int i) {
          const unsigned char* t = sqlite3_column_text(s, i);
          return t ? std::string(reinterpret_cast<const char*>(t)) : std::string();
        };
        have.push_back(SqlExistingColumn{text(0), text(1), sqlite3_column_int(s, 2)});
      }
    }
    if (rc != SQLITE_DONE) result = Status::Unavailable(fmt::format("sqlite {}: describing table {}: {}", path, key, sqlite3_errmsg(db)));
    sqlite3_finalize(s);
    if (!result.ok()) break;
    if (have.empty()) continue;
    ++existing;
    Result<TableSchema> schema = load(source_db, source_table);
    if (!schema.ok()) {
      result = schema.status();
      break;
    }
    result = MatchExistingTable(dialect, *schema, std::move(have))
                 .WithContext("sqlite " + path)
                 .WithContext("preparing table " + key);
    if (!result.ok()) break;
  }
  sqlite3_close(db);
  if (!result.ok()) return result;
  return existing;
}

Result<std::optional<std::string>> ReadSqliteCheckpoint(sqlite3* db) {
  auto read = [db](const char* sql, std::string_view bind, std::optional<std::string>* out) -> Status {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) != SQLITE_OK) {
      std::string err = sqlite3_errmsg(db);
      sqlite3_finalize(s);
      if (err.find("no such table") != std::string::npos) return Status::Ok();
      return Status::Unavailable(fmt::format("reading the checkpoint: {}: {}", sql, err));
    }
    if (!bind.empty()) sqlite3_bind_text64(s, 1, bind.data(), bind.size(), SQLITE_STATIC, SQLITE_UTF8);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL) {
      out->emplace(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)),
                   static_cast<size_t>(sqlite3_column_bytes(s, 0)));
    }
    Status st = rc == SQLITE_ROW || rc == SQLITE_DONE
                    ? Status::Ok()
                    : Status::Unavailable(fmt::format("reading the checkpoint: {}: {}", sql, sqlite3_errmsg(db)));
    sqlite3_finalize(s);
    return st;
  };
  std::optional<std::string> state;
  RETURN_IF_ERROR(read("SELECT state FROM _sluice_checkpoint WHERE id = 1", {}, &state));
  if (!state) return state;
  const std::string_view ref = CheckpointSchemasRef(*state);
  if (ref.empty()) return state;
  std::optional<std::string> history;
  RETURN_IF_ERROR(read("SELECT history FROM _sluice_schemas WHERE ref = ?", ref, &history));
  if (!history) {
    return Status::Corruption(fmt::format(
        "the checkpoint refers to schema history {}, which _sluice_schemas does not hold", ref));
  }
  return std::optional<std::string>(JoinCheckpoint(*state, *history));
}

}  // namespace sluice
