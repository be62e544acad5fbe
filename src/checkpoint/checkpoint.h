// Checkpoint: sluice's durable state, versioned, serialised as JSON text.
//
// Sinks store Checkpoint::ToJson() atomically with the data it describes (SQLite: same
// transaction; JSON lines: tmp file + fsync + rename beside the output, see
// checkpoint_file.h). FromJson rejects unknown versions with kFailedPrecondition.
//
// Meaning of the fields:
//   stream_start  where streaming resumes: the end of the last applied transaction
//                 (binlog file/pos of the first event not yet applied).
//   gtid          the GTID position at stream_start (MariaDB gtid_binlog_pos form, or the
//                 MySQL executed set); may be empty when GTIDs are off.
//   snapshot      progress of the initial snapshot: whether it finished, and for each table
//                 either done or the last primary key copied (as canonical texts).
//   schemas       the position-versioned table definitions (schema/schema_history.h) that
//                 events at or after stream_start need; absent when null or empty. A
//                 checkpoint that holds them is written as version 2, so that a sluice that
//                 cannot read them refuses it instead of decoding old events with new
//                 definitions; version 1 (no schemas) is still read and written.
// Thread safety: plain value type.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/position.h"
#include "schema/schema_history.h"
#include "util/status.h"

namespace sluice {

struct TableSnapshotProgress {
  bool done = false;
  // Canonical text of each primary-key column of the last row copied (Value::ToText).
  std::vector<std::string> last_key;
  uint64_t rows = 0;
  // The snapshot point of the run that began this table's copy. Row events for the table
  // before this point are already in the copy and are skipped while streaming; a table
  // whose copy spans two runs keeps the first run's point, and the binlog between the two
  // points is replayed onto it (idempotent by primary key, docs/design.md).
  BinlogPosition copied_at;
};

struct Checkpoint {
  static constexpr int kVersion = 1;             // without schemas
  static constexpr int kVersionWithSchemas = 2;  // with schemas

  Flavor flavor = Flavor::kUnknown;
  BinlogPosition stream_start;
  std::string gtid;
  bool snapshot_done = false;
  std::map<std::string, TableSnapshotProgress> tables;  // key "db.table"
  std::shared_ptr<const SchemaHistory> schemas;          // may be null

  std::string ToJson() const;
  static Result<Checkpoint> FromJson(const std::string& text);
};

}  // namespace sluice
