// SqlType: the one classification of MySQL/MariaDB column data types.
//
// Every place that needs to know what kind of column it has (the snapshot converter, the
// binlog decoder's table definitions, the sinks' type mapping, compare, the row-layout check,
// the DDL parser) asks this header, never a DATA_TYPE string of its own.
//
//   SqlTypeFromName   information_schema.COLUMNS.DATA_TYPE, or a type keyword of a column
//                     definition in DDL ("INT", "integer", "DOUBLE PRECISION", "bool",
//                     "character varying", "nvarchar", "dec", "fixed", "geomcollection",
//                     "serial" ...), case-insensitive -> SqlType; anything else kUnknown.
//                     Aliases follow the manuals' "Data Type Storage Requirements" /
//                     "Numeric Data Type Syntax" pages (BOOL = TINYINT(1), REAL = DOUBLE,
//                     NUMERIC/DEC/FIXED = DECIMAL, LONG / LONG VARCHAR = MEDIUMTEXT,
//                     MIDDLEINT = MEDIUMINT, INT1..INT8, FLOAT4/FLOAT8, SERIAL = BIGINT UNSIGNED).
//   SqlTypeName       the canonical lower-case DATA_TYPE the server prints ("int", "json").
//   FamilyOf          the family a binlog column type byte can be compared with.
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

namespace sluice {

enum class SqlType : uint8_t {
  kUnknown,
  kTinyInt, kSmallInt, kMediumInt, kInt, kBigInt,
  kDecimal, kFloat, kDouble, kBit, kYear,
  kDate, kTime, kDateTime, kTimestamp,
  kChar, kVarChar, kTinyText, kText, kMediumText, kLongText,
  kBinary, kVarBinary, kTinyBlob, kBlob, kMediumBlob, kLongBlob,
  kEnum, kSet, kJson,
  kGeometry, kPoint, kLineString, kPolygon, kMultiPoint, kMultiLineString, kMultiPolygon,
  kGeometryCollection,
  kUuid, kInet4, kInet6,  // MariaDB
  kVector,                // MySQL 9 VECTOR, MariaDB 11.7 VECTOR
};

enum class TypeFamily : uint8_t {
  kUnknown, kInteger, kYear, kDecimal, kFloat, kBit, kTemporal, kString, kJson, kGeometry, kVector
};

SqlType SqlTypeFromName(std::string_view name);
std::string_view SqlTypeName(SqlType t);
TypeFamily FamilyOf(SqlType t);
std::string_view TypeFamilyName(TypeFamily f);  // "integer", "decimal", "string", ...

inline bool IsIntegerType(SqlType t) { return t >= SqlType::kTinyInt && t <= SqlType::kBigInt; }
// CHAR/VARCHAR/*TEXT: character strings (a column of charset "binary" still stores bytes).
inline bool IsCharacterType(SqlType t) { return t >= SqlType::kChar && t <= SqlType::kLongText; }
// BINARY/VARBINARY/*BLOB.
inline bool IsBinaryType(SqlType t) { return t >= SqlType::kBinary && t <= SqlType::kLongBlob; }
inline bool IsGeometryType(SqlType t) {
  return t >= SqlType::kGeometry && t <= SqlType::kGeometryCollection;
}
inline bool IsTemporalType(SqlType t) { return t >= SqlType::kDate && t <= SqlType::kTimestamp; }
// MariaDB's fixed-size binary types printed as text (UUID, INET4, INET6).
inline bool IsFixedBinaryTextType(SqlType t) {
  return t == SqlType::kUuid || t == SqlType::kInet4 || t == SqlType::kInet6;
}
// Types that have a character set (charset/collation apply).
inline bool HasCharset(SqlType t) {
  return IsCharacterType(t) || t == SqlType::kEnum || t == SqlType::kSet;
}

}  // namespace sluice
