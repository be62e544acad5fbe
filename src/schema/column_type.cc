#include "schema/column_type.h"

#include <array>
#include <string>

namespace sluice {
namespace {

struct NameEntry {
  std::string_view name;
  SqlType type;
};

// Canonical names first (SqlTypeName picks the first entry of a type), then aliases.
constexpr std::array kNames = {
    NameEntry{"tinyint", SqlType::kTinyInt},
    NameEntry{"smallint", SqlType::kSmallInt},
    NameEntry{"mediumint", SqlType::kMediumInt},
    NameEntry{"int", SqlType::kInt},
    NameEntry{"bigint", SqlType::kBigInt},
    NameEntry{"decimal", SqlType::kDecimal},
    NameEntry{"float", SqlType::kFloat},
    NameEntry{"double", SqlType::kDouble},
    NameEntry{"bit", SqlType::kBit},
    NameEntry{"year", SqlType::kYear},
    NameEntry{"date", SqlType::kDate},
    NameEntry{"time", SqlType::kTime},
    NameEntry{"datetime", SqlType::kDateTime},
    NameEntry{"timestamp", SqlType::kTimestamp},
    NameEntry{"char", SqlType::kChar},
    NameEntry{"varchar", SqlType::kVarChar},
    NameEntry{"tinytext", SqlType::kTinyText},
    NameEntry{"text", SqlType::kText},
    NameEntry{"mediumtext", SqlType::kMediumText},
    NameEntry{"longtext", SqlType::kLongText},
    NameEntry{"binary", SqlType::kBinary},
    NameEntry{"varbinary", SqlType::kVarBinary},
    NameEntry{"tinyblob", SqlType::kTinyBlob},
    NameEntry{"blob", SqlType::kBlob},
    NameEntry{"mediumblob", SqlType::kMediumBlob},
    NameEntry{"longblob", SqlType::kLongBlob},
    NameEntry{"enum", SqlType::kEnum},
    NameEntry{"set", SqlType::kSet},
    NameEntry{"json", SqlType::kJson},
    NameEntry{"geometry", SqlType::kGeometry},
    NameEntry{"point", SqlType::kPoint},
    NameEntry{"linestring", SqlType::kLineString},
    NameEntry{"polygon", SqlType::kPolygon},
    NameEntry{"multipoint", SqlType::kMultiPoint},
    NameEntry{"multilinestring", SqlType::kMultiLineString},
    NameEntry{"multipolygon", SqlType::kMultiPolygon},
    NameEntry{"geometrycollection", SqlType::kGeometryCollection},
    NameEntry{"uuid", SqlType::kUuid},
    NameEntry{"inet4", SqlType::kInet4},
    NameEntry{"inet6", SqlType::kInet6},
    NameEntry{"vector", SqlType::kVector},
    // Aliases (DDL spellings; MySQL prints "geomcollection" as DATA_TYPE).
    NameEntry{"integer", SqlType::kInt},
    NameEntry{"int1", SqlType::kTinyInt},
    NameEntry{"int2", SqlType::kSmallInt},
    NameEntry{"int3", SqlType::kMediumInt},
    NameEntry{"middleint", SqlType::kMediumInt},
    NameEntry{"int4", SqlType::kInt},
    NameEntry{"int8", SqlType::kBigInt},
    NameEntry{"bool", SqlType::kTinyInt},
    NameEntry{"boolean", SqlType::kTinyInt},
    NameEntry{"serial", SqlType::kBigInt},
    NameEntry{"numeric", SqlType::kDecimal},
    NameEntry{"dec", SqlType::kDecimal},
    NameEntry{"fixed", SqlType::kDecimal},
    NameEntry{"number", SqlType::kDecimal},
    NameEntry{"float4", SqlType::kFloat},
    NameEntry{"float8", SqlType::kDouble},
    NameEntry{"real", SqlType::kDouble},
    NameEntry{"double precision", SqlType::kDouble},
    NameEntry{"character", SqlType::kChar},
    NameEntry{"nchar", SqlType::kChar},
    NameEntry{"national char", SqlType::kChar},
    NameEntry{"national character", SqlType::kChar},
    NameEntry{"character varying", SqlType::kVarChar},
    NameEntry{"char varying", SqlType::kVarChar},
    NameEntry{"nvarchar", SqlType::kVarChar},
    NameEntry{"national varchar", SqlType::kVarChar},
    NameEntry{"national character varying", SqlType::kVarChar},
    NameEntry{"varchar2", SqlType::kVarChar},
    NameEntry{"long", SqlType::kMediumText},
    NameEntry{"long varchar", SqlType::kMediumText},
    NameEntry{"long varbinary", SqlType::kMediumBlob},
    NameEntry{"clob", SqlType::kLongText},
    NameEntry{"raw", SqlType::kVarBinary},
    NameEntry{"geomcollection", SqlType::kGeometryCollection},
};

std::string LowerSingleSpaced(std::string_view s) {
  std::string out;
  bool space = false;
  for (char c : s) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
  }
  return out;
}

}  // namespace

SqlType SqlTypeFromName(std::string_view name) {
  const std::string n = LowerSingleSpaced(name);
  for (const NameEntry& e : kNames)
    if (e.name == n) return e.type;
  return SqlType::kUnknown;
}

std::string_view SqlTypeName(SqlType t) {
  for (const NameEntry& e : kNames)
    if (e.type == t) return e.name;
  return "unknown";
}

TypeFamily FamilyOf(SqlType t) {
  if (IsIntegerType(t)) return TypeFamily::kInteger;
  if (IsTemporalType(t)) return TypeFamily::kTemporal;
  if (IsCharacterType(t) || IsBinaryType(t) || IsFixedBinaryTextType(t) || t == SqlType::kEnum ||
      t == SqlType::kSet)
    return TypeFamily::kString;
  if (IsGeometryType(t)) return TypeFamily::kGeometry;
  switch (t) {
    case SqlType::kYear: return TypeFamily::kYear;
    case SqlType::kDecimal: return TypeFamily::kDecimal;
    case SqlType::kFloat:
    case SqlType::kDouble: return TypeFamily::kFloat;
    case SqlType::kBit: return TypeFamily::kBit;
    case SqlType::kJson: return TypeFamily::kJson;
    case SqlType::kVector: return TypeFamily::kVector;
    default: return TypeFamily::kUnknown;
  }
}

std::string_view TypeFamilyName(TypeFamily f) {
  switch (f) {
    case TypeFamily::kInteger: return "integer";
    case TypeFamily::kYear: return "year";
    case TypeFamily::kDecimal: return "decimal";
    case TypeFamily::kFloat: return "floating point";
    case TypeFamily::kBit: return "bit";
    case TypeFamily::kTemporal: return "date/time";
    case TypeFamily::kString: return "string";
    case TypeFamily::kJson: return "json";
    case TypeFamily::kGeometry: return "geometry";
    case TypeFamily::kVector: return "vector";
    case TypeFamily::kUnknown: break;
  }
  return "unknown";
}

}  // namespace sluice
