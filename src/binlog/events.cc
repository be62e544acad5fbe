// Pure decoder of one binlog event: framing (header, checksum footer) and the bodies of
// the statement/control events. Grammar (all little-endian unless noted):
//
//   event          := header(19) [extra header: fde.header_length-19] post_header body
//                     [crc32(4) when the FDE's checksum alg is CRC32]
//   FDE body       := binlog_version(2) server_version(50, NUL padded) create_ts(4)
//                     header_length(1) post_header_len[n_types]
//                     [checksum_alg(1) crc(4)]   -- servers >= MySQL 5.6.1 / MariaDB 5.3
//   ROTATE         := position(8) new_log_ident(rest)
//   QUERY          := thread_id(4) exec_time(4) db_len(1) error_code(2)
//                     [status_vars_len(2) when post-header >= 13] status_vars db NUL query
//                     (QUERY_COMPRESSED: query is a MariaDB compressed block)
//   EXECUTE_LOAD_QUERY := QUERY with a post-header of 26: the 13 above, file_id(4)
//                     fn_pos_start(4) fn_pos_end(4) dup_handling(1) (a statement-logged LOAD
//                     DATA; its file's bytes came in BEGIN_LOAD_QUERY/APPEND_BLOCK events)
//   XID            := xid(8)
//   INTVAR         := kind(1) value(8)          RAND := seed1(8) seed2(8)
//   USER_VAR       := name_len(4) name value...
//   ROWS_QUERY     := len(1, ignored) query(rest)     ANNOTATE_ROWS := query(rest)
//   INCIDENT       := incident(2) msg_len(1) msg
//   XA_PREPARE     := one_phase(1) format_id(4) gtrid_len(4) bqual_len(4) gtrid bqual
//   HEARTBEAT      := log_ident(rest)
//   BINLOG_CHECKPOINT := name_len(4) name
//   TRANSACTION_PAYLOAD := { field_type(packed) [len(packed) value(packed)] }* until
//                     field_type 0; fields 1 payload_size, 2 compression_type,
//                     3 uncompressed_size; then the compressed payload
// GTID events live in event_gtid.cc, TABLE_MAP in event_table_map.cc, rows here.
#include "binlog/events.h"

#include <zlib.h>

#include <cstring>

#include <fmt/format.h>

#include "util/byte_reader.h"

namespace sluice::binlog {

// event_gtid.cc
Result<GtidEvent> DecodeMysqlGtid(std::span<const uint8_t> body, uint64_t offset, bool anonymous);
Result<GtidEvent> DecodeTaggedGtid(std::span<const uint8_t> body, uint64_t offset);
Result<PreviousGtidsEvent> DecodePreviousGtids(std::span<const uint8_t> body, uint64_t offset);
Result<MariadbGtidEvent> DecodeMariadbGtid(std::span<const uint8_t> body, uint64_t offset,
                                           uint32_t server_id);
Result<MariadbGtidListEvent> DecodeMariadbGtidList(std::span<const uint8_t> body,
                                                   uint64_t offset);

namespace {

// Default post-header lengths of a v4 binlog (MySQL 8 / MariaDB 10), used when no FDE
// has been seen (e.g. the fake ROTATE at the start of a dump).
uint8_t DefaultPostHeaderLength(EventType t) {
  switch (t) {
    case EventType::QUERY_EVENT:
    case EventType::QUERY_COMPRESSED_EVENT: return 13;
    case EventType::ROTATE_EVENT: return 8;
    case EventType::TABLE_MAP_EVENT: return 8;
    case EventType::WRITE_ROWS_EVENT_V1:
    case EventType::UPDATE_ROWS_EVENT_V1:
    case EventType::DELETE_ROWS_EVENT_V1:
    case EventType::WRITE_ROWS_COMPRESSED_EVENT_V1:
    case EventType::UPDATE_ROWS_COMPRESSED_EVENT_V1:
    case EventType::DELETE_ROWS_COMPRESSED_EVENT_V1:
    case EventType::PRE_GA_WRITE_ROWS_EVENT:
    case EventType::PRE_GA_UPDATE_ROWS_EVENT:
    case EventType::PRE_GA_DELETE_ROWS_EVENT: return 8;
    case EventType::WRITE_ROWS_EVENT:
    case EventType::UPDATE_ROWS_EVENT:
    case EventType::DELETE_ROWS_EVENT:
    case EventType::PARTIAL_UPDATE_ROWS_EVENT:
    case EventType::WRITE_ROWS_COMPRESSED_EVENT:
    case EventType::UPDATE_ROWS_COMPRESSED_EVENT:
    case EventType::DELETE_ROWS_COMPRESSED_EVENT: return 10;
    default: return 0;
  }
}

// Leading "X.Y.Z" of a server version string as X*65536+Y*256+Z.
uint32_t VersionProduct(std::string_view v) {
  uint32_t parts[3] = {0, 0, 0};
  size_t i = 0;
  for (int k = 0; k < 3; ++k) {
    uint32_t n = 0;
    bool any = false;
    while (i < v.size() && v[i] >= '0' && v[i] <= '9') {
      n = n * 10 + static_cast<uint32_t>(v[i] - '0');
      if (n > 255) n = 255;
      ++i;
      any = true;
    }
    if (!any) break;
    parts[k] = n;
    if (i < v.size() && v[i] == '.') {
      ++i;
    } else {
      break;
    }
  }
  return parts[0] * 65536 + parts[1] * 256 + parts[2];
}

std::string ToString(std::span<const uint8_t> b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

Result<RotateEvent> DecodeRotate(ByteReader& r, uint8_t post_header_len) {
  RotateEvent e;
  if (post_header_len >= 8) {
    ASSIGN_OR_RETURN(e.position, r.ReadLe64());
    RETURN_IF_ERROR(r.Skip(post_header_len - 8));
  } else {
    e.position = 4;  // binlog v1/v3: no position, the next file starts at 4
  }
  e.next_file = ToString(r.Rest());
  if (e.next_file.empty()) return r.Error("empty file name");
  return e;
}

}  // namespace

std::optional<uint64_t> QuerySqlMode(const QueryEvent& q) {
  const std::string& v = q.status_vars;
  size_t i = 0;
  while (i < v.size()) {
    const uint8_t code = static_cast<uint8_t>(v[i]);
    if (code == 0) {
      i += 1 + 4;
    } else if (code == 1) {
      if (i + 9 > v.size()) return std::nullopt;
      uint64_t mode = 0;
      for (int b = 7; b >= 0; --b) mode = (mode << 8) | static_cast<uint8_t>(v[i + 1 + b]);
      return mode;
    } else {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

namespace {

Result<QueryEvent> DecodeQuery(ByteReader& r, uint8_t post_header_len, bool compressed) {
  QueryEvent e;
  e.compressed = compressed;
  if (post_header_len < 11) return r.Error(fmt::format("post-header length {} < 11", post_header_len));
  ASSIGN_OR_RETURN(e.thread_id, r.ReadLe32());
  ASSIGN_OR_RETURN(e.exec_time, r.ReadLe32());
  ASSIGN_OR_RETURN(uint8_t db_len, r.ReadU8());
  ASSIGN_OR_RETURN(e.error_code, r.ReadLe16());
  uint16_t status_len = 0;
  if (post_header_len >= 13) {
    ASSIGN_OR_RETURN(status_len, r.ReadLe16());
    RETURN_IF_ERROR(r.Skip(post_header_len - 13));
  }
  if (status_len > r.remaining()) {
    return r.Error(fmt::format("status variables length {} exceeds the {} bytes left", status_len,
                               r.remaining()));
  }
  ASSIGN_OR_RETURN(auto status, r.ReadBytes(status_len));
  e.status_vars = ToString(status);
  if (size_t{db_len} + 1 > r.remaining()) {
    return r.Error(fmt::format("schema name length {} exceeds the {} bytes left", db_len,
                               r.remaining()));
  }
  ASSIGN_OR_RETURN(auto db, r.ReadBytes(db_len));
  e.schema = ToString(db);
  ASSIGN_OR_RETURN(uint8_t nul, r.ReadU8());
  if (nul != 0) return r.Error("schema name is not NUL-terminated");
  if (compressed) {
    uint64_t at = r.absolute_offset();
    RETURN_IF_ERROR(InflateMariadbCompressed(r.Rest(), at, "QUERY_COMPRESSED_EVENT", &e.query));
  } else {
    e.query = ToString(r.Rest());
  }
  return e;
}

struct RowsTypeInfo {
  RowsKind kind;
  int version;
  bool compressed;
};

std::optional<RowsTypeInfo> RowsInfo(EventType t) {
  switch (t) {
    case EventType::PRE_GA_WRITE_ROWS_EVENT: return RowsTypeInfo{RowsKind::kWrite, 0, false};
    case EventType::PRE_GA_UPDATE_ROWS_EVENT: return RowsTypeInfo{RowsKind::kUpdate, 0, false};
    case EventType::PRE_GA_DELETE_ROWS_EVENT: return RowsTypeInfo{RowsKind::kDelete, 0, false};
    case EventType::WRITE_ROWS_EVENT_V1: return RowsTypeInfo{RowsKind::kWrite, 1, false};
    case EventType::UPDATE_ROWS_EVENT_V1: return RowsTypeInfo{RowsKind::kUpdate, 1, false};
    case EventType::DELETE_ROWS_EVENT_V1: return RowsTypeInfo{RowsKind::kDelete, 1, false};
    case EventType::WRITE_ROWS_EVENT: return RowsTypeInfo{RowsKind::kWrite, 2, false};
    case EventType::UPDATE_ROWS_EVENT: return RowsTypeInfo{RowsKind::kUpdate, 2, false};
    case EventType::DELETE_ROWS_EVENT: return RowsTypeInfo{RowsKind::kDelete, 2, false};
    case EventType::PARTIAL_UPDATE_ROWS_EVENT: return RowsTypeInfo{RowsKind::kPartialUpdate, 2, false};
    case EventType::WRITE_ROWS_COMPRESSED_EVENT: return RowsTypeInfo{RowsKind::kWrite, 2, true};
    case EventType::UPDATE_ROWS_COMPRESSED_EVENT: return RowsTypeInfo{RowsKind::kUpdate, 2, true};
    case EventType::DELETE_ROWS_COMPRESSED_EVENT: return RowsTypeInfo{RowsKind::kDelete, 2, true};
    case EventType::WRITE_ROWS_COMPRESSED_EVENT_V1: return RowsTypeInfo{RowsKind::kWrite, 1, true};
    case EventType::UPDATE_ROWS_COMPRESSED_EVENT_V1: return RowsTypeInfo{RowsKind::kUpdate, 1, true};
    case EventType::DELETE_ROWS_COMPRESSED_EVENT_V1: return RowsTypeInfo{RowsKind::kDelete, 1, true};
    default: return std::nullopt;
  }
}

Status ReadBitmap(ByteReader& r, uint64_t n, std::vector<bool>* out) {
  ASSIGN_OR_RETURN(auto bytes, r.ReadBytes(static_cast<size_t>((n + 7) / 8)));
  // Every column present (binlog_row_image=FULL, the usual case): filled word by word rather
  // than bit by bit (a bitmap per rows event, 5% of a JSON lines catch-up's decoding).
  bool all = true;
  for (size_t i = 0; i < n / 8 && all; ++i) all = bytes[i] == 0xFF;
  if (all && n % 8 != 0) {
    const unsigned low = (1u << (n % 8)) - 1;  // the bits of the last, partial byte
    all = (bytes[n / 8] & low) == low;
  }
  if (all) {
    out->assign(n, true);
    return Status::Ok();
  }
  out->resize(n);
  for (uint64_t i = 0; i < n; ++i) (*out)[i] = (bytes[i / 8] >> (i % 8)) & 1;
  return Status::Ok();
}

// Rows event grammar (rows_event.cpp Rows_event::Rows_event):
//   table_id(6; 4 when post-header is 6) flags(2) [v2: extra_len(2, counts itself) extra]
//   column_count(packed) present_bitmap [update: present_after_bitmap] rows...
// MariaDB *_COMPRESSED: `rows...` is one MariaDB compressed block.
Status DecodeRows(ByteReader& r, const RowsTypeInfo& info, uint8_t post_header_len,
                  RowsEvent* e, std::string* inflated) {
  e->kind = info.kind;
  e->version = info.version;
  e->compressed = info.compressed;
  if (post_header_len == 6) {
    ASSIGN_OR_RETURN(e->table_id, r.ReadLe32());
  } else {
    ASSIGN_OR_RETURN(e->table_id, r.ReadLe48());
  }
  ASSIGN_OR_RETURN(e->flags, r.ReadLe16());
  if (info.version == 2) {
    ASSIGN_OR_RETURN(uint16_t extra_len, r.ReadLe16());
    if (extra_len < 2) return r.Error(fmt::format("extra data length {} < 2", extra_len));
    ASSIGN_OR_RETURN(e->extra_data, r.ReadBytes(extra_len - 2));
  }
  // Any post-header bytes beyond what this version defines.
  size_t known = (post_header_len == 6 ? 6 : 8) + (info.version == 2 ? 2 : 0);
  if (post_header_len > known && info.version != 2) RETURN_IF_ERROR(r.Skip(post_header_len - known));
  ASSIGN_OR_RETURN(e->column_count, r.ReadLenEnc());
  if (e->column_count > 4096 * 8) {
    return r.Error(fmt::format("column count {} is implausible", e->column_count));
  }
  bool two_images = info.kind == RowsKind::kUpdate || info.kind == RowsKind::kPartialUpdate;
  std::vector<bool> first;
  RETURN_IF_ERROR(ReadBitmap(r, e->column_count, &first));
  if (two_images && info.version != 0) {
    e->present_before = std::move(first);
    RETURN_IF_ERROR(ReadBitmap(r, e->column_count, &e->present_after));
  } else if (two_images) {
    e->present_before = first;
    e->present_after = std::move(first);
  } else if (info.kind == RowsKind::kWrite) {
    e->present_after = std::move(first);
  } else {
    e->present_before = std::move(first);
  }
  e->body_offset = r.absolute_offset();
  if (info.compressed) {
    RETURN_IF_ERROR(InflateMariadbCompressed(r.Rest(), e->body_offset, "compressed rows", inflated));
  } else {
    e->body = r.Rest();
  }
  return Status::Ok();
}

Result<TransactionPayloadEvent> DecodePayloadHeader(ByteReader& r) {
  TransactionPayloadEvent e;
  bool have_size = false;
  while (true) {
    ASSIGN_OR_RETURN(uint64_t field, r.ReadLenEnc());
    if (field == 0) break;  // OTW_PAYLOAD_HEADER_END_MARK
    ASSIGN_OR_RETURN(uint64_t len, r.ReadLenEnc());
    if (len > r.remaining()) return r.Error(fmt::format("payload header field length {} too large", len));
    ASSIGN_OR_RETURN(auto value_bytes, r.ReadBytes(static_cast<size_t>(len)));
    ByteReader vr(value_bytes, r.absolute_offset() - len, "TRANSACTION_PAYLOAD_EVENT");
    switch (field) {
      case 1: {
        ASSIGN_OR_RETURN(e.payload_size, vr.ReadLenEnc());
        have_size = true;
        break;
      }
      case 2: {
        ASSIGN_OR_RETURN(e.compression_type, vr.ReadLenEnc());
        break;
      }
      case 3: {
        ASSIGN_OR_RETURN(e.uncompressed_size, vr.ReadLenEnc());
        break;
      }
      default: break;  // unknown fields are skippable by design
    }
  }
  if (!have_size) return r.Error("payload size field missing");
  if (e.payload_size != r.remaining()) {
    return r.Error(fmt::format("payload size {} but {} bytes follow the header", e.payload_size,
                               r.remaining()));
  }
  e.payload = r.Rest();
  return e;
}

}  // namespace

uint8_t FormatDescriptionEvent::PostHeaderLength(EventType type, uint8_t fallback) const {
  size_t idx = static_cast<size_t>(type);
  if (idx == 0 || idx > post_header_lengths.size()) return fallback;
  return post_header_lengths[idx - 1];
}

Result<FormatDescriptionEvent> DecodeFormatDescription(std::span<const uint8_t> body,
                                                       uint64_t offset, uint32_t event_size) {
  (void)event_size;
  ByteReader r(body, offset, "FORMAT_DESCRIPTION_EVENT");
  FormatDescriptionEvent e;
  ASSIGN_OR_RETURN(e.binlog_version, r.ReadLe16());
  ASSIGN_OR_RETURN(auto ver, r.ReadBytes(50));
  std::string v = ToString(ver);
  v.resize(strnlen(v.data(), v.size()));
  e.server_version = v;
  ASSIGN_OR_RETURN(e.create_timestamp, r.ReadLe32());
  ASSIGN_OR_RETURN(e.header_length, r.ReadU8());
  if (e.binlog_version != 4) {
    return Status::NotSupported(fmt::format(
        "FORMAT_DESCRIPTION_EVENT at offset {}: binlog version {} (only v4 is supported)",
        offset, e.binlog_version));
  }
  if (e.header_length < kEventHeaderLength) {
    return r.Error(fmt::format("header length {} < 19", e.header_length));
  }
  e.flavor = v.find("MariaDB") != std::string::npos ? Flavor::kMariaDB : Flavor::kMySQL;
  uint32_t product = VersionProduct(v);
  uint32_t split = e.flavor == Flavor::kMariaDB ? (5 * 65536 + 3 * 256 + 0) : (5 * 65536 + 6 * 256 + 1);
  size_t rest = r.remaining();
  if (product >= split) {
    if (rest < 1 + kChecksumLength) return r.Error("missing checksum algorithm byte");
    ASSIGN_OR_RETURN(auto lens, r.ReadBytes(rest - 1 - kChecksumLength));
    e.post_header_lengths.assign(lens.begin(), lens.end());
    ASSIGN_OR_RETURN(uint8_t alg, r.ReadU8());
    if (alg != 0 && alg != 1) {
      return Status::NotSupported(fmt::format(
          "FORMAT_DESCRIPTION_EVENT at offset {}: unknown checksum algorithm {}", offset, alg));
    }
    e.checksum_alg = static_cast<ChecksumAlg>(alg);
  } else {
    auto lens = r.Rest();
    e.post_header_lengths.assign(lens.begin(), lens.end());
    e.checksum_alg = ChecksumAlg::kOff;
  }
  if (e.post_header_lengths.empty()) return r.Error("no post-header lengths");
  return e;
}

Status InflateMariadbCompressed(std::span<const uint8_t> data, uint64_t offset,
                                std::string_view what, std::string* out) {
  ByteReader r(data, offset, what);
  ASSIGN_OR_RETURN(uint8_t head, r.ReadU8());
  if ((head & 0x80) == 0) return r.Error(fmt::format("compressed header byte 0x{:02x} lacks 0x80", head));
  if (((head >> 4) & 0x07) != 0) {
    return Status::NotSupported(fmt::format("{} at offset {}: compression algorithm {} (only zlib)",
                                            what, offset, (head >> 4) & 0x07));
  }
  size_t lenlen = head & 0x07;
  if (lenlen < 1 || lenlen > 4) return r.Error(fmt::format("bad length-of-length {}", lenlen));
  ASSIGN_OR_RETURN(uint64_t ulen, r.ReadBe(lenlen));
  std::span<const uint8_t> z = r.Rest();
  // deflate cannot expand beyond ~1032:1, so a larger declared length is corrupt (and must
  // not become a huge allocation).
  if (ulen > 1032 * uint64_t{z.size()} + 64) {
    return r.Error(fmt::format("declared uncompressed length {} is impossible from {} zlib bytes",
                               ulen, z.size()));
  }
  size_t base = out->size();
  out->resize(base + ulen);
  uLongf dest_len = static_cast<uLongf>(ulen);
  int rc = uncompress(reinterpret_cast<Bytef*>(out->data() + base), &dest_len, z.data(),
                      static_cast<uLong>(z.size()));
  if (rc != Z_OK || dest_len != ulen) {
    out->resize(base);
    return Status::Corruption(fmt::format("{} at offset {}: zlib inflate failed (rc {}, {} of {} bytes)",
                                          what, offset, rc, dest_len, ulen));
  }
  return Status::Ok();
}

namespace {
Status DecodeEventImpl(std::span<const uint8_t> bytes, uint64_t offset, const DecodeContext& ctx,
                       Event& ev);

// EventTypeName for every type byte, built once (the name views of ByteReader and error
// messages point into it, so decoding allocates no name per event).
const std::string& CachedTypeName(uint8_t type) {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> names(256);
    for (int t = 0; t < 256; ++t) names[t] = EventTypeName(static_cast<uint8_t>(t));
    return names;
  }();
  return kNames[type];
}
}  // namespace

Status DecodeEventInto(std::span<const uint8_t> bytes, uint64_t offset, const DecodeContext& ctx,
                       Event* out) {
  Status st = DecodeEventImpl(bytes, offset, ctx, *out);
  if (st.ok()) return st;
  // Errors found inside a body name the cursor offset; also name where the event starts.
  std::string start = fmt::format("at offset {}:", offset);
  if (st.message().find(start) != std::string::npos) return st;
  return st.WithContext(fmt::format("event at offset {}", offset));
}

Result<Event> DecodeEvent(std::span<const uint8_t> bytes, uint64_t offset, const DecodeContext& ctx) {
  Event ev;
  RETURN_IF_ERROR(DecodeEventInto(bytes, offset, ctx, &ev));
  return ev;
}

namespace {
Status DecodeEventImpl(std::span<const uint8_t> bytes, uint64_t offset, const DecodeContext& ctx,
                       Event& ev) {
  // `ev` may be a reused event: reset everything this decoder does not always set.
  ev.file.clear();
  ev.pos = ev.end_pos = 0;
  ev.storage.reset();
  ev.table_map.reset();
  ev.body.emplace<OpaqueEvent>();
  ASSIGN_OR_RETURN(ev.header, DecodeEventHeader(bytes, offset));
  ev.raw = bytes;
  ev.in_payload = ctx.in_payload;
  const EventType type = ev.header.event_type();
  const std::string& name = CachedTypeName(ev.header.type);
  size_t header_len = ctx.fde ? ctx.fde->header_length : kEventHeaderLength;
  if (type == EventType::FORMAT_DESCRIPTION_EVENT) header_len = kEventHeaderLength;
  if (bytes.size() < header_len) {
    return Status::Corruption(fmt::format("{} at offset {}: event shorter than its {}-byte header",
                                          name, offset, header_len));
  }
  std::span<const uint8_t> body = bytes.subspan(header_len);
  const uint64_t body_offset = offset + header_len;

  if (type == EventType::FORMAT_DESCRIPTION_EVENT) {
    ASSIGN_OR_RETURN(auto fde, DecodeFormatDescription(body, body_offset, ev.header.event_size));
    if (fde.checksum_alg == ChecksumAlg::kCrc32 && ctx.verify_checksum && !ctx.in_payload) {
      RETURN_IF_ERROR(VerifyEventChecksum(bytes, offset));
    }
    ev.body = std::move(fde);
    return Status::Ok();
  }

  bool strip = ctx.checksum_present && !ctx.in_payload;
  if (!ctx.fde && !ctx.in_payload && bytes.size() >= kEventHeaderLength + kChecksumLength) {
    // No FDE yet (fake ROTATE at dump start): a footer is present iff it matches.
    strip = VerifyEventChecksum(bytes, offset).ok();
  } else if (strip) {
    if (body.size() < kChecksumLength) {
      return Status::Corruption(fmt::format("{} at offset {}: too short for its checksum", name, offset));
    }
    if (ctx.verify_checksum) RETURN_IF_ERROR(VerifyEventChecksum(bytes, offset));
  }
  if (strip) body = body.first(body.size() - kChecksumLength);

  auto phl = [&](uint8_t fallback) -> uint8_t {
    return ctx.fde ? ctx.fde->PostHeaderLength(type, fallback) : fallback;
  };
  ByteReader r(body, body_offset, name);

  if (type == EventType::PRE_GA_WRITE_ROWS_EVENT || type == EventType::PRE_GA_UPDATE_ROWS_EVENT ||
      type == EventType::PRE_GA_DELETE_ROWS_EVENT) {
    // Types 20-22 were the rows events of MySQL 5.1 pre-releases (before 5.1.18); their
    // layout changed between those releases and no GA server writes them.
    return Status::NotSupported(fmt::format(
        "pre-GA rows event {} (type {}) at offset {}: written by a MySQL 5.1 pre-release; "
        "sluice does not decode these",
        name, static_cast<int>(type), offset));
  }
  if (auto info = RowsInfo(type)) {
    RowsEvent rows;
    std::string inflated;
    RETURN_IF_ERROR(DecodeRows(r, *info, phl(DefaultPostHeaderLength(type)), &rows, &inflated));
    if (info->compressed) {
      // storage = raw bytes, then the inflated rows; every view points into it.
      auto store = std::make_shared<std::string>(ToString(bytes));
      size_t raw_len = store->size();
      store->append(inflated);
      const auto* base = reinterpret_cast<const uint8_t*>(store->data());
      size_t extra_at = rows.extra_data.empty() ? 0 : static_cast<size_t>(rows.extra_data.data() - bytes.data());
      ev.raw = std::span<const uint8_t>(base, raw_len);
      if (!rows.extra_data.empty()) rows.extra_data = ev.raw.subspan(extra_at, rows.extra_data.size());
      rows.body = std::span<const uint8_t>(base + raw_len, inflated.size());
      ev.storage = std::move(store);
    }
    ev.body = std::move(rows);
    return Status::Ok();
  }

  switch (type) {
    case EventType::ROTATE_EVENT: {
      ASSIGN_OR_RETURN(auto e, DecodeRotate(r, phl(8)));
      ev.body = std::move(e);
      break;
    }
    case EventType::QUERY_EVENT:
    case EventType::QUERY_COMPRESSED_EVENT: {
      ASSIGN_OR_RETURN(auto e, DecodeQuery(r, phl(13), type == EventType::QUERY_COMPRESSED_EVENT));
      ev.body = std::move(e);
      break;
    }
    case EventType::EXECUTE_LOAD_QUERY_EVENT: {
      // Decoded as a QUERY (the extra post-header fields skipped), so that the stream sees the
      // LOAD DATA text: as an opaque event, it was passed whatever table it loaded.
      if (phl(26) < 26) return r.Error(fmt::format("post-header length {} < 26", phl(26)));
      ASSIGN_OR_RETURN(auto e, DecodeQuery(r, phl(26), false));
      ev.body = std::move(e);
      break;
    }
    case EventType::XID_EVENT: {
      if (body.size() != 8) return r.Error(fmt::format("body is {} bytes, expected 8", body.size()));
      ASSIGN_OR_RETURN(uint64_t xid, r.ReadLe64());
      ev.body = XidEvent{xid};
      break;
    }
    case EventType::TABLE_MAP_EVENT: {
      ASSIGN_OR_RETURN(auto map, DecodeTableMap(body, body_offset, phl(8), ctx.fde ? ctx.fde->flavor : Flavor::kMySQL));
      ev.body = TableMapEvent{std::make_shared<const TableMap>(std::move(map))};
      break;
    }
    case EventType::GTID_LOG_EVENT:
    case EventType::ANONYMOUS_GTID_LOG_EVENT: {
      ASSIGN_OR_RETURN(auto e, DecodeMysqlGtid(body, body_offset, type == EventType::ANONYMOUS_GTID_LOG_EVENT));
      ev.body = std::move(e);
      break;
    }
    case EventType::GTID_TAGGED_LOG_EVENT: {
      ASSIGN_OR_RETURN(auto e, DecodeTaggedGtid(body, body_offset));
      ev.body = std::move(e);
      break;
    }
    case EventType::PREVIOUS_GTIDS_LOG_EVENT: {
      ASSIGN_OR_RETURN(auto e, DecodePreviousGtids(body, body_offset));
      ev.body = std::move(e);
      break;
    }
    case EventType::GTID_EVENT: {
      ASSIGN_OR_RETURN(auto e, DecodeMariadbGtid(body, body_offset, ev.header.server_id));
      ev.body = std::move(e);
      break;
    }
    case EventType::GTID_LIST_EVENT: {
      ASSIGN_OR_RETURN(auto e, DecodeMariadbGtidList(body, body_offset));
      ev.body = std::move(e);
      break;
    }
    case EventType::BINLOG_CHECKPOINT_EVENT: {
      ASSIGN_OR_RETURN(uint32_t len, r.ReadLe32());
      if (len > r.remaining()) return r.Error(fmt::format("file name length {} too large", len));
      ASSIGN_OR_RETURN(auto name_bytes, r.ReadBytes(len));
      ev.body = BinlogCheckpointEvent{ToString(name_bytes)};
      break;
    }
    case EventType::ANNOTATE_ROWS_EVENT:
      ev.body = RowsQueryEvent{ToString(r.Rest())};
      break;
    case EventType::ROWS_QUERY_LOG_EVENT: {
      RETURN_IF_ERROR(r.Skip(1));  // length byte, truncated at 255: the text runs to the end
      ev.body = RowsQueryEvent{ToString(r.Rest())};
      break;
    }
    case EventType::HEARTBEAT_LOG_EVENT:
      ev.body = HeartbeatEvent{ToString(r.Rest()), std::nullopt, false};
      break;
    case EventType::INTVAR_EVENT: {
      IntvarEvent e;
      ASSIGN_OR_RETURN(e.kind, r.ReadU8());
      ASSIGN_OR_RETURN(e.value, r.ReadLe64());
      ev.body = e;
      break;
    }
    case EventType::RAND_EVENT: {
      RandEvent e;
      ASSIGN_OR_RETURN(e.seed1, r.ReadLe64());
      ASSIGN_OR_RETURN(e.seed2, r.ReadLe64());
      ev.body = e;
      break;
    }
    case EventType::USER_VAR_EVENT: {
      UserVarEvent e;
      ASSIGN_OR_RETURN(uint32_t len, r.ReadLe32());
      if (len > r.remaining()) return r.Error(fmt::format("variable name length {} too large", len));
      ASSIGN_OR_RETURN(auto n, r.ReadBytes(len));
      e.name = ToString(n);
      e.value_raw = r.Rest();
      ev.body = std::move(e);
      break;
    }
    case EventType::XA_PREPARE_LOG_EVENT: {
      XaPrepareEvent e;
      ASSIGN_OR_RETURN(uint8_t one_phase, r.ReadU8());
      e.one_phase = one_phase != 0;
      ASSIGN_OR_RETURN(uint32_t fmt_id, r.ReadLe32());
      e.format_id = static_cast<int32_t>(fmt_id);
      ASSIGN_OR_RETURN(uint32_t gl, r.ReadLe32());
      ASSIGN_OR_RETURN(uint32_t bl, r.ReadLe32());
      if (gl > 64 || bl > 64) return r.Error(fmt::format("XID lengths {}+{} exceed 64", gl, bl));
      ASSIGN_OR_RETURN(auto g, r.ReadBytes(gl));
      ASSIGN_OR_RETURN(auto b, r.ReadBytes(bl));
      e.gtrid = ToString(g);
      e.bqual = ToString(b);
      ev.body = std::move(e);
      break;
    }
    case EventType::STOP_EVENT:
      ev.body = StopEvent{};
      break;
    case EventType::INCIDENT_EVENT: {
      IncidentEvent e;
      ASSIGN_OR_RETURN(e.incident, r.ReadLe16());
      if (!r.empty()) {
        ASSIGN_OR_RETURN(uint8_t len, r.ReadU8());
        ASSIGN_OR_RETURN(auto m, r.ReadBytes(len));
        e.message = ToString(m);
      }
      ev.body = std::move(e);
      break;
    }
    case EventType::TRANSACTION_PAYLOAD_EVENT: {
      if (ctx.in_payload) return r.Error("TRANSACTION_PAYLOAD_EVENT nested inside another");
      ASSIGN_OR_RETURN(auto e, DecodePayloadHeader(r));
      ev.body = e;
      break;
    }
    case EventType::START_ENCRYPTION_EVENT:
      return Status::NotSupported(fmt::format(
          "START_ENCRYPTION_EVENT at offset {}: the binlog is encrypted; sluice cannot read "
          "encrypted binlog files (stream them from the server instead)",
          offset));
    case EventType::START_EVENT_V3:
    case EventType::LOAD_EVENT:
    case EventType::SLAVE_EVENT:
    case EventType::CREATE_FILE_EVENT:
    case EventType::APPEND_BLOCK_EVENT:
    case EventType::EXEC_LOAD_EVENT:
    case EventType::DELETE_FILE_EVENT:
    case EventType::NEW_LOAD_EVENT:
    case EventType::BEGIN_LOAD_QUERY_EVENT:
    case EventType::IGNORABLE_LOG_EVENT:
    case EventType::TRANSACTION_CONTEXT_EVENT:
    case EventType::VIEW_CHANGE_EVENT:
    case EventType::HEARTBEAT_LOG_EVENT_V2:
      ev.body = OpaqueEvent{(ev.header.flags & kFlagIgnorable) != 0};
      break;
    default:
      if (ev.header.flags & kFlagIgnorable) {
        ev.body = OpaqueEvent{true};
        break;
      }
      return Status::NotSupported(fmt::format(
          "unknown event type {} at offset {} (not flagged ignorable)", ev.header.type, offset));
  }
  return Status::Ok();
}
}  // namespace

void Event::Own() {
  if (storage) return;
  auto store = std::make_shared<std::string>(reinterpret_cast<const char*>(raw.data()), raw.size());
  const auto* old_base = raw.data();
  const auto* new_base = reinterpret_cast<const uint8_t*>(store->data());
  auto move = [&](std::span<const uint8_t> s) -> std::span<const uint8_t> {
    if (s.empty()) return {};
    return std::span<const uint8_t>(new_base + (s.data() - old_base), s.size());
  };
  if (auto* rows = std::get_if<RowsEvent>(&body)) {
    rows->body = move(rows->body);
    rows->extra_data = move(rows->extra_data);
  } else if (auto* p = std::get_if<TransactionPayloadEvent>(&body)) {
    p->payload = move(p->payload);
  } else if (auto* u = std::get_if<UserVarEvent>(&body)) {
    u->value_raw = move(u->value_raw);
  }
  raw = std::span<const uint8_t>(new_base, store->size());
  storage = std::move(store);
}

std::string Event::DebugString() const {
  return EventToJson(*this).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace sluice::binlog
