// One column value of a row image -> canonical Value (core/value.h, docs/values.md).
//
// DecodeRows (rows.cc) builds a ColumnContext per column from the TABLE_MAP (type,
// metadata, signedness, charset, labels) and, where the map lacks them, the table's
// TableSchema; DecodeColumnValue then reads one non-NULL value. Metadata follows MySQL's
// table_def (sql/rpl_utility.cc) and log_event_print_value (sql/log_event.cc):
//   TINY/SHORT/INT24/LONG/LONGLONG  1/2/3/4/8 bytes LE; signed or not by `is_unsigned`.
//   FLOAT/DOUBLE                    4/8 bytes IEEE LE.
//   NEWDECIMAL                      meta = precision << 8 | scale (binlog/decimal.h).
//   BIT                             meta = byte0 << 8 | byte1 = (bits % 8) << 8 | bytes
//                                   (as table_map.h stores it); value big-endian, (bits+7)/8 bytes.
//   YEAR                            1 byte; 0 -> 0, else 1900 + v.
//   DATE/TIME/DATETIME/TIMESTAMP(2) binlog/temporal.h; meta = fsp for the *2 types.
//   VARCHAR/VAR_STRING              meta = max bytes; 1-byte length if < 256, else 2.
//   STRING                          meta = byte0 << 8 | byte1. If byte0 has not both 0x30
//                                   bits set: length = byte1 | ((byte0 & 0x30) ^ 0x30) << 4,
//                                   real type = byte0 | 0x30; else real type = byte0,
//                                   length = byte1. Real ENUM/SET: value of `length` bytes.
//                                   CHAR: 1-byte length if length < 256, else 2.
//   ENUM/SET (real types)           meta = real_type << 8 | pack length (1-2 / 1-8 bytes).
//   BLOB/TEXT/JSON/GEOMETRY/VECTOR  meta = length-prefix bytes (1..4). VECTOR (MySQL 9) ->
//                                   kText "[f1,f2,...]" (schema/text_value.h VectorBytesToText).
// Strings: charset "binary" -> kBytes (BINARY(n) re-padded with 0x00 to n bytes, as SELECT
// returns it); other charsets -> kText converted to UTF-8, CHAR with trailing spaces
// removed (as SELECT returns it); unknown charset -> kBytes. JSON -> MySQL JSON text.
// MariaDB UUID/INET4/INET6 (ColumnContext.fixed_binary) -> kText as SELECT prints them.
// ENUM -> label (index 0 -> ""), SET -> comma-joined labels; without labels, kUInt of the
// index/bitmask when `allow_unlabeled` else kNotSupported.
// Errors: kCorruption from the reader (absolute offset) or naming the value;
// kNotSupported for types sluice cannot decode. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "binlog/fixed_binary_text.h"
#include "binlog/types.h"
#include "core/value.h"
#include "util/byte_reader.h"
#include "util/status.h"

namespace sluice::binlog {

struct ColumnContext {
  ColumnType type = ColumnType::MYSQL_TYPE_NULL;
  uint16_t meta = 0;
  bool is_unsigned = false;
  std::string_view charset;                         // "" = unknown
  const std::vector<std::string>* labels = nullptr;  // ENUM/SET labels in UTF-8, or null
  bool allow_unlabeled = true;
  // MariaDB UUID/INET4/INET6 (known only from the table definition): a binary STRING
  // column rendered as the text SELECT prints (binlog/fixed_binary_text.h).
  FixedBinaryType fixed_binary = FixedBinaryType::kNone;
};

Result<Value> DecodeColumnValue(ByteReader& r, const ColumnContext& c);

// Resolves the real type and byte length hidden in a STRING column's metadata.
struct StringMeta {
  ColumnType real_type;
  uint32_t length;
};
StringMeta DecodeStringMeta(uint16_t meta);

}  // namespace sluice::binlog
