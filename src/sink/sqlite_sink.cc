// SqliteSink implementation. SQL written here (identifiers quoted with SqliteQuote):
//   upsert   INSERT INTO t(<present cols>) VALUES(?...)
//              ON CONFLICT(<pk>) DO UPDATE SET c=excluded.c... | DO NOTHING   (PK tables)
//   update   UPDATE t SET c=?... WHERE pk1=? AND ...
//   delete   DELETE FROM t WHERE pk1=? AND ...
//   no PK    UPDATE t SET c=?... WHERE rowid=(SELECT rowid FROM t WHERE c IS ? AND ... LIMIT 1)
//            DELETE FROM t WHERE rowid=(SELECT rowid FROM t WHERE c IS ? AND ... LIMIT 1)
// Statements are prepared once per (table, kind, present-column mask) and cached.
#include "sink/sqlite_sink.h"

#include <sqlite3.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>

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

// Statement cache key kinds (first byte of the key).
constexpr char kUpsert = 'I';
constexpr char kUpdateByKey = 'U';
constexpr char kDeleteByKey = 'D';
constexpr char kUpdateFirstMatch = 'u';
constexpr char kDeleteFirstMatch = 'd';

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

struct SqliteSink::Table {
  TableSchemaPtr schema;
  std::string name;    // SQLite table name
  std::string quoted;  // SqliteQuote(name)
  std::vector<std::string> qcols;
  std::vector<char> affinity;  // 'I' INTEGER, 'R' REAL, 'T' TEXT, 'B' BLOB/none
  std::vector<bool> is_pk;
  // Per column: the source DEFAULT as a canonical Value (schema/text_value.h DefaultValue),
  // bound on insert when the row image leaves the column out; a non-empty
  // default_error[i] means the default could not be understood (reported when needed).
  std::vector<Value> defaults;
  std::vector<std::string> default_error;
  std::string rowid;  // name of the rowid for tables without a PK
  std::unordered_map<std::string, sqlite3_stmt*> stmts;

  const std::string& column(size_t i) const { return schema->columns[i].name; }
};

SqliteSink::SqliteSink(SqliteSinkOptions options) : options_(std::move(options)) {}

SqliteSink::~SqliteSink() {
  for (auto& [sql, s] : prepared_) sqlite3_finalize(s);
  if (db_ != nullptr) sqlite3_close_v2(db_);
}

Status SqliteSink::SqlError(std::string_view what, int rc) const {
  const char* msg = db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  const int sys = db_ != nullptr ? sqlite3_system_errno(db_) : 0;
  const std::string why = Explain(rc, sys);
  return MakeStatus(CodeFor(rc, sys), fmt::format("sqlite {}: {}{}{}: {} ({})", options_.path,
                                                  why, why.empty() ? "" : ": ", what, msg, rc));
}

Status SqliteSink::Exec(const std::string& sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
  if (rc == SQLITE_OK) return Status::Ok();
  std::string msg = err != nullptr ? err : sqlite3_errstr(rc);
  sqlite3_free(err);
  const int sys = sqlite3_system_errno(db_);
  const std::string why = Explain(sqlite3_extended_errcode(db_), sys);
  return MakeStatus(CodeFor(sqlite3_extended_errcode(db_), sys),
                    fmt::format("sqlite {}: {}{}{}: {}", options_.path, why, why.empty() ? "" : ": ",
                                sql, msg));
}

Result<sqlite3_stmt*> SqliteSink::Prepare(const std::string& sql) {
  auto it = prepared_.find(sql);
  if (it != prepared_.end()) return it->second;
  sqlite3_stmt* s = nullptr;
  int rc = sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size()),
                              SQLITE_PREPARE_PERSISTENT, &s, nullptr);
  if (rc != SQLITE_OK) return SqlError("prepare " + sql, rc);
  prepared_.emplace(sql, s);
  return s;
}

Result<std::unique_ptr<SqliteSink>> SqliteSink::Open(SqliteSinkOptions options) {
  if (options.path.empty()) return Status::InvalidArgument("sqlite sink: database path is empty");
  std::unique_ptr<SqliteSink> sink(new SqliteSink(std::move(options)));
  const std::string& path = sink->options_.path;
  int rc =
      sqlite3_open_v2(path.c_str(), &sink->db_,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) return sink->SqlError("open", rc);
  sqlite3_extended_result_codes(sink->db_, 1);
  sqlite3_busy_timeout(sink->db_, sink->options_.busy_timeout_ms);

  // journal_mode answers with the mode in force; anything but WAL means no WAL here.
  {
    ASSIGN_OR_RETURN(sqlite3_stmt * s, sink->Prepare("PRAGMA journal_mode=WAL"));
    rc = sqlite3_step(s);
    std::string mode = rc == SQLITE_ROW && sqlite3_column_text(s, 0) != nullptr
                           ? reinterpret_cast<const char*>(sqlite3_column_text(s, 0))
                           : "";
    if (rc != SQLITE_ROW) return sink->SqlError("PRAGMA journal_mode=WAL", rc);
    sqlite3_reset(s);
    if (mode != "wal" && !(path == ":memory:" && mode == "memory")) {
      return Status::FailedPrecondition(
          fmt::format("sqlite {}: cannot switch to WAL journal mode (got \"{}\")", path, mode));
    }
  }
  RETURN_IF_ERROR(sink->Exec(sink->options_.synchronous_full ? "PRAGMA synchronous=FULL"
                                                             : "PRAGMA synchronous=NORMAL"));
  RETURN_IF_ERROR(
      sink->Exec("CREATE TABLE IF NOT EXISTS _sluice_checkpoint("
                 "id INTEGER PRIMARY KEY CHECK(id = 1), state TEXT NOT NULL);"
                 "CREATE TABLE IF NOT EXISTS _sluice_tables("
                 "name TEXT PRIMARY KEY COLLATE NOCASE, source_db TEXT NOT NULL, "
                 "source_table TEXT NOT NULL, columns TEXT NOT NULL);"));
  ASSIGN_OR_RETURN(sink->begin_, sink->Prepare("BEGIN IMMEDIATE"));
  ASSIGN_OR_RETURN(sink->commit_, sink->Prepare("COMMIT"));
  ASSIGN_OR_RETURN(sink->rollback_, sink->Prepare("ROLLBACK"));
  ASSIGN_OR_RETURN(sink->save_checkpoint_,
                   sink->Prepare("INSERT INTO _sluice_checkpoint(id, state) VALUES(1, ?) "
                                 "ON CONFLICT(id) DO UPDATE SET state = excluded.state"));
  return sink;
}

Status SqliteSink::Run(Table* t, sqlite3_stmt* s, int* changes) {
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
  }
  Status st;
  if (rc != SQLITE_DONE) {
    st = SqlError(t != nullptr ? "table " + t->name : std::string(sqlite3_sql(s)), rc);
  }
  sqlite3_reset(s);
  if (changes != nullptr) *changes = sqlite3_changes(db_);
  return st;
}

Status SqliteSink::BeginImmediate() { return Run(nullptr, begin_); }

void SqliteSink::Rollback() {
  if (sqlite3_get_autocommit(db_) == 0) (void)Run(nullptr, rollback_);
}

Result<std::optional<std::string>> SqliteSink::LoadCheckpoint() {
  ASSIGN_OR_RETURN(sqlite3_stmt * s, Prepare("SELECT state FROM _sluice_checkpoint WHERE id = 1"));
  int rc = sqlite3_step(s);
  std::optional<std::string> out;
  if (rc == SQLITE_ROW) {
    const unsigned char* text = sqlite3_column_text(s, 0);
    if (text != nullptr) {
      out.emplace(reinterpret_cast<const char*>(text),
                  static_cast<size_t>(sqlite3_column_bytes(s, 0)));
    }
  }
  Status st =
      rc == SQLITE_ROW || rc == SQLITE_DONE ? Status::Ok() : SqlError("load checkpoint", rc);
  sqlite3_reset(s);
  RETURN_IF_ERROR(st);
  return out;
}

Status SqliteSink::WriteCheckpoint(const std::string& checkpoint) {
  int rc = sqlite3_bind_text64(save_checkpoint_, 1, checkpoint.data(), checkpoint.size(),
                               SQLITE_STATIC, SQLITE_UTF8);
  if (rc != SQLITE_OK) return SqlError("bind checkpoint", rc);
  return Run(nullptr, save_checkpoint_);
}

Status SqliteSink::SaveCheckpoint(const std::string& checkpoint) {
  return WriteCheckpoint(checkpoint);  // one statement: its own atomic transaction
}

Status SqliteSink::Flush() { return Status::Ok(); }

Status SqliteSink::ResetTable(const TableSchema& table, const std::string& checkpoint) {
  RETURN_IF_ERROR(PrepareTable(table));
  RETURN_IF_ERROR(BeginImmediate());
  Status st = Exec("DELETE FROM " + SqliteQuote(SqliteTableName(table)));
  if (st.ok() && !checkpoint.empty()) st = WriteCheckpoint(checkpoint);
  if (st.ok()) st = Run(nullptr, commit_);
  if (!st.ok()) Rollback();
  return st;
}

Status SqliteSink::PrepareTable(const TableSchema& schema) {
  const std::string name = SqliteTableName(schema);
  if (schema.columns.empty()) {
    return Status::InvalidArgument(fmt::format("table {}: no columns", name));
  }
  for (size_t k : schema.primary_key) {
    if (k >= schema.columns.size()) {
      return Status::InvalidArgument(
          fmt::format("table {}: primary key index {} out of range", name, k));
    }
  }
  auto existing = tables_.find(name);
  if (existing != tables_.end()) {
    const TableSchema& old = *existing->second->schema;
    bool same = old.db == schema.db && old.table == schema.table &&
                old.columns.size() == schema.columns.size() &&
                old.primary_key == schema.primary_key;
    for (size_t i = 0; same && i < old.columns.size(); ++i) {
      same = old.columns[i].name == schema.columns[i].name &&
             SqliteColumnType(old.columns[i]) == SqliteColumnType(schema.columns[i]);
    }
    if (same) return Status::Ok();
    // Columns added at the end (ALTER TABLE ... ADD COLUMN) are followed below; any other
    // change stops the run.
    bool appended = old.db == schema.db && old.table == schema.table &&
                    old.columns.size() < schema.columns.size() &&
                    old.primary_key == schema.primary_key;
    for (size_t i = 0; appended && i < old.columns.size(); ++i) {
      appended = old.columns[i].name == schema.columns[i].name &&
                 SqliteColumnType(old.columns[i]) == SqliteColumnType(schema.columns[i]);
    }
    if (!appended) {
      return Status::FailedPrecondition(fmt::format(
          "table {}: its definition changed in a way sluice does not follow yet (only columns "
          "added at the end are); re-snapshot the table into a new replica",
          name));
    }
    tables_.erase(existing);  // rebuilt below with the new columns
  }

  auto t = std::make_unique<Table>();
  t->schema = std::make_shared<const TableSchema>(schema);
  t->name = name;
  t->quoted = SqliteQuote(name);
  t->is_pk.assign(schema.columns.size(), false);
  for (size_t k : schema.primary_key) t->is_pk[k] = true;
  nlohmann::json cols = nlohmann::json::array();
  std::string sql = "CREATE TABLE IF NOT EXISTS " + t->quoted + " (";
  for (size_t i = 0; i < schema.columns.size(); ++i) {
    const ColumnDesc& c = schema.columns[i];
    const std::string type = SqliteColumnType(c);
    t->qcols.push_back(SqliteQuote(c.name));
    {
      Result<Value> d = DefaultValue(c);
      t->defaults.push_back(d.ok() ? std::move(d).value() : Value::Null());
      t->default_error.push_back(d.ok() ? "" : d.status().ToString());
    }
    t->affinity.push_back(type == "INTEGER" ? 'I'
                          : type == "REAL"  ? 'R'
                          : type == "TEXT"  ? 'T'
                                            : 'B');
    if (i > 0) sql += ", ";
    sql += t->qcols.back();
    if (!type.empty()) sql += " " + type;
    cols.push_back({{"name", c.name}, {"column_type", c.column_type}, {"sqlite_type", type}});
  }
  if (schema.has_primary_key()) {
    sql += ", PRIMARY KEY (";
    for (size_t j = 0; j < schema.primary_key.size(); ++j) {
      if (j > 0) sql += ", ";
      sql += t->qcols[schema.primary_key[j]];
    }
    sql += ")";
  } else {
    for (const char* alias : {"rowid", "_rowid_", "oid"}) {
      if (schema.ColumnIndex(alias) < 0) {
        t->rowid = alias;
        break;
      }
    }
    if (t->rowid.empty()) {
      return Status::NotSupported(fmt::format(
          "table {}: has no primary key and columns named rowid, _rowid_ and oid", name));
    }
  }
  sql += ")";

  RETURN_IF_ERROR(BeginImmediate());
  Status st = [&]() -> Status {
    // A different source table already using this SQLite name?
    {
      ASSIGN_OR_RETURN(
          sqlite3_stmt * s,
          Prepare("SELECT source_db, source_table FROM _sluice_tables WHERE name = ?"));
      sqlite3_bind_text64(s, 1, name.data(), name.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
      int rc = sqlite3_step(s);
      std::string db, tbl;
      if (rc == SQLITE_ROW) {
        db = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
        tbl = reinterpret_cast<const char*>(sqlite3_column_text(s, 1));
      }
      sqlite3_reset(s);
      if (rc != SQLITE_ROW && rc != SQLITE_DONE) return SqlError("read _sluice_tables", rc);
      if (rc == SQLITE_ROW && (db != schema.db || tbl != schema.table)) {
        return Status::FailedPrecondition(
            fmt::format("source tables `{}`.`{}` and `{}`.`{}` both map to the SQLite table \"{}\"",
                        db, tbl, schema.db, schema.table, name));
      }
    }
    RETURN_IF_ERROR(Exec(sql));
    // The table may have existed with fewer columns: a source ALTER TABLE ... ADD COLUMN
    // since the last run. Add the missing ones (their values: NULL for rows copied before).
    {
      ASSIGN_OR_RETURN(sqlite3_stmt * s, Prepare("SELECT name FROM pragma_table_info(?) ORDER BY cid"));
      sqlite3_bind_text64(s, 1, name.data(), name.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
      int rc;
      size_t have = 0;
      bool prefix = true;
      while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        const char* cname = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
        if (have >= schema.columns.size() || schema.columns[have].name != (cname ? cname : ""))
          prefix = false;
        ++have;
      }
      sqlite3_reset(s);
      if (rc != SQLITE_DONE) return SqlError("read table_info of " + name, rc);
      if (!prefix) have = 0;  // not an append: the check below reports the difference
      for (size_t i = have; have > 0 && i < schema.columns.size(); ++i) {
        if (t->is_pk[i]) break;  // a key change: reported by the check below
        // Rows already there take the column's default, as they do in the source (for a
        // literal default; an expression default such as CURRENT_TIMESTAMP gives NULL).
        const std::string type = SqliteColumnType(schema.columns[i]);
        RETURN_IF_ERROR(Exec("ALTER TABLE " + t->quoted + " ADD COLUMN " + t->qcols[i] +
                             (type.empty() ? "" : " " + type) + " DEFAULT " +
                             SqlLiteral(t->defaults[i])));
      }
    }
    // The table may have existed: its columns must be the ones the schema describes.
    {
      ASSIGN_OR_RETURN(sqlite3_stmt * s,
                       Prepare("SELECT name, type, pk FROM pragma_table_info(?) ORDER BY cid"));
      sqlite3_bind_text64(s, 1, name.data(), name.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
      size_t i = 0;
      int rc;
      Status mismatch;
      while ((rc = sqlite3_step(s)) == SQLITE_ROW && mismatch.ok()) {
        const char* cname = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
        const char* ctype = reinterpret_cast<const char*>(sqlite3_column_text(s, 1));
        const int pk = sqlite3_column_int(s, 2);
        if (i >= schema.columns.size()) {
          mismatch = Status::FailedPrecondition(
              fmt::format("table {}: SQLite table has extra column {}", name, cname ? cname : ""));
          break;
        }
        int want_pk = 0;
        for (size_t j = 0; j < schema.primary_key.size(); ++j)
          if (schema.primary_key[j] == i) want_pk = static_cast<int>(j) + 1;
        const ColumnDesc& c = schema.columns[i];
        if ((cname ? cname : "") != c.name || (ctype ? ctype : "") != SqliteColumnType(c) ||
            pk != want_pk) {
          mismatch = Status::FailedPrecondition(fmt::format(
              "table {}: existing SQLite column {} ({} {}, pk {}) does not match source column "
              "{} ({}, pk {})",
              name, i + 1, cname ? cname : "", ctype ? ctype : "", pk, c.name, SqliteColumnType(c),
              want_pk));
        }
        ++i;
      }
      sqlite3_reset(s);
      RETURN_IF_ERROR(mismatch);
      if (rc != SQLITE_ROW && rc != SQLITE_DONE) return SqlError("read table_info of " + name, rc);
      if (i != schema.columns.size()) {
        return Status::FailedPrecondition(
            fmt::format("table {}: SQLite table has {} columns, source has {}", name, i,
                        schema.columns.size()));
      }
    }
    {
      ASSIGN_OR_RETURN(
          sqlite3_stmt * s,
          Prepare("INSERT OR REPLACE INTO _sluice_tables(name, source_db, source_table, columns) "
                  "VALUES(?, ?, ?, ?)"));
      const std::string cols_text =
          cols.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      sqlite3_bind_text64(s, 1, name.data(), name.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
      sqlite3_bind_text64(s, 2, schema.db.data(), schema.db.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
      sqlite3_bind_text64(s, 3, schema.table.data(), schema.table.size(), SQLITE_TRANSIENT,
                          SQLITE_UTF8);
      sqlite3_bind_text64(s, 4, cols_text.data(), cols_text.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
      RETURN_IF_ERROR(Run(t.get(), s));
    }
    return Run(nullptr, commit_);
  }();
  if (!st.ok()) {
    Rollback();
    return st;
  }
  tables_.emplace(name, std::move(t));
  return Status::Ok();
}

namespace {

// CREATE TABLE for `schema` under the quoted SQLite name `quoted` (the shape PrepareTable
// gives a table: declared types per SqliteColumnType, the source primary key).
std::string CreateTableSql(const TableSchema& schema, const std::string& quoted) {
  std::string sql = "CREATE TABLE " + quoted + " (";
  for (size_t i = 0; i < schema.columns.size(); ++i) {
    const std::string type = SqliteColumnType(schema.columns[i]);
    sql += (i ? ", " : "") + SqliteQuote(schema.columns[i].name) + (type.empty() ? "" : " " + type);
  }
  if (schema.has_primary_key()) {
    sql += ", PRIMARY KEY (";
    for (size_t j = 0; j < schema.primary_key.size(); ++j)
      sql += (j ? ", " : "") + SqliteQuote(schema.columns[schema.primary_key[j]].name);
    sql += ")";
  }
  return sql + ")";
}

bool SameSqliteShape(const TableSchema& a, const TableSchema& b, size_t columns) {
  if (a.primary_key != b.primary_key || a.columns.size() < columns || b.columns.size() < columns) return false;
  for (size_t i = 0; i < columns; ++i)
    if (a.columns[i].name != b.columns[i].name || SqliteColumnType(a.columns[i]) != SqliteColumnType(b.columns[i]))
      return false;
  return true;
}

bool EqualsNoCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

}  // namespace

Status SqliteSink::ApplySchemaChanges(const std::vector<SchemaChange>& changes, const std::string& checkpoint) {
  static const std::string kScratch = SqliteQuote("_sluice_rebuild");
  std::vector<std::string> touched;  // SQLite names whose cached Table is stale afterwards
  auto forget_meta = [&](const std::string& name) -> Status {
    ASSIGN_OR_RETURN(sqlite3_stmt * s, Prepare("DELETE FROM _sluice_tables WHERE name = ?"));
    sqlite3_bind_text64(s, 1, name.data(), name.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
    return Run(nullptr, s);
  };
  RETURN_IF_ERROR(BeginImmediate());
  Status st = [&]() -> Status {
    for (const SchemaChange& c : changes) {
      switch (c.kind) {
        case SchemaChange::Kind::kCreate: {
          // The source table starts empty: a sink table of that name (kept after a DROP) goes.
          const std::string name = SqliteTableName(*c.after);
          RETURN_IF_ERROR(Exec("DROP TABLE IF EXISTS " + SqliteQuote(name)));
          RETURN_IF_ERROR(forget_meta(name));
          RETURN_IF_ERROR(Exec(CreateTableSql(*c.after, SqliteQuote(name))));
          touched.push_back(name);
          break;
        }
        case SchemaChange::Kind::kRename:
        case SchemaChange::Kind::kAlter: {
          const std::string from = SqliteTableName(*c.before), to = SqliteTableName(*c.after);
          touched.push_back(from);
          touched.push_back(to);
          const TableSchema& b = *c.before;
          const TableSchema& a = *c.after;
          bool identity = c.kind == SchemaChange::Kind::kRename;
          if (!identity && c.source_of.size() == a.columns.size() && a.columns.size() >= b.columns.size()) {
            identity = true;
            for (size_t i = 0; i < a.columns.size(); ++i)
              identity = identity && c.source_of[i] == (i < b.columns.size() ? static_cast<int>(i) : -1);
          }
          if (identity && SameSqliteShape(b, a, b.columns.size())) {
            // Same columns (plus new ones at the end): rename, then add the new columns;
            // existing rows read their literal default (or NULL), as in the source.
            if (from != to) {
              if (!EqualsNoCase(from, to)) RETURN_IF_ERROR(Exec("DROP TABLE IF EXISTS " + SqliteQuote(to)));
              RETURN_IF_ERROR(Exec("ALTER TABLE " + SqliteQuote(from) + " RENAME TO " + kScratch));
              RETURN_IF_ERROR(Exec("ALTER TABLE " + kScratch + " RENAME TO " + SqliteQuote(to)));
              RETURN_IF_ERROR(forget_meta(from));
            }
            for (size_t i = b.columns.size(); i < a.columns.size(); ++i) {
              ASSIGN_OR_RETURN(Value d, DefaultValue(a.columns[i]));
              const std::string type = SqliteColumnType(a.columns[i]);
              RETURN_IF_ERROR(Exec("ALTER TABLE " + SqliteQuote(to) + " ADD COLUMN " + SqliteQuote(a.columns[i].name) +
                                   (type.empty() ? "" : " " + type) + " DEFAULT " + SqlLiteral(d)));
            }
            break;
          }
          // Anything else: a new table filled from the old one column by column.
          if (c.source_of.size() != a.columns.size())
            return Status::Internal(fmt::format("table {}: schema change without a column mapping", to));
          RETURN_IF_ERROR(Exec("DROP TABLE IF EXISTS " + kScratch));
          RETURN_IF_ERROR(Exec(CreateTableSql(a, kScratch)));
          std::string targets, sources;
          for (size_t i = 0; i < a.columns.size(); ++i) {
            targets += (i ? ", " : "") + SqliteQuote(a.columns[i].name);
            if (c.source_of[i] >= 0) {
              sources += (i ? ", " : "") + SqliteQuote(b.columns.at(static_cast<size_t>(c.source_of[i])).name);
            } else {
              Result<Value> d = DefaultValue(a.columns[i]);
              if (!d.ok()) return d.status().WithContext(fmt::format("table {} column {}", to, a.columns[i].name));
              sources += (i ? ", " : "") + SqlLiteral(*d);
            }
          }
          RETURN_IF_ERROR(Exec("INSERT INTO " + kScratch + " (" + targets + ") SELECT " + sources + " FROM " +
                               SqliteQuote(from)));
          RETURN_IF_ERROR(Exec("DROP TABLE " + SqliteQuote(from)));
          if (!EqualsNoCase(from, to)) RETURN_IF_ERROR(Exec("DROP TABLE IF EXISTS " + SqliteQuote(to)));
          RETURN_IF_ERROR(Exec("ALTER TABLE " + kScratch + " RENAME TO " + SqliteQuote(to)));
          RETURN_IF_ERROR(forget_meta(from));
          break;
        }
        case SchemaChange::Kind::kDrop:
          break;  // kept, with the rows it had (docs/schema-changes.md)
      }
    }
    if (!checkpoint.empty()) RETURN_IF_ERROR(WriteCheckpoint(checkpoint));
    return Run(nullptr, commit_);
  }();
  if (!st.ok()) {
    Rollback();
    return st;
  }
  for (const std::string& name : touched) {
    auto it = tables_.find(name);
    if (it == tables_.end()) continue;
    Table* gone = it->second.get();
    std::erase_if(by_schema_, [&](const auto& e) { return e.second.second == gone; });
    tables_.erase(it);
  }
  // The cache and _sluice_tables learn the new definitions (CREATE IF NOT EXISTS finds them).
  for (const SchemaChange& c : changes)
    if (c.after) RETURN_IF_ERROR(PrepareTable(*c.after));
  return Status::Ok();
}

Result<SqliteSink::Table*> SqliteSink::TableFor(const TableSchemaPtr& schema) {
  if (schema == nullptr) return Status::InvalidArgument("row change without a table schema");
  auto it = by_schema_.find(schema.get());
  if (it != by_schema_.end()) return it->second.second;
  RETURN_IF_ERROR(PrepareTable(*schema));  // creates it, or checks it matches
  Table* t = tables_.at(SqliteTableName(*schema)).get();
  by_schema_.emplace(schema.get(), std::make_pair(schema, t));
  return t;
}

Result<sqlite3_stmt*> SqliteSink::CachedStatement(Table& t, const std::string& key) {
  auto it = t.stmts.find(key);
  if (it != t.stmts.end()) return it->second;
  const size_t n = t.qcols.size();
  const char kind = key[0];
  // Columns whose mask byte (at key[offset + i]) is '1'.
  const auto cols_in = [&](size_t offset) {
    std::vector<size_t> v;
    for (size_t i = 0; i < n; ++i)
      if (key[offset + i] == '1') v.push_back(i);
    return v;
  };
  const auto pk_where = [&]() {
    std::string w;
    for (size_t j = 0; j < t.schema->primary_key.size(); ++j) {
      w += j == 0 ? " WHERE " : " AND ";
      w += t.qcols[t.schema->primary_key[j]] + " = ?";
    }
    return w;
  };
  const auto set_list = [&](const std::vector<size_t>& cols) {
    std::string s;
    for (size_t j = 0; j < cols.size(); ++j) s += (j ? ", " : "") + t.qcols[cols[j]] + " = ?";
    return s;
  };
  const auto first_match = [&](size_t offset) {
    std::string s = " WHERE " + t.rowid + " = (SELECT " + t.rowid + " FROM " + t.quoted;
    std::vector<size_t> cols = cols_in(offset);
    for (size_t j = 0; j < cols.size(); ++j)
      s += (j ? " AND " : " WHERE ") + t.qcols[cols[j]] + " IS ?";
    return s + " ORDER BY " + t.rowid + " LIMIT 1)";
  };
  std::string sql;
  switch (kind) {
    case kUpsert: {
      // '1': a value from the image; '2': absent from the image, the column's DEFAULT is
      // bound (inserted, but left alone when the row already exists).
      std::vector<size_t> cols;
      for (size_t i = 0; i < n; ++i)
        if (key[1 + i] == '1' || key[1 + i] == '2') cols.push_back(i);
      if (cols.empty()) {
        sql = "INSERT INTO " + t.quoted + " DEFAULT VALUES";
        break;
      }
      sql = "INSERT INTO " + t.quoted + " (";
      std::string values;
      for (size_t j = 0; j < cols.size(); ++j) {
        sql += (j ? ", " : "") + t.qcols[cols[j]];
        values += j ? ", ?" : "?";
      }
      sql += ") VALUES (" + values + ")";
      if (t.schema->has_primary_key()) {
        sql += " ON CONFLICT (";
        for (size_t j = 0; j < t.schema->primary_key.size(); ++j)
          sql += (j ? ", " : "") + t.qcols[t.schema->primary_key[j]];
        sql += ") DO ";
        std::string set;
        for (size_t c : cols) {
          if (t.is_pk[c] || key[1 + c] != '1') continue;
          set += (set.empty() ? "" : ", ") + t.qcols[c] + " = excluded." + t.qcols[c];
        }
        sql += set.empty() ? "NOTHING" : "UPDATE SET " + set;
      }
      break;
    }
    case kUpdateByKey:
      sql = "UPDATE " + t.quoted + " SET " + set_list(cols_in(1)) + pk_where();
      break;
    case kDeleteByKey:
      sql = "DELETE FROM " + t.quoted + pk_where();
      break;
    case kUpdateFirstMatch:
      sql = "UPDATE " + t.quoted + " SET " + set_list(cols_in(1)) + first_match(1 + n);
      break;
    case kDeleteFirstMatch:
      sql = "DELETE FROM " + t.quoted + first_match(1);
      break;
    default:
      return Status::Internal(fmt::format("bad statement kind {}", kind));
  }
  ASSIGN_OR_RETURN(sqlite3_stmt * s, Prepare(sql));
  t.stmts.emplace(key, s);
  return s;
}

Status SqliteSink::Bind(Table& t, sqlite3_stmt* s, int index, size_t column, const Value& v) {
  int rc = SQLITE_OK;
  switch (v.kind) {
    case Value::Kind::kNull:
      rc = sqlite3_bind_null(s, index);
      break;
    case Value::Kind::kAbsent:
      return Status::Internal(
          fmt::format("table {}: column {}: absent value bound", t.name, t.column(column)));
    case Value::Kind::kInt:
      rc = sqlite3_bind_int64(s, index, v.i);
      break;
    case Value::Kind::kUInt:
      if (v.u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        rc = sqlite3_bind_int64(s, index, static_cast<int64_t>(v.u));
      } else if (t.affinity[column] == 'I' || t.affinity[column] == 'R') {
        return Status::InvalidArgument(
            fmt::format("table {}: column {}: unsigned value {} does not fit its INTEGER column",
                        t.name, t.column(column), v.u));
      } else {
        const std::string text = std::to_string(v.u);
        rc = sqlite3_bind_text64(s, index, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
      }
      break;
    case Value::Kind::kFloat:
    case Value::Kind::kDouble:
      if (std::isnan(v.d)) {
        // SQLite would store NaN as NULL.
        return Status::InvalidArgument(
            fmt::format("table {}: column {}: NaN cannot be stored", t.name, t.column(column)));
      }
      rc = sqlite3_bind_double(s, index, v.d);
      break;
    case Value::Kind::kText:
      rc = sqlite3_bind_text64(s, index, v.s.data(), v.s.size(), SQLITE_STATIC, SQLITE_UTF8);
      break;
    case Value::Kind::kBytes:
      rc = sqlite3_bind_blob64(s, index, v.s.data(), v.s.size(), SQLITE_STATIC);
      break;
  }
  if (rc != SQLITE_OK)
    return SqlError(fmt::format("table {}: column {}: bind", t.name, t.column(column)), rc);
  return Status::Ok();
}

Status SqliteSink::ApplyInsert(Table& t, const std::vector<const Value*>& image) {
  const size_t n = t.qcols.size();
  key_.assign(1 + n, '0');
  key_[0] = kUpsert;
  for (size_t i = 0; i < n; ++i) {
    const bool present = image[i] != nullptr && !image[i]->is_absent();
    if (t.is_pk[i] && !present) {
      return Status::InvalidArgument(fmt::format(
          "table {}: row to insert has no value for key column {}", t.name, t.column(i)));
    }
    // A column the image leaves out (binlog_row_image=MINIMAL) takes the source DEFAULT.
    if (!present && !t.default_error[i].empty()) {
      return Status::InvalidArgument(fmt::format("table {}: column {} is not in the row image and "
                                                 "its DEFAULT is not understood: {}",
                                                 t.name, t.column(i), t.default_error[i]));
    }
    key_[1 + i] = present ? '1' : '2';
  }
  ASSIGN_OR_RETURN(sqlite3_stmt * s, CachedStatement(t, key_));
  int index = 1;
  for (size_t i = 0; i < n; ++i) {
    const bool present = image[i] != nullptr && !image[i]->is_absent();
    RETURN_IF_ERROR(Bind(t, s, index++, i, present ? *image[i] : t.defaults[i]));
  }
  return Run(&t, s);
}

Status SqliteSink::ApplyUpdatePk(Table& t, const RowChange& c) {
  const size_t n = t.qcols.size();
  const std::vector<size_t>& pk = t.schema->primary_key;
  bool key_changed = false;
  for (size_t k : pk) {
    if (c.before[k].is_absent()) {
      return Status::InvalidArgument(fmt::format(
          "table {}: update without before value of key column {}", t.name, t.column(k)));
    }
    if (!c.after[k].is_absent() && !(c.after[k] == c.before[k])) key_changed = true;
  }
  const auto new_key = [&](size_t k) -> const Value& {
    return c.after[k].is_absent() ? c.before[k] : c.after[k];
  };
  if (key_changed) {
    // Free the new key (a row there cannot exist in a faithful replica), then move the row.
    ASSIGN_OR_RETURN(sqlite3_stmt * del, CachedStatement(t, std::string(1, kDeleteByKey)));
    for (size_t j = 0; j < pk.size(); ++j)
      RETURN_IF_ERROR(Bind(t, del, static_cast<int>(j) + 1, pk[j], new_key(pk[j])));
    RETURN_IF_ERROR(Run(&t, del));
  }
  key_.assign(1 + n, '0');
  key_[0] = kUpdateByKey;
  bool any = false;
  for (size_t i = 0; i < n; ++i) {
    if (c.after[i].is_absent() || (t.is_pk[i] && !key_changed)) continue;
    key_[1 + i] = '1';
    any = true;
  }
  int changes = 0;
  if (any) {
    ASSIGN_OR_RETURN(sqlite3_stmt * s, CachedStatement(t, key_));
    int index = 1;
    for (size_t i = 0; i < n; ++i)
      if (key_[1 + i] == '1') RETURN_IF_ERROR(Bind(t, s, index++, i, c.after[i]));
    for (size_t k : pk) RETURN_IF_ERROR(Bind(t, s, index++, k, c.before[k]));
    RETURN_IF_ERROR(Run(&t, s, &changes));
  }
  if (changes > 0) return Status::Ok();
  // No row with the old key: insert the after image (upsert semantics).
  image_.assign(n, nullptr);
  for (size_t i = 0; i < n; ++i) image_[i] = t.is_pk[i] ? &new_key(i) : &c.after[i];
  return ApplyInsert(t, image_);
}

Status SqliteSink::ApplyUpdateNoPk(Table& t, const RowChange& c) {
  const size_t n = t.qcols.size();
  key_.assign(1 + 2 * n, '0');
  key_[0] = kUpdateFirstMatch;
  bool any_set = false, any_where = false;
  for (size_t i = 0; i < n; ++i) {
    if (!c.after[i].is_absent()) key_[1 + i] = '1', any_set = true;
    if (!c.before[i].is_absent()) key_[1 + n + i] = '1', any_where = true;
  }
  if (!any_where) {
    return Status::InvalidArgument(
        fmt::format("table {}: update with an empty before image", t.name));
  }
  if (!any_set) return Status::Ok();
  ASSIGN_OR_RETURN(sqlite3_stmt * s, CachedStatement(t, key_));
  int index = 1;
  for (size_t i = 0; i < n; ++i)
    if (key_[1 + i] == '1') RETURN_IF_ERROR(Bind(t, s, index++, i, c.after[i]));
  for (size_t i = 0; i < n; ++i)
    if (key_[1 + n + i] == '1') RETURN_IF_ERROR(Bind(t, s, index++, i, c.before[i]));
  int changes = 0;
  RETURN_IF_ERROR(Run(&t, s, &changes));
  if (changes > 0) return Status::Ok();
  image_.assign(n, nullptr);
  for (size_t i = 0; i < n; ++i) image_[i] = &c.after[i];
  return ApplyInsert(t, image_);
}

Status SqliteSink::ApplyDelete(Table& t, const RowChange& c) {
  const size_t n = t.qcols.size();
  if (t.schema->has_primary_key()) {
    ASSIGN_OR_RETURN(sqlite3_stmt * s, CachedStatement(t, std::string(1, kDeleteByKey)));
    int index = 1;
    for (size_t k : t.schema->primary_key) {
      if (c.before[k].is_absent()) {
        return Status::InvalidArgument(
            fmt::format("table {}: delete without value of key column {}", t.name, t.column(k)));
      }
      RETURN_IF_ERROR(Bind(t, s, index++, k, c.before[k]));
    }
    return Run(&t, s);
  }
  key_.assign(1 + n, '0');
  key_[0] = kDeleteFirstMatch;
  bool any = false;
  for (size_t i = 0; i < n; ++i)
    if (!c.before[i].is_absent()) key_[1 + i] = '1', any = true;
  if (!any)
    return Status::InvalidArgument(
        fmt::format("table {}: delete with an empty before image", t.name));
  ASSIGN_OR_RETURN(sqlite3_stmt * s, CachedStatement(t, key_));
  int index = 1;
  for (size_t i = 0; i < n; ++i)
    if (key_[1 + i] == '1') RETURN_IF_ERROR(Bind(t, s, index++, i, c.before[i]));
  return Run(&t, s);
}

Status SqliteSink::ApplyChange(Table& t, const RowChange& c) {
  const size_t n = t.qcols.size();
  const auto check = [&](const Row& row, bool want, const char* which) -> Status {
    if (!want && row.empty()) return Status::Ok();
    if (!want) {
      return Status::InvalidArgument(
          fmt::format("table {}: op '{}' has a {} image", t.name, static_cast<char>(c.op), which));
    }
    if (row.size() != n) {
      return Status::InvalidArgument(fmt::format(
          "table {}: {} image has {} values, table has {} columns", t.name, which, row.size(), n));
    }
    return Status::Ok();
  };
  switch (c.op) {
    case Op::kCreate:
    case Op::kRead:
      RETURN_IF_ERROR(check(c.before, false, "before"));
      RETURN_IF_ERROR(check(c.after, true, "after"));
      image_.assign(n, nullptr);
      for (size_t i = 0; i < n; ++i) image_[i] = &c.after[i];
      return ApplyInsert(t, image_);
    case Op::kUpdate:
      RETURN_IF_ERROR(check(c.before, true, "before"));
      RETURN_IF_ERROR(check(c.after, true, "after"));
      return t.schema->has_primary_key() ? ApplyUpdatePk(t, c) : ApplyUpdateNoPk(t, c);
    case Op::kDelete:
      RETURN_IF_ERROR(check(c.before, true, "before"));
      RETURN_IF_ERROR(check(c.after, false, "after"));
      return ApplyDelete(t, c);
  }
  return Status::InvalidArgument(
      fmt::format("table {}: unknown op code {}", t.name, static_cast<int>(c.op)));
}

Status SqliteSink::Apply(const Transaction& txn) {
  if (txn.changes.empty() && txn.checkpoint.empty()) return Status::Ok();
  return ApplyTransactions(&txn, 1);
}

Status SqliteSink::ApplyGroup(const std::vector<Transaction>& group) {
  if (group.empty()) return Status::Ok();
  return ApplyTransactions(group.data(), group.size());
}

Status SqliteSink::ApplyTransactions(const Transaction* txns, size_t count) {
  // Create missing tables first, each in its own transaction, outside the data transaction.
  targets_.clear();
  const std::string* checkpoint = nullptr;
  for (size_t k = 0; k < count; ++k) {
    for (const RowChange& c : txns[k].changes) {
      ASSIGN_OR_RETURN(Table * t, TableFor(c.table));
      targets_.push_back(t);
    }
    if (!txns[k].checkpoint.empty()) checkpoint = &txns[k].checkpoint;
  }
  RETURN_IF_ERROR(BeginImmediate());
  Status st;
  size_t i = 0;
  for (size_t k = 0; k < count && st.ok(); ++k)
    for (size_t j = 0; j < txns[k].changes.size() && st.ok(); ++j)
      st = ApplyChange(*targets_[i++], txns[k].changes[j]);
  if (st.ok() && checkpoint != nullptr) st = WriteCheckpoint(*checkpoint);
  if (st.ok()) st = Run(nullptr, commit_);
  if (!st.ok()) Rollback();
  return st;
}

}  // namespace sluice
