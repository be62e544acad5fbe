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
//   source        the identity of the server stream_start belongs to (server_id, and
//                 server_uuid on MySQL): a binlog file/pos means nothing on another server,
//                 so a run against a different server continues only by GTID
//                 (cli/resume.h). Absent in checkpoints written before it existed.
//   snapshot      progress of the initial snapshot: whether it finished, and for each table
//                 either done or the last primary key copied (as canonical texts).
//   filter        the table patterns the run that wrote it selected with (optional).
//   incremental   per table read without the binlog (snapshot/incremental.h): its mode,
//                 backfill progress (done, last key copied), the watermark (cursor, pk...) of
//                 the last row paged, and the high watermark of the last run (optional).
//   schemas       the position-versioned table definitions (schema/schema_history.h) that
//                 events at or after stream_start need; absent when null or empty. A
//                 checkpoint that holds them is written as version 2, so that a sluice that
//                 cannot read them refuses it instead of decoding old events with new
//                 definitions; version 1 (no schemas) is still read and written.
// Split form (issue 8): the history is 40 KB for Sakila and changes only at a DDL, so the
// streamer's per-transaction checkpoints refer to it ("schemas_ref": its SchemaHistoryText's
// ref, pipeline/change.h) and the sinks store the history once per change (SQLite: a row of
// _sluice_schemas; JSON lines: a file beside the state file), in the same atomic step as the
// checkpoint that first refers to it. JoinCheckpoint(split, history json) is exactly ToJson();
// FromJson reads only the whole form (a split text is kCorruption naming the missing history).
// Thread safety: plain value type.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/position.h"
#include "pipeline/change.h"
#include "pipeline/handoff_rule.h"
#include "schema/schema_history.h"
#include "util/status.h"

namespace sluice {

// A key as the canonical texts of its primary-key columns (Value::ToText). Empty means
// "no key": the start of the table as a lower bound, the end of the table as an upper one.
using KeyTexts = std::vector<std::string>;

// A stretch of a range read at one binlog point: the keys after the previous segment's end
// (or the range's lower bound) up to `end` inclusive. `end` empty: up to the range's upper
// bound (only the last segment of a finished range).
struct RangeSegment {
  KeyTexts end;
  BinlogPosition point;
};

// One primary-key range of a table: keys > lower and <= upper (empty: unbounded), planned
// once; its progress (last key copied, rows) and the points it was read at, in key order.
struct RangeProgress {
  KeyTexts lower;
  KeyTexts upper;
  bool done = false;
  uint64_t rows = 0;
  KeyTexts last_key;  // last key copied; empty: nothing copied yet
  std::vector<RangeSegment> segments;
};

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
  // The server's binlog position when the copy was complete (read after its last row was
  // applied; empty: not recorded, an older sluice). Every read of the table ended before it,
  // so a RENAME between a range's point and it may have moved another table under the name a
  // read transaction opened after it, with a read view from before it: such a copy is read
  // again (stream/streamer.cc, copied_across).
  BinlogPosition read_until;
  // The planned ranges (empty: the table was copied in one pass, by an older sluice or
  // because it has no primary key). When present, `done`/`rows` summarise them and
  // `last_key` is unused.
  std::vector<RangeProgress> ranges;
  uint64_t expected_rows = 0;  // from planning: an exact count or the optimizer's estimate
  // An online re-read of a table the stream already captured (a DDL that rewrote its rows, a
  // table renamed into the patterns, `sluice resnapshot`): while set and nothing is copied
  // yet, the sink table is replaced by an empty one of the definition the copy reads; when
  // the copy is done its definition enters the schema history at `copied_at` and the flag
  // is cleared (snapshot/coordinator.h).
  bool reread = false;
  // The database part of the table's "db.table" key, when whoever marked it knew it (the
  // stream, from a DDL's quoted names): a key is ambiguous when a database or table name
  // holds a dot (`a.b`.`c` and `a`.`b.c`). Empty when unknown (checkpoints before it, names
  // given to `sluice resnapshot`): then each split is tried where one is needed.
  std::string db;
};

// The snapshot -> stream hand-off of one table copied by ranges (pipeline/handoff_rule.h):
// pieces in key order, each the keys up to `end` (inclusive; empty: to the end of the table)
// read at `point`. Adjacent pieces with the same point are merged. Empty when any range is
// unfinished.
// Tests only: the checkpoint's "snapshot" object as written into checkpoints (through_document
// false; "<declined>" where the writer leaves it to the document) or as nlohmann dumps the
// document of it (true). The two must be equal byte for byte.
std::string SnapshotJsonForTest(bool snapshot_done, const std::map<std::string, TableSnapshotProgress>& tables,
                                bool through_document);

std::vector<KeyPointPiece> HandoffPieces(const TableSnapshotProgress& table);

// A table read without the binlog (snapshot/incremental.h). Keys are canonical texts:
// `watermark` and `run_high` hold the cursor's text then the primary key's; empty: none yet.
struct IncrementalProgress {
  std::string mode;  // "incremental", "full", "snapshot_only": another mode starts over
  bool backfill_done = false;
  KeyTexts backfill_last_key;  // primary key of the last row of the last committed chunk
  uint64_t backfill_rows = 0;
  KeyTexts watermark;          // (cursor, pk...) of the last row paged (or the backfill's H)
  KeyTexts run_high;           // the high watermark captured by the last (or current) run
  uint64_t runs = 0;           // finished runs
  // The table's definition as the reads saw it (IncrementalDefinition: columns, types, key
  // and cursor); another one starts over. Empty: not recorded (an older checkpoint).
  std::string definition;
  // `sluice resnapshot` asked for the table to be read again from the start.
  bool restart = false;
  friend bool operator==(const IncrementalProgress&, const IncrementalProgress&) = default;
};

// Which server a checkpoint's binlog coordinates belong to. server_id 0: not recorded.
struct SourceIdentity {
  uint32_t server_id = 0;
  std::string server_uuid;  // MySQL @@server_uuid; empty on MariaDB (it has none)
  bool known() const { return server_id != 0 || !server_uuid.empty(); }
  std::string ToString() const;  // "server_id 1" or "server_id 1, server_uuid ..."
  friend bool operator==(const SourceIdentity&, const SourceIdentity&) = default;
};

// What the binlog held at a checkpoint's stream_start when the checkpoint was written, so that a
// resume can tell that the server's file there still holds that history: after RESET MASTER (or
// a restore from an older backup) a file of the same name may hold events that line up with the
// checkpoint's offset and GTIDs, and the file/length/GTID checks (stream/resume.h) pass while
// every transaction in between is skipped (a new user's probe, exit 0). Applies only while
// `file` is stream_start's file; each part is checked when recorded (stream/resume.h
// WitnessCheck):
//   created     the file's FORMAT_DESCRIPTION_EVENT header timestamp: when the server created
//               the file (a reset or a restore makes a new one). 0: not recorded.
//   event_*     the event that ends at stream_start (the last one applied): its offset, size
//               and the 64-bit FNV-1a hash of all its bytes as the dump sent them (not a CRC-32:
//               over an event that ends in its own CRC-32 footer, a CRC-32 is the same constant
//               for every event, a new user's probe found). event_size 0: none recorded (a
//               snapshot's point: the event before it was never read).
struct PositionWitness {
  std::string file;
  uint32_t created = 0;
  uint64_t event_pos = 0;
  uint32_t event_size = 0;
  uint64_t event_hash = 0;
  // Whether it says anything about `at`.
  bool AppliesTo(const BinlogPosition& at) const { return !file.empty() && file == at.file; }
  bool HasEventEndingAt(const BinlogPosition& at) const {
    return AppliesTo(at) && event_size > 0 && event_pos + event_size == at.pos;
  }
  friend bool operator==(const PositionWitness&, const PositionWitness&) = default;
};

struct Checkpoint {
  static constexpr int kVersion = 1;             // without schemas
  static constexpr int kVersionWithSchemas = 2;  // with schemas
  // With "ahead" (an online re-read under way), with or without schemas: a sluice that does
  // not know "ahead" would ignore it and apply the other tables' changes since the re-read's
  // DDL a second time, so it must refuse the checkpoint instead.
  static constexpr int kVersionWithAhead = 3;
  // With "ahead" holding "replayed": a sluice that does not know it would replay those
  // tables' changes a second time.
  static constexpr int kVersionWithReplayed = 4;

  Flavor flavor = Flavor::kUnknown;
  BinlogPosition stream_start;
  PositionWitness witness;  // of stream_start (recorded by the stream; empty: none)
  std::string gtid;
  SourceIdentity source;
  bool snapshot_done = false;
  std::map<std::string, TableSnapshotProgress> tables;  // key "db.table"
  std::shared_ptr<const SchemaHistory> schemas;          // may be null
  // The table patterns (source.tables / source.exclude) of the run that wrote this: a table
  // they select that the checkpoint does not know was created after it (the stream reads
  // its CREATE), not added to the configuration (which needs a snapshot). Empty: unknown.
  std::vector<std::string> filter_include;
  std::vector<std::string> filter_exclude;
  std::map<std::string, IncrementalProgress> incremental;  // key "db.table"
  // An online re-read running beside the stream (docs/design.md, "Online re-reads"): the
  // tables in `rereading` were marked at stream_start or later, and their events from
  // stream_start on are judged against their copy (dropped while it runs, replayed by the
  // hand-off rule once it is done); every other table's events before `others_at` are in
  // the sink already and are skipped, DDL included. Empty others_at: none.
  BinlogPosition others_at;
  std::vector<std::string> rereading;  // "db.table"
  // Tables of `rereading` whose copy is done and whose replay went on to the position given
  // (a pass of the stream that ended before it reached others_at: another table's copy
  // finished, a stop, a crash): their events before it are in the sink and skipped like the
  // other tables' before others_at; the replay goes on from there. Keys are in `rereading`.
  std::map<std::string, BinlogPosition> replayed;

  std::string ToJson() const;
  // ToJson() with "schemas_ref":"<history.ref>" in place of "schemas" (the caller passes the
  // text of `schemas`, SchemaHistoryTextOf); without schemas, ToJson().
  std::string ToJsonWithRef(const SchemaHistoryText* history) const;
  static Result<Checkpoint> FromJson(const std::string& text);

  // Formats the "snapshot" object once, for a checkpoint whose snapshot part no longer
  // changes (the streamer's: its transactions move only the position and the schemas), and
  // lets ToJson and this checkpoint's copies reuse the text. Formatting it per transaction
  // cost most of the decoding thread once a snapshot had thousands of ranges (ASan: 48
  // transactions/s). The text is used only while `snapshot_done` and each table's done, rows
  // and range count still equal what was formatted; otherwise ToJson formats afresh.
  void FreezeSnapshotJson();

 private:
  struct FrozenSnapshot;
  std::shared_ptr<const FrozenSnapshot> frozen_snapshot_;
  std::string SnapshotFingerprint() const;
  std::string ToJsonWithoutSchemas() const;  // the document, ending in '}'
};

// The text of `h` (its cached JSON) and its ref: a 64-bit FNV-1a digest and the length.
std::shared_ptr<const SchemaHistoryText> SchemaHistoryTextOf(const SchemaHistory& h);
// The ref a split checkpoint names ("" for a whole one or any other text).
std::string_view CheckpointSchemasRef(std::string_view text);
// A split checkpoint and the json of the history it names -> the whole checkpoint. A text
// without a ref is returned as it is.
std::string JoinCheckpoint(std::string_view split, std::string_view history_json);
// A whole checkpoint (ToJson) -> its split form and its history (null: it holds none; then
// `split` is the text itself). The inverse of JoinCheckpoint.
struct SplitCheckpointText {
  std::string split;
  std::shared_ptr<const SchemaHistoryText> schemas;
};
SplitCheckpointText SplitCheckpoint(std::string_view whole);
// The whole checkpoint of a transaction: JoinCheckpoint when it carries a history (for sinks
// that store the checkpoint as one text: Kafka, NATS).
std::string WholeCheckpoint(const Transaction& txn);

}  // namespace sluice
