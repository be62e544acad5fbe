// The snapshot side of the value converter: text-protocol cells -> canonical Values.
//
// Per DATA_TYPE (information_schema.COLUMNS), the SELECT expression and the parse:
//   tinyint..bigint         `c`                 -> kInt / kUInt (is_unsigned)
//   year                    `c`                 -> kInt ("0000" -> 0)
//   bit                     `c`+0               -> kUInt (the server prints it in decimal)
//   float                   CAST(`c` AS DOUBLE) -> kFloat: the server prints the exact
//                           widened double with round-trip digits; narrowed back exactly
//   double                  CAST(`c` AS DOUBLE) -> kDouble (round-trip digits; a bare
//                           DOUBLE(M,D) prints rounded to D decimals, the CAST does not)
//   decimal                 `c`                 -> kText as printed (scale digits kept)
//   date/time/datetime/timestamp `c`            -> kText (session time_zone '+00:00')
//   char/varchar/text/enum/set/json and MariaDB uuid/inet4/inet6 `c` -> kText (UTF-8
//                           results); a column whose charset is "binary" -> kBytes
//   binary/varbinary/*blob, geometry types  `c` -> kBytes (raw bytes)
//   vector (MySQL 9)        `c` -> kText, VectorBytesToText of the raw bytes
// Sources: MariaDB/MySQL manuals, "Data Types"; compare binlog/value_decoder.h.
#include "schema/text_value.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include <fmt/format.h>

namespace sluice {
namespace {

enum class Kind { kSigned, kUnsigned, kYear, kBit, kFloat, kDouble, kText, kBytes, kVector, kUnknown };

bool Among(std::string_view t, std::initializer_list<std::string_view> names) {
  for (auto n : names)
    if (t == n) return true;
  return false;
}

Kind KindOf(const ColumnDesc& col) {
  const std::string_view t = col.data_type;
  if (Among(t, {"tinyint", "smallint", "mediumint", "int", "integer", "bigint"}))
    return col.is_unsigned ? Kind::kUnsigned : Kind::kSigned;
  if (t == "year") return Kind::kYear;
  if (t == "bit") return Kind::kBit;
  if (t == "float") return Kind::kFloat;
  if (Among(t, {"double", "real", "double precision"})) return Kind::kDouble;
  if (Among(t, {"decimal", "numeric", "date", "time", "datetime", "timestamp", "json", "enum",
                "set", "uuid", "inet4", "inet6"}))
    return Kind::kText;
  if (Among(t, {"char", "varchar", "tinytext", "text", "mediumtext", "longtext"}))
    return col.charset == "binary" ? Kind::kBytes : Kind::kText;
  if (Among(t, {"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob", "geometry",
                "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon",
                "geometrycollection", "geomcollection"}))
    return Kind::kBytes;
  if (t == "vector") return Kind::kVector;
  return Kind::kUnknown;
}

Status Bad(const ColumnDesc& col, std::string_view text) {
  return Status::Corruption(fmt::format("column {} ({}): cannot parse '{}'", col.name,
                                        col.column_type.empty() ? col.data_type : col.column_type,
                                        text.substr(0, 64)));
}

template <typename T>
bool ParseInteger(std::string_view s, T* out) {
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

bool ParseDouble(std::string_view s, double* out) {
  if (s.empty() || s.size() > 64) return false;
  std::string z(s);
  char* end = nullptr;
  errno = 0;
  *out = std::strtod(z.c_str(), &end);
  return end == z.c_str() + z.size() && std::isfinite(*out);
}

}  // namespace

Result<Value> DefaultValue(const ColumnDesc& col) {
  if (!col.default_value.has_value()) return Value::Null();
  std::string_view d = *col.default_value;
  if (d == "NULL") return Value::Null();
  if (d.size() >= 2 && d.front() == '\'' && d.back() == '\'') {
    // MariaDB quotes literal strings, doubling quotes; backslashes are escaped as \\.
    std::string text;
    for (size_t i = 1; i + 1 < d.size(); ++i) {
      if (d[i] == '\'' && i + 2 < d.size() && d[i + 1] == '\'') ++i;
      else if (d[i] == '\\' && i + 2 < d.size()) {
        ++i;
        switch (d[i]) {
          case 'n': text.push_back('\n'); continue;
          case 't': text.push_back('\t'); continue;
          case 'r': text.push_back('\r'); continue;
          case '0': text.push_back('\0'); continue;
          case 'Z': text.push_back('\032'); continue;
          default: break;
        }
      }
      text.push_back(d[i]);
    }
    if (KindOf(col) == Kind::kText && Among(col.data_type, {"char"})) {
      size_t end = text.find_last_not_of(' ');
      text.resize(end == std::string::npos ? 0 : end + 1);
    }
    if (col.data_type == "binary" && text.size() < col.octet_length) text.resize(col.octet_length, '\0');
    return ValueFromText(col, text);
  }
  if (KindOf(col) == Kind::kBit && d.size() >= 3 && (d[0] == 'b' || d[0] == 'B') && d[1] == '\'') {
    uint64_t v = 0;
    for (size_t i = 2; i + 1 < d.size(); ++i) {
      if (d[i] != '0' && d[i] != '1') return Bad(col, d);
      v = v << 1 | static_cast<uint64_t>(d[i] - '0');
    }
    return Value::UInt(v);
  }
  // An expression (a function call or anything with parentheses) is evaluated by the server.
  if (d.find('(') != std::string_view::npos) return Value::Null();
  auto v = ValueFromText(col, d);
  if (!v.ok()) return v.status().WithContext("DEFAULT");
  return v;
}

Result<std::string> VectorBytesToText(std::string_view bytes) {
  if (bytes.size() % 4 != 0)
    return Status::Corruption(fmt::format("VECTOR value of {} bytes is not a multiple of 4", bytes.size()));
  std::string out = "[";
  for (size_t i = 0; i < bytes.size(); i += 4) {
    uint32_t bits = 0;
    for (int k = 3; k >= 0; --k) bits = bits << 8 | static_cast<unsigned char>(bytes[i + k]);
    float f;
    std::memcpy(&f, &bits, sizeof f);
    if (i) out.push_back(',');
    out += Value::Float(f).ToText();
  }
  out.push_back(']');
  return out;
}

std::string QuoteIdentifier(std::string_view name) {
  std::string out = "`";
  for (char c : name) {
    if (c == '`') out.push_back('`');
    out.push_back(c);
  }
  out.push_back('`');
  return out;
}

std::string SnapshotSelectExpr(const ColumnDesc& col) {
  std::string q = QuoteIdentifier(col.name);
  switch (KindOf(col)) {
    // FLOAT: the float32 widened to double, all its digits. DOUBLE: a DOUBLE(M,D) column
    // prints rounded to D decimals, while the binlog carries the stored double; the CAST
    // prints the stored value in full (for a plain DOUBLE it changes nothing).
    case Kind::kFloat:
    case Kind::kDouble: return "CAST(" + q + " AS DOUBLE)";
    case Kind::kBit: return q + "+0";
    default: return q;
  }
}

Result<Value> ValueFromText(const ColumnDesc& col, std::optional<std::string_view> text) {
  if (!text.has_value()) return Value::Null();
  const std::string_view s = *text;
  switch (KindOf(col)) {
    case Kind::kSigned:
    case Kind::kYear: {
      int64_t v;
      if (!ParseInteger(s, &v)) return Bad(col, s);
      return Value::Int(v);
    }
    case Kind::kUnsigned:
    case Kind::kBit: {
      uint64_t v;
      if (!ParseInteger(s, &v)) return Bad(col, s);
      return Value::UInt(v);
    }
    case Kind::kFloat: {
      double d;
      if (!ParseDouble(s, &d)) return Bad(col, s);
      float f = static_cast<float>(d);
      if (!std::isfinite(f)) return Bad(col, s);
      return Value::Float(f);
    }
    case Kind::kDouble: {
      double d;
      if (!ParseDouble(s, &d)) return Bad(col, s);
      return Value::Double(d);
    }
    case Kind::kText: return Value::Text(std::string(s));
    case Kind::kBytes: return Value::Bytes(std::string(s));
    case Kind::kVector: {
      auto v = VectorBytesToText(s);
      if (!v.ok()) return v.status().WithContext(fmt::format("column {}", col.name));
      return Value::Text(std::move(*v));
    }
    case Kind::kUnknown: break;
  }
  return Status::NotSupported(
      fmt::format("column {}: data type '{}' is not supported", col.name, col.data_type));
}

}  // namespace sluice
