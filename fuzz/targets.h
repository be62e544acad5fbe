// The bodies of the libFuzzer targets in fuzz/, shared with the regression test that
// replays tests/fuzz-regressions/<target>/* (src/binlog/fuzz_regressions_test.cc), so a
// committed crasher runs through exactly the code the fuzzer ran.
//
// Each Fuzz* function takes arbitrary bytes, ignores decode errors (they are expected)
// and returns; a crash, hang, sanitizer report or unbounded allocation is a bug. Input
// layouts are described at each function. Header-only; uses only binlog/ and schema/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "binlog/event_stream.h"
#include "binlog/events.h"
#include "binlog/json_binary.h"
#include "binlog/rows_event.h"
#include "binlog/table_map.h"
#include "binlog/types.h"
#include "schema/table_schema.h"

namespace sluice::fuzz {
namespace internal {

using sluice::binlog::DecodedRow;
using sluice::binlog::DecodeOptions;
using sluice::binlog::Event;
using sluice::binlog::EventSlice;
using sluice::binlog::EventStream;
using sluice::binlog::EventStreamOptions;
using sluice::binlog::RowsEvent;

inline constexpr size_t kMaxInnerEvents = 100000;

inline void Use(Event& ev, const EventStream& stream, uint8_t mode) {
  if (mode & 0x04) ev.Own();
  std::string s = sluice::binlog::EventToJson(ev).dump();
  s += ev.DebugString();
  if (auto* rows = std::get_if<RowsEvent>(&ev.body)) {
    auto map = ev.table_map ? ev.table_map : stream.FindTable(rows->table_id);
    if (map) {
      DecodeOptions options;
      options.allow_unlabeled_enum = (mode & 0x08) == 0;
      std::vector<DecodedRow> out;
      (void)sluice::binlog::DecodeRows(*rows, *map, nullptr, options, &out);
    }
  }
}

using sluice::binlog::ColumnType;
using sluice::binlog::TableMap;
using T = ColumnType;

struct Col {
  ColumnType type;
  uint16_t meta;
  bool is_unsigned = false;
  uint32_t collation = 0;
  std::vector<std::string> labels = {};
};

struct Table {
  TableMap map;       // with signedness, charsets and labels (binlog_row_metadata=FULL)
  TableMap bare_map;  // without them: the schema must supply them
  sluice::TableSchema schema;
};

inline std::string CharsetName(uint32_t collation) {
  switch (collation) {
    case 1: return "big5";
    case 8: return "latin1";
    case 13: return "sjis";
    case 28: return "gbk";
    case 33: return "utf8mb3";
    case 35: return "ucs2";
    case 45: return "utf8mb4";
    case 54: return "utf16";
    case 60: return "utf32";
    case 63: return "binary";
    case 248: return "gb18030";
    default: return "";
  }
}

inline Table Make(const char* name, const std::vector<Col>& cols) {
  Table t;
  t.map.table_id = 1;
  t.map.db = "fuzz";
  t.map.table = name;
  t.schema.db = "fuzz";
  t.schema.table = name;
  bool any_labels = false;
  for (size_t i = 0; i < cols.size(); ++i) {
    const Col& c = cols[i];
    t.map.column_types.push_back(c.type);
    t.map.column_meta.push_back(c.meta);
    t.map.nullable.push_back(true);
    t.map.is_unsigned.push_back(c.is_unsigned);
    t.map.collation_ids.push_back(c.collation);
    t.map.labels.push_back(c.labels);
    any_labels |= !c.labels.empty();
    sluice::ColumnDesc d;
    d.name = "c" + std::to_string(i);
    d.is_unsigned = c.is_unsigned;
    d.labels = c.labels;
    d.charset = CharsetName(c.collation);
    d.octet_length = c.meta & 0xFF;
    d.char_max_length = c.meta & 0xFF;
    d.fsp = c.meta <= 6 ? c.meta : 0;
    t.schema.columns.push_back(std::move(d));
  }
  t.map.has_signedness = true;
  t.map.has_charsets = true;
  t.map.has_labels = any_labels;
  t.bare_map = t.map;
  t.bare_map.has_signedness = t.bare_map.has_charsets = t.bare_map.has_labels = false;
  t.bare_map.is_unsigned.clear();
  t.bare_map.collation_ids.clear();
  t.bare_map.labels.clear();
  return t;
}

inline const std::vector<Table>& Tables() {
  static const std::vector<Table>* tables = [] {
    std::vector<std::string> e3 = {"a", "b", "c"};
    std::vector<std::string> many;
    for (int i = 0; i < 300; ++i) many.push_back("l" + std::to_string(i));
    std::vector<std::string> set64;
    for (int i = 0; i < 64; ++i) set64.push_back("s" + std::to_string(i));
    auto* v = new std::vector<Table>;
    v->push_back(Make("ints", {{T::MYSQL_TYPE_TINY, 0}, {T::MYSQL_TYPE_TINY, 0, true},
                               {T::MYSQL_TYPE_SHORT, 0}, {T::MYSQL_TYPE_INT24, 0},
                               {T::MYSQL_TYPE_INT24, 0, true}, {T::MYSQL_TYPE_LONG, 0},
                               {T::MYSQL_TYPE_LONGLONG, 0}, {T::MYSQL_TYPE_LONGLONG, 0, true},
                               {T::MYSQL_TYPE_FLOAT, 4}, {T::MYSQL_TYPE_DOUBLE, 8},
                               {T::MYSQL_TYPE_YEAR, 0}, {T::MYSQL_TYPE_NULL, 0}}));
    v->push_back(Make("decimals", {{T::MYSQL_TYPE_NEWDECIMAL, 10 << 8 | 2},
                                   {T::MYSQL_TYPE_NEWDECIMAL, 65 << 8 | 30},
                                   {T::MYSQL_TYPE_NEWDECIMAL, 1 << 8 | 0},
                                   {T::MYSQL_TYPE_NEWDECIMAL, 38 << 8 | 38},
                                   {T::MYSQL_TYPE_NEWDECIMAL, 0xFFFF},
                                   {T::MYSQL_TYPE_BIT, 0 << 8 | 1}, {T::MYSQL_TYPE_BIT, 1 << 8 | 0},
                                   {T::MYSQL_TYPE_BIT, 7 << 8 | 7}, {T::MYSQL_TYPE_BIT, 0 << 8 | 8},
                                   {T::MYSQL_TYPE_BIT, 0xFFFF}}));
    v->push_back(Make("temporal", {{T::MYSQL_TYPE_DATE, 0}, {T::MYSQL_TYPE_NEWDATE, 0},
                                   {T::MYSQL_TYPE_TIME, 0}, {T::MYSQL_TYPE_DATETIME, 0},
                                   {T::MYSQL_TYPE_TIMESTAMP, 0}, {T::MYSQL_TYPE_TIME2, 0},
                                   {T::MYSQL_TYPE_TIME2, 3}, {T::MYSQL_TYPE_TIME2, 6},
                                   {T::MYSQL_TYPE_DATETIME2, 0}, {T::MYSQL_TYPE_DATETIME2, 1},
                                   {T::MYSQL_TYPE_DATETIME2, 6}, {T::MYSQL_TYPE_TIMESTAMP2, 0},
                                   {T::MYSQL_TYPE_TIMESTAMP2, 4}, {T::MYSQL_TYPE_TIME2, 9},
                                   {T::MYSQL_TYPE_DATETIME2, 200}}));
    v->push_back(Make("strings", {{T::MYSQL_TYPE_VARCHAR, 30, false, 8},      // latin1
                                  {T::MYSQL_TYPE_VARCHAR, 1000, false, 45},   // utf8mb4
                                  {T::MYSQL_TYPE_VAR_STRING, 40, false, 33},  // utf8mb3
                                  {T::MYSQL_TYPE_VARCHAR, 100, false, 35},    // ucs2
                                  {T::MYSQL_TYPE_VARCHAR, 100, false, 54},    // utf16
                                  {T::MYSQL_TYPE_VARCHAR, 100, false, 60},    // utf32
                                  {T::MYSQL_TYPE_VARCHAR, 100, false, 28},    // gbk
                                  {T::MYSQL_TYPE_VARCHAR, 100, false, 13},    // sjis
                                  {T::MYSQL_TYPE_VARCHAR, 100, false, 63},    // binary
                                  {T::MYSQL_TYPE_STRING, 0xFE0A, false, 8},   // CHAR(10) latin1
                                  {T::MYSQL_TYPE_STRING, 0xEEFC, false, 45},  // CHAR(255) utf8mb4 (1020 B)
                                  {T::MYSQL_TYPE_STRING, 0xFE10, false, 63},  // BINARY(16)
                                  {T::MYSQL_TYPE_STRING, 0xCE00, false, 45},  // long CHAR hidden bits
                                  {T::MYSQL_TYPE_VARCHAR, 100, false, 1},     // big5
                                  {T::MYSQL_TYPE_VARCHAR, 100, false, 248},   // gb18030
                                  {T::MYSQL_TYPE_VARCHAR, 100, false, 0}}));  // unknown -> bytes
    v->push_back(Make("blobs", {{T::MYSQL_TYPE_BLOB, 1, false, 63}, {T::MYSQL_TYPE_BLOB, 2, false, 45},
                                {T::MYSQL_TYPE_BLOB, 3, false, 8}, {T::MYSQL_TYPE_BLOB, 4, false, 63},
                                {T::MYSQL_TYPE_JSON, 4}, {T::MYSQL_TYPE_JSON, 2},
                                {T::MYSQL_TYPE_GEOMETRY, 4}, {T::MYSQL_TYPE_BLOB, 0},
                                {T::MYSQL_TYPE_TINY_BLOB, 1}, {T::MYSQL_TYPE_VECTOR, 4},
                                {T::MYSQL_TYPE_TYPED_ARRAY, 0}, {T::MYSQL_TYPE_DECIMAL, 0},
                                {T::MYSQL_TYPE_INVALID, 0}, {T::MYSQL_TYPE_BOOL, 0}}));
    v->push_back(Make("enums", {{T::MYSQL_TYPE_STRING, 0xF701, false, 45, e3},     // ENUM 1 byte
                                {T::MYSQL_TYPE_STRING, 0xF702, false, 45, many},   // ENUM 2 bytes
                                {T::MYSQL_TYPE_STRING, 0xF801, false, 45, e3},     // SET 1 byte
                                {T::MYSQL_TYPE_STRING, 0xF808, false, 45, set64},  // SET 8 bytes
                                {T::MYSQL_TYPE_STRING, 0xF701, false, 8, e3},      // latin1 labels
                                {T::MYSQL_TYPE_STRING, 0xF703},                     // ENUM 3 bytes
                                {T::MYSQL_TYPE_STRING, 0xF809},                     // SET 9 bytes
                                {T::MYSQL_TYPE_STRING, 0xF709},                     // ENUM 9 bytes
                                {T::MYSQL_TYPE_ENUM, 0xF701, false, 45, e3},
                                {T::MYSQL_TYPE_SET, 0xF802, false, 45, e3},
                                {T::MYSQL_TYPE_STRING, 0xF700},                     // ENUM 0 bytes
                                {T::MYSQL_TYPE_STRING, 0x1234}}));
    std::vector<Col> wide;
    for (int i = 0; i < 16; ++i) wide.push_back({T::MYSQL_TYPE_VARCHAR, 65535, false, 63});
    v->push_back(Make("wide", wide));
    v->push_back(Make("empty", {}));
    return v;
  }();
  return *tables;
}

}  // namespace internal

// Event stream target (event_stream_fuzzer). Input: byte 0 = mode bits, then a binlog
// file image (with or without the 4-byte magic "\xfebin"). Mode bits:
//   0x01  stream mode: events go through EventStream::Next (positions from log_pos, ROTATE
//         handling) instead of NextAt (file offsets).
//   0x02  verify CRC32 checksums (off by default, or mutated events would rarely get past
//         the checksum check).
//   0x04  Event::Own() every event before using it.
//   0x08  DecodeOptions.allow_unlabeled_enum = false.
//   0x10  tiny table-map cache (2 entries), to exercise eviction.
// For every event: EventToJson and DebugString; rows events with a known TABLE_MAP go
// through DecodeRows (no schema); TRANSACTION_PAYLOAD inner events are drained through
// NextInner and treated the same.
inline void FuzzEventStream(const uint8_t* data, size_t size) {
  if (size < 1) return;
  const uint8_t mode = data[0];
  std::span<const uint8_t> image(data + 1, size - 1);
  if (image.size() >= 4 && std::memcmp(image.data(), "\xfe" "bin", 4) == 0) image = image.subspan(4);

  binlog::EventStreamOptions options;
  options.verify_checksums = (mode & 0x02) != 0;
  if (mode & 0x10) options.max_table_maps = 2;
  binlog::EventStream stream(options);
  stream.SetPosition("fuzz-bin.000001", 4);

  std::vector<binlog::EventSlice> slices;
  (void)sluice::binlog::SplitEvents(image, 4, &slices);
  for (const binlog::EventSlice& slice : slices) {
    auto ev = (mode & 0x01) ? stream.Next(slice.bytes) : stream.NextAt(slice.bytes, slice.offset);
    if (!ev.ok()) continue;
    internal::Use(*ev, stream, mode);
    size_t inner = 0;
    while (stream.HasPendingInner() && inner++ < internal::kMaxInnerEvents) {
      auto in = stream.NextInner();
      if (!in.ok()) break;
      internal::Use(*in, stream, mode);
    }
    if (stream.HasPendingInner()) return;  // a payload of more inner events than we care to walk
  }
}

// Binary JSON target (json_binary_fuzzer): the bytes go to JsonBinaryToText, the first 8
// (as a double) to FormatJsonDouble. Output is not checked for JSON validity: MySQL itself
// passes invalid UTF-8 and raw base64 line breaks through.
inline void FuzzJsonBinary(const uint8_t* data, size_t size) {
  (void)sluice::binlog::JsonBinaryToText(std::span<const uint8_t>(data, size));
  if (size >= 8) {
    double d;
    std::memcpy(&d, data, sizeof d);
    (void)sluice::binlog::FormatJsonDouble(d);
  }
}

// Row-image target (rows_fuzzer): fixed TableMaps built in code, covering every column
// type and the metadata forms binlog/value_decoder.h lists (STRING hiding ENUM/SET/long
// CHAR, BIT sizes, fsp 0..6 and invalid, BLOB prefix sizes, charsets that need iconv).
// Input: byte 0 selects the table (low 3 bits) and the rows kind (bits 3..4: write,
// update, delete); byte 1 bit 0 passes a TableSchema (with charsets and labels) alongside
// a TABLE_MAP without that metadata, bit 1 sets allow_unlabeled_enum = false; bytes 2..5
// are the before/after columns-absent masks (16 bits each, bit i set = column i absent);
// the rest is the row-image body.
inline void FuzzRows(const uint8_t* data, size_t size) {
  if (size < 6) return;
  const auto& tables = internal::Tables();
  const internal::Table& t = tables[(data[0] & 7) % tables.size()];
  sluice::binlog::RowsEvent ev;
  const int kind = (data[0] >> 3) & 3;
  ev.kind = kind == 1 ? sluice::binlog::RowsKind::kUpdate
            : kind == 2 ? sluice::binlog::RowsKind::kDelete
                        : sluice::binlog::RowsKind::kWrite;
  ev.table_id = 1;
  const size_t n = t.map.column_count();
  ev.column_count = n;
  const uint16_t before_mask = uint16_t(data[2] | data[3] << 8);
  const uint16_t after_mask = uint16_t(data[4] | data[5] << 8);
  for (size_t i = 0; i < n; ++i) {
    ev.present_before.push_back(((before_mask >> (i % 16)) & 1) == 0);  // 0 bits = present
    ev.present_after.push_back(((after_mask >> (i % 16)) & 1) == 0);
  }
  ev.body = std::span<const uint8_t>(data + 6, size - 6);
  ev.body_offset = 100;
  sluice::binlog::DecodeOptions options;
  options.allow_unlabeled_enum = (data[1] & 2) == 0;
  std::vector<sluice::binlog::DecodedRow> out;
  const bool with_schema = (data[1] & 1) != 0;
  const sluice::binlog::TableMap& map = with_schema ? t.bare_map : t.map;
  const sluice::TableSchema* schema = with_schema ? &t.schema : nullptr;
  const sluice::Status st = sluice::binlog::DecodeRows(ev, map, schema, options, &out);
  // The stream decodes with plans built once per TABLE_MAP: same rows, same error.
  auto plans = sluice::binlog::BuildRowPlans(map, schema, options);
  if (!plans.ok()) return;
  std::vector<sluice::binlog::DecodedRow> again;
  const sluice::Status st2 = sluice::binlog::DecodeRows(ev, map, **plans, options, &again);
  bool same = st.ToString() == st2.ToString() && out.size() == again.size();
  for (size_t i = 0; same && i < out.size(); ++i)
    same = out[i].before == again[i].before && out[i].after == again[i].after;
  if (!same) std::abort();
}

}  // namespace sluice::fuzz
