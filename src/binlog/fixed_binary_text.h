// MariaDB's fixed-size binary data types (UUID, INET4, INET6) -> the text SELECT prints.
//
// These types travel through the binlog as a MYSQL_TYPE_STRING column of the binary
// charset (metadata real type STRING, length 16 / 4 / 16) whose trailing 0x00 bytes the
// server strips (StringPack with the binary charset); the TABLE_MAP does not say which
// type it is, so the caller learns it from the table definition (ColumnDesc.type).
// Layouts (MariaDB plugin/type_uuid/sql_type_uuid.h UUID::pack, plugin/type_inet/
// sql_type_inet.cc Inet4::to_string / Inet6::to_string):
//   UUID   16 bytes in the in-memory order (the order of the text form; the record's
//          swapped "sortable" order is undone by UUID::pack), printed as lower-case
//          8-4-4-4-12 hex digits.
//   INET4  4 bytes, network order, printed as a dotted quad.
//   INET6  16 bytes, network order: eight 16-bit words in lower-case hex without leading
//          zeros; the first longest run of zero words (even a single one) becomes "::";
//          IPv4-compatible (::a.b.c.d, a zero run of exactly six words at the start) and
//          IPv4-mapped (::ffff:a.b.c.d) addresses end in a dotted quad.
// Input shorter than the type's size is re-padded with 0x00 first; longer input is
// kCorruption. Pure; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "schema/column_type.h"
#include "util/status.h"

namespace sluice::binlog {

enum class FixedBinaryType : uint8_t { kNone, kUuid, kInet4, kInet6 };

// kUuid/kInet4/kInet6 for MariaDB's UUID/INET4/INET6 columns, else kNone.
FixedBinaryType FixedBinaryTypeOf(SqlType type);

// Text of `bytes` (as stored in a row image, possibly stripped of trailing zeros).
Result<std::string> FixedBinaryToText(FixedBinaryType type, std::string_view bytes);

}  // namespace sluice::binlog
