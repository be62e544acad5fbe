// The snapshot side of the value converter: text-protocol cells -> canonical Values.
//
// Per column type (ColumnDesc.type, schema/column_type.h), the SELECT expression and the parse:
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

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include <fmt/format.h>

namespace sluice {
namespace {

enum class Kind { kSigned, kUnsigned, kYear, kBit, kFloat, kDouble, kText, kBytes, kVector, kUnknown };

Kind KindOf(const ColumnDesc& col) {
  const SqlType t = col.type;
  if (IsIntegerType(t)) return col.is_unsigned ? Kind::kUnsigned : Kind::kSigned;
  if (IsCharacterType(t)) return col.charset == "binary" ? Kind::kBytes : Kind::kText;
  if (IsBinaryType(t) || IsGeometryType(t)) return Kind::kBytes;
  if (IsTemporalType(t) || IsFixedBinaryTextType(t)) return Kind::kText;
  switch (t) {
    case SqlType::kYear: return Kind::kYear;
    case SqlType::kBit: return Kind::kBit;
    case SqlType::kFloat: return Kind::kFloat;
    case SqlType::kDouble: return Kind::kDouble;
    case SqlType::kDecimal:
    case SqlType::kJson:
    case SqlType::kEnum:
    case SqlType::kSet: return Kind::kText;
    case SqlType::kVector: return Kind::kVector;
    default: return Kind::kUnknown;
  }
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

DefaultKind ClassifyDefault(std::optional<std::string_view> printed, bool mysql,
                            bool default_generated) {
  if (!printed.has_value()) return DefaultKind::kNone;
  if (mysql) return default_generated ? DefaultKind::kExpression : DefaultKind::kLiteral;
  std::string_view d = *printed;
  if (d == "NULL") return DefaultKind::kNull;
  if (d.size() >= 2 && d.front() == '\'' && d.back() == '\'') return DefaultKind::kLiteral;
  if (d.size() >= 3 && (d[0] == 'b' || d[0] == 'B') && d[1] == '\'' && d.back() == '\'')
    return DefaultKind::kLiteral;
  if (d.size() >= 3 && d[0] == '0' && (d[1] == 'x' || d[1] == 'X')) return DefaultKind::kLiteral;
  bool number = !d.empty();
  for (char c : d)
    if (!((c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'))
      number = false;
  return number ? DefaultKind::kLiteral : DefaultKind::kExpression;
}

Result<std::string> RescaleDecimal(std::string_view text, uint32_t scale) {
  auto bad = [&]() {
    return Status::Corruption(fmt::format("'{}' is not a decimal number", text.substr(0, 64)));
  };
  std::string_view t = text;
  bool negative = false;
  if (!t.empty() && (t[0] == '-' || t[0] == '+')) {
    negative = t[0] == '-';
    t.remove_prefix(1);
  }
  size_t dot = t.find('.');
  std::string whole(t.substr(0, dot));
  std::string frac(dot == std::string_view::npos ? std::string_view() : t.substr(dot + 1));
  if (whole.empty() && frac.empty()) return bad();
  for (char c : whole + frac)
    if (c < '0' || c > '9') return bad();
  if (whole.empty()) whole = "0";
  bool round_up = frac.size() > scale && frac[scale] >= '5';  // half away from zero
  frac.resize(scale, '0');
  std::string digits = whole + frac;
  if (round_up) {
    size_t i = digits.size();
    while (i > 0 && digits[i - 1] == '9') digits[--i] = '0';
    if (i == 0) digits.insert(digits.begin(), '1');
    else ++digits[i - 1];
  }
  std::string int_part = digits.substr(0, digits.size() - scale);
  size_t nz = int_part.find_first_not_of('0');
  int_part = nz == std::string::npos ? "0" : int_part.substr(nz);
  std::string out = int_part;
  if (scale > 0) out += "." + digits.substr(digits.size() - scale);
  if (negative && out.find_first_not_of("0.") != std::string::npos) out.insert(out.begin(), '-');
  return out;
}

namespace {

// A literal default's text -> its Value; DECIMAL literals take the column's scale, as the
// server stores them ('1.5' in DECIMAL(8,4) is 1.5000).
Result<Value> DefaultFromText(const ColumnDesc& col, std::string_view text) {
  std::string rescaled;
  if (col.type == SqlType::kDecimal && col.numeric_precision > 0) {
    auto r = RescaleDecimal(text, col.numeric_scale);
    if (!r.ok()) return Bad(col, text);
    rescaled = std::move(*r);
    text = rescaled;
  }
  auto v = ValueFromText(col, text);
  if (!v.ok()) return v.status().WithContext("DEFAULT");
  return v;
}

// What a NOT NULL column without a DEFAULT stores when an INSERT leaves it out (allowed
// under a non-strict sql_mode): the type's implicit default (MariaDB/MySQL manual, "Data Type
// Default Values"). A binlog_row_image=MINIMAL row then lacks the column, and the sink fills
// it from here (a new user's probe: NULL was stored where the server stored 0, '', the first
// ENUM member or the zero date). Types whose implicit default sluice does not know for sure
// are an error, which stops the sink only when a row needs it.
Result<Value> ImplicitDefault(const ColumnDesc& col) {
  const auto unknown = [&]() -> Result<Value> {
    return Status::NotSupported(fmt::format("column {} ({}) is NOT NULL without a DEFAULT, and sluice does not know "
                                            "the implicit default the server gives such a column",
                                            col.name, col.column_type.empty() ? col.data_type : col.column_type));
  };
  const auto fraction = [&] { return col.fsp > 0 ? "." + std::string(col.fsp, '0') : std::string(); };
  switch (KindOf(col)) {
    case Kind::kSigned:
    case Kind::kYear: return Value::Int(0);
    case Kind::kUnsigned:
    case Kind::kBit: return Value::UInt(0);
    case Kind::kFloat: return Value::Float(0);
    case Kind::kDouble: return Value::Double(0);
    case Kind::kText:
      switch (col.type) {
        case SqlType::kDecimal: {
          auto zero = RescaleDecimal("0", col.numeric_scale);
          if (!zero.ok()) return unknown();
          return Value::Text(std::move(*zero));
        }
        case SqlType::kEnum:
          if (col.labels.empty()) return unknown();
          return Value::Text(col.labels[0]);
        case SqlType::kSet: return Value::Text("");
        case SqlType::kDate: return Value::Text("0000-00-00");
        case SqlType::kDateTime:
        case SqlType::kTimestamp: return Value::Text("0000-00-00 00:00:00" + fraction());
        case SqlType::kTime: return Value::Text("00:00:00" + fraction());
        case SqlType::kJson: return unknown();
        default:
          if (IsFixedBinaryTextType(col.type) || !IsCharacterType(col.type)) return unknown();
          return Value::Text("");
      }
    case Kind::kBytes:
      if (IsGeometryType(col.type)) return unknown();
      if (col.type == SqlType::kBinary) return Value::Bytes(std::string(col.octet_length, '\0'));
      return Value::Bytes("");
    case Kind::kVector:
    case Kind::kUnknown: break;
  }
  return unknown();
}

// A hexadecimal literal (0x4142: information_schema prints a BLOB's default so, and a
// statement may write any default so) as the bytes it stands for; nothing when `d` is not one.
std::optional<std::string> HexLiteralBytes(std::string_view d) {
  if (d.size() < 3 || d[0] != '0' || (d[1] != 'x' && d[1] != 'X') || d.size() % 2 != 0) return std::nullopt;
  std::string out;
  for (size_t i = 2; i < d.size(); i += 2) {
    const auto nibble = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    };
    const int hi = nibble(d[i]), lo = nibble(d[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>(hi << 4 | lo));
  }
  return out;
}

}  // namespace

Result<Value> DefaultValue(const ColumnDesc& col) {
  if (!col.default_value.has_value()) {
    const bool implicit = !col.nullable && col.default_kind == DefaultKind::kNone && !col.auto_increment &&
                          col.generated == GeneratedKind::kNone && col.versioning == VersioningRole::kNone;
    return implicit ? ImplicitDefault(col) : Value::Null();
  }
  std::string_view d = *col.default_value;
  DefaultKind kind = col.default_kind;
  if (kind == DefaultKind::kNone) kind = ClassifyDefault(d, false, false);
  if (kind == DefaultKind::kNull) return Value::Null();
  // An expression is evaluated by the server; its value is not known here.
  if (kind == DefaultKind::kExpression) return Value::Null();
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
    if (KindOf(col) == Kind::kText && col.type == SqlType::kChar) {
      size_t end = text.find_last_not_of(' ');
      text.resize(end == std::string::npos ? 0 : end + 1);
    }
    if (col.type == SqlType::kBinary && text.size() < col.octet_length) text.resize(col.octet_length, '\0');
    return DefaultFromText(col, text);
  }
  if (std::optional<std::string> bytes = HexLiteralBytes(d)) {
    if (KindOf(col) == Kind::kBytes) {
      if (col.type == SqlType::kBinary && bytes->size() < col.octet_length) bytes->resize(col.octet_length, '\0');
      return Value::Bytes(std::move(*bytes));
    }
    // In a character column the bytes are text in the column's character set: ASCII is the
    // same in every one sluice reads; other bytes are not converted here.
    if (KindOf(col) == Kind::kText && IsCharacterType(col.type) &&
        std::all_of(bytes->begin(), bytes->end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; }))
      return Value::Text(std::move(*bytes));
    return Status::NotSupported(fmt::format("column {}: DEFAULT {}: a hexadecimal literal sluice does not convert "
                                            "to the column's type", col.name, d.substr(0, 40)));
  }
  if (KindOf(col) == Kind::kBit && d.size() >= 3 && (d[0] == 'b' || d[0] == 'B') && d[1] == '\'') {
    uint64_t v = 0;
    for (size_t i = 2; i + 1 < d.size(); ++i) {
      if (d[i] != '0' && d[i] != '1') return Bad(col, d);
      v = v << 1 | static_cast<uint64_t>(d[i] - '0');
    }
    return Value::UInt(v);
  }
  return DefaultFromText(col, d);
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
    // DECIMAL ZEROFILL prints padded ("000001.50"); the binlog carries the number (1.50), and
    // the two paths must give one value: +0 keeps the scale and drops the padding.
    case Kind::kText:
      if (col.type == SqlType::kDecimal && col.column_type.find("zerofill") != std::string::npos) return q + "+0";
      return q;
    default: return q;
  }
}

TextCellForm TextCellFormOf(const ColumnDesc& col) {
  // Must agree with ValueFromText below (text_value_test.cc checks every column type).
  switch (KindOf(col)) {
    case Kind::kSigned: return TextCellForm::kInteger;
    case Kind::kUnsigned: return TextCellForm::kUnsigned;
    case Kind::kText: return TextCellForm::kText;
    default: return TextCellForm::kOther;
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
