// The v4 binlog event header (19 bytes) and the event type codes.
//
// Layout (MySQL libs/mysql/binlog/event/binlog_event.h Log_event_header; MariaDB
// sql/log_event.h), all little-endian:
//   timestamp 4 (seconds since epoch) | type 1 | server_id 4 | event_size 4 (whole event,
//   header and checksum included) | log_pos 4 (end offset of the event in the file;
//   0 for artificial events, MariaDB 11.4+ may write 0) | flags 2
// Type codes: MySQL Log_event_type (binlog_event.h), MariaDB 160-171 (sql/log_event.h).
// Thread safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "util/status.h"

namespace sluice::binlog {

inline constexpr size_t kEventHeaderLength = 19;
inline constexpr size_t kChecksumLength = 4;

// Header flags (binlog_event.h LOG_EVENT_*_F).
inline constexpr uint16_t kFlagBinlogInUse = 0x1;
inline constexpr uint16_t kFlagThreadSpecific = 0x4;
inline constexpr uint16_t kFlagSuppressUse = 0x8;
inline constexpr uint16_t kFlagArtificial = 0x20;
inline constexpr uint16_t kFlagRelayLog = 0x40;
inline constexpr uint16_t kFlagIgnorable = 0x80;

enum class EventType : uint8_t {
  UNKNOWN_EVENT = 0,
  START_EVENT_V3 = 1,
  QUERY_EVENT = 2,
  STOP_EVENT = 3,
  ROTATE_EVENT = 4,
  INTVAR_EVENT = 5,
  LOAD_EVENT = 6,
  SLAVE_EVENT = 7,
  CREATE_FILE_EVENT = 8,
  APPEND_BLOCK_EVENT = 9,
  EXEC_LOAD_EVENT = 10,
  DELETE_FILE_EVENT = 11,
  NEW_LOAD_EVENT = 12,
  RAND_EVENT = 13,
  USER_VAR_EVENT = 14,
  FORMAT_DESCRIPTION_EVENT = 15,
  XID_EVENT = 16,
  BEGIN_LOAD_QUERY_EVENT = 17,
  EXECUTE_LOAD_QUERY_EVENT = 18,
  TABLE_MAP_EVENT = 19,
  PRE_GA_WRITE_ROWS_EVENT = 20,
  PRE_GA_UPDATE_ROWS_EVENT = 21,
  PRE_GA_DELETE_ROWS_EVENT = 22,
  WRITE_ROWS_EVENT_V1 = 23,
  UPDATE_ROWS_EVENT_V1 = 24,
  DELETE_ROWS_EVENT_V1 = 25,
  INCIDENT_EVENT = 26,
  HEARTBEAT_LOG_EVENT = 27,
  IGNORABLE_LOG_EVENT = 28,
  ROWS_QUERY_LOG_EVENT = 29,
  WRITE_ROWS_EVENT = 30,
  UPDATE_ROWS_EVENT = 31,
  DELETE_ROWS_EVENT = 32,
  GTID_LOG_EVENT = 33,
  ANONYMOUS_GTID_LOG_EVENT = 34,
  PREVIOUS_GTIDS_LOG_EVENT = 35,
  TRANSACTION_CONTEXT_EVENT = 36,
  VIEW_CHANGE_EVENT = 37,
  XA_PREPARE_LOG_EVENT = 38,
  PARTIAL_UPDATE_ROWS_EVENT = 39,
  TRANSACTION_PAYLOAD_EVENT = 40,
  HEARTBEAT_LOG_EVENT_V2 = 41,
  GTID_TAGGED_LOG_EVENT = 42,
  // MariaDB
  ANNOTATE_ROWS_EVENT = 160,
  BINLOG_CHECKPOINT_EVENT = 161,
  GTID_EVENT = 162,  // MariaDB GTID
  GTID_LIST_EVENT = 163,
  START_ENCRYPTION_EVENT = 164,
  QUERY_COMPRESSED_EVENT = 165,
  // MariaDB sql/log_event.h: 166-168 compress v1 rows events, 169-171 v2 ones (their
  // FDE post-header lengths are 8 and 10).
  WRITE_ROWS_COMPRESSED_EVENT_V1 = 166,
  UPDATE_ROWS_COMPRESSED_EVENT_V1 = 167,
  DELETE_ROWS_COMPRESSED_EVENT_V1 = 168,
  WRITE_ROWS_COMPRESSED_EVENT = 169,
  UPDATE_ROWS_COMPRESSED_EVENT = 170,
  DELETE_ROWS_COMPRESSED_EVENT = 171,
};

// MySQL's spelling ("QUERY_EVENT", MariaDB GTID is "MARIADB_GTID_EVENT"); unknown codes
// give "UNKNOWN_EVENT_<n>".
std::string EventTypeName(uint8_t type);

struct EventHeader {
  uint32_t timestamp = 0;
  uint8_t type = 0;
  uint32_t server_id = 0;
  uint32_t event_size = 0;
  uint32_t log_pos = 0;
  uint16_t flags = 0;

  EventType event_type() const { return static_cast<EventType>(type); }
};

// Decodes the 19-byte header at the start of `event`. kCorruption (naming `offset`,
// the absolute offset of event[0]) when fewer than 19 bytes, event_size < 19, or
// event_size != event.size() when `require_exact_size`.
Result<EventHeader> DecodeEventHeader(std::span<const uint8_t> event, uint64_t offset,
                                      bool require_exact_size = true);

}  // namespace sluice::binlog
