// SnapshotCoordinator: the initial snapshot of `sluice run`: plans every table into
// primary-key ranges (planner.h), reads them with `workers` parallel read transactions
// (snapshot.h), and applies each fetched chunk to the sink as one transaction carrying the
// updated checkpoint, so that progress is durable with the data.
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
#include <vector>

#include "checkpoint/checkpoint.h"
#include "mysql/connection.h"
#include "mysql/schema_loader.h"
#include "sink/sink.h"
#include "snapshot/planner.h"
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
};

// Copies every table of `tables` that `ckpt` does not mark done into `sink`, updating `ckpt`
// (and storing it with every chunk). Sets ckpt.snapshot_done when everything is copied.
// Returns OK early (snapshot_done false) when *stop becomes true.
Status RunSnapshot(const SnapshotRunOptions& options, Connection& meta,
                   const std::vector<TableName>& tables, Checkpoint& ckpt, Sink& sink);

// Builds the snapshot read record of one row (op r) with the point it was read at; the stream
// builds its records in stream/transaction_assembler.cc from the same SourceInfo fields.
RowChange SnapshotReadChange(const TableSchemaPtr& table, Row row, const SourceInfo& source);

}  // namespace sluice
