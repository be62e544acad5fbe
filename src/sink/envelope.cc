// Envelope writer. Grammar of the output: see envelope.h and docs/sinks.md; JSON text per
// RFC 8259, strings escaped per its section 7 (only what must be escaped).
#include "sink/envelope.h"

#include "binlog/charset.h"
#include "binlog/value_decoder.h"
#include "schema/text_value.h"
#include "util/byte_reader.h"
#include "util/int_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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

// True when one of the 8 bytes at p is a control character (< 0x20), '"', '\\' or not
// ASCII (>= 0x80): the bytes JSON escaping or UTF-8 validation must look at. SWAR tests:
// a byte b is zero iff (b - 1) & ~b has its top bit set, and b < 0x20 iff (b - 0x20) & ~b
// does (exact for the word as a whole, which is all that is asked).
inline bool NeedsLook(const char* p) {
  constexpr uint64_t kOnes = 0x0101010101010101ull;
  constexpr uint64_t kHigh = 0x8080808080808080ull;
  uint64_t w;
  std::memcpy(&w, p, 8);
  const auto has_zero = [](uint64_t v) { return (v - kOnes) & ~v & kHigh; };
  const uint64_t control = (w - kOnes * 0x20) & ~w & kHigh;
  return ((w & kHigh) | control | has_zero(w ^ (kOnes * '"')) | has_zero(w ^ (kOnes * '\\'))) != 0;
}

// Index of the first byte at or after i that needs a look (as NeedsLook), or n.
inline size_t SkipPlain(const char* p, size_t i, size_t n) {
#if defined(__SSE2__)
  // 16 bytes at a time: a signed compare with 0x20 flags controls and bytes >= 0x80 alike.
  const __m128i space = _mm_set1_epi8(0x20);
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  while (i + 16 <= n) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    const __m128i hit = _mm_or_si128(_mm_cmplt_epi8(v, space),
                                     _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)));
    const int mask = _mm_movemask_epi8(hit);
    if (mask != 0) return i + static_cast<size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
    i += 16;
  }
#endif
  while (i + 8 <= n && !NeedsLook(p + i)) i += 8;
  for (; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(p[i]);
    if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\') return i;
  }
  return n;
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

constexpr size_t kNotUtf8 = static_cast<size_t>(-1);

// Bytes `s` takes as a JSON string, quotes included; kNotUtf8 when it is not valid UTF-8.
size_t JsonStringSize(std::string_view s) {
  size_t n = s.size() + 2;
  size_t i = 0;
  while (i < s.size()) {
    i = SkipPlain(s.data(), i, s.size());
    if (i >= s.size()) break;
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const size_t k = Utf8SequenceLength(s, i);
      if (k == 0) return kNotUtf8;
      i += k;
      continue;
    }
    if (c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t') {
      n += 1;
    } else if (c < 0x20) {
      n += 5;
    }
    ++i;
  }
  return n;
}

// Writes `s` as a JSON string at w and returns the end (needs 6 * s.size() + 2 bytes at w).
// kCheck false: `s` was already checked by JsonStringSize, and bytes >= 0x80 are copied as
// they are. kCheck true: each UTF-8 sequence is checked as it is met (RFC 3629, as
// AppendJsonString does), and the result is nullptr when `s` is not valid UTF-8.
template <bool kCheck>
char* WriteJsonStringImpl(std::string_view s, char* w) {
  *w++ = '"';
  size_t run = 0;  // start of the pending run of bytes copied as they are
  size_t i = 0;
  while (i < s.size()) {
    i = SkipPlain(s.data(), i, s.size());
    if (i >= s.size()) break;
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      if constexpr (kCheck) {
        const size_t k = Utf8SequenceLength(s, i);
        if (k == 0) return nullptr;
        i += k;
      } else {
        ++i;  // a byte of a UTF-8 sequence checked before
      }
      continue;
    }
    // SkipPlain stops below 0x80 only at a byte that needs an escape.
    std::memcpy(w, s.data() + run, i - run);
    w += i - run;
    *w++ = '\\';
    switch (c) {
      case '"': *w++ = '"'; break;
      case '\\': *w++ = '\\'; break;
      case '\b': *w++ = 'b'; break;
      case '\f': *w++ = 'f'; break;
      case '\n': *w++ = 'n'; break;
      case '\r': *w++ = 'r'; break;
      case '\t': *w++ = 't'; break;
      default:
        *w++ = 'u';
        *w++ = '0';
        *w++ = '0';
        *w++ = kHex[c >> 4];
        *w++ = kHex[c & 15];
    }
    ++i;
    run = i;
  }
  std::memcpy(w, s.data() + run, s.size() - run);
  w += s.size() - run;
  *w++ = '"';
  return w;
}

// `s` already checked by JsonStringSize.
char* WriteJsonString(std::string_view s, char* w) { return WriteJsonStringImpl<false>(s, w); }

char* WriteLiteral(std::string_view lit, char* w) {
  std::memcpy(w, lit.data(), lit.size());
  return w + lit.size();
}

// Writes the RFC 4648 base64 of `bytes` ((n + 2) / 3 * 4 bytes) at w; returns the end.
char* WriteBase64(std::string_view bytes, char* w) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t n = bytes.size();
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
  return w;
}

// Upper bound of the bytes a value takes (exact for text); kNotUtf8 for invalid text.
size_t JsonValueSize(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kText:
      return JsonStringSize(v.s);
    case Value::Kind::kBytes:
      return (v.s.size() + 2) / 3 * 4 + 2;
    default:
      return 32;  // null, integers (<= 20 chars), shortest floats (<= 24), "-Infinity"
  }
}

template <typename F>
char* WriteFloating(F v, char* w) {
  if (std::isnan(v)) return WriteLiteral("\"NaN\"", w);
  if (std::isinf(v)) return WriteLiteral(v > 0 ? "\"Infinity\"" : "\"-Infinity\"", w);
  return std::to_chars(w, w + 32, v).ptr;  // shortest round-trip form
}

// Writes a value checked by JsonValueSize (same forms as AppendJsonValue).
char* WriteJsonValue(const Value& v, char* w) {
  switch (v.kind) {
    case Value::Kind::kNull:
    case Value::Kind::kAbsent:
      return WriteLiteral("null", w);
    case Value::Kind::kInt:
      return WriteDecimal(v.i, w);
    case Value::Kind::kUInt:
      return WriteDecimal(v.u, w);
    case Value::Kind::kFloat:
      return WriteFloating(static_cast<float>(v.d), w);
    case Value::Kind::kDouble:
      return WriteFloating(v.d, w);
    case Value::Kind::kText:
      return WriteJsonString(v.s, w);
    case Value::Kind::kBytes:
      *w++ = '"';
      w = WriteBase64(v.s, w);
      *w++ = '"';
      return w;
  }
  return WriteLiteral("null", w);
}

// Checks an image and adds the bytes `"<key>":{...}` (or null) and `,"<key>_absent":[...]`
// take to *size. Errors as AppendEnvelope documents.
Status SizeImage(const RowChange& c, std::string_view key, const Row& row, bool present,
                 size_t* size, size_t* escapes) {
  // `"<key>":{}` or `"<key>":null`, and `,"<key>_absent":[]`; then per column its name
  // with ':' and ',' (or ',' alone in the absent list) and its value.
  *size += 2 * key.size() + 20;
  const auto& cols = c.table->columns;
  if (!present) {
    if (!row.empty()) {
      return Status::InvalidArgument(fmt::format("table {}: op '{}' has a {} image",
                                                 c.table->QualifiedName(), static_cast<char>(c.op),
                                                 key));
    }
    return Status::Ok();
  }
  if (row.size() != cols.size()) {
    return Status::InvalidArgument(
        fmt::format("table {}: {} image has {} values, table has {} columns",
                    c.table->QualifiedName(), key, row.size(), cols.size()));
  }
  for (size_t i = 0; i < row.size(); ++i) {
    const size_t name = JsonStringSize(cols[i].name);
    if (name == kNotUtf8) return BadUtf8(c, "a column name");
    *size += name + 2;
    *escapes += name - cols[i].name.size() - 2;
    if (row[i].is_absent()) continue;
    const size_t value = JsonValueSize(row[i]);
    if (value == kNotUtf8) {
      return BadUtf8(c, fmt::format("the {} value of column {}", key, cols[i].name));
    }
    *size += value;
    if (row[i].kind == Value::Kind::kText) *escapes += value - row[i].s.size() - 2;
  }
  return Status::Ok();
}

// Writes `s` as a JSON string: escaped, or quoted as it is when `clean` (nothing in the
// change needs an escape, as the size pass found).
inline char* WriteString(std::string_view s, bool clean, char* w) {
  if (!clean) return WriteJsonString(s, w);
  *w++ = '"';
  std::memcpy(w, s.data(), s.size());
  w += s.size();
  *w++ = '"';
  return w;
}

// Writes an image checked by SizeImage.
char* WriteImage(const RowChange& c, std::string_view key, const Row& row, bool present, bool clean,
                 char* w) {
  *w++ = '"';
  w = WriteLiteral(key, w);
  w = WriteLiteral("\":", w);
  if (!present) return WriteLiteral("null", w);
  const auto& cols = c.table->columns;
  *w++ = '{';
  bool first = true;
  size_t absent = 0;
  for (size_t i = 0; i < row.size(); ++i) {
    if (row[i].is_absent()) {
      ++absent;
      continue;
    }
    if (!first) *w++ = ',';
    first = false;
    w = WriteString(cols[i].name, clean, w);
    *w++ = ':';
    w = row[i].kind == Value::Kind::kText ? WriteString(row[i].s, clean, w) : WriteJsonValue(row[i], w);
  }
  *w++ = '}';
  if (absent > 0) {
    w = WriteLiteral(",\"", w);
    w = WriteLiteral(key, w);
    w = WriteLiteral("_absent\":[", w);
    first = true;
    for (size_t i = 0; i < row.size(); ++i) {
      if (!row[i].is_absent()) continue;
      if (!first) *w++ = ',';
      first = false;
      w = WriteString(cols[i].name, clean, w);
    }
    *w++ = ']';
  }
  return w;
}

}  // namespace

bool AppendJsonString(std::string_view s, std::string* out) {
  out->push_back('"');
  size_t run = 0;  // start of the pending run of bytes copied as they are
  size_t i = 0;
  while (i < s.size()) {
    // Fast path: skip the bytes that need no look (see SkipPlain).
    i = SkipPlain(s.data(), i, s.size());
    if (i >= s.size()) break;
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
  const size_t old = out->size();
  out->resize(old + (bytes.size() + 2) / 3 * 4);
  WriteBase64(bytes, out->data() + old);
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
  // Pass 1: check everything and bound the size; pass 2 writes through a pointer into
  // space made once (one resize per change instead of an append per token).
  const SourceInfo& s = c.source;
  size_t size = 320;  // the fixed parts: punctuation, keys, flavor, 5 numbers (240 at most)
  size_t escapes = 0;  // bytes escaping adds to the strings; 0 lets pass 2 copy them as they are
  RETURN_IF_ERROR(SizeImage(c, "before", c.before, has_before, &size, &escapes));
  RETURN_IF_ERROR(SizeImage(c, "after", c.after, has_after, &size, &escapes));
  const size_t file_size = JsonStringSize(s.file);
  if (file_size == kNotUtf8) return BadUtf8(c, "the binlog file name");
  const size_t gtid_size = s.gtid.empty() ? 2 : JsonStringSize(s.gtid);  // "null": in the 320
  if (gtid_size == kNotUtf8) return BadUtf8(c, "the GTID");
  const size_t db_size = JsonStringSize(c.table->db);
  if (db_size == kNotUtf8) return BadUtf8(c, "the database name");
  const size_t table_size = JsonStringSize(c.table->table);
  if (table_size == kNotUtf8) return BadUtf8(c, "the table name");
  size += file_size + gtid_size + db_size + table_size;
  escapes += file_size - s.file.size() + gtid_size - s.gtid.size() + db_size - c.table->db.size() +
             table_size - c.table->table.size() - 8;
  const bool clean = escapes == 0;

  const size_t old = out->size();
  out->resize(old + size);
  char* const start = out->data() + old;
  char* w = start;
  *w++ = '{';
  w = WriteImage(c, "before", c.before, has_before, clean, w);
  *w++ = ',';
  w = WriteImage(c, "after", c.after, has_after, clean, w);
  w = WriteLiteral(",\"op\":\"", w);
  *w++ = static_cast<char>(c.op);
  w = WriteLiteral("\",\"ts_ms\":", w);
  w = WriteDecimal(ts_ms, w);
  w = WriteLiteral(",\"source\":{\"connector\":\"sluice\",\"flavor\":\"", w);
  w = WriteLiteral(FlavorName(s.flavor), w);
  w = WriteLiteral("\",\"server_id\":", w);
  w = WriteDecimal(uint64_t{s.server_id}, w);
  w = WriteLiteral(",\"file\":", w);
  w = WriteString(s.file, clean, w);
  w = WriteLiteral(",\"pos\":", w);
  w = WriteDecimal(s.pos, w);
  w = WriteLiteral(",\"gtid\":", w);
  w = s.gtid.empty() ? WriteLiteral("null", w) : WriteString(s.gtid, clean, w);
  w = WriteLiteral(",\"db\":", w);
  w = WriteString(c.table->db, clean, w);
  w = WriteLiteral(",\"table\":", w);
  w = WriteString(c.table->table, clean, w);
  w = WriteLiteral(s.snapshot ? ",\"snapshot\":true" : ",\"snapshot\":false", w);
  w = WriteLiteral(",\"ts_ms\":", w);
  w = WriteDecimal(uint64_t{s.timestamp} * 1000, w);
  w = WriteLiteral(",\"row\":", w);
  w = WriteDecimal(uint64_t{s.row}, w);
  w = WriteLiteral("}}", w);
  out->resize(old + static_cast<size_t>(w - start));
  return Status::Ok();
}

namespace {

constexpr std::string_view kReadHead = "{\"before\":null,\"after\":{";

// The parts every read line of `table` at (source, ts_ms) shares, cut out of the general
// writer's own output for a row of NULLs, so they cannot drift from it:
// {"before":null,"after":{ <"name":value,...> <tail, with the '\n'>. False when that cannot
// be done (no columns, a name or source text that is not UTF-8): write each row the general way.
bool ReadLineSharedParts(const TableSchemaPtr& table, const SourceInfo& source, int64_t ts_ms, std::string* names,
                         std::vector<size_t>* name_end, std::string* tail) {
  const auto& cols = table->columns;
  const size_t n = cols.size();
  names->clear();
  tail->clear();
  name_end->assign(n, 0);
  bool shared = n > 0;
  for (size_t i = 0; i < n && shared; ++i) {
    shared = AppendJsonString(cols[i].name, names);
    names->push_back(':');
    (*name_end)[i] = names->size();
  }
  if (!shared) return false;
  const RowChange probe = ReadChange(Op::kRead, table, Row(n, Value::Null()), source);
  std::string whole;
  const size_t body = kReadHead.size() + names->size() + 4 * n + (n - 1);  // names, "null"s, commas
  shared = AppendEnvelope(probe, ts_ms, &whole).ok() && whole.size() > body &&
           whole.compare(0, kReadHead.size(), kReadHead) == 0 && whole[body] == '}';
  if (!shared) return false;
  tail->assign(whole, body);
  tail->push_back('\n');
  return true;
}

}  // namespace

Status AppendReadLines(const TableSchemaPtr& table, const std::vector<Row>& rows, const SourceInfo& source,
                       int64_t ts_ms, std::string* out) {
  const auto generic = [&](const Row& row) -> Status {
    RETURN_IF_ERROR(AppendEnvelope(ReadChange(Op::kRead, table, row, source), ts_ms, out));
    out->push_back('\n');
    return Status::Ok();
  };
  if (table == nullptr || rows.empty()) {
    for (const Row& row : rows) RETURN_IF_ERROR(generic(row));
    return Status::Ok();
  }
  const auto& cols = table->columns;
  const size_t n = cols.size();
  std::string names;                 // "name": per column, escaped
  std::vector<size_t> name_end(n);   // end of each column's part of `names`
  std::string tail;
  if (!ReadLineSharedParts(table, source, ts_ms, &names, &name_end, &tail)) {
    for (const Row& row : rows) RETURN_IF_ERROR(generic(row));
    return Status::Ok();
  }

  // Pass 1: check every row and size it (exact for text); rows that need escapes are noted,
  // the others' strings are copied as they are in pass 2. Pass 2 writes through a pointer
  // into space made once for the whole chunk.
  enum : uint8_t { kClean, kEscapes, kGeneric };
  std::vector<uint8_t> how(rows.size(), kClean);
  const size_t fixed = kReadHead.size() + names.size() + (n - 1) + tail.size();
  size_t total = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    const Row& row = rows[r];
    if (row.size() != n) {
      how[r] = kGeneric;
      continue;
    }
    size_t size = fixed;
    for (size_t i = 0; i < n && how[r] != kGeneric; ++i) {
      const Value& v = row[i];
      if (v.is_absent()) {
        how[r] = kGeneric;
        break;
      }
      const size_t s = JsonValueSize(v);
      if (s == kNotUtf8) {
        how[r] = kGeneric;
        break;
      }
      size += s;
      if (v.kind == Value::Kind::kText && s != v.s.size() + 2) how[r] = kEscapes;
    }
    if (how[r] != kGeneric) total += size;
  }
  const size_t old = out->size();
  out->resize(old + total);
  char* w = out->data() + old;
  for (size_t r = 0; r < rows.size(); ++r) {
    if (how[r] == kGeneric) {
      // Out of order with the space made above: close it up to here, append, make it again.
      const size_t at = static_cast<size_t>(w - out->data());
      const size_t left = out->size() - at;
      out->resize(at);
      RETURN_IF_ERROR(generic(rows[r]));
      const size_t now = out->size();
      out->resize(now + left);
      w = out->data() + now;
      continue;
    }
    const Row& row = rows[r];
    const bool clean = how[r] == kClean;
    w = WriteLiteral(kReadHead, w);
    size_t from = 0;
    for (size_t i = 0; i < n; ++i) {
      if (i > 0) *w++ = ',';
      w = WriteLiteral(std::string_view(names).substr(from, name_end[i] - from), w);
      from = name_end[i];
      const Value& v = row[i];
      w = v.kind == Value::Kind::kText ? WriteString(v.s, clean, w) : WriteJsonValue(v, w);
    }
    w = WriteLiteral(tail, w);
  }
  out->resize(static_cast<size_t>(w - out->data()));
  return Status::Ok();
}

}  // namespace sluice

namespace sluice {

namespace {

// How AppendRowsEventLines writes a column of an image, chosen once per rows event from its
// plan (binlog/value_decoder.h gives each type's bytes).
enum class DirectKind : uint8_t {
  kInt,      // 1-8 bytes little-endian, as DecodeColumnValue's kInt/kUInt
  kUtf8,     // length-prefixed text in a UTF-8 charset (CHAR: trailing spaces cut): a JSON string
  kBinary,   // length-prefixed bytes of a binary (or unknown) charset, not CHAR: base64
  kGeneral,  // anything else: DecodeColumnValue, then AppendJsonValue
};

struct DirectColumn {
  DirectKind kind = DirectKind::kGeneral;
  uint8_t bytes = 0;  // kInt: value bytes; kUtf8/kBinary: length-prefix bytes
  bool is_unsigned = false;
  bool is_char = false;
};

DirectColumn DirectColumnOf(const binlog::ColumnContext& c) {
  using T = binlog::ColumnType;
  DirectColumn d;
  d.is_unsigned = c.is_unsigned;
  auto text = [&](uint8_t prefix, bool is_char) {
    d.bytes = prefix;
    d.is_char = is_char;
    if (binlog::IsUtf8Charset(c.charset)) {
      d.kind = DirectKind::kUtf8;
    } else if ((c.charset.empty() || c.charset == "binary") && !is_char) {
      d.kind = DirectKind::kBinary;  // BINARY(n) is re-padded to n bytes: left to kGeneral
    }
  };
  switch (c.type) {
    case T::MYSQL_TYPE_TINY: d = {DirectKind::kInt, 1, c.is_unsigned}; break;
    case T::MYSQL_TYPE_SHORT: d = {DirectKind::kInt, 2, c.is_unsigned}; break;
    case T::MYSQL_TYPE_INT24: d = {DirectKind::kInt, 3, c.is_unsigned}; break;
    case T::MYSQL_TYPE_LONG: d = {DirectKind::kInt, 4, c.is_unsigned}; break;
    case T::MYSQL_TYPE_LONGLONG: d = {DirectKind::kInt, 8, c.is_unsigned}; break;
    case T::MYSQL_TYPE_VARCHAR:
    case T::MYSQL_TYPE_VAR_STRING: text(c.meta < 256 ? 1 : 2, false); break;
    case T::MYSQL_TYPE_STRING: {
      const binlog::StringMeta sm = binlog::DecodeStringMeta(c.meta);
      if (sm.real_type == T::MYSQL_TYPE_STRING && c.fixed_binary == binlog::FixedBinaryType::kNone)
        text(sm.length < 256 ? 1 : 2, true);
      break;
    }
    case T::MYSQL_TYPE_TINY_BLOB:
    case T::MYSQL_TYPE_MEDIUM_BLOB:
    case T::MYSQL_TYPE_LONG_BLOB:
    case T::MYSQL_TYPE_BLOB:
      if (c.meta >= 1 && c.meta <= 4) text(static_cast<uint8_t>(c.meta), false);
      break;
    default: break;
  }
  return d;
}

// Writes `s` as a JSON string at w as AppendJsonString does (the same escapes, the same UTF-8
// check, RFC 3629); nullptr when `s` is not valid UTF-8. Needs 6 * s.size() + 2 bytes at w.
char* WriteCheckedJsonString(std::string_view s, char* w) { return WriteJsonStringImpl<true>(s, w); }

// AppendRowsEventLines' output: written through a pointer into space made ahead rather than
// appended piece by piece (the appends' length and capacity checks were a tenth of the
// decoding thread's time in the issue 8 catch-up). Room(k) makes k bytes writable at w;
// Close() cuts the string to what was written. Between Room calls nothing else touches *out.
class LineSpace {
 public:
  explicit LineSpace(std::string* out, size_t expect) : out_(out), old_(out->size()) {
    out_->resize(old_ + expect);
    w = out_->data() + old_;
    end_ = out_->data() + out_->size();
  }
  void Room(size_t k) {
    if (static_cast<size_t>(end_ - w) < k) Grow(k);
  }
  void Close() { out_->resize(static_cast<size_t>(w - out_->data())); }
  void Abandon() { out_->resize(old_); }
  // For writers that append to the string (values the general way): Close, append, Reopen.
  std::string* Closed() {
    Close();
    return out_;
  }
  void Reopen(size_t expect) {
    const size_t at = out_->size();
    out_->resize(at + expect);
    w = out_->data() + at;
    end_ = out_->data() + out_->size();
  }
  char* w = nullptr;

 private:
  void Grow(size_t k) {
    const size_t at = static_cast<size_t>(w - out_->data());
    out_->resize(std::max(at + k, out_->size() + out_->size() / 2));
    w = out_->data() + at;
    end_ = out_->data() + out_->size();
  }
  std::string* out_;
  size_t old_;
  char* end_ = nullptr;
};

template <size_t N>
inline char* WriteLit(const char (&lit)[N], char* w) {
  std::memcpy(w, lit, N - 1);
  return w + N - 1;
}

// Writes one non-NULL value of an image; false when the general path must take the event.
bool WriteDirectValue(ByteReader& r, const DirectColumn& d, const binlog::ColumnContext& ctx, LineSpace& o) {
  switch (d.kind) {
    case DirectKind::kInt: {
      auto v = r.ReadLe(d.bytes);
      if (!v.ok()) return false;
      o.Room(24);
      if (d.is_unsigned) {
        o.w = WriteDecimal(*v, o.w);
      } else {
        const unsigned shift = static_cast<unsigned>(64 - 8 * d.bytes);
        o.w = WriteDecimal(static_cast<int64_t>(*v << shift) >> shift, o.w);
      }
      return true;
    }
    case DirectKind::kUtf8:
    case DirectKind::kBinary: {
      auto len = r.ReadLe(d.bytes);
      if (!len.ok() || *len > r.remaining()) return false;
      auto s = r.ReadString(static_cast<size_t>(*len));
      if (!s.ok()) return false;
      std::string_view t = *s;
      if (d.kind == DirectKind::kBinary) {
        o.Room((t.size() + 2) / 3 * 4 + 2);
        *o.w++ = '"';
        o.w = WriteBase64(t, o.w);
        *o.w++ = '"';
        return true;
      }
      // CHAR's pad spaces are one byte each and never inside a multibyte sequence (as
      // StringValue cuts them); the UTF-8 check is IsValidUtf8's (RFC 3629).
      if (d.is_char)
        while (!t.empty() && t.back() == ' ') t.remove_suffix(1);
      o.Room(6 * t.size() + 2);
      char* w = WriteCheckedJsonString(t, o.w);
      if (w == nullptr) return false;
      o.w = w;
      return true;
    }
    case DirectKind::kGeneral: {
      auto v = binlog::DecodeColumnValue(r, ctx);
      if (!v.ok()) return false;
      const bool ok = AppendJsonValue(*v, o.Closed());
      o.Reopen(r.remaining() * 2 + 256);
      return ok;
    }
  }
  return false;
}

}  // namespace

struct RowsEventLinesCache::Table {
  TableSchemaPtr hold;  // keeps the key's pointer from being reused
  bool usable = true;   // false: its names are not UTF-8, or its parts did not match
  std::string names;    // "name": per column, escaped
  std::vector<uint32_t> name_end;  // end of each column's part of `names`
  std::string db_table;            // ,"db":<db>,"table":<table>
  // What an image writes before each column's value: '{' or ',' and the column's "name":,
  // one after the other (lead_end[i]: end of column i's), then 16 bytes of padding so that
  // short ones can be copied 16 bytes at a time.
  std::string leads;
  std::vector<uint32_t> lead_end;
  bool checked[3] = {false, false, false};  // c, u, d: the parts matched AppendEnvelope's
  std::vector<DirectColumn> how;            // scratch: per column, for the current event
};

struct RowsEventLinesCache::TailParts {
  bool head_made = false;  // head holds the text of the fields below
  std::string head;
  int64_t ts_ms = 0;
  Flavor flavor = Flavor::kUnknown;
  uint32_t server_id = 0;
  std::string file;
  bool rest_made = false;  // rest holds the text of the fields below
  std::string rest;
  const Table* table = nullptr;  // its db_table (Table objects live as long as the cache)
  uint32_t timestamp = 0;
  bool snapshot = false;
  std::string gtid;
};

RowsEventLinesCache::RowsEventLinesCache() = default;
RowsEventLinesCache::~RowsEventLinesCache() = default;

namespace {

// The part of an envelope after the images up to the row number, as AppendEnvelope writes it:
// ,"op":"X","ts_ms":T,"source":{...,"table":<table>,"snapshot":false,"ts_ms":E,"row":
// made of `,"op":"`, the op, `head` (from `","ts_ms":` to `,"pos":`), the event's position and
// `rest` (from `,"gtid":` to `,"row":`). Events of a stream share the head until the clock
// moves a millisecond or the file changes, and the rest within a transaction and table; each
// is made again only when what it is made of changed (rebuilding the whole tail per rows
// event was a tenth of the lines' instructions). False when the file or GTID is not UTF-8.
bool StreamTail(Op op, const SourceInfo& s, const RowsEventLinesCache::Table* table, std::string_view db_table,
                int64_t ts_ms, RowsEventLinesCache::TailParts* parts, std::string* out) {
  RowsEventLinesCache::TailParts& p = *parts;
  if (!p.head_made || p.ts_ms != ts_ms || p.flavor != s.flavor || p.server_id != s.server_id || p.file != s.file) {
    p.head_made = false;
    const std::string_view flavor = FlavorName(s.flavor);
    p.head.resize(160 + flavor.size() + 6 * s.file.size());
    char* w = p.head.data();
    w = WriteLit("\",\"ts_ms\":", w);
    w = WriteDecimal(ts_ms, w);
    w = WriteLit(",\"source\":{\"connector\":\"sluice\",\"flavor\":\"", w);
    w = WriteLiteral(flavor, w);
    w = WriteLit("\",\"server_id\":", w);
    w = WriteDecimal(uint64_t{s.server_id}, w);
    w = WriteLit(",\"file\":", w);
    if ((w = WriteCheckedJsonString(s.file, w)) == nullptr) return false;
    w = WriteLit(",\"pos\":", w);
    p.head.resize(static_cast<size_t>(w - p.head.data()));
    p.ts_ms = ts_ms;
    p.flavor = s.flavor;
    p.server_id = s.server_id;
    p.file = s.file;
    p.head_made = true;
  }
  if (!p.rest_made || p.table != table || p.timestamp != s.timestamp || p.snapshot != s.snapshot ||
      p.gtid != s.gtid) {
    p.rest_made = false;
    p.rest.resize(80 + 6 * s.gtid.size() + db_table.size());
    char* w = p.rest.data();
    w = WriteLit(",\"gtid\":", w);
    if (s.gtid.empty()) {
      w = WriteLit("null", w);
    } else if ((w = WriteCheckedJsonString(s.gtid, w)) == nullptr) {
      return false;
    }
    w = WriteLiteral(db_table, w);
    w = s.snapshot ? WriteLit(",\"snapshot\":true", w) : WriteLit(",\"snapshot\":false", w);
    w = WriteLit(",\"ts_ms\":", w);
    w = WriteDecimal(uint64_t{s.timestamp} * 1000, w);
    w = WriteLit(",\"row\":", w);
    p.rest.resize(static_cast<size_t>(w - p.rest.data()));
    p.table = table;
    p.timestamp = s.timestamp;
    p.snapshot = s.snapshot;
    p.gtid = s.gtid;
    p.rest_made = true;
  }
  out->resize(8 + p.head.size() + 24 + p.rest.size());
  char* w = out->data();
  w = WriteLit(",\"op\":\"", w);
  *w++ = static_cast<char>(op);
  w = WriteLiteral(p.head, w);
  w = WriteDecimal(s.pos, w);
  w = WriteLiteral(p.rest, w);
  out->resize(static_cast<size_t>(w - out->data()));
  return true;
}

}  // namespace

std::optional<size_t> AppendRowsEventLines(const binlog::RowsEvent& event, const binlog::TableMap& map,
                                           const binlog::RowPlans& plans, const TableSchemaPtr& table,
                                           const SourceInfo& source, int64_t ts_ms, RowsEventLinesCache* cache,
                                           std::string* out) {
  using binlog::RowsKind;
  if (table == nullptr || event.kind == RowsKind::kPartialUpdate) return std::nullopt;
  const auto& cols = table->columns;
  const size_t n = cols.size();
  if (n == 0 || event.column_count != n || map.column_count() != n || binlog::PlanColumnCount(plans) != n ||
      (!map.column_meta.empty() && map.column_meta.size() != n))
    return std::nullopt;
  const bool has_before = event.kind != RowsKind::kWrite;
  const bool has_after = event.kind != RowsKind::kDelete;
  const auto full = [n](const std::vector<bool>& present) {
    return present.size() == n && std::find(present.begin(), present.end(), false) == present.end();
  };
  if ((has_before && !full(event.present_before)) || (has_after && !full(event.present_after)))
    return std::nullopt;
  const Op op = has_before && has_after ? Op::kUpdate : has_before ? Op::kDelete : Op::kCreate;

  std::unique_ptr<RowsEventLinesCache::Table>& slot = cache->tables[table.get()];
  if (slot == nullptr) {
    if (cache->tables.size() > 4096) {  // definitions come and go with DDL: start over
      cache->tables.clear();
      cache->tail_parts.reset();  // its rest names a Table by address
      return AppendRowsEventLines(event, map, plans, table, source, ts_ms, cache, out);
    }
    slot = std::make_unique<RowsEventLinesCache::Table>();
    RowsEventLinesCache::Table& t = *slot;
    t.hold = table;
    t.name_end.resize(n);
    for (size_t i = 0; i < n && t.usable; ++i) {
      t.usable = AppendJsonString(cols[i].name, &t.names);
      t.names.push_back(':');
      t.name_end[i] = static_cast<uint32_t>(t.names.size());
    }
    t.lead_end.resize(n);
    for (size_t i = 0, from = 0; i < n && t.usable; from = t.name_end[i], ++i) {
      t.leads.push_back(i == 0 ? '{' : ',');
      t.leads.append(t.names, from, t.name_end[i] - from);
      t.lead_end[i] = static_cast<uint32_t>(t.leads.size());
    }
    t.leads.append(16, '\0');
    t.db_table = ",\"db\":";
    t.usable = t.usable && AppendJsonString(table->db, &t.db_table);
    t.db_table += ",\"table\":";
    t.usable = t.usable && AppendJsonString(table->table, &t.db_table);
  }
  RowsEventLinesCache::Table& t = *slot;
  if (!t.usable) return std::nullopt;
  std::string& tail = cache->tail;
  if (cache->tail_parts == nullptr) cache->tail_parts = std::make_unique<RowsEventLinesCache::TailParts>();
  if (!StreamTail(op, source, &t, t.db_table, ts_ms, cache->tail_parts.get(), &tail)) return std::nullopt;
  const int op_index = op == Op::kCreate ? 0 : op == Op::kUpdate ? 1 : 2;
  if (!t.checked[op_index]) {
    // The shared parts, checked once per table and op against the general writer's own output
    // for a change of NULLs, so they cannot drift from it.
    RowChange probe;
    probe.op = op;
    probe.table = table;
    if (has_before) probe.before.assign(n, Value::Null());
    if (has_after) probe.after.assign(n, Value::Null());
    probe.source = source;
    probe.source.row = 0;
    std::string whole;
    if (!AppendEnvelope(probe, ts_ms, &whole).ok()) return std::nullopt;
    std::string null_image = "{";
    for (size_t i = 0, from = 0; i < n; from = t.name_end[i], ++i) {
      if (i > 0) null_image.push_back(',');
      null_image.append(t.names, from, t.name_end[i] - from);
      null_image.append("null");
    }
    null_image.push_back('}');
    const std::string expect = std::string("{\"before\":") + (has_before ? null_image : "null") + ",\"after\":" +
                               (has_after ? null_image : "null") + tail + "0}}";
    if (whole != expect) {
      t.usable = false;
      return std::nullopt;
    }
    t.checked[op_index] = true;
  }

  t.how.resize(n);
  for (size_t i = 0; i < n; ++i) t.how[i] = DirectColumnOf(binlog::PlanColumn(plans, i));
  const size_t bitmap_bytes = (n + 7) / 8;
  // Room for a column besides its value's text: its name, ',' and "null" or an integer.
  const size_t per_column = 32;
  LineSpace o(out, event.body.size() * 2 + 2 * (t.names.size() + n * per_column) + tail.size() + 64);
  const auto image = [&](ByteReader& r) {
    auto bitmap = r.ReadBytes(bitmap_bytes);
    if (!bitmap.ok()) return false;
    o.Room(2 + t.leads.size() + n * per_column);
    for (size_t i = 0, from = 0; i < n; from = t.lead_end[i], ++i) {
      const size_t len = t.lead_end[i] - from;
      o.Room(len + per_column);
      if (len <= 16) {
        std::memcpy(o.w, t.leads.data() + from, 16);  // within leads' padding and the room made
      } else {
        std::memcpy(o.w, t.leads.data() + from, len);
      }
      o.w += len;
      if (((*bitmap)[i / 8] >> (i % 8)) & 1) {
        o.w = WriteLit("null", o.w);
      } else if (!WriteDirectValue(r, t.how[i], binlog::PlanColumn(plans, i), o)) {
        return false;
      }
    }
    o.Room(1);
    *o.w++ = '}';
    return true;
  };
  ByteReader r(event.body, event.body_offset, "row image");
  size_t rows = 0;
  while (!r.empty()) {
    const size_t row_start = r.position();
    // One side of the envelope: the event's image of it, or null when the event has none.
    const auto side = [&](bool after, bool present) {
      o.Room(16);
      o.w = after ? WriteLit(",\"after\":", o.w) : WriteLit("{\"before\":", o.w);
      if (!present) {
        o.w = WriteLit("null", o.w);
        return true;
      }
      return image(r);
    };
    // The last test is DecodeRows' error: images that read no bytes.
    if (!side(false, has_before) || !side(true, has_after) || r.position() == row_start) {
      o.Abandon();
      return std::nullopt;
    }
    o.Room(tail.size() + 24 + 3);
    std::memcpy(o.w, tail.data(), tail.size());
    o.w += tail.size();
    o.w = WriteDecimal(rows, o.w);
    o.w = WriteLit("}}\n", o.w);
    ++rows;
  }
  o.Close();
  return rows;
}

ReadLineWriter::ReadLineWriter(TableSchemaPtr table) : table_(std::move(table)) {
  if (table_ == nullptr) return;
  for (const ColumnDesc& c : table_->columns) form_.push_back(static_cast<uint8_t>(TextCellFormOf(c)));
  values_.resize(form_.size());
  how_.resize(form_.size());
}

void ReadLineWriter::Begin(const SourceInfo& source, int64_t ts_ms) {
  source_ = source;
  ts_ms_ = ts_ms;
  shared_ = table_ != nullptr && ReadLineSharedParts(table_, source_, ts_ms_, &names_, &name_end_, &tail_);
  if (shared_) fixed_ = kReadHead.size() + names_.size() + (form_.size() - 1) + tail_.size();
}

Status ReadLineWriter::AppendConverted(const std::vector<std::optional<std::string_view>>& cells,
                                       std::string* out) {
  if (one_.empty()) one_.emplace_back();
  Row& row = one_[0];
  row.clear();
  for (size_t i = 0; i < cells.size(); ++i) {
    Result<Value> v = ValueFromText(table_->columns[i], cells[i]);
    if (!v.ok()) return v.status().WithContext(table_->QualifiedName());
    row.push_back(std::move(v).value());
  }
  return AppendReadLines(table_, one_, source_, ts_ms_, out);
}

Status ReadLineWriter::Append(const std::vector<std::optional<std::string_view>>& cells, std::string* out) {
  if (table_ == nullptr) return Status::InvalidArgument("row change without a table schema");
  const size_t n = form_.size();
  if (cells.size() != n)
    return Status::Internal(fmt::format("{}: got {} cells for {} columns", table_->QualifiedName(), cells.size(), n));
  if (!shared_) return AppendConverted(cells, out);
  // Pass 1: how each cell is written and the line's size (exact for text); pass 2 writes.
  enum : uint8_t { kNull, kAsIs, kEscaped, kValue };
  size_t size = fixed_;
  for (size_t i = 0; i < n; ++i) {
    const std::optional<std::string_view>& cell = cells[i];
    if (!cell) {
      how_[i] = kNull;
      size += 4;
      continue;
    }
    const auto form = static_cast<TextCellForm>(form_[i]);
    if (form == TextCellForm::kText) {
      const size_t s = JsonStringSize(*cell);
      if (s == kNotUtf8) return AppendConverted(cells, out);  // for the general way's message
      how_[i] = s == cell->size() + 2 ? kAsIs : kEscaped;
      size += s;
      continue;
    }
    if ((form == TextCellForm::kInteger || form == TextCellForm::kUnsigned) &&
        CanonicalInteger(*cell, form == TextCellForm::kInteger)) {
      how_[i] = kAsIs;
      size += cell->size();
      continue;
    }
    Result<Value> v = ValueFromText(table_->columns[i], cell);
    if (!v.ok()) return v.status().WithContext(table_->QualifiedName());
    values_[i] = std::move(v).value();
    const size_t s = JsonValueSize(values_[i]);
    if (s == kNotUtf8) return AppendConverted(cells, out);
    how_[i] = kValue;
    size += s;
  }
  const size_t old = out->size();
  out->resize(old + size);
  char* w = out->data() + old;
  w = WriteLiteral(kReadHead, w);
  size_t from = 0;
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) *w++ = ',';
    w = WriteLiteral(std::string_view(names_).substr(from, name_end_[i] - from), w);
    from = name_end_[i];
    switch (how_[i]) {
      case kNull: w = WriteLiteral("null", w); break;
      case kAsIs:
        if (static_cast<TextCellForm>(form_[i]) == TextCellForm::kText) {
          w = WriteString(*cells[i], /*clean=*/true, w);
        } else {
          w = WriteLiteral(*cells[i], w);
        }
        break;
      case kEscaped: w = WriteJsonString(*cells[i], w); break;
      default:
        w = values_[i].kind == Value::Kind::kText ? WriteJsonString(values_[i].s, w) : WriteJsonValue(values_[i], w);
    }
  }
  w = WriteLiteral(tail_, w);
  out->resize(static_cast<size_t>(w - out->data()));
  return Status::Ok();
}

}  // namespace sluice
