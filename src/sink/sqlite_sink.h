// SqliteSink: a replica of the source tables in one SQLite database file.
//
// Each source table becomes the SQLite table named SqliteTableName() = "<db>.<table>"
// (one identifier containing a dot, so queries quote it: SELECT * FROM "sakila.actor").
// Columns keep their source names and order; declared types follow SqliteColumnType(), a
// lossless mapping (docs/sinks.md). Source primary keys become PRIMARY KEY. Metadata:
//   _sluice_checkpoint(id INTEGER PRIMARY KEY CHECK(id = 1), state TEXT NOT NULL)
//   _sluice_tables(name TEXT PRIMARY KEY COLLATE NOCASE, source_db, source_table, columns)
// where `columns` is a JSON array of {"name","column_type","sqlite_type"}. Two source tables
// mapping to one SQLite name (case-insensitively) is kFailedPrecondition.
//
// Apply(txn) runs BEGIN IMMEDIATE; every change; the checkpoint row; COMMIT. Any error
// rolls the whole transaction back, so data and checkpoint move together or not at all.
// The database is opened in WAL mode with synchronous=FULL (default; a committed
// transaction survives SIGKILL and power loss) or NORMAL (survives SIGKILL; power loss may
// drop the last commits, never half of one).
// Row semantics (PK tables): c/r upsert; u updates the present after-image columns of the
// row with the before-image key, moving it when the key changed (a row already holding the
// new key is deleted first), and inserts the after image when no row matched; d deletes by
// key. Absent (kAbsent) columns are left untouched by updates (and by an upsert that
// meets an existing row); a newly inserted row stores the source column's DEFAULT (schema/text_value.h DefaultValue: literal defaults in canonical form,
// NULL for none and for expression defaults, which the server logs in every image anyway). Tables without a primary key: c/r insert; u/d act on the first
// row (lowest rowid) equal to the before image on its present columns (NULL matches NULL),
// and u inserts the after image when none matches.
// An empty txn.checkpoint leaves the stored checkpoint as it was.
//
// Errors, by what the caller does next: kUnavailable (transient; the failed call changed
// nothing, apply the same transaction again later) when the database is busy/locked by
// another connection for longer than busy_timeout_ms, or the disk is full (SQLITE_FULL,
// ENOSPC); kFailedPrecondition (definite; the message names the path and the reason) when
// the file or its directory is read-only, not permitted, cannot be opened, or another I/O
// error happened; kInvalidArgument for changes that do
// not fit the table (value count, absent key column, BIGINT UNSIGNED overflow into an
// INTEGER column); kFailedPrecondition when an existing SQLite table's columns differ from
// the source schema. Messages name the table (and column where there is one).
// Ownership/thread safety: owns its sqlite3 connection; one thread at a time.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "sink/sink.h"

struct sqlite3;
struct sqlite3_stmt;

namespace sluice {

struct SqliteSinkOptions {
  std::string path;              // database file (":memory:" works, for tests)
  bool synchronous_full = true;  // PRAGMA synchronous = FULL, else NORMAL
  int busy_timeout_ms = 10000;   // wait this long for another connection's write lock
};

// The SQLite table name for a source table: "<db>.<table>".
std::string SqliteTableName(const TableSchema& table);
// The declared SQLite type of a source column: "INTEGER", "REAL", "TEXT", "BLOB" or ""
// (no declared type = BLOB affinity, values kept as bound: BIGINT UNSIGNED, BIT(64), and
// data types sluice does not know).
std::string SqliteColumnType(const ColumnDesc& column);
// `name` as an SQLite identifier: double quotes, embedded quotes doubled.
std::string SqliteQuote(std::string_view name);

class SqliteSink : public Sink {
 public:
  [[nodiscard]] static Result<std::unique_ptr<SqliteSink>> Open(SqliteSinkOptions options);
  ~SqliteSink() override;
  SqliteSink(const SqliteSink&) = delete;
  SqliteSink& operator=(const SqliteSink&) = delete;

  Result<std::optional<std::string>> LoadCheckpoint() override;
  // CREATE TABLE IF NOT EXISTS, or check that the existing table has the same columns.
  // Apply() prepares tables it has not seen itself, so calling this is optional.
  Status PrepareTable(const TableSchema& table) override;
  Status Apply(const Transaction& txn) override;
  // BEGIN IMMEDIATE; every change of every transaction; the last checkpoint; COMMIT.
  Status ApplyGroup(const std::vector<Transaction>& group) override;
  Status SaveCheckpoint(const std::string& checkpoint) override;
  // One SQLite transaction: CREATE (replacing a kept table of that name), RENAME, ALTER
  // (ALTER TABLE ADD COLUMN for columns added at the end with a literal default or NULL;
  // otherwise a new table filled from the old one by the column mapping), DROP (the table
  // is kept), then the checkpoint row.
  Status ApplySchemaChanges(const std::vector<SchemaChange>& changes, const std::string& checkpoint) override;
  // DELETE FROM the table and the checkpoint row, in one SQLite transaction.
  Status ResetTable(const TableSchema& table, const std::string& checkpoint) override;
  Status Flush() override;  // every commit is already durable: nothing to do

 private:
  struct Stmt;
  struct Table;
  explicit SqliteSink(SqliteSinkOptions options);

  Status Exec(const std::string& sql);
  Status SqlError(std::string_view what, int rc) const;
  Result<sqlite3_stmt*> Prepare(const std::string& sql);  // cached by SQL text
  Result<Table*> TableFor(const TableSchemaPtr& schema);
  Status ApplyChange(Table& t, const RowChange& c);
  Status ApplyInsert(Table& t, const std::vector<const Value*>& image);
  Status ApplyUpdatePk(Table& t, const RowChange& c);
  Status ApplyUpdateNoPk(Table& t, const RowChange& c);
  Status ApplyDelete(Table& t, const RowChange& c);
  Status WriteCheckpoint(const std::string& checkpoint);
  Status ApplyTransactions(const Transaction* txns, size_t count);
  // Runs a bound statement to completion; *changes gets sqlite3_changes().
  Status Run(Table* t, sqlite3_stmt* s, int* changes = nullptr);
  Status Bind(Table& t, sqlite3_stmt* s, int index, size_t column, const Value& v);
  Result<sqlite3_stmt*> CachedStatement(Table& t, const std::string& key);
  Status BeginImmediate();
  void Rollback();

  SqliteSinkOptions options_;
  sqlite3* db_ = nullptr;
  std::unordered_map<std::string, std::unique_ptr<Table>> tables_;  // by SQLite name
  // Schema objects already matched to a table; holds the pointer alive so it is never reused.
  std::unordered_map<const TableSchema*, std::pair<TableSchemaPtr, Table*>> by_schema_;
  // Every prepared statement by its SQL text (the per-table caches point into it).
  std::unordered_map<std::string, sqlite3_stmt*> prepared_;
  sqlite3_stmt* begin_ = nullptr;
  sqlite3_stmt* commit_ = nullptr;
  sqlite3_stmt* rollback_ = nullptr;
  sqlite3_stmt* save_checkpoint_ = nullptr;
  std::string key_;                  // scratch: statement cache key
  std::vector<const Value*> image_;  // scratch: values of an insert
  std::vector<Table*> targets_;      // scratch: the table of each change being applied
};

}  // namespace sluice
