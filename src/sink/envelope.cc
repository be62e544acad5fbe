// Envelope writer. Grammar of the output: see envelope.h and docs/sinks.md; JSON text per
// RFC 8259, strings escaped per its section 7 (only what must be escaped).
#include "sink/envelope.h"

#include <charconv>
#include <cmath>

namespace sluice {

namespace {

constexpr char kHex[] = "0123456789abcdef";

// Length of the valid UTF-8 sequence starting at s[i] (lead byte >= 0x80), or 0.
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  const auto at = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = at(i);
  const size_t left = s.size() - i;
  const auto cont = [&](size_t k) { return (at(k) & 0xC0) == 0x80; };
  if (c >= 0xC2 && c <= 0xDF) return left >= 2 && cont(i + 1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (left < 3 || !cont(i + 1) || !cont(i + 2)) return 0;
    if (c == 0xE0 && at(i + 1) < 0xA0) return 0;  // overlong
    if (c == 0xED && at(i + 1) > 0x9F) return 0;  // UTF-16 surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (left < 4 || !cont(i + 1) || !cont(i + 2) || !cont(i + 3)) return 0;
    if (c == 0xF0 && at(i + 1) < 0x90) return 0;  // overlong
    if (c == 0xF4 && at(i + 1) > 0x8F) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

void AppendUInt(uint64_t v, std::string* out) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, r.ptr);
}

void AppendInt(int64_t v, std::string* out) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, r.ptr);
}

template <typename F>
void AppendFloating(F v, std::string* out) {
  if (std::isnan(v)) {
    out->append("\"NaN\"");
  } else if (std::isinf(v)) {
    out->append(v > 0 ? "\"Infinity\"" : "\"-Infinity\"");
  } else {
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest round-trip form
    out->append(buf, r.ptr);
  }
}

Status BadUtf8(const RowChange& c, std::string_view what) {
  return Status::Corruption(
      fmt::format("envelope for table {}: {} is not valid UTF-8", c.table->QualifiedName(), what));
}

// Writes `"<key>":{...}` (or null) and, when needed, `,"<key>_absent":[...]`.
Status AppendImage(const RowChange& c, std::string_view key, const Row& row, bool present,
                   std::string* out) {
  out->push_back('"');
  out->append(key);
  out->append("\":");
  const auto& cols = c.table->columns;
  if (!present) {
    if (!row.empty()) {
      return Status::InvalidArgument(fmt::format("table {}: op '{}' has a {} image",
                                                 c.table->QualifiedName(), static_cast<char>(c.op),
                                                 key));
    }
    out->append("null");
    return Status::Ok();
  }
  if (row.size() != cols.size()) {
    return Status::InvalidArgument(
        fmt::format("table {}: {} image has {} values, table has {} columns",
                    c.table->QualifiedName(), key, row.size(), cols.size()));
  }
  out->push_back('{');
  bool first = true;
  size_t absent = 0;
  for (size_t i = 0; i < row.size(); ++i) {
    if (row[i].is_absent()) {
      ++absent;
      continue;
    }
    if (!first) out->push_back(',');
    first = false;
    if (!AppendJsonString(cols[i].name, out)) return BadUtf8(c, "a column name");
    out->push_back(':');
    if (!AppendJsonValue(row[i], out)) {
      return BadUtf8(c, fmt::format("the {} value of column {}", key, cols[i].name));
    }
  }
  out->push_back('}');
  if (absent > 0) {
    out->append(",\"");
    out->append(key);
    out->append("_absent\":[");
    first = true;
    for (size_t i = 0; i < row.size(); ++i) {
      if (!row[i].is_absent()) continue;
      if (!first) out->push_back(',');
      first = false;
      if (!AppendJsonString(cols[i].name, out)) return BadUtf8(c, "a column name");
    }
    out->push_back(']');
  }
  return Status::Ok();
}

}  // namespace

bool AppendJsonString(std::string_view s, std::string* out) {
  out->push_back('"');
  size_t run = 0;  // start of the pending run of bytes copied as they are
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
      ++i;
      continue;
    }
    if (c >= 0x80) {
      size_t n = Utf8SequenceLength(s, i);
      if (n == 0) return false;
      i += n;
      continue;
    }
    out->append(s.data() + run, i - run);
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\b':
        out->append("\\b");
        break;
      case '\f':
        out->append("\\f");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      default: {
        const char esc[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
        out->append(esc, 6);
      }
    }
    ++i;
    run = i;
  }
  out->append(s.data() + run, s.size() - run);
  out->push_back('"');
  return true;
}

void AppendBase64(std::string_view bytes, std::string* out) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t n = bytes.size();
  const size_t old = out->size();
  out->resize(old + (n + 2) / 3 * 4);
  char* w = out->data() + old;
  size_t i = 0;
  for (; i + 3 <= n; i += 3) {
    const uint32_t v = (uint32_t{p[i]} << 16) | (uint32_t{p[i + 1]} << 8) | p[i + 2];
    *w++ = kAlphabet[v >> 18];
    *w++ = kAlphabet[(v >> 12) & 63];
    *w++ = kAlphabet[(v >> 6) & 63];
    *w++ = kAlphabet[v & 63];
  }
  if (n - i == 1) {
    const uint32_t v = uint32_t{p[i]} << 16;
    *w++ = kAlphabet[v >> 18];
    *w++ = kAlphabet[(v >> 12) & 63];
    *w++ = '=';
    *w++ = '=';
  } else if (n - i == 2) {
    const uint32_t v = (uint32_t{p[i]} << 16) | (uint32_t{p[i + 1]} << 8);
    *w++ = kAlphabet[v >> 18];
    *w++ = kAlphabet[(v >> 12) & 63];
    *w++ = kAlphabet[(v >> 6) & 63];
    *w++ = '=';
  }
}

bool AppendJsonValue(const Value& v, std::string* out) {
  switch (v.kind) {
    case Value::Kind::kNull:
    case Value::Kind::kAbsent:
      out->append("null");
      return true;
    case Value::Kind::kInt:
      AppendInt(v.i, out);
      return true;
    case Value::Kind::kUInt:
      AppendUInt(v.u, out);
      return true;
    case Value::Kind::kFloat:
      AppendFloating(static_cast<float>(v.d), out);
      return true;
    case Value::Kind::kDouble:
      AppendFloating(v.d, out);
      return true;
    case Value::Kind::kText:
      return AppendJsonString(v.s, out);
    case Value::Kind::kBytes:
      out->push_back('"');
      AppendBase64(v.s, out);
      out->push_back('"');
      return true;
  }
  out->append("null");
  return true;
}

Status AppendEnvelope(const RowChange& c, int64_t ts_ms, std::string* out) {
  if (c.table == nullptr) return Status::InvalidArgument("row change without a table schema");
  bool has_before = false, has_after = false;
  switch (c.op) {
    case Op::kCreate:
    case Op::kRead:
      has_after = true;
      break;
    case Op::kUpdate:
      has_before = has_after = true;
      break;
    case Op::kDelete:
      has_before = true;
      break;
    default:
      return Status::InvalidArgument(fmt::format("table {}: unknown op code {}",
                                                 c.table->QualifiedName(), static_cast<int>(c.op)));
  }
  out->push_back('{');
  RETURN_IF_ERROR(AppendImage(c, "before", c.before, has_before, out));
  out->push_back(',');
  RETURN_IF_ERROR(AppendImage(c, "after", c.after, has_after, out));
  out->append(",\"op\":\"");
  out->push_back(static_cast<char>(c.op));
  out->append("\",\"ts_ms\":");
  AppendInt(ts_ms, out);
  const SourceInfo& s = c.source;
  out->append(",\"source\":{\"connector\":\"sluice\",\"flavor\":\"");
  out->append(FlavorName(s.flavor));
  out->append("\",\"server_id\":");
  AppendUInt(s.server_id, out);
  out->append(",\"file\":");
  if (!AppendJsonString(s.file, out)) return BadUtf8(c, "the binlog file name");
  out->append(",\"pos\":");
  AppendUInt(s.pos, out);
  out->append(",\"gtid\":");
  if (s.gtid.empty()) {
    out->append("null");
  } else if (!AppendJsonString(s.gtid, out)) {
    return BadUtf8(c, "the GTID");
  }
  out->append(",\"db\":");
  if (!AppendJsonString(c.table->db, out)) return BadUtf8(c, "the database name");
  out->append(",\"table\":");
  if (!AppendJsonString(c.table->table, out)) return BadUtf8(c, "the table name");
  out->append(s.snapshot ? ",\"snapshot\":true" : ",\"snapshot\":false");
  out->append(",\"ts_ms\":");
  AppendUInt(uint64_t{s.timestamp} * 1000, out);
  out->append(",\"row\":");
  AppendUInt(s.row, out);
  out->append("}}");
  return Status::Ok();
}

}  // namespace sluice
