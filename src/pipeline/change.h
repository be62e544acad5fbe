// The change-event model handed from snapshot and stream to the sinks.
//
// A RowChange is one row-level change (op c/u/d, or r for snapshot reads) with its
// before and after images as canonical Values (core/value.h) in the table's column
// order. A Transaction groups the changes of one source transaction (or one snapshot
// chunk) and carries the checkpoint that holds once it is applied. Sinks apply a
// Transaction atomically where they can.
// Ownership: RowChange owns its values; the schema is shared and immutable.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/position.h"
#include "core/value.h"
#include "schema/table_schema.h"

namespace sluice {

enum class Op : char { kCreate = 'c', kUpdate = 'u', kDelete = 'd', kRead = 'r' };

// Where a change came from; becomes the envelope's "source" block.
struct SourceInfo {
  Flavor flavor = Flavor::kUnknown;
  uint32_t server_id = 0;
  std::string file;      // binlog file of the row event (snapshot: the snapshot point)
  uint64_t pos = 0;      // start offset of the row event (snapshot: the snapshot point)
  std::string gtid;      // GTID of the transaction ("0-1-42" / "uuid:42"); may be empty
  uint32_t timestamp = 0;  // event time, seconds since the epoch (snapshot: read time)
  bool snapshot = false;
  uint32_t row = 0;      // index of the row inside its rows event
};

struct RowChange {
  Op op = Op::kCreate;
  TableSchemaPtr table;
  Row before;  // empty for c and r
  Row after;   // empty for d
  SourceInfo source;
};

// The one place change records are built, for the snapshot, incremental reads and the
// stream alike (issue 9), so that every path fills a record the same way.
//
// A read of a whole row: a snapshot or re-read row (op r), or an incremental page's row (op c
// or r, snapshot/incremental.h). `after` is the row in the table's column order.
inline RowChange ReadChange(Op op, TableSchemaPtr table, Row row, const SourceInfo& source) {
  RowChange c;
  c.op = op;
  c.table = std::move(table);
  c.after = std::move(row);
  c.source = source;
  return c;
}

// One row of a binlog rows event (op c, u or d; `row` is its index in the event). An image
// the server wrote without some columns (binlog_row_image MINIMAL or NOBLOB) is padded to the
// table's columns with Value::Absent(), which the sinks leave untouched; an empty image (the
// before of c, the after of d) stays empty.
inline void FillStreamChange(RowChange& c, Op op, TableSchemaPtr table, Row before, Row after,
                             const SourceInfo& source, uint32_t row) {
  const size_t n = table->columns.size();
  c.op = op;
  c.table = std::move(table);
  c.before = std::move(before);
  c.after = std::move(after);
  if (!c.before.empty()) c.before.resize(n, Value::Absent());
  if (!c.after.empty()) c.after.resize(n, Value::Absent());
  c.source = source;
  c.source.row = row;
}

// An update that changes the primary key, as the delete of the old key and the insert of the
// new one, each with the update's source: how sinks that key records by primary key (JSON
// envelopes with split_key_changes, Kafka keys) see it.
inline std::pair<RowChange, RowChange> SplitKeyChange(const RowChange& update) {
  RowChange del;
  del.op = Op::kDelete;
  del.table = update.table;
  del.before = update.before;
  del.source = update.source;
  RowChange add = ReadChange(Op::kCreate, update.table, update.after, update.source);
  return {std::move(del), std::move(add)};
}

// Bytes `c` holds in memory (itself, its values and their heap storage): what the memory cap
// of buffered change data counts (issue 8).
inline size_t ApproxBytes(const RowChange& c) {
  auto heap = [](const std::string& s) { return s.capacity() > 15 ? s.capacity() + 1 : 0; };
  size_t n = sizeof(RowChange) + heap(c.source.file) + heap(c.source.gtid) +
             (c.before.capacity() + c.after.capacity()) * sizeof(Value);
  for (const Value& v : c.before) n += heap(v.s);
  for (const Value& v : c.after) n += heap(v.s);
  return n;
}

// A checkpoint's schema history as text, kept apart from the checkpoint (issue 8): formatted
// once per DDL and shared by every transaction after it, stored by the sinks that can
// (SQLite, JSON lines) only when it changed. `ref` names this text (a digest of it).
struct SchemaHistoryText {
  std::string ref;
  std::string json;
};

// Row changes counted instead of kept (issue 8): the stream's JSON lines are made from the
// row image as it is decoded, and what the sink writer still reads of those changes is how
// many of each table and op (its counters, the tables it prepares) and the source time of
// the last one (lag). `runs` lists them in order, one entry per run of the same table and op.
struct ChangeCounts {
  struct Run {
    TableSchemaPtr table;
    Op op = Op::kCreate;
    size_t rows = 0;
  };
  std::vector<Run> runs;
  size_t rows = 0;              // the sum of runs[].rows
  uint32_t last_timestamp = 0;  // source timestamp of the last change counted

  bool empty() const { return rows == 0; }
  // Counts `n` (> 0) more changes of `table` and `op`, the last one at `timestamp`.
  void Add(const TableSchemaPtr& table, Op op, size_t n, uint32_t timestamp) {
    if (runs.empty() || runs.back().table != table || runs.back().op != op) {
      if (runs.capacity() == 0) runs.reserve(4);
      runs.push_back(Run{table, op, 0});
    }
    runs.back().rows += n;
    rows += n;
    last_timestamp = timestamp;
  }
  // Bytes held besides the object itself.
  size_t HeapBytes() const { return runs.capacity() * sizeof(Run); }
};

struct Transaction {
  std::vector<RowChange> changes;
  // Changes that were counted, not kept (only with `preformatted`, from the stream's
  // decoding thread: see ChangeCounts). A transaction holds its rows in `changes` or here,
  // never in both.
  ChangeCounts counted;
  // The state to record once this transaction is applied, as opaque JSON text written by
  // checkpoint/checkpoint.h. Sinks store it with the data in one atomic step. When `schemas`
  // is set, the text refers to that history ("schemas_ref") instead of holding it, and
  // JoinCheckpoint(checkpoint, schemas->json) (checkpoint.h) is the whole checkpoint.
  std::string checkpoint;
  std::shared_ptr<const SchemaHistoryText> schemas;
  bool is_snapshot = false;
  // Output formatted ahead, on another thread, by the Preformatter of the sink that will
  // apply this transaction (sink/sink.h); opaque to everyone else. A sink that finds it set
  // writes it and does not look at the values of `changes` (which the producer may then have
  // emptied or released: the stream frees the values of changes it formatted, and counts
  // those it formatted from the row image in `counted` instead of keeping them).
  std::optional<std::string> preformatted;

  // Its row changes, kept or counted.
  size_t row_count() const { return changes.size() + counted.rows; }
  bool has_rows() const { return !changes.empty() || !counted.empty(); }
  // Source timestamp of its last row change (0 without any).
  uint32_t last_source_timestamp() const {
    return changes.empty() ? counted.last_timestamp : changes.back().source.timestamp;
  }
};

}  // namespace sluice
