// SnapshotCoordinator: the initial snapshot of `sluice run`: plans every table into
// primary-key ranges (planner.h), reads them with `workers` parallel read transactions
// (snapshot.h), and applies the fetched chunks to the sink in transactions carrying the
// updated checkpoint, so that progress is durable with the data: the chunks ready together
// (up to 16) in one group commit (Sink::ApplyGroup) for sinks that record a group's last
// checkpoint (SQLite, JSON lines, SQL), one chunk per call for the others.
//
// Consistency ("exact"): every read transaction learns its own binlog point (MariaDB: no
// lock; MySQL: one short LOCK TABLES ... READ shared by all, measured and logged), and every
// range records, per stretch of keys, the point it was read at (checkpoint.h RangeSegment).
// The stream applies a change to key k only at or after the point of the stretch holding k
// (pipeline/handoff_rule.h): that is what makes parallel, retried and resumed reads exact.
//
// Transient errors (kUnavailable: lost connection, server restart, deadlock) in a worker are
// retried: the worker reconnects with backoff, opens a new read transaction at a new point,
// and continues after the last key it read; the new stretch gets the new point. A table without
// a primary key is read in one pass by one worker; an interrupted pass starts over (the sink
// table is emptied first, and the log says so). Definite errors stop the snapshot.
// A table whose columns (names, types, collations, primary key) no longer match its plan when
// a worker checks them in its read transaction, or a range whose bounds the server finds out
// of order, is planned again: its copy starts over as a re-read once the other tables' pass
// ends (at most 10 times per table, then kFailedPrecondition). ER_TABLE_DEF_CHANGED is
// retried in a new read transaction, which checks the columns again.
//
// Resume: ranges already done stay done; unfinished ranges continue after their last key in
// new transactions at new points. stream_start stays the earliest point of the first run.
// Progress: one log line every `progress_seconds` with rows done of expected, per table and in
// total, the rate and an ETA (the expected counts come from planning, computed once).
// Connections: `workers` read sessions, the caller's metadata session, and on MySQL one short
// lock session: at most 2 * workers + 1 at any moment.
// Thread safety: Run is called from one thread; it owns the worker threads it starts.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "mysql/connection.h"
#include "mysql/schema_loader.h"
#include "sink/sink.h"
#include "snapshot/planner.h"
#include "snapshot/watermark.h"
#include "util/status.h"

namespace sluice {

struct SnapshotRunOptions {
  ConnectOptions connection;
  uint32_t source_server_id = 0;
  uint32_t workers = 4;
  uint32_t fetch_rows = 5000;  // rows per keyset query, and per sink transaction
  PlanOptions plan;
  // Give up retrying a worker after this long without reading a row.
  uint32_t retry_give_up_seconds = 300;
  double progress_seconds = 5;
  const std::atomic<bool>* stop = nullptr;
  // Tables (db.table globs) whose engine cannot give a consistent read (MyISAM, Aria,
  // MEMORY...) that may be copied anyway (config snapshot.allow_inconsistent_read).
  TableFilter allow_inconsistent_read;
  // snapshot.consistency = "watermark" (snapshot/watermark.h): every read transaction is
  // bracketed by two watermark writes and takes the low one's point; the rows its window
  // changed are left to the stream. Unset: "exact".
  std::optional<WatermarkOptions> watermark;
};

// The rate in the snapshot's progress lines: rows per second since the previous line, smoothed
// over the lines before it (each weighs half as much as the next), so that the ETA follows the
// copy as it goes now. The average since the start stayed low long after a stall (a new
// user's probe: "793 rows/s, ETA 11.8 min" 7 s before the end, after the sink had waited for
// disk space). A line after no new row gives 0 (no ETA), and the next rows start afresh.
class ProgressRate {
 public:
  // `done`: rows copied so far (never less than at the previous call); `seconds`: since the
  // start. Returns rows per second; 0 at the first call at 0 s.
  double Update(uint64_t done, double seconds);

 private:
  uint64_t done_ = 0;
  double seconds_ = 0;
  double rate_ = -1;  // negative: no rows in the previous window
  bool started_ = false;
};

// Whether tables of `engine` (TableSchema::engine) give a consistent read inside START
// TRANSACTION WITH CONSISTENT SNAPSHOT (multi-version concurrency): InnoDB (and XtraDB),
// MyRocks, TokuDB. MyISAM, Aria, MEMORY, CSV, ARCHIVE, MERGE... do not: a copy sees rows change
// while it reads them. Case-insensitive; an empty (unknown) engine counts as consistent.
bool ConsistentReadEngine(std::string_view engine);

// Whether `schema` can be copied for the binlog stream (checked for every table a snapshot or
// re-read plans). kFailedPrecondition naming the table, why and the fix for:
//   - a system-versioned table (MariaDB WITH SYSTEM VERSIONING): its binlog rows carry hidden
//     ROW START/ROW END columns and history rows, which the stream does not decode;
//   - a table whose engine gives no consistent read (ConsistentReadEngine) and that
//     allow_inconsistent_read does not name; with no primary key it is refused even when
//     named, since rows written during its copy would also come from the stream and nothing
//     could tell the two apart.
// A named one is logged as copied without a consistent read.
Status CheckSnapshotTable(const TableSchema& schema, const SnapshotRunOptions& options);

// Test hook (integration tests only): with the environment variable `env` naming a file, the
// first call of the process for that variable creates the file and waits (at most 120 s)
// until the test removes it, so that the test can change the source at that moment; `where`
// ("snapshot: paused after planning") begins the log line. Without the variable it returns
// at once. Thread-safe.
// SLUICE_TEST_SNAPSHOT_PAUSE_FILE pauses a snapshot pass once planned, with its read
// transactions open; SLUICE_TEST_REREAD_PAUSE_FILE pauses a re-read once it found its tables
// at the source, before planning them (snapshot/reread.cc).
void PauseForTest(const char* env, const char* where);

// Copies every table of `tables` that `ckpt` does not mark done into `sink`, updating `ckpt`
// (and storing it with every chunk). Sets ckpt.snapshot_done when everything is copied.
// Returns OK early (snapshot_done false) when *stop becomes true.
Status RunSnapshot(const SnapshotRunOptions& options, Connection& meta,
                   const std::vector<TableName>& tables, Checkpoint& ckpt, Sink& sink);

}  // namespace sluice
