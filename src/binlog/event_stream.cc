// EventStream: position tracking, FDE/table-map state and payload expansion; see header.
#include "binlog/event_stream.h"

#include <cstring>

#include <fmt/format.h>

namespace sluice::binlog {

EventStream::EventStream(EventStreamOptions options) : options_(options) {}

void EventStream::SetPosition(std::string file, uint64_t pos) {
  file_ = std::move(file);
  next_offset_ = pos;
}

Result<Event> EventStream::Next(std::span<const uint8_t> event_bytes, bool crc_checked) {
  crc_checked_ = crc_checked;
  Result<Event> ev = Decode(event_bytes, std::nullopt);
  crc_checked_ = false;
  return ev;
}

Status EventStream::NextInto(std::span<const uint8_t> event_bytes, Event* out, bool crc_checked) {
  crc_checked_ = crc_checked;
  Status st = DecodeInto(event_bytes, std::nullopt, *out);
  crc_checked_ = false;
  return st;
}

Result<Event> EventStream::NextAt(std::span<const uint8_t> event_bytes, uint64_t offset) {
  return Decode(event_bytes, offset);
}

Status EventStream::NextAtInto(std::span<const uint8_t> event_bytes, uint64_t offset, Event* out) {
  return DecodeInto(event_bytes, offset, *out);
}

Result<Event> EventStream::Decode(std::span<const uint8_t> bytes, std::optional<uint64_t> file_offset) {
  Event ev;
  RETURN_IF_ERROR(DecodeInto(bytes, file_offset, ev));
  return ev;
}

std::shared_ptr<const TableMap> EventStream::FindTable(uint64_t table_id) const {
  auto it = tables_.find(table_id);
  return it == tables_.end() ? nullptr : it->second;
}

void EventStream::ClearTables() {
  tables_.clear();
  table_bodies_.clear();
}

// Table id of a TABLE_MAP body: 6 bytes LE, or 4 when the FDE says the post-header is 6.
static std::optional<uint64_t> TableMapId(std::span<const uint8_t> body, uint8_t post_header_len) {
  const size_t n = post_header_len == 6 ? 4 : 6;
  if (body.size() < n) return std::nullopt;
  uint64_t id = 0;
  for (size_t i = 0; i < n; ++i) id |= uint64_t{body[i]} << (8 * i);
  return id;
}

std::shared_ptr<const TableMap> EventStream::CachedTableMap(std::span<const uint8_t> body) const {
  auto id = TableMapId(body, fde_->PostHeaderLength(EventType::TABLE_MAP_EVENT, 8));
  if (!id) return nullptr;
  auto b = table_bodies_.find(*id);
  if (b == table_bodies_.end() || b->second.size() != body.size() ||
      std::memcmp(b->second.data(), body.data(), body.size()) != 0)
    return nullptr;
  return FindTable(*id);
}

void EventStream::Remember(Event& ev, std::span<const uint8_t> map_body, bool from_cache) {
  if (auto* tm = std::get_if<TableMapEvent>(&ev.body)) {
    if (tables_.size() >= options_.max_table_maps) ClearTables();
    tables_[tm->map->table_id] = tm->map;
    // Only an outer TABLE_MAP's bytes may stand for the map now in force.
    if (map_body.empty()) {
      table_bodies_.erase(tm->map->table_id);
    } else if (!from_cache) {
      table_bodies_[tm->map->table_id].assign(reinterpret_cast<const char*>(map_body.data()),
                                              map_body.size());
    }
  } else if (auto* rows = std::get_if<RowsEvent>(&ev.body)) {
    ev.table_map = FindTable(rows->table_id);
  }
}

void EventStream::Prefetch() {
  next_inner_.reset();
  next_inner_at_ = payload_->inner_offset();
  auto next = payload_->Next();
  if (!next.ok()) {
    inner_error_ = next.status();
  } else if (!next->has_value()) {
    payload_.reset();
  } else {
    next_inner_ = std::move(**next);
  }
}

Status EventStream::DecodeInto(std::span<const uint8_t> bytes, std::optional<uint64_t> file_offset,
                               Event& ev) {
  if (payload_) {
    return Status::FailedPrecondition(fmt::format(
        "event fed at {}:{} before the inner events of the TRANSACTION_PAYLOAD_EVENT at {} were read",
        file_, next_offset_, payload_pos_));
  }
  const uint64_t offset = file_offset.value_or(next_offset_);
  DecodeContext ctx;
  ctx.fde = format();
  ctx.checksum_present = fde_ && fde_->checksum_alg == ChecksumAlg::kCrc32;
  ctx.verify_checksum = options_.verify_checksums && !crc_checked_;
  // TABLE_MAP body (header and checksum stripped), when this is one under a known FDE.
  std::span<const uint8_t> map_body;
  if (fde_ && bytes.size() > 4 && bytes[4] == static_cast<uint8_t>(EventType::TABLE_MAP_EVENT)) {
    const size_t tail = ctx.checksum_present ? kChecksumLength : 0;
    if (bytes.size() >= size_t{fde_->header_length} + tail)
      map_body = bytes.subspan(fde_->header_length, bytes.size() - fde_->header_length - tail);
  }
  std::shared_ptr<const TableMap> cached = map_body.empty() ? nullptr : CachedTableMap(map_body);
  if (cached) {
    ASSIGN_OR_RETURN(ev.header, DecodeEventHeader(bytes, offset));
    if (ctx.checksum_present && ctx.verify_checksum) RETURN_IF_ERROR(VerifyEventChecksum(bytes, offset));
    ev.raw = bytes;
    ev.in_payload = false;
    ev.storage.reset();
    ev.table_map.reset();
    ev.body = TableMapEvent{cached};
  } else {
    RETURN_IF_ERROR(DecodeEventInto(bytes, offset, ctx, &ev));
  }
  const EventHeader& h = ev.header;
  const uint64_t size = h.event_size;

  // Position.
  auto* rotate = std::get_if<RotateEvent>(&ev.body);
  if (file_offset) {
    ev.file = file_;
    ev.pos = *file_offset;
    ev.end_pos = *file_offset + size;
    next_offset_ = ev.end_pos;
  } else {
    bool artificial = (h.flags & kFlagArtificial) != 0 ||
                      (h.type == static_cast<uint8_t>(EventType::ROTATE_EVENT) && h.log_pos == 0);
    bool heartbeat = h.type == static_cast<uint8_t>(EventType::HEARTBEAT_LOG_EVENT) ||
                     h.type == static_cast<uint8_t>(EventType::HEARTBEAT_LOG_EVENT_V2);
    bool replayed_fde = h.type == static_cast<uint8_t>(EventType::FORMAT_DESCRIPTION_EVENT) &&
                        h.log_pos == 0 && next_offset_ != 4;
    if (rotate && artificial) {
      // Fake ROTATE at dump start: names the file and position the stream starts at.
      ev.file = rotate->next_file;
      ev.pos = ev.end_pos = rotate->position;
    } else if (artificial || heartbeat || replayed_fde) {
      ev.file = file_;
      ev.pos = ev.end_pos = next_offset_;
    } else if (h.log_pos == 0) {
      ev.file = file_;
      ev.pos = next_offset_;
      ev.end_pos = next_offset_ + size;
      next_offset_ = ev.end_pos;
    } else {
      ev.file = file_;
      ev.end_pos = h.log_pos;
      ev.pos = h.log_pos >= size ? h.log_pos - size : next_offset_;
      next_offset_ = ev.end_pos;
    }
  }
  if (rotate && !file_offset) {
    bool fake = !file_offset && ((h.flags & kFlagArtificial) != 0 || h.log_pos == 0);
    if (!fake) ClearTables();
    file_ = rotate->next_file;
    next_offset_ = rotate->position;
  }

  if (auto* fde = std::get_if<FormatDescriptionEvent>(&ev.body)) {
    fde_ = *fde;
    table_bodies_.clear();  // a new FDE may decode the same bytes differently
  }
  Remember(ev, map_body, cached != nullptr);
  if (auto* p = std::get_if<TransactionPayloadEvent>(&ev.body)) {
    // Keep the compressed bytes alive for the iterator, whatever the caller does next.
    std::shared_ptr<const void> owner = ev.storage;
    std::span<const uint8_t> payload = p->payload;
    if (!owner) {
      auto copy = std::make_shared<std::string>(reinterpret_cast<const char*>(payload.data()), payload.size());
      payload = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(copy->data()), copy->size());
      owner = std::move(copy);
    }
    ASSIGN_OR_RETURN(auto reader, PayloadReader::Create(owner, payload, p->compression_type,
                                                         p->uncompressed_size, ev.pos,
                                                         options_.max_event_size));
    payload_.emplace(std::move(reader));
    payload_file_ = ev.file;
    payload_pos_ = ev.pos;
    payload_end_ = ev.end_pos;
    inner_error_ = Status::Ok();
    Prefetch();
  }
  return Status::Ok();
}

Result<Event> EventStream::NextInner() {
  if (!payload_) return Status::FailedPrecondition("NextInner() without a pending TRANSACTION_PAYLOAD_EVENT");
  if (!inner_error_.ok()) {
    Status st = inner_error_;
    payload_.reset();
    inner_error_ = Status::Ok();
    return st;
  }
  std::shared_ptr<const std::string> buf = std::move(next_inner_);
  const uint64_t inner_at = next_inner_at_;
  std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(buf->data()), buf->size());
  DecodeContext ctx;
  ctx.fde = format();
  ctx.checksum_present = false;
  ctx.in_payload = true;
  auto fail = [&](Status st) -> Status {
    payload_.reset();
    next_inner_.reset();
    return st.WithContext(fmt::format(
        "TRANSACTION_PAYLOAD_EVENT at offset {}, inner event at uncompressed offset {}", payload_pos_,
        inner_at));
  };
  auto decoded = DecodeEvent(bytes, payload_pos_, ctx);
  if (!decoded.ok()) return fail(decoded.status());
  Event ev = std::move(decoded).value();
  if (std::holds_alternative<FormatDescriptionEvent>(ev.body) ||
      std::holds_alternative<RotateEvent>(ev.body)) {
    return fail(Status::Corruption(fmt::format("{} is not allowed inside a payload", ev.TypeName())));
  }
  if (!ev.storage) ev.storage = buf;
  ev.file = payload_file_;
  ev.pos = payload_pos_;
  ev.end_pos = payload_end_;
  ev.in_payload = true;
  Remember(ev);
  Prefetch();
  return ev;
}

Status SplitEvents(std::span<const uint8_t> data, uint64_t base_offset, std::vector<EventSlice>* out) {
  size_t pos = 0;
  while (pos < data.size()) {
    uint64_t at = base_offset + pos;
    size_t left = data.size() - pos;
    if (left < kEventHeaderLength) {
      return Status::Corruption(fmt::format("truncated event header at offset {}: {} of {} bytes", at,
                                            left, kEventHeaderLength));
    }
    const uint8_t* h = data.data() + pos;
    uint32_t size = uint32_t{h[9]} | uint32_t{h[10]} << 8 | uint32_t{h[11]} << 16 | uint32_t{h[12]} << 24;
    if (size < kEventHeaderLength) {
      return Status::Corruption(fmt::format("event at offset {}: event_size {} is below the 19-byte header", at, size));
    }
    if (size > left) {
      return Status::Corruption(fmt::format("truncated event at offset {}: event_size {} but {} bytes left",
                                            at, size, left));
    }
    out->push_back(EventSlice{at, data.subspan(pos, size)});
    pos += size;
  }
  return Status::Ok();
}

}  // namespace sluice::binlog
