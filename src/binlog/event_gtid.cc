// GTID event decoders.
//
// MySQL GTID_LOG_EVENT / ANONYMOUS_GTID_LOG_EVENT (libs/mysql/binlog/event/
// control_events.cpp Gtid_event::Gtid_event):
//   flags(1) sid(16) gno(8, signed) [lt_type(1)=2 last_committed(8) sequence_number(8)]
//   [immediate_commit_ts(7; bit 55 set => original_commit_ts(7) follows)]
//   [transaction_length(packed)] [immediate_server_version(4; bit 31 set =>
//   original_server_version(4) follows)] [commit_group_ticket(8)]
// MySQL GTID_TAGGED_LOG_EVENT (same file, Gtid_event::define_fields, encoded by
// libs/mysql/serialization: readme.md, variable_length_integers.h, serializer_impl.hpp):
//   message := version(varlen; MySQL 8.3+ writes 1) size(varlen, whole message, version
//              included) last_non_ignorable(varlen: id of the last non-ignorable field
//              present, plus 1; 0 if none) { field_id(varlen, increasing) value }*
//   Forward compatibility (libs/mysql/serialization/readme.md, serializer_impl.hpp): a
//   field may be absent (ids are skipped); unknown fields are skipped to the end of the
//   message, which `size` gives; only last_non_ignorable beyond the known fields stops
//   decoding (kNotSupported). Bytes after `size` within the event are ignored.
//   fields: 0 flags(u) 1 uuid(16 x varlen u8) 2 gno(s) 3 tag(varlen len + bytes)
//           4 last_committed(s) 5 sequence_number(s) 6 immediate_commit_ts(u)
//           7 original_commit_ts(u, optional) 8 transaction_length(u)
//           9 immediate_server_version(u) 10 original_server_version(u, optional)
//           11 commit_group_ticket(u, optional)
//   varlen unsigned: number of trailing 1 bits in byte 0, plus 1, is the byte count;
//   value = LE bytes >> count (9-byte form: 8 full bytes follow). Signed: zigzag-like,
//   bit 0 is the sign: v = (u >> 1) ^ -(u & 1).
// MySQL PREVIOUS_GTIDS_LOG_EVENT (sql/rpl_gtid_set.cc Gtid_set::encode/add_gtid_encoding):
//   word(8): untagged: n_sids; tagged: byte 7 = 1 (format), n_sids = bits 8..55
//   per sid: uuid(16) [tagged: tag(varlen len + bytes)] n_intervals(8)
//            {start(8) end(8, exclusive)}*
// MariaDB GTID_EVENT (sql/log_event.cc Gtid_log_event::Gtid_log_event):
//   seq_no(8) domain_id(4) flags2(1) [FL_GROUP_COMMIT_ID: commit_id(8)]
//   [FL_PREPARED_XA|FL_COMPLETED_XA: format_id(4) gtrid_len(1) bqual_len(1) xid]
//   [flags_extra(1) ...]   (zero padding to 19 bytes when neither commit id nor XA)
// MariaDB GTID_LIST_EVENT (sql/log_event.cc Gtid_list_log_event):
//   count_and_flags(4: low 28 bits count, high 4 flags) {domain(4) server(4) seq(8)}*
#include <bit>
#include <cstring>

#include <fmt/format.h>

#include "binlog/events.h"
#include "gtid/gtid_set.h"
#include "util/byte_reader.h"

namespace sluice::binlog {
namespace {

std::string UuidText(std::span<const uint8_t> b) {
  gtid::Uuid u;
  std::memcpy(u.bytes.data(), b.data(), 16);
  return u.ToString();
}

// mysql::serialization varlen integers.
Result<uint64_t> ReadVarlenU(ByteReader& r) {
  auto rest = r.PeekRest();
  if (rest.empty()) return r.Error("truncated variable-length integer");
  uint8_t first = rest[0];
  size_t nbytes = static_cast<size_t>(std::countr_one(first)) + 1;
  ASSIGN_OR_RETURN(auto b, r.ReadBytes(nbytes));
  if (nbytes == 1) return uint64_t{first} >> 1;
  uint64_t tail = 0;
  for (size_t i = 1; i < nbytes; ++i) tail |= uint64_t{b[i]} << (8 * (i - 1));
  uint64_t head = nbytes >= 8 ? 0 : (uint64_t{first} >> nbytes);
  // bytes 1.. hold the value bits above the (8 - nbytes) bits kept in byte 0; 9 bytes: all 64.
  size_t shift = nbytes == 9 ? 0 : 8 - nbytes;
  return head | (tail << shift);
}

Result<int64_t> ReadVarlenS(ByteReader& r) {
  ASSIGN_OR_RETURN(uint64_t u, ReadVarlenU(r));
  uint64_t mag = u >> 1;
  return static_cast<int64_t>((u & 1) ? ~mag : mag);
}

Result<std::string> ReadVarlenString(ByteReader& r, size_t max_len) {
  ASSIGN_OR_RETURN(uint64_t len, ReadVarlenU(r));
  if (len > max_len || len > r.remaining()) {
    return r.Error(fmt::format("string length {} too large", len));
  }
  ASSIGN_OR_RETURN(auto s, r.ReadString(static_cast<size_t>(len)));
  return std::string(s);
}

}  // namespace

std::string GtidEvent::GtidText() const {
  if (anonymous) return "";
  if (tag.empty()) return fmt::format("{}:{}", uuid, gno);
  return fmt::format("{}:{}:{}", uuid, tag, gno);
}

std::string MariadbGtidEvent::GtidText() const {
  return fmt::format("{}-{}-{}", domain_id, server_id, seq_no);
}

std::string MariadbGtidListEvent::GtidListText() const {
  std::string out;
  for (const auto& g : gtids) {
    if (!out.empty()) out += ',';
    out += fmt::format("{}-{}-{}", g.domain_id, g.server_id, g.seq_no);
  }
  return out;
}

Result<GtidEvent> DecodeMysqlGtid(std::span<const uint8_t> body, uint64_t offset, bool anonymous) {
  ByteReader r(body, offset, anonymous ? "ANONYMOUS_GTID_LOG_EVENT" : "GTID_LOG_EVENT");
  GtidEvent e;
  e.anonymous = anonymous;
  ASSIGN_OR_RETURN(e.flags, r.ReadU8());
  ASSIGN_OR_RETURN(auto sid, r.ReadBytes(16));
  e.uuid = UuidText(sid);
  ASSIGN_OR_RETURN(uint64_t gno, r.ReadLe64());
  e.gno = static_cast<int64_t>(gno);
  if (!anonymous && e.gno <= 0) return r.Error(fmt::format("invalid GNO {}", e.gno));
  if (r.empty()) return e;
  ASSIGN_OR_RETURN(uint8_t lt_type, r.ReadU8());
  if (lt_type != 2) return r.Error(fmt::format("unknown logical timestamp type {}", lt_type));
  ASSIGN_OR_RETURN(uint64_t lc, r.ReadLe64());
  ASSIGN_OR_RETURN(uint64_t sn, r.ReadLe64());
  e.has_logical_clock = true;
  e.last_committed = static_cast<int64_t>(lc);
  e.sequence_number = static_cast<int64_t>(sn);
  if (r.remaining() >= 7) {
    ASSIGN_OR_RETURN(uint64_t ts, r.ReadLe(7));
    constexpr uint64_t kBit = uint64_t{1} << 55;
    e.immediate_commit_timestamp = ts & ~kBit;
    if (ts & kBit) {
      ASSIGN_OR_RETURN(uint64_t orig, r.ReadLe(7));
      e.original_commit_timestamp = orig;
    } else {
      e.original_commit_timestamp = e.immediate_commit_timestamp;
    }
    if (!r.empty()) {
      ASSIGN_OR_RETURN(uint64_t len, r.ReadLenEnc());
      e.transaction_length = len;
    }
    if (r.remaining() >= 4) {
      ASSIGN_OR_RETURN(uint32_t v, r.ReadLe32());
      constexpr uint32_t kVBit = uint32_t{1} << 31;
      e.immediate_server_version = v & ~kVBit;
      if (v & kVBit) {
        ASSIGN_OR_RETURN(uint32_t o, r.ReadLe32());
        e.original_server_version = o;
      } else {
        e.original_server_version = e.immediate_server_version;
      }
    }
    if (r.remaining() >= 8) {
      ASSIGN_OR_RETURN(uint64_t t, r.ReadLe64());
      e.commit_group_ticket = t;
    }
  }
  return e;
}

Result<GtidEvent> DecodeTaggedGtid(std::span<const uint8_t> body, uint64_t offset) {
  ByteReader r(body, offset, "GTID_TAGGED_LOG_EVENT");
  GtidEvent e;
  e.tagged = true;
  // The serialization format version is the message's own field id. MySQL 8.3+ writes 1;
  // the message layout rules do not depend on it, so any version is read by them: the
  // size bounds the message, and last_non_ignorable says whether unknown fields may be
  // skipped.
  ASSIGN_OR_RETURN(uint64_t version, ReadVarlenU(r));
  ASSIGN_OR_RETURN(uint64_t size, ReadVarlenU(r));
  ASSIGN_OR_RETURN(uint64_t last_non_ignorable, ReadVarlenU(r));
  if (size > body.size()) return r.Error(fmt::format("message size {} exceeds the {}-byte body", size, body.size()));
  if (size < r.position()) return r.Error(fmt::format("message size {} is smaller than its own header", size));
  // Field ids 0..kLastKnownField are known (Gtid_event::define_fields); a message whose
  // last non-ignorable field (last_non_ignorable - 1) is beyond them needs a newer reader.
  constexpr uint64_t kLastKnownField = 11;
  if (last_non_ignorable > kLastKnownField + 1) {
    return Status::NotSupported(fmt::format(
        "GTID_TAGGED_LOG_EVENT at offset {}: field {} is unknown to this version of sluice and "
        "marked as not ignorable (serialization version {})",
        offset, last_non_ignorable - 1, version));
  }
  ByteReader f(body.first(static_cast<size_t>(size)), offset, "GTID_TAGGED_LOG_EVENT");
  RETURN_IF_ERROR(f.Skip(r.position()));
  bool have_original_ts = false, have_original_ver = false, have_uuid = false, have_gno = false;
  int64_t next_expected = 0;
  while (!f.empty()) {
    ASSIGN_OR_RETURN(uint64_t id, ReadVarlenU(f));
    if (static_cast<int64_t>(id) < next_expected) return f.Error(fmt::format("field {} out of order", id));
    next_expected = static_cast<int64_t>(id) + 1;
    switch (id) {
      case 0: {
        ASSIGN_OR_RETURN(uint64_t v, ReadVarlenU(f));
        e.flags = static_cast<uint8_t>(v);
        break;
      }
      case 1: {
        uint8_t bytes[16];
        for (auto& b : bytes) {
          ASSIGN_OR_RETURN(uint64_t v, ReadVarlenU(f));
          if (v > 255) return f.Error("uuid byte out of range");
          b = static_cast<uint8_t>(v);
        }
        e.uuid = UuidText(bytes);
        have_uuid = true;
        break;
      }
      case 2: {
        ASSIGN_OR_RETURN(e.gno, ReadVarlenS(f));
        have_gno = true;
        break;
      }
      case 3: {
        ASSIGN_OR_RETURN(e.tag, ReadVarlenString(f, 32));
        break;
      }
      case 4: {
        ASSIGN_OR_RETURN(e.last_committed, ReadVarlenS(f));
        e.has_logical_clock = true;
        break;
      }
      case 5: {
        ASSIGN_OR_RETURN(e.sequence_number, ReadVarlenS(f));
        break;
      }
      case 6: {
        ASSIGN_OR_RETURN(uint64_t v, ReadVarlenU(f));
        e.immediate_commit_timestamp = v;
        break;
      }
      case 7: {
        ASSIGN_OR_RETURN(uint64_t v, ReadVarlenU(f));
        e.original_commit_timestamp = v;
        have_original_ts = true;
        break;
      }
      case 8: {
        ASSIGN_OR_RETURN(uint64_t v, ReadVarlenU(f));
        e.transaction_length = v;
        break;
      }
      case 9: {
        ASSIGN_OR_RETURN(uint64_t v, ReadVarlenU(f));
        e.immediate_server_version = static_cast<uint32_t>(v);
        break;
      }
      case 10: {
        ASSIGN_OR_RETURN(uint64_t v, ReadVarlenU(f));
        e.original_server_version = static_cast<uint32_t>(v);
        have_original_ver = true;
        break;
      }
      case 11: {
        ASSIGN_OR_RETURN(uint64_t v, ReadVarlenU(f));
        e.commit_group_ticket = v;
        break;
      }
      default:
        // A field newer than this reader. It is ignorable (its id is at or above
        // last_non_ignorable, checked above), and so is every field after it (ids only
        // grow). Simple fields carry no size of their own, so, as MySQL's reader does, the
        // rest of the message is skipped: the message size says where it ends.
        RETURN_IF_ERROR(f.Skip(f.remaining()));
        break;
    }
  }
  if (!have_uuid || !have_gno) return r.Error("uuid or gno field missing");
  if (e.gno <= 0) return r.Error(fmt::format("invalid GNO {}", e.gno));
  if (!e.tag.empty() && !gtid::IsValidTag(e.tag)) return r.Error(fmt::format("invalid tag '{}'", e.tag));
  if (!have_original_ts) e.original_commit_timestamp = e.immediate_commit_timestamp;
  if (!have_original_ver) e.original_server_version = e.immediate_server_version;
  return e;
}

Result<PreviousGtidsEvent> DecodePreviousGtids(std::span<const uint8_t> body, uint64_t offset) {
  ByteReader r(body, offset, "PREVIOUS_GTIDS_LOG_EVENT");
  ASSIGN_OR_RETURN(uint64_t word, r.ReadLe64());
  bool tagged = (word >> 56) == 1;
  if ((word >> 56) > 1) return r.Error(fmt::format("unknown GTID set format {}", word >> 56));
  uint64_t n_sids = tagged ? (word >> 8) & 0xFFFFFFFFFFFFull : word;
  gtid::MysqlGtidSet set;
  for (uint64_t i = 0; i < n_sids; ++i) {
    ASSIGN_OR_RETURN(auto sid, r.ReadBytes(16));
    gtid::Uuid u;
    std::memcpy(u.bytes.data(), sid.data(), 16);
    std::string tag;
    if (tagged) {
      ASSIGN_OR_RETURN(tag, ReadVarlenString(r, 32));
      if (!gtid::IsValidTag(tag)) return r.Error(fmt::format("invalid tag '{}'", tag));
    }
    ASSIGN_OR_RETURN(uint64_t n_iv, r.ReadLe64());
    if (n_iv > r.remaining() / 16) return r.Error(fmt::format("interval count {} exceeds the event", n_iv));
    for (uint64_t k = 0; k < n_iv; ++k) {
      ASSIGN_OR_RETURN(uint64_t start, r.ReadLe64());
      ASSIGN_OR_RETURN(uint64_t end, r.ReadLe64());
      if (start == 0 || end <= start) {
        return r.Error(fmt::format("invalid interval [{}, {})", start, end));
      }
      set.AddInterval(u, tag, start, end - 1);
    }
  }
  if (!r.empty()) return r.Error(fmt::format("{} trailing bytes", r.remaining()));
  return PreviousGtidsEvent{set.ToString()};
}

Result<MariadbGtidEvent> DecodeMariadbGtid(std::span<const uint8_t> body, uint64_t offset,
                                           uint32_t server_id) {
  ByteReader r(body, offset, "MARIADB_GTID_EVENT");
  MariadbGtidEvent e;
  e.server_id = server_id;
  ASSIGN_OR_RETURN(e.seq_no, r.ReadLe64());
  ASSIGN_OR_RETURN(e.domain_id, r.ReadLe32());
  ASSIGN_OR_RETURN(e.flags, r.ReadU8());
  if (e.flags & MariadbGtidEvent::kFlGroupCommitId) {
    ASSIGN_OR_RETURN(uint64_t cid, r.ReadLe64());
    e.commit_id = cid;
  }
  if (e.flags & (MariadbGtidEvent::kFlPreparedXa | MariadbGtidEvent::kFlCompletedXa)) {
    ASSIGN_OR_RETURN(e.xa_format_id, r.ReadLe32());
    ASSIGN_OR_RETURN(uint8_t gl, r.ReadU8());
    ASSIGN_OR_RETURN(uint8_t bl, r.ReadU8());
    if (gl > 64 || bl > 64) return r.Error(fmt::format("XID lengths {}+{} exceed 64", gl, bl));
    ASSIGN_OR_RETURN(auto x, r.ReadString(size_t{gl} + bl));
    e.xid = std::string(x);
  }
  if (!r.empty()) {
    ASSIGN_OR_RETURN(e.flags_extra, r.ReadU8());
  }
  return e;
}

Result<MariadbGtidListEvent> DecodeMariadbGtidList(std::span<const uint8_t> body, uint64_t offset) {
  ByteReader r(body, offset, "GTID_LIST_EVENT");
  MariadbGtidListEvent e;
  ASSIGN_OR_RETURN(uint32_t word, r.ReadLe32());
  uint32_t count = word & ((1u << 28) - 1);
  e.flags = word >> 28;
  if (count > r.remaining() / 16) return r.Error(fmt::format("GTID count {} exceeds the event", count));
  for (uint32_t i = 0; i < count; ++i) {
    MariadbGtidListEvent::Entry g;
    ASSIGN_OR_RETURN(g.domain_id, r.ReadLe32());
    ASSIGN_OR_RETURN(g.server_id, r.ReadLe32());
    ASSIGN_OR_RETURN(g.seq_no, r.ReadLe64());
    e.gtids.push_back(g);
  }
  return e;
}

}  // namespace sluice::binlog
