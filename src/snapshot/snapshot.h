// Snapshot: a consistent read of the source tables at a known binlog point.
//
// Snapshot::Begin opens a REPEATABLE READ, READ ONLY transaction WITH CONSISTENT SNAPSHOT on
// its own connection and learns the exact binlog point that snapshot corresponds to
// (SnapshotPoint: file/pos of the first event NOT visible in the snapshot, and the GTID
// position as the server writes it). The stream starts at that point, so every change is
// seen exactly once: either in the snapshot rows or in the binlog (proof in snapshot.cc).
//   MariaDB  no lock: session status Binlog_snapshot_file/Binlog_snapshot_position inside
//            the transaction, and BINLOG_GTID_POS(file, pos) for the GTID position.
//   MySQL    a side session holds LOCK TABLES ... READ on the selected tables while the
//            position (SHOW BINARY LOG STATUS / SHOW MASTER STATUS) and @@gtid_executed are
//            read and the transaction is opened; then UNLOCK TABLES (RAII, every path).
// Session settings for reads: time_zone '+00:00' (TIMESTAMP in UTC), NAMES utf8mb4,
// sql_mode '' (zero dates readable and comparable), long net timeouts for streamed reads.
//
// ReadTable reads one table in primary-key order with one streamed query (mysql_use_result):
//   SELECT <SnapshotSelectExpr(col)...> FROM `db`.`t` FORCE INDEX (PRIMARY)
//   WHERE (`k1`,`k2`) > (v1,v2) [AND (`k1`,`k2`) <= (u1,u2)] ORDER BY `k1`,`k2`
// and maps every cell with ValueFromText (schema/text_value.h), the snapshot half of the one
// value converter, straight from the connector's row buffer. Every `chunk_rows` rows are
// handed to the callback in the middle of the result (the server waits on the socket while it
// runs). Each chunk goes to the callback with the canonical texts
// (Value::ToText) of its last row's key columns; passing those back as start_after_key
// resumes after that row. Key literals are typed per column: integers/decimals bare, FLOAT as
// CAST(x AS FLOAT), DOUBLE as a double literal, ENUM by index, SET by bit mask, binary strings
// as X'..', everything else as a quoted string. Tables without a primary key are read in
// one streamed pass (mysql_use_result), handed out in chunks with an empty last_key; such
// a read cannot be resumed, only restarted.
//
// Errors: kFailedPrecondition when binary logging is off or the snapshot point cannot be
// read; kInvalidArgument for a start_after_key that does not fit the key; connection errors
// as in mysql/connection.h (kUnavailable: start the snapshot over); kCorruption from
// ValueFromText naming the column; the callback's own error is returned as is.
//
// Ownership: a Snapshot owns its connection; the transaction ends at Finish() or
// destruction. Thread safety: one thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/position.h"
#include "core/value.h"
#include "mysql/connection.h"
#include "mysql/key_literal.h"
#include "mysql/schema_loader.h"
#include "schema/table_schema.h"
#include "util/status.h"

namespace sluice {

struct SnapshotPoint {
  Flavor flavor = Flavor::kUnknown;
  BinlogPosition position;  // first event not contained in the snapshot
  std::string gtid;         // MariaDB "0-1-42,..." / MySQL gtid_executed; may be empty
};

enum class SnapshotMethod : uint8_t {
  kAuto,            // MariaDB: kSnapshotStatus; MySQL: kLockTables
  kSnapshotStatus,  // MariaDB only: Binlog_snapshot_file/position, no lock
  kLockTables,      // LOCK TABLES ... READ in a side session (MySQL; also works on MariaDB)
  kNoPoint,         // a consistent read with no binlog point (incremental reads: no binlog
                    // and no REPLICATION privileges needed); point() stays empty
};

struct SnapshotOptions {
  // Tables to hold read-locked while the point is taken (kLockTables); must not be empty
  // for that method.
  std::vector<TableName> lock_tables;
  SnapshotMethod method = SnapshotMethod::kAuto;
};

// One row of text cells (SnapshotSelectExpr of every column, in column order) as Values,
// through ValueFromText: the one converter of every read of the source's tables. kCorruption
// names the table and column; kInternal when the cell count is not the column count.
Result<Row> RowFromTextCells(const TableSchema& schema, const TextRow& cells);

class Snapshot {
 public:
  // `rows` are whole rows in the schema's column order; `last_key` holds the canonical texts of
  // the last row's primary-key columns (empty for tables without a primary key).
  using ChunkCallback =
      std::function<Status(std::vector<Row> rows, const std::vector<std::string>& last_key)>;

  static Result<std::unique_ptr<Snapshot>> Begin(const ConnectOptions& conn_options,
                                                 const SnapshotOptions& options = {});
  // `n` read transactions for parallel workers. MariaDB (kSnapshotStatus): each opens on its
  // own and learns its own exact point, no lock. MySQL (kLockTables): one LOCK TABLES ...
  // READ is held while every transaction opens, so all share one point; *lock_held_ms (if
  // not null) receives how long the lock was held.
  static Result<std::vector<std::unique_ptr<Snapshot>>> BeginMany(
      const ConnectOptions& conn_options, size_t n, const SnapshotOptions& options,
      double* lock_held_ms = nullptr);
  ~Snapshot();
  Snapshot(const Snapshot&) = delete;
  Snapshot& operator=(const Snapshot&) = delete;

  const SnapshotPoint& point() const { return point_; }
  // Sets the point of a kNoPoint transaction found by other means (watermark.h: the end of
  // the low watermark's transaction).
  void SetPoint(const SnapshotPoint& point) { point_ = point; }

  // Reads `schema`'s table (see above). `start_after_key`, when given, must have one text per
  // primary-key column. chunk_rows must be > 0. Chunks are never empty; a table with no
  // (remaining) rows produces no callback.
  Status ReadTable(const TableSchema& schema,
                   const std::optional<std::vector<std::string>>& start_after_key,
                   size_t chunk_rows, const ChunkCallback& on_chunk);

  // Reads the keys of `schema` that are > lower and <= upper (empty: unbounded), in key
  // order, in one streamed query (WHERE key > last AND key <= upper ORDER BY key; row values
  // for composite keys), `fetch_rows` per callback, starting after `after_key` when it is not empty (a
  // resume inside the range). Bounds are key texts (KeyLiteral); the server compares.
  // Tables without a primary key take no bounds (one streamed pass).
  Status ReadRange(const TableSchema& schema, const std::vector<std::string>& after_key,
                   const std::vector<std::string>& lower, const std::vector<std::string>& upper,
                   size_t fetch_rows, const ChunkCallback& on_chunk);

  // ReadRange without Values: each row's cells (SnapshotSelectExpr of every column, in column
  // order; valid only during the call) go to `on_row`; after every `fetch_rows` rows, and
  // after the last, `on_fetch` gets that fetch's row count and the canonical texts of its
  // last row's primary key (empty for tables without one), as ReadRange's chunks. A key cell
  // ValueFromText rejects, or a NULL key, fails as in ReadRange; other cells are on_row's.
  using RowCellsCallback = std::function<Status(const std::vector<TextCellView>& cells)>;
  using FetchCallback = std::function<Status(size_t rows, const std::vector<std::string>& last_key)>;
  Status ReadRangeCells(const TableSchema& schema, const std::vector<std::string>& after_key,
                        const std::vector<std::string>& lower, const std::vector<std::string>& upper,
                        size_t fetch_rows, const RowCellsCallback& on_row, const FetchCallback& on_fetch);

  // Ends the transaction (COMMIT). Further ReadTable calls fail.
  Status Finish();

  // Whether a new read transaction of this one's kind has a point of its own without a lock
  // (MariaDB, kSnapshotStatus): then Renew may replace it at any time.
  bool RenewableWithoutLock() const { return renewable_; }
  // Ends `done`'s transaction (COMMIT, which releases the metadata locks it holds on every
  // table it read) and opens a new one on the same connection, with its own point (its GTID
  // taken from `done`'s when the position is the same). Only for RenewableWithoutLock()
  // snapshots (kInvalidArgument otherwise); errors are the connection's.
  static Result<std::unique_ptr<Snapshot>> Renew(std::unique_ptr<Snapshot> done);

  uint64_t connection_id() const { return conn_->connection_id(); }
  // The read transaction's session (for checks inside the transaction).
  Connection& connection() { return *conn_; }

 private:
  explicit Snapshot(std::unique_ptr<Connection> conn) : conn_(std::move(conn)) {}
  // Begin; with `known` (a point of the same server) whose position equals the new
  // transaction's, its GTID is taken instead of asking the server again.
  static Result<std::unique_ptr<Snapshot>> BeginKnowing(const ConnectOptions& conn_options,
                                                        const SnapshotOptions& options,
                                                        const SnapshotPoint* known);
  // kSnapshotStatus on this snapshot's connection: START TRANSACTION WITH CONSISTENT
  // SNAPSHOT, then its point.
  Status StartWithStatus(const SnapshotPoint* known);
  bool renewable_ = false;

  std::unique_ptr<Connection> conn_;
  SnapshotPoint point_;
  bool finished_ = false;
};


}  // namespace sluice
