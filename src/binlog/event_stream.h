// EventStream: the stateful part of binlog decoding, still pure (fed bytes, no I/O).
//
// It owns what changes from event to event: the current FORMAT_DESCRIPTION_EVENT (and
// so the checksum algorithm and flavor), the current binlog file name and offset, a
// bounded table-id -> TableMap cache, and the inner-event iterator of the
// TRANSACTION_PAYLOAD_EVENT being delivered. Decoding itself is DecodeEvent (events.h).
//
// Positions: each Event gets (file, pos, end_pos).
//   NextAt(bytes, offset)  file mode: pos = offset in the file, end_pos = offset + size.
//   Next(bytes)            stream mode: end_pos = header log_pos, pos = log_pos - size;
//     log_pos 0 (MariaDB 11.4+) -> the running offset; artificial events (fake ROTATE at
//     dump start, LOG_EVENT_ARTIFICIAL_F) and heartbeats do not move the offset; a
//     ROTATE moves to (next_file, position). A fake ROTATE keeps the table cache, a real
//     one clears it.
// TRANSACTION_PAYLOAD: Next/NextAt return the payload event itself; then, while
// HasPendingInner(), NextInner() yields its inner events in order, each with the OUTER
// event's file/pos/end_pos (a resume replays the whole transaction) and in_payload=true.
// Feeding another event before the inner events are drained is kFailedPrecondition.
// TABLE_MAP reuse: servers re-send the same TABLE_MAP before every rows statement. When
// a TABLE_MAP's body (after the header, before the checksum) is byte-identical to the
// last one decoded for that table id under the same FDE, its checksum is still verified
// but the body is not decoded again: the event carries the cached TableMap.
// Lifetime: events returned by Next/NextAt view `event_bytes` (see Event::Own); inner
// events own their bytes.
// Thread safety: not thread-safe; one stream per binlog source.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "binlog/events.h"
#include "binlog/payload.h"
#include "core/position.h"
#include "util/status.h"

namespace sluice::binlog {

struct EventStreamOptions {
  bool verify_checksums = true;
  // Table maps kept; when full the cache is emptied (servers re-send maps per statement).
  size_t max_table_maps = 10000;
  // Largest inner event of a TRANSACTION_PAYLOAD held in memory (PayloadReader; at most
  // its kMaxEventSize, 1 GiB); a larger one is kCorruption naming the payload's offset.
  uint64_t max_event_size = PayloadReader::kMaxEventSize;
};

class EventStream {
 public:
  explicit EventStream(EventStreamOptions options = {});

  // Sets the current file and the offset of the next event (start of a file: pos 4).
  void SetPosition(std::string file, uint64_t pos);

  // Stream mode (replication): positions from the header, see above.
  // crc_checked: the caller found the event's CRC32 footer to match (EventChecksumMatches,
  // on another thread); when the FDE says events carry one it is not checked again. An
  // event that does not match is passed with false and checked (and reported) here.
  Result<Event> Next(std::span<const uint8_t> event_bytes, bool crc_checked = false);
  // Next decoding into `*out`, reusing an earlier event's allocations (as NextAtInto): the
  // stream's decoding thread decodes every event into one Event. On error *out is unspecified.
  Status NextInto(std::span<const uint8_t> event_bytes, Event* out, bool crc_checked = false);
  // File mode: the event starts at `offset` of the current file.
  Result<Event> NextAt(std::span<const uint8_t> event_bytes, uint64_t offset);
  // NextAt decoding into `*out` (an earlier event's allocations are reused; every field
  // is replaced). On error *out is unspecified.
  Status NextAtInto(std::span<const uint8_t> event_bytes, uint64_t offset, Event* out);

  bool HasPendingInner() const { return payload_.has_value(); }
  Result<Event> NextInner();

  // The TABLE_MAP in force for `table_id`, or null.
  std::shared_ptr<const TableMap> FindTable(uint64_t table_id) const;

  const FormatDescriptionEvent* format() const { return fde_ ? &*fde_ : nullptr; }
  Flavor flavor() const { return fde_ ? fde_->flavor : Flavor::kUnknown; }
  ChecksumAlg checksum_alg() const { return fde_ ? fde_->checksum_alg : ChecksumAlg::kUndefined; }
  // Position of the next event: (current file, end of the last event).
  BinlogPosition position() const { return BinlogPosition{file_, next_offset_}; }

 private:
  bool crc_checked_ = false;  // the event being decoded by Next(bytes, true)
  Result<Event> Decode(std::span<const uint8_t> bytes, std::optional<uint64_t> file_offset);
  Status DecodeInto(std::span<const uint8_t> bytes, std::optional<uint64_t> file_offset, Event& ev);
  // Updates the table cache; `map_body` is the body of an outer TABLE_MAP (empty for
  // inner events), `from_cache` when the event reused the cached map.
  void Remember(Event& ev, std::span<const uint8_t> map_body = {}, bool from_cache = false);
  void Prefetch();
  void ClearTables();
  // The cached TableMap for this TABLE_MAP_EVENT when its body matches the cached bytes.
  std::shared_ptr<const TableMap> CachedTableMap(std::span<const uint8_t> body) const;

  EventStreamOptions options_;
  std::optional<FormatDescriptionEvent> fde_;
  std::string file_;
  uint64_t next_offset_ = 4;
  std::unordered_map<uint64_t, std::shared_ptr<const TableMap>> tables_;
  // table id -> the TABLE_MAP body bytes tables_[id] was decoded from (outer events only).
  std::unordered_map<uint64_t, std::string> table_bodies_;
  // Pending TRANSACTION_PAYLOAD.
  std::optional<PayloadReader> payload_;   // set while an inner event or error is pending
  std::shared_ptr<const std::string> next_inner_;
  uint64_t next_inner_at_ = 0;             // its uncompressed offset
  Status inner_error_;
  std::string payload_file_;
  uint64_t payload_pos_ = 0;
  uint64_t payload_end_ = 0;
};

struct EventSlice {
  uint64_t offset = 0;                 // absolute offset of bytes[0]
  std::span<const uint8_t> bytes;      // one whole event
};

// Splits a buffer of back-to-back events (a binlog file without its 4-byte magic, with
// `base_offset` = 4) by their event_size fields. A truncated or undersized last event
// is kCorruption naming its offset; the slices before it are still returned in `out`.
Status SplitEvents(std::span<const uint8_t> data, uint64_t base_offset, std::vector<EventSlice>* out);

}  // namespace sluice::binlog
