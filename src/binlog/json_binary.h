// MySQL binary JSON (the storage form of JSON columns in MySQL 5.7+ row images) -> JSON
// text exactly as MySQL prints it (SELECT json_col, Json_wrapper::to_string).
//
// Grammar (MySQL sql-common/json_binary.cc, header comment):
//   doc     ::= type value
//   type    ::= 0x00 small object | 0x01 large object | 0x02 small array | 0x03 large array
//             | 0x04 literal | 0x05 int16 | 0x06 uint16 | 0x07 int32 | 0x08 uint32
//             | 0x09 int64 | 0x0A uint64 | 0x0B double | 0x0C string | 0x0F opaque
//   object  ::= count size key-entry* value-entry* key* value*   (count/size: 2 bytes small,
//               4 bytes large; key-entry: offset + 2-byte length; value-entry: type +
//               offset, or the value itself when inlined: literal/int16/uint16 always,
//               int32/uint32 in large containers). Offsets count from the container start.
//   array   ::= count size value-entry* value*
//   literal ::= 0x00 null | 0x01 true | 0x02 false
//   string  ::= varlen-length utf8mb4-bytes      (varlen: 7 bits per byte, LE, high bit = more)
//   opaque  ::= field-type(1) varlen-length bytes
// Printing (MySQL sql-common/json_dom.cc wrapper_to_string): ", " between elements,
// ": " after keys, strings escaped by double_quote (\" \\ \b \f \n \r \t, other < 0x20 as
// \u00xx), doubles by my_gcvt(width 34) with ".0" appended when neither '.' nor 'e' is
// printed; opaque DECIMAL prints as a bare number, DATE/TIME/DATETIME/TIMESTAMP as quoted
// strings with 6 fractional digits, VAR_STRING as a string, anything else as
// "base64:type<N>:<base64 with a newline every 76 chars>".
// An empty input is the JSON null literal (MySQL stores empty JSON as null).
// Errors: kCorruption naming the byte offset within the document. Nesting is limited to
// kMaxJsonDepth. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "util/status.h"

namespace sluice::binlog {

inline constexpr int kMaxJsonDepth = 150;

Result<std::string> JsonBinaryToText(std::span<const uint8_t> data);

// A double as MySQL's JSON printer writes it: "1.5", "1.0", "1e15", "0.0000001", "-0.0".
std::string FormatJsonDouble(double d);

// MySQL's base64_encode (mysys/base64.cc): standard alphabet with '=' padding and a
// '\n' before every group that would start column 77.
std::string MysqlBase64(std::span<const uint8_t> data);

}  // namespace sluice::binlog
