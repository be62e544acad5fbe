// Incremental reads without the binlog: per-table modes `incremental` (cursor reads),
// `full` (re-copy every run) and `snapshot_only` (copied once), for servers or users that
// cannot read the binlog (docs/incremental.md).
//
// A table read this way needs a primary key. An `incremental` table also needs a NOT NULL
// DATETIME or TIMESTAMP cursor column (ChooseCursor). Every read runs inside one
// START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY (snapshot.h, SnapshotMethod::kNoPoint:
// no binlog needed) and every cell goes through ValueFromText, the snapshot's converter, so a
// row gives the same Values whatever the mode.
//
//   backfill  (first run of `incremental`, each run of `full`, the one run of
//             `snapshot_only`): the whole table in primary-key order, one sink transaction per
//             fetch carrying the last key copied (IncrementalProgress::backfill_last_key), so a
//             killed run resumes after the last committed chunk. `incremental` first captures
//             the high watermark H = max (cursor, pk...) in the same read view and sets the
//             watermark: H, or, when H's cursor has not settled by the clock rule below, H's
//             cursor alone (a one-element watermark: paging reads cursor >= it). The backfill
//             copies only the rows at or below that watermark (in every chunk, also those read
//             by a later run), paging the rows above it: no row version is given twice.
//   paging    (later runs of `incremental`): captures the run's high watermark H in its own
//             read view, then reads (cursor, pk...) > watermark AND (cursor, pk...) <= H in
//             (cursor, pk...) order; every chunk moves the watermark to its last row, in the
//             sink transaction that holds the rows. Rows sharing one cursor value are told
//             apart by the primary key, so none is skipped or read twice. The rows sharing H's
//             cursor value may still be committing (a later commit with a lower key would fall
//             behind the watermark), so they are left for the next run (cursor < H's cursor)
//             unless they have settled: H is the same row as the previous run's H, or H's
//             cursor is more than a second older than the server's clock (UTC for TIMESTAMP,
//             the server's time zone for DATETIME).
//   lookback  (`lookback_seconds` > 0): before paging, rows with cursor >= watermark cursor -
//             lookback and (cursor, pk...) <= watermark are read again (late commits: a
//             transaction that committed after a later cursor value had been read). They do
//             not move the watermark.
//   max_rows  (> 0): a run stops after that many rows (backfill and paging); the next run
//             continues where it stopped.
// Records: backfill rows are op `r`; paging (and lookback) rows are op `c` with
// WritePolicy::kAppend (a new record each time a row is read) and op `r` with kUpsert (the
// row's current state, merged by primary key). The SQLite sink upserts both by key.
//
// TIMESTAMP cursors are compared in UTC (the read session sets time_zone '+00:00').
// Errors: kInvalidArgument for a table without a primary key or a cursor that does not
// qualify (naming the table, the column and the candidates); connection errors as in
// mysql/connection.h; the sink's errors as they are.
// Thread safety: RunIncremental is called from one thread; it uses `meta` and opens one read
// connection at a time.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "mysql/connection.h"
#include "mysql/schema_loader.h"
#include "sink/sink.h"
#include "util/status.h"

namespace sluice {

enum class TableMode : uint8_t { kCdc, kIncremental, kFull, kSnapshotOnly };
enum class WritePolicy : uint8_t { kAppend, kUpsert };
const char* TableModeName(TableMode m);      // "cdc", "incremental", "full", "snapshot_only"
const char* WritePolicyName(WritePolicy p);  // "append", "upsert"

struct IncrementalTableOptions {
  TableName name;
  TableMode mode = TableMode::kIncremental;  // never kCdc here
  WritePolicy write = WritePolicy::kUpsert;
  std::string cursor;  // empty: chosen by ChooseCursor among the usual names
  // The time zone a DATETIME cursor's values are written in, as the server's CONVERT_TZ
  // reads it ("+00:00", or a name with the server's time zone tables loaded); empty: the
  // server's global time_zone. The clock the newest values are judged by (CursorSettled).
  std::string cursor_time_zone;
  uint32_t lookback_seconds = 0;
  uint64_t max_rows = 0;  // 0: no limit
  std::string config_key;  // the config section, for messages ("table.\"shop.orders\"")
};

struct IncrementalRunOptions {
  ConnectOptions connection;
  Flavor flavor = Flavor::kUnknown;  // for the records' source block
  uint32_t source_server_id = 0;
  uint32_t fetch_rows = 5000;  // rows per query and per sink transaction
  const std::atomic<bool>* stop = nullptr;
  // "db.table" of tables the pipeline streamed (mode cdc) until this run: their sink table
  // mirrors the source as of the last checkpoint, rows deleted since included, so a first run
  // in another mode starts over as after any change of mode.
  std::set<std::string> were_cdc;
};

// The cursor column of `schema`: `configured` when it names a NOT NULL DATETIME/TIMESTAMP
// column, else (configured empty) the first of updated_at, modified_at, last_modified_at,
// last_modified, updated, modified, update_time, last_update, changed_at that qualifies.
// kInvalidArgument otherwise, naming every DATETIME/TIMESTAMP column as a candidate (and why
// a nullable one does not qualify) and the config key that chooses one.
Result<size_t> ChooseCursor(const TableSchema& schema, const std::string& configured,
                            const std::string& config_key);

// opt.cursor_time_zone against `cursor` and the server: kInvalidArgument (naming the config
// key) for a TIMESTAMP cursor (stored in UTC: the setting means nothing) or a zone the server's
// CONVERT_TZ does not know; OK when it is empty. Queries `conn`.
Status CheckCursorTimeZone(Connection& conn, const ColumnDesc& cursor, const IncrementalTableOptions& opt);

// The watermark order of a table: the cursor column, then the primary key.
std::vector<size_t> WatermarkColumns(const TableSchema& schema, size_t cursor);

// One page query, built from quoted identifiers and literals made by the server's quoting
// (mysql/key_literal.h KeyTuple): pure, unit-tested.
struct PageQuery {
  std::string table;         // `db`.`t`
  std::string select_list;   // SnapshotSelectExpr of every column
  std::vector<std::string> order;  // quoted watermark (or key) columns, in order
  std::string after;         // literal tuple: rows > after (empty: no lower bound)
  std::string upper;         // literal tuple: rows <= upper (empty: no upper bound)
  // The literals of the first column of `after` and `upper`. With a key of several columns
  // they add `order[0] >= after_first` and `order[0] <= upper_first`, which the row-value
  // comparisons imply: MariaDB plans no index range for a row-value comparison alone, so
  // without them every page is a full scan and a filesort, index or not.
  std::string after_first;
  std::string upper_first;
  std::string cursor_floor;  // `c` >= this expression (empty: none); order[0] is the cursor
  std::string cursor_below;  // `c` < this expression (empty: none)
  std::string bound;         // one more condition, built by the caller (empty: none)
  uint64_t limit = 0;
};
std::string BuildPageSql(const PageQuery& q);
// The lower end of a lookback window: CAST(<quoted> AS DATETIME(6)) - INTERVAL n SECOND, where
// `quoted_cursor_text` is the watermark's cursor text quoted by the server (Connection::Quote).
std::string LookbackFloor(std::string_view quoted_cursor_text, uint32_t seconds);

// Index advice: whether an index begins with the cursor followed by the primary key (or by
// nothing more: InnoDB appends the primary key to every secondary index), the CREATE INDEX
// that would add one, and the EXPLAIN of a paging query (one with a lower bound on the
// cursor, as every page but a table's first has) with whether the server's plan reads that
// index: an index can exist and still not be used (the optimizer may prefer a full scan and a
// sort, on a small table for instance).
struct IndexAdvice {
  bool has_index = false;
  std::string index_name;    // the index found
  std::string create_index;  // CREATE INDEX ... ON ... (cursor, pk...)
  std::string explain;       // "type=ALL key=NULL rows=1000 Extra=Using where; Using filesort"
  bool plan_uses_index = false;  // the EXPLAIN reads index_name, without a filesort
};
Result<IndexAdvice> AdviseIndex(Connection& conn, const TableSchema& schema, size_t cursor);

// Reads every table of `tables` as its mode says (above), applying each chunk to `sink` with
// the updated checkpoint (ckpt.incremental). Returns OK early when *stop becomes true.
Status RunIncremental(const IncrementalRunOptions& options, Connection& meta,
                      const std::vector<IncrementalTableOptions>& tables, Checkpoint& ckpt,
                      Sink& sink);

}  // namespace sluice
