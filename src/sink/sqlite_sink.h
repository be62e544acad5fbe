// SqliteSink: a replica of the source tables in one SQLite database file.
//
// Each source table becomes the SQLite table named SqliteTableName() = "<db>.<table>"
// (one identifier containing a dot, so queries quote it: SELECT * FROM "sakila.actor").
// Columns keep their source names and order; declared types follow SqliteColumnType(), a
// lossless mapping (docs/sinks.md). Source primary keys become PRIMARY KEY. Metadata:
//   _sluice_checkpoint(id INTEGER PRIMARY KEY CHECK(id = 1), state TEXT NOT NULL)
//   _sluice_tables(name TEXT PRIMARY KEY COLLATE NOCASE, source_db, source_table, columns)
//   _sluice_schemas(ref TEXT PRIMARY KEY, history TEXT NOT NULL)
// _sluice_schemas holds the one schema history the checkpoint refers to by "schemas_ref"
// (checkpoint.h, split form), written in the same transaction as the first checkpoint that
// refers to it; read the checkpoint with ReadSqliteCheckpoint, which joins them.
// where `columns` is a JSON array of {"name","column_type","sqlite_type"}. Two source tables
// mapping to one SQLite name (case-insensitively) is kFailedPrecondition.
//
// The apply logic (row semantics, statement cache, checkpoint, schema changes, group
// commit) is the dialect-free SqlApplier (sink/sql_applier.h); this file is the SQLite
// dialect and connection. Apply(txn) runs BEGIN IMMEDIATE; every change; the checkpoint
// row; COMMIT. Any error rolls the whole transaction back, so data and checkpoint move
// together or not at all.
// The database is opened in WAL mode with synchronous=FULL (default; a committed
// transaction survives SIGKILL and power loss) or NORMAL (survives SIGKILL; power loss may
// drop the last commits, never half of one).
// Keyless tables: u/d act on the first matching row by lowest rowid (a free alias of
// rowid, _rowid_ or oid; a table using all three names is kNotSupported).
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

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sink/sql_applier.h"

struct sqlite3;

namespace sluice {

struct SqliteSinkOptions {
  std::string path;              // database file (":memory:" works, for tests)
  bool synchronous_full = true;  // PRAGMA synchronous = FULL, else NORMAL
  int busy_timeout_ms = 10000;   // wait this long for another connection's write lock
  bool drop_tables = false;      // SchemaChange kDrop drops the table (else it is kept)
  // Rows per multi-row upsert/delete (SqlDialect::MaxRowsPerStatement). 1, one statement per
  // row, is the fastest in process; more is for tests of the applier's stream batching.
  size_t rows_per_statement = 1;
  // SQLite's page cache of the applying connection, in bytes (PRAGMA cache_size). It is
  // memory besides the change data, so sluice run takes it out of sink.max_buffered_bytes
  // (SqlitePageCacheBytes). The checkpointing connection's cache is 1 MiB.
  size_t cache_bytes = 32u << 20;
  // PRAGMA page_size of a database this sink creates (a power of two, 512..65536); an
  // existing database keeps its own. 16 KiB instead of SQLite's 4 KiB: a snapshot appends
  // rows in key order, and per page SQLite pays a WAL frame header, a checksum and a b-tree
  // split, so the 2 M-row snapshot benchmark writes 35-40 % faster (BENCHMARKS.md, issue 9).
  int page_size = 16384;
};

// The page cache (bytes) the SQLite sink takes under a memory cap of `max_buffered_bytes`
// (0: none): 32 MiB (catching up, SQLite's default 2 MB re-read the tables' index pages from
// the OS at every group), or an eighth of a smaller cap (at least 64 KiB), so that the cache
// and the change data together stay under the cap.
size_t SqlitePageCacheBytes(size_t max_buffered_bytes);
// What is left of `max_buffered_bytes` for change data (StreamerOptions::max_buffered_bytes)
// once the page cache is taken out (at most half of it); 0 (no cap) stays 0.
size_t SqliteChangeDataBytes(size_t max_buffered_bytes);

// The SQLite table name for a source table: "<db>.<table>".
std::string SqliteTableName(const TableSchema& table);
// The declared SQLite type of a source column: "INTEGER", "REAL", "TEXT", "BLOB" or ""
// (no declared type = BLOB affinity, values kept as bound: BIGINT UNSIGNED, BIT(64), and
// data types sluice does not know).
std::string SqliteColumnType(const ColumnDesc& column);
// `name` as an SQLite identifier: double quotes, embedded quotes doubled.
std::string SqliteQuote(std::string_view name);

// The whole checkpoint text stored in `db` (the checkpoint row joined with the schema history
// it refers to), or nullopt when there is none (no row, or no _sluice_checkpoint table).
// kCorruption when the history it refers to is missing; kUnavailable for SQLite errors.
Result<std::optional<std::string>> ReadSqliteCheckpoint(sqlite3* db);

// Opens the replica at `path` read-only for the tools that read it beside a run (check,
// compare, verify). A WAL database needs its -shm file, which a read-only opener cannot
// create where the directory is not writable (a read-only mount, a backup volume): there,
// and only when the file opened but cannot be read, it is opened again as immutable (nothing
// can write it). Errors: kUnavailable naming the path and SQLite's message.
Result<sqlite3*> OpenSqliteReader(const std::string& path);

// For `sluice check`: opens `path` read-only and compares each of `tables` (source db and
// table) that already exists in it with its source definition (`load`), as PrepareTable
// will when the run first meets it. Returns how many existed, or the first refusal in
// PrepareTable's words ("preparing table db.t: sqlite PATH: table db.t: existing sqlite
// column ..."); kUnavailable when the file cannot be read, `load`'s error as it is.
Result<size_t> CheckSqliteTables(
    const std::string& path, const std::vector<std::pair<std::string, std::string>>& tables,
    const std::function<Result<TableSchema>(const std::string& db, const std::string& table)>& load);

class SqliteSink : public SqlApplier {
 public:
  [[nodiscard]] static Result<std::unique_ptr<SqliteSink>> Open(SqliteSinkOptions options);
  // Snapshot chunks encoded on the read workers as the values the sink binds (ValueFromText,
  // then what SqliteStatement::Bind would bind), applied through LoadEncodedReads: the one
  // writing thread only binds and steps. The stream is not preformatted.
  std::unique_ptr<Preformatter> NewSnapshotPreformatter() const override;

 private:
  using SqlApplier::SqlApplier;
};

}  // namespace sluice
