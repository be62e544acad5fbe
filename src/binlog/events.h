// Decoded binlog events: one plain struct per event kind behind std::variant, plus the
// pure decoder that turns one event's bytes into an Event given an immutable context.
//
// Shapes: every Event keeps its header, its position (file, start, end), a view of its
// raw bytes (header + body + checksum) and the decoded body. Sources of each layout:
//   FORMAT_DESCRIPTION, ROTATE, STOP, INCIDENT, GTID, PREVIOUS_GTIDS, XA_PREPARE,
//   TRANSACTION_PAYLOAD, HEARTBEAT: MySQL libs/mysql/binlog/event/control_events.{h,cpp}
//   QUERY, XID, INTVAR, RAND, USER_VAR: statement_events.{h,cpp}
//   TABLE_MAP, ROWS, ROWS_QUERY: rows_event.{h,cpp} and sql/log_event.cc
//   MariaDB ANNOTATE_ROWS, BINLOG_CHECKPOINT, GTID, GTID_LIST, *_COMPRESSED,
//   START_ENCRYPTION: MariaDB sql/log_event.{h,cc}, sql/log_event_client.cc.
// Ownership/lifetime: `Event::raw` and spans inside bodies (RowsEvent::body/extra_data,
// raw user-var bytes) view either the caller's event buffer or `Event::storage`, which
// the event shares (copies of an Event keep it alive). Events decoded from a buffer the
// caller owns are valid only as long as that buffer; call Event::Own() to detach.
// Errors: kCorruption "<EVENT_NAME> at offset N: what" for bad bytes, kNotSupported for
// encrypted binlogs, unknown non-ignorable event types and unknown compression.
// Thread safety: plain values; DecodeEvent is pure.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "binlog/checksum.h"
#include "binlog/event_header.h"
#include "binlog/rows_event.h"
#include "binlog/table_map.h"
#include "core/position.h"
#include "util/status.h"

namespace sluice::binlog {

struct FormatDescriptionEvent {
  uint16_t binlog_version = 4;
  std::string server_version;          // NULs stripped, e.g. "8.0.36" or "10.11.6-MariaDB-log"
  uint32_t create_timestamp = 0;
  uint8_t header_length = 19;
  std::vector<uint8_t> post_header_lengths;  // index = type - 1
  ChecksumAlg checksum_alg = ChecksumAlg::kOff;  // kOff for servers before checksums
  Flavor flavor = Flavor::kMySQL;

  // Post-header length of `type` per this FDE, or `fallback` when the FDE lists fewer types.
  uint8_t PostHeaderLength(EventType type, uint8_t fallback) const;
};

struct RotateEvent {
  uint64_t position = 0;
  std::string next_file;
};

// QUERY_EVENT, MariaDB QUERY_COMPRESSED_EVENT (query inflated) and EXECUTE_LOAD_QUERY_EVENT
// (a statement-logged LOAD DATA; the fields of its longer post-header are not kept).
struct QueryEvent {
  uint32_t thread_id = 0;
  uint32_t exec_time = 0;
  uint16_t error_code = 0;
  std::string status_vars;  // raw Q_* status variable block
  std::string schema;
  std::string query;
  bool compressed = false;
};

// The session sql_mode a QUERY event ran under: its status variables start with Q_FLAGS2_CODE
// (0, 4 bytes) and Q_SQL_MODE_CODE (1, 8 bytes) as both servers write them (MySQL/MariaDB
// Query_log_event::write); nullopt when they do not (not known).
std::optional<uint64_t> QuerySqlMode(const QueryEvent& q);
// sql_mode bits (MariaDB sql_class.h MODE_*, the same in MySQL).
inline constexpr uint64_t kModeAnsiQuotes = 1ull << 2;
inline constexpr uint64_t kModeAnsi = 1ull << 18;  // implies ANSI_QUOTES
inline constexpr uint64_t kModeStrictTransTables = 1ull << 21;
inline constexpr uint64_t kModeStrictAllTables = 1ull << 22;
// Whether "..." quotes identifiers, not strings, under `sql_mode`.
inline bool AnsiQuotes(uint64_t sql_mode) { return (sql_mode & (kModeAnsiQuotes | kModeAnsi)) != 0; }

struct XidEvent {
  uint64_t xid = 0;
};

struct TableMapEvent {
  std::shared_ptr<const TableMap> map;  // shared with the EventStream's table cache
};

// MySQL GTID_LOG_EVENT (33), ANONYMOUS_GTID_LOG_EVENT (34), GTID_TAGGED_LOG_EVENT (42).
struct GtidEvent {
  bool anonymous = false;
  bool tagged = false;             // came as GTID_TAGGED_LOG_EVENT
  uint8_t flags = 0;               // bit 0: may have SBR statements
  std::string uuid;                // lowercase dashed
  std::string tag;                 // empty when untagged
  int64_t gno = 0;
  bool has_logical_clock = false;
  int64_t last_committed = 0;
  int64_t sequence_number = 0;
  std::optional<uint64_t> immediate_commit_timestamp;  // microseconds
  std::optional<uint64_t> original_commit_timestamp;
  std::optional<uint64_t> transaction_length;
  std::optional<uint32_t> immediate_server_version;
  std::optional<uint32_t> original_server_version;
  std::optional<uint64_t> commit_group_ticket;

  // "uuid:gno" or "uuid:tag:gno"; empty for anonymous.
  std::string GtidText() const;
};

struct PreviousGtidsEvent {
  std::string gtid_set;  // MySQL text form (gtid::MysqlGtidSet::ToString)
};

// MariaDB GTID_EVENT (162). A standalone GTID (FL_STANDALONE) starts a group with no
// terminating XID/COMMIT (a DDL or non-transactional statement).
struct MariadbGtidEvent {
  static constexpr uint8_t kFlStandalone = 1;
  static constexpr uint8_t kFlGroupCommitId = 2;
  static constexpr uint8_t kFlTransactional = 4;
  static constexpr uint8_t kFlAllowParallel = 8;
  static constexpr uint8_t kFlWaited = 16;
  static constexpr uint8_t kFlDdl = 32;
  static constexpr uint8_t kFlPreparedXa = 64;
  static constexpr uint8_t kFlCompletedXa = 128;

  uint64_t seq_no = 0;
  uint32_t domain_id = 0;
  uint32_t server_id = 0;  // from the event header
  uint8_t flags = 0;
  std::optional<uint64_t> commit_id;  // when FL_GROUP_COMMIT_ID
  std::string xid;                    // XA: raw gtrid+bqual when FL_PREPARED_XA/FL_COMPLETED_XA
  uint32_t xa_format_id = 0;
  uint8_t flags_extra = 0;

  bool standalone() const { return flags & kFlStandalone; }
  std::string GtidText() const;  // "domain-server-seq"
};

struct MariadbGtidListEvent {
  struct Entry {
    uint32_t domain_id = 0;
    uint32_t server_id = 0;
    uint64_t seq_no = 0;
  };
  uint32_t flags = 0;  // top 4 bits of the count word
  std::vector<Entry> gtids;
  std::string GtidListText() const;  // "0-1-42,1-2-7"
};

struct BinlogCheckpointEvent {
  std::string file;
};

// MariaDB ANNOTATE_ROWS_EVENT and MySQL ROWS_QUERY_LOG_EVENT: the statement text.
struct RowsQueryEvent {
  std::string query;
};

struct HeartbeatEvent {
  std::string log_file;                 // v1: the body; v2: field 0
  std::optional<uint64_t> log_position;  // v2 only
  bool v2 = false;
};

struct IntvarEvent {
  uint8_t kind = 0;  // 1 LAST_INSERT_ID, 2 INSERT_ID
  uint64_t value = 0;
};

struct RandEvent {
  uint64_t seed1 = 0;
  uint64_t seed2 = 0;
};

struct UserVarEvent {
  std::string name;
  std::span<const uint8_t> value_raw;  // is_null flag onward, undecoded
};

struct XaPrepareEvent {
  bool one_phase = false;
  int32_t format_id = 0;
  std::string gtrid;
  std::string bqual;
};

struct StopEvent {};

struct IncidentEvent {
  uint16_t incident = 0;
  std::string message;
};

// TRANSACTION_PAYLOAD_EVENT (40): the header fields; inner events come from the stream.
struct TransactionPayloadEvent {
  uint64_t compression_type = 0;  // 0 ZSTD, 255 NONE
  uint64_t payload_size = 0;
  uint64_t uncompressed_size = 0;
  std::span<const uint8_t> payload;  // compressed bytes (view)
};

// Known events sluice does not decode (LOAD_*, TRANSACTION_CONTEXT, VIEW_CHANGE,
// IGNORABLE_LOG_EVENT, START_EVENT_V3 ...) and unknown types flagged ignorable:
// ignored by this implementation, raw bytes kept in Event::raw.
struct OpaqueEvent {
  bool ignorable = false;
};

using EventBody =
    std::variant<OpaqueEvent, FormatDescriptionEvent, RotateEvent, QueryEvent, XidEvent,
                 TableMapEvent, RowsEvent, GtidEvent, PreviousGtidsEvent, MariadbGtidEvent,
                 MariadbGtidListEvent, BinlogCheckpointEvent, RowsQueryEvent, HeartbeatEvent,
                 IntvarEvent, RandEvent, UserVarEvent, XaPrepareEvent, StopEvent,
                 IncidentEvent, TransactionPayloadEvent>;

struct Event {
  EventHeader header;
  std::string file;        // binlog file the event belongs to ("" when unknown)
  uint64_t pos = 0;        // start offset of the event
  uint64_t end_pos = 0;    // offset just past the event (the next event's pos)
  bool in_payload = false; // decoded from inside a TRANSACTION_PAYLOAD (pos = outer's)
  std::span<const uint8_t> raw;                 // whole event incl. header and checksum
  std::shared_ptr<const void> storage;          // owns raw and/or inflated bytes, or null
  EventBody body;
  // Rows events decoded through an EventStream: the TABLE_MAP in force (null if none).
  std::shared_ptr<const TableMap> table_map;

  uint8_t type() const { return header.type; }
  std::string TypeName() const { return EventTypeName(header.type); }
  // Copies `raw` into `storage` (if not already owned) and re-points every view there.
  void Own();
  // One deterministic line (the JSON object below, dumped compactly).
  std::string DebugString() const;
};

// Immutable decoding context: what the current FORMAT_DESCRIPTION_EVENT says.
struct DecodeContext {
  const FormatDescriptionEvent* fde = nullptr;  // null: before any FDE (v4 defaults)
  bool checksum_present = false;  // strip (and verify) the 4-byte footer
  bool verify_checksum = true;
  bool in_payload = false;        // inner event of a TRANSACTION_PAYLOAD (never checksummed)
};

// Decodes one whole event (header included) at absolute `offset`. Does not set
// Event::file/pos/end_pos (the stream does). TABLE_MAP_EVENT yields a fresh TableMap.
// The FORMAT_DESCRIPTION_EVENT is self-describing: its own checksum algorithm byte
// decides whether it carries (and is checked against) a CRC32 footer.
Result<Event> DecodeEvent(std::span<const uint8_t> event, uint64_t offset,
                          const DecodeContext& ctx);
// The same, decoding into `*out` (which may hold an earlier event: every field is
// replaced), so a caller decoding event after event reuses one Event's allocations.
Status DecodeEventInto(std::span<const uint8_t> event, uint64_t offset, const DecodeContext& ctx,
                       Event* out);

// Body decoders (exposed for tests). `body` excludes header and checksum; `offset` is
// the absolute offset of body[0].
Result<FormatDescriptionEvent> DecodeFormatDescription(std::span<const uint8_t> body,
                                                       uint64_t offset,
                                                       uint32_t event_size);
// `flavor` decides which column types count as "character" in the charset metadata
// (MariaDB includes GEOMETRY, MySQL 9 includes VECTOR).
Result<TableMap> DecodeTableMap(std::span<const uint8_t> body, uint64_t offset,
                                uint8_t post_header_len, Flavor flavor);

// MariaDB compressed payload: 1 byte (0x80 | alg<<4 | lenlen), lenlen bytes of
// big-endian uncompressed length, then a zlib stream (sql/log_event.cc
// binlog_buf_uncompress). Appends the inflated bytes to `out`.
Status InflateMariadbCompressed(std::span<const uint8_t> data, uint64_t offset,
                                std::string_view what, std::string* out);

// JSON view of an event: {"file","pos","end_pos","log_pos","type","type_code",
// "server_id","timestamp","flags",...event fields}. Deterministic key order.
nlohmann::ordered_json EventToJson(const Event& event);

}  // namespace sluice::binlog
