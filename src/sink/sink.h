// Sink: where change events go. A sink applies whole Transactions; where it can, it stores
// the transaction's checkpoint in the same atomic step, so that a crash never applies a
// transaction twice nor loses one (SQLite). Sinks that cannot (JSON lines to a file)
// store it right after a durable write and document their guarantee.
// Errors, by what the caller does next: a failed call changes nothing in the sink.
// kUnavailable is transient (busy/locked, disk full): the caller waits and calls again with
// the SAME transaction. Any other code is definite: the caller stops; the message names the
// path (or address) and the reason.
// Ownership: the caller owns the sink; one thread uses it at a time.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "binlog/rows_event.h"
#include "pipeline/change.h"
#include "schema/table_schema.h"
#include "util/status.h"

namespace sluice {

// A table-shaping DDL the stream followed (TRUNCATE goes through ResetTable instead).
struct SchemaChange {
  enum class Kind : uint8_t {
    kCreate,  // `after` is a new table (a sink table of that name, e.g. one kept after a
              // DROP, is replaced: the source table starts empty)
    kAlter,   // `before` -> `after` (may be renamed); source_of maps the columns
    kRename,  // `before` renamed to `after` (same columns)
    kDrop,    // `before` dropped in the source
  };
  Kind kind = Kind::kAlter;
  TableSchemaPtr before;  // null for kCreate
  TableSchemaPtr after;   // null for kDrop
  // kAlter: per column of `after`, the column of `before` its values come from, or -1 for
  // a new column: existing rows take its default (schema/text_value.h DefaultValue).
  std::vector<int> source_of;
  std::string ddl;    // the statement text
  SourceInfo source;  // the DDL event: file, pos, GTID, timestamp
};
// The change that replaces the sink's table of `table` by an empty one of that definition
// (an online re-read, an incremental copy started over, a table switched to the stream): a
// kCreate whose statement is the comment "-- sluice: <why>", at `source`.
inline SchemaChange ReplaceTableChange(TableSchemaPtr table, const std::string& why, SourceInfo source) {
  SchemaChange c;
  c.kind = SchemaChange::Kind::kCreate;
  c.after = std::move(table);
  c.ddl = "-- sluice: " + why;
  c.source = std::move(source);
  return c;
}

inline const char* SchemaChangeKindName(SchemaChange::Kind k) {
  switch (k) {
    case SchemaChange::Kind::kCreate: return "create";
    case SchemaChange::Kind::kAlter: return "alter";
    case SchemaChange::Kind::kRename: return "rename";
    case SchemaChange::Kind::kDrop: return "drop";
  }
  return "?";
}

// Formatting done ahead of Apply, on a thread other than the sink's, so that the one thread
// that applies transactions mostly writes: the snapshot's read workers format their chunks,
// and while streaming a formatting thread between decoding and the sink writer formats each
// transaction (or part) while the writer writes the previous ones (issue 8 pipeline). One
// record serialiser for both (JSON lines: record.h). Each Preformatter is used by one thread
// at a time and shares no mutable state with its sink; its output must be byte-identical to
// what Apply would format itself.
// Snapshot rows formatted straight from the text cells of the snapshot SELECT, with no Row
// built (schema/text_value.h: SnapshotSelectExpr of every column, in column order; nullopt
// is SQL NULL). Begin starts a chunk read at `source` (the sink's clock is read there);
// Append adds one row's output to *out: byte for byte what Preformatter::FormatReads gives
// for the rows ValueFromText makes of the cells, with the same errors (a cell ValueFromText
// rejects: its error with the table as context). One thread at a time.
class ReadTextFormatter {
 public:
  virtual ~ReadTextFormatter() = default;
  virtual void Begin(const SourceInfo& source) = 0;
  [[nodiscard]] virtual Status Append(const std::vector<std::optional<std::string_view>>& cells,
                                      std::string* out) = 0;
};

class Preformatter {
 public:
  virtual ~Preformatter() = default;
  // A ReadTextFormatter for snapshot chunks of `table`, or null: build Rows and call
  // FormatReads (the default).
  virtual std::unique_ptr<ReadTextFormatter> NewReadTextFormatter(const TableSchemaPtr& table) {
    (void)table;
    return nullptr;
  }
  // Sets txn.preformatted. Errors are those Apply would return for the same transaction;
  // txn is then left without preformatted output (the stream hands it on as it is, so that
  // the sink reports the error in order).
  virtual Status Format(Transaction& txn) = 0;
  // Snapshot chunks: sets txn.preformatted to what Format gives for the read records
  // {op r, table, after = row, source} of `rows`, in order, with txn.changes left empty
  // (the rows are the caller's to free). The default builds those records and calls
  // Format; a sink may format the rows straight away (JSON lines: the shared parts once).
  virtual Status FormatReads(const TableSchemaPtr& table, std::vector<Row>& rows, const SourceInfo& source,
                             Transaction& txn) {
    txn.changes.reserve(rows.size());
    for (Row& row : rows) txn.changes.push_back(ReadChange(Op::kRead, table, std::move(row), source));
    Status st = Format(txn);
    txn.changes = {};
    return st;
  }
  // The stream's rows formatted as the binlog is decoded, straight from the row image (issue
  // 8; JSON lines: sink/envelope.h AppendRowsEventLines): appends to *out what Format gives
  // for the changes DecodeRows and FillStreamChange make of `event` (of `table`, with
  // `source`), and returns their number; nullopt (*out unchanged) when this formatter does
  // not take the event that way (the caller decodes Values). The default takes none.
  virtual std::optional<size_t> FormatRowsEvent(const binlog::RowsEvent& /*event*/, const binlog::TableMap& /*map*/,
                                                const binlog::RowPlans& /*plans*/, const TableSchemaPtr& /*table*/,
                                                const SourceInfo& /*source*/, std::string* /*out*/) {
    return std::nullopt;
  }
  // Appends what Format gives for `changes` (in a transaction whose earlier rows were
  // formatted by FormatRowsEvent); the error Format would return otherwise.
  virtual Status FormatChanges(std::vector<RowChange> changes, std::string* out) {
    Transaction t;
    t.changes = std::move(changes);
    RETURN_IF_ERROR(Format(t));
    if (t.preformatted) out->append(*t.preformatted);
    return Status::Ok();
  }
};

class Sink {
 public:
  // A Preformatter for this sink, or null when Apply has nothing worth formatting ahead
  // (SQLite binds values itself; Kafka and NATS format on their own thread). Call from the
  // sink's thread; use it from any one thread.
  virtual std::unique_ptr<Preformatter> NewPreformatter() const { return nullptr; }
  // The Preformatter the snapshot's read workers use for their chunks (NewReadTextFormatter,
  // FormatReads; never Format), or null. The default is NewPreformatter(). SQLite, which
  // formats nothing while streaming, encodes each chunk's rows as the values it will bind
  // (sink/sqlite_sink.h), so that its one writing thread only binds and steps.
  virtual std::unique_ptr<Preformatter> NewSnapshotPreformatter() const { return NewPreformatter(); }
  // Whether the destination holds a table for `table` (only its db and table names are read),
  // or nullopt where the sink has no tables to ask about (files, topics, streams).
  virtual Result<std::optional<bool>> HasTable(const TableSchema& table) {
    (void)table;
    return std::optional<bool>();
  }
  virtual ~Sink() = default;
  // The source tables (db, table) published before this run that the stream starts with (its
  // schema history's), for sinks that keep each table to a destination of its own and refuse
  // a second table there (Kafka, NATS: publish_util.h DestinationOwners); the SQL sinks keep
  // that record in the destination. Call before the stream's first call. Default: nothing.
  virtual void KnowTables(const std::vector<std::pair<std::string, std::string>>& tables) { (void)tables; }
  // The checkpoint text stored by the last applied transaction, or nullopt for a new sink.
  virtual Result<std::optional<std::string>> LoadCheckpoint() = 0;
  // Makes the sink ready to receive rows of `table` (SQLite: CREATE TABLE IF NOT EXISTS).
  virtual Status PrepareTable(const TableSchema& table) = 0;
  // Applies every change of `txn` and records txn.checkpoint, atomically where possible.
  virtual Status Apply(const Transaction& txn) = 0;
  // Group commit: applies every transaction of `group`, in order, as ONE sink transaction
  // recording the last non-empty checkpoint among them, atomically where possible (never
  // a part of the group). Same errors as Apply. The default applies them one by one (each
  // atomic on its own), which is correct but pays one commit per transaction.
  virtual Status ApplyGroup(const std::vector<Transaction>& group) {
    for (const Transaction& t : group) RETURN_IF_ERROR(Apply(t));
    return Status::Ok();
  }
  // Large source transactions (issue 8: memory stays bounded whatever their size), for sinks
  // that can apply one in steps inside one open sink transaction. ApplyPart applies changes
  // of a source transaction that goes on (no checkpoint): the first part opens the sink
  // transaction, later parts add to it, and the next ApplyGroup (whose first transaction is
  // the rest of that source transaction) commits it with its checkpoint, all or nothing.
  // AbortParts takes back everything applied since the last commit (the source transaction
  // rolled back, or the run stops in the middle). An ApplyPart that fails has aborted the
  // open transaction: the caller starts again from the last checkpoint. Sinks that cannot
  // (SupportsParts false) receive whole transactions only.
  virtual bool SupportsParts() const { return false; }
  virtual Status ApplyPart(const Transaction&) {
    return Status::NotSupported("this sink cannot apply a transaction in parts");
  }
  virtual void AbortParts() {}
  // Whether every transaction of a group needs its own checkpoint text (sinks that commit
  // inside a group: Kafka, NATS). Sinks that record only a group's last one (SQLite, JSON
  // lines) say false, and the streamer formats one checkpoint per group instead.
  virtual bool CheckpointsEachTransaction() const { return true; }
  // Whether what a run published after its last stored checkpoint stays with the consumer when
  // the run dies (NATS; Kafka without transactions; JSON lines to stdout), instead of being
  // taken back (SQL sinks roll back, a JSON lines file is cut back, transactional Kafka aborts).
  // A snapshot cannot continue an interrupted copy into such a sink: rows the dead run sent
  // past its checkpoint may have changed or gone while sluice was stopped, and no later record
  // would say so (a new user's probe: rows deleted meanwhile stayed with the consumer). Each
  // copy there starts from nothing after a truncate record (snapshot/coordinator.h).
  virtual bool KeepsRecordsPastTheCheckpoint() const { return false; }
  // Removes every row of `table` and records `checkpoint`, atomically where possible. Used
  // before copying a table without a primary key again after an interrupted snapshot.
  // Sinks that cannot take rows back (JSON lines) only record the checkpoint.
  virtual Status ResetTable(const TableSchema& table, const std::string& checkpoint) = 0;
  // The source's TRUNCATE of `table`, read from the binlog at `at`: as ResetTable, for sinks
  // whose truncate record carries its position (JSON lines, Kafka, NATS: record.h) and NATS,
  // whose de-duplication id comes from it (nats_sink.h).
  virtual Status TruncateTable(const TableSchema& table, const SourceInfo& at, const std::string& checkpoint) {
    (void)at;
    return ResetTable(table, checkpoint);
  }
  // Follows the schema changes of ONE source DDL statement, in order, and records
  // `checkpoint`, atomically where possible. The default (sinks that describe every record
  // with its table's definition: Kafka, NATS) prepares each new definition and saves the
  // checkpoint; a DROP leaves what was delivered as it is.
  virtual Status ApplySchemaChanges(const std::vector<SchemaChange>& changes, const std::string& checkpoint) {
    for (const SchemaChange& c : changes)
      if (c.after) RETURN_IF_ERROR(PrepareTable(*c.after));
    return SaveCheckpoint(checkpoint);
  }
  // Records a checkpoint with no data (e.g. after transactions of filtered-out tables).
  virtual Status SaveCheckpoint(const std::string& checkpoint) = 0;
  // Flushes buffered output to durable storage.
  virtual Status Flush() = 0;
  // The stream has had nothing to apply for a moment (200 ms). A sink that keeps a group open
  // across calls until it is full or old (Kafka, NATS: group_max_records/group_max_ms, checked
  // when the next call comes) commits it now, so that an idle source's last changes become
  // visible and checkpointed at once instead of when the next transaction arrives. Same
  // errors as Flush. The default does nothing (the other sinks commit every call).
  virtual Status Idle() { return Status::Ok(); }
};

}  // namespace sluice
