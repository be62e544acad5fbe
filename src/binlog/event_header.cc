// v4 event header: timestamp(4) type(1) server_id(4) event_size(4) log_pos(4) flags(2).
#include "binlog/event_header.h"

#include <fmt/format.h>

#include "util/byte_reader.h"

namespace sluice::binlog {

std::string EventTypeName(uint8_t type) {
  switch (static_cast<EventType>(type)) {
#define CASE(x) \
  case EventType::x: return #x;
    CASE(UNKNOWN_EVENT) CASE(START_EVENT_V3) CASE(QUERY_EVENT) CASE(STOP_EVENT)
    CASE(ROTATE_EVENT) CASE(INTVAR_EVENT) CASE(LOAD_EVENT) CASE(SLAVE_EVENT)
    CASE(CREATE_FILE_EVENT) CASE(APPEND_BLOCK_EVENT) CASE(EXEC_LOAD_EVENT)
    CASE(DELETE_FILE_EVENT) CASE(NEW_LOAD_EVENT) CASE(RAND_EVENT) CASE(USER_VAR_EVENT)
    CASE(FORMAT_DESCRIPTION_EVENT) CASE(XID_EVENT) CASE(BEGIN_LOAD_QUERY_EVENT)
    CASE(EXECUTE_LOAD_QUERY_EVENT) CASE(TABLE_MAP_EVENT) CASE(PRE_GA_WRITE_ROWS_EVENT)
    CASE(PRE_GA_UPDATE_ROWS_EVENT) CASE(PRE_GA_DELETE_ROWS_EVENT) CASE(WRITE_ROWS_EVENT_V1)
    CASE(UPDATE_ROWS_EVENT_V1) CASE(DELETE_ROWS_EVENT_V1) CASE(INCIDENT_EVENT)
    CASE(HEARTBEAT_LOG_EVENT) CASE(IGNORABLE_LOG_EVENT) CASE(ROWS_QUERY_LOG_EVENT)
    CASE(WRITE_ROWS_EVENT) CASE(UPDATE_ROWS_EVENT) CASE(DELETE_ROWS_EVENT)
    CASE(GTID_LOG_EVENT) CASE(ANONYMOUS_GTID_LOG_EVENT) CASE(PREVIOUS_GTIDS_LOG_EVENT)
    CASE(TRANSACTION_CONTEXT_EVENT) CASE(VIEW_CHANGE_EVENT) CASE(XA_PREPARE_LOG_EVENT)
    CASE(PARTIAL_UPDATE_ROWS_EVENT) CASE(TRANSACTION_PAYLOAD_EVENT)
    CASE(HEARTBEAT_LOG_EVENT_V2) CASE(GTID_TAGGED_LOG_EVENT) CASE(ANNOTATE_ROWS_EVENT)
    CASE(BINLOG_CHECKPOINT_EVENT) CASE(GTID_LIST_EVENT) CASE(START_ENCRYPTION_EVENT)
    CASE(QUERY_COMPRESSED_EVENT) CASE(WRITE_ROWS_COMPRESSED_EVENT)
    CASE(UPDATE_ROWS_COMPRESSED_EVENT) CASE(DELETE_ROWS_COMPRESSED_EVENT)
    CASE(WRITE_ROWS_COMPRESSED_EVENT_V1) CASE(UPDATE_ROWS_COMPRESSED_EVENT_V1)
    CASE(DELETE_ROWS_COMPRESSED_EVENT_V1)
#undef CASE
    case EventType::GTID_EVENT: return "MARIADB_GTID_EVENT";
  }
  return fmt::format("UNKNOWN_EVENT_{}", type);
}

Result<EventHeader> DecodeEventHeader(std::span<const uint8_t> event, uint64_t offset,
                                      bool require_exact_size) {
  ByteReader r(event, offset, "event header");
  if (event.size() < kEventHeaderLength) {
    return r.Error(fmt::format("truncated event header: {} of {} bytes", event.size(),
                               kEventHeaderLength));
  }
  // The 19 bytes are there (checked above): read as fields of one span, without a checked
  // read (and its Result) per field, since every event of a stream passes here.
  const auto le32 = [&event](size_t at) {
    return uint32_t{event[at]} | uint32_t{event[at + 1]} << 8 | uint32_t{event[at + 2]} << 16 |
           uint32_t{event[at + 3]} << 24;
  };
  EventHeader h;
  h.timestamp = le32(0);
  h.type = event[4];
  h.server_id = le32(5);
  h.event_size = le32(9);
  h.log_pos = le32(13);
  h.flags = static_cast<uint16_t>(event[17] | event[18] << 8);
  if (h.event_size < kEventHeaderLength) {
    return Status::Corruption(fmt::format("event at offset {}: event_size {} is below the {}-byte header",
                                          offset, h.event_size, kEventHeaderLength));
  }
  if (require_exact_size && h.event_size != event.size()) {
    return Status::Corruption(fmt::format("{} at offset {}: event_size {} but {} bytes given",
                                          EventTypeName(h.type), offset, h.event_size,
                                          event.size()));
  }
  return h;
}

}  // namespace sluice::binlog
