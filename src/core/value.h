// Value: the canonical form of one column value, shared by the snapshot path (text
// protocol) and the binlog path (row images). Both paths must produce identical Values
// for the same stored datum; every sink serialises only from Value, so identical Values
// give byte-identical output. The form of each MySQL/MariaDB type is written down in
// docs/values.md; in short:
//   integers, YEAR        kInt (signed columns) / kUInt (unsigned columns, BIT)
//   FLOAT                 kFloat (the float32 value, widened to double exactly)
//   DOUBLE                kDouble
//   DECIMAL               kText, exact decimal string as SELECT prints it ("-0.000100")
//   DATE/TIME/DATETIME    kText, "YYYY-MM-DD", "[-]HHH:MM:SS[.f]", "YYYY-MM-DD HH:MM:SS[.f]"
//                         with exactly the column's fsp digits
//   TIMESTAMP             kText, same form as DATETIME, in UTC
//   CHAR/VARCHAR/TEXT     kText, UTF-8 converted from the column charset
//   ENUM/SET              kText, the label / comma-joined labels
//   JSON                  kText, JSON text
//   BINARY/VARBINARY/BLOB kBytes, raw bytes
//   GEOMETRY              kBytes, 4-byte SRID + WKB (as SELECT returns it)
// kNull is SQL NULL. kAbsent means "not given": the column was not in the row image
// (binlog_row_image=MINIMAL/NOBLOB); sinks keep the old value on update.
// Thread safety: plain value type.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sluice {

struct Value {
  enum class Kind : uint8_t { kNull, kAbsent, kInt, kUInt, kFloat, kDouble, kText, kBytes };

  Kind kind = Kind::kNull;
  int64_t i = 0;   // kInt
  uint64_t u = 0;  // kUInt
  double d = 0;    // kFloat, kDouble
  std::string s;   // kText (UTF-8), kBytes (raw)

  static Value Null() { return Value{}; }
  static Value Absent() { return Value{Kind::kAbsent}; }
  static Value Int(int64_t v) { Value x{Kind::kInt}; x.i = v; return x; }
  static Value UInt(uint64_t v) { Value x{Kind::kUInt}; x.u = v; return x; }
  static Value Float(float v) { Value x{Kind::kFloat}; x.d = v; return x; }
  static Value Double(double v) { Value x{Kind::kDouble}; x.d = v; return x; }
  static Value Text(std::string v) { Value x{Kind::kText}; x.s = std::move(v); return x; }
  static Value Bytes(std::string v) { Value x{Kind::kBytes}; x.s = std::move(v); return x; }

  bool is_null() const { return kind == Kind::kNull; }
  bool is_absent() const { return kind == Kind::kAbsent; }

  // Canonical text of the value: integers in decimal, FLOAT as the shortest decimal that
  // round-trips the float32, DOUBLE as the shortest that round-trips the double, text and
  // bytes as they are. "NULL"/"<absent>" for the two markers. Used by tests and sinks.
  std::string ToText() const;
  // A short debugging form that tells kinds apart: Int(5), Text("a"), Bytes(0x00ff), NULL.
  std::string DebugString() const;

  friend bool operator==(const Value& a, const Value& b);
};

using Row = std::vector<Value>;

}  // namespace sluice
