#include "stream/schema_check.h"

#include "schema/ddl.h"

#include <string_view>

namespace sluice {
namespace {

using binlog::ColumnType;

enum class Family { kInteger, kYear, kDecimal, kFloat, kBit, kTemporal, kString, kJson, kGeometry, kVector, kUnknown };

std::string_view FamilyName(Family f) {
  switch (f) {
    case Family::kInteger: return "integer";
    case Family::kYear: return "year";
    case Family::kDecimal: return "decimal";
    case Family::kFloat: return "floating point";
    case Family::kBit: return "bit";
    case Family::kTemporal: return "date/time";
    case Family::kString: return "string";
    case Family::kJson: return "json";
    case Family::kGeometry: return "geometry";
    case Family::kVector: return "vector";
    case Family::kUnknown: break;
  }
  return "unknown";
}

std::string Article(std::string_view noun) {
  bool vowel = !noun.empty() && std::string_view("aeiou").find(noun[0]) != std::string_view::npos;
  return std::string(vowel ? "an " : "a ") + std::string(noun);
}

Family OfBinlog(ColumnType t) {
  switch (t) {
    case ColumnType::MYSQL_TYPE_TINY:
    case ColumnType::MYSQL_TYPE_SHORT:
    case ColumnType::MYSQL_TYPE_INT24:
    case ColumnType::MYSQL_TYPE_LONG:
    case ColumnType::MYSQL_TYPE_LONGLONG: return Family::kInteger;
    case ColumnType::MYSQL_TYPE_YEAR: return Family::kYear;
    case ColumnType::MYSQL_TYPE_DECIMAL:
    case ColumnType::MYSQL_TYPE_NEWDECIMAL: return Family::kDecimal;
    case ColumnType::MYSQL_TYPE_FLOAT:
    case ColumnType::MYSQL_TYPE_DOUBLE: return Family::kFloat;
    case ColumnType::MYSQL_TYPE_BIT: return Family::kBit;
    case ColumnType::MYSQL_TYPE_TIMESTAMP:
    case ColumnType::MYSQL_TYPE_DATE:
    case ColumnType::MYSQL_TYPE_TIME:
    case ColumnType::MYSQL_TYPE_DATETIME:
    case ColumnType::MYSQL_TYPE_NEWDATE:
    case ColumnType::MYSQL_TYPE_TIMESTAMP2:
    case ColumnType::MYSQL_TYPE_DATETIME2:
    case ColumnType::MYSQL_TYPE_TIME2: return Family::kTemporal;
    case ColumnType::MYSQL_TYPE_VARCHAR:
    case ColumnType::MYSQL_TYPE_VAR_STRING:
    case ColumnType::MYSQL_TYPE_STRING:
    case ColumnType::MYSQL_TYPE_ENUM:
    case ColumnType::MYSQL_TYPE_SET:
    case ColumnType::MYSQL_TYPE_TINY_BLOB:
    case ColumnType::MYSQL_TYPE_MEDIUM_BLOB:
    case ColumnType::MYSQL_TYPE_LONG_BLOB:
    case ColumnType::MYSQL_TYPE_BLOB: return Family::kString;
    case ColumnType::MYSQL_TYPE_JSON: return Family::kJson;
    case ColumnType::MYSQL_TYPE_GEOMETRY: return Family::kGeometry;
    case ColumnType::MYSQL_TYPE_VECTOR: return Family::kVector;
    default: return Family::kUnknown;
  }
}

Family OfSchema(SqlType t) {
  switch (FamilyOf(t)) {
    case TypeFamily::kInteger: return Family::kInteger;
    case TypeFamily::kYear: return Family::kYear;
    case TypeFamily::kDecimal: return Family::kDecimal;
    case TypeFamily::kFloat: return Family::kFloat;
    case TypeFamily::kBit: return Family::kBit;
    case TypeFamily::kTemporal: return Family::kTemporal;
    case TypeFamily::kString: return Family::kString;
    case TypeFamily::kJson: return Family::kJson;
    case TypeFamily::kGeometry: return Family::kGeometry;
    case TypeFamily::kVector: return Family::kVector;
    case TypeFamily::kUnknown: break;
  }
  return Family::kUnknown;
}

bool Compatible(Family binlog, Family schema) {
  if (binlog == Family::kUnknown || schema == Family::kUnknown) return true;  // not judged
  if (binlog == schema) return true;
  // MariaDB logs JSON as a LONGTEXT (BLOB) column.
  if (schema == Family::kJson && binlog == Family::kString) return true;
  return false;
}

}  // namespace

Status CheckRowLayout(const binlog::TableMap& map, const TableSchema& schema,
                      bool allow_appended_columns) {
  const std::string name = schema.db + "." + schema.table;
  const bool appended = allow_appended_columns && map.column_count() < schema.columns.size();
  if (map.column_count() != schema.columns.size() && !appended) {
    return Status::FailedPrecondition(fmt::format(
        "table {}: the binlog row has {} columns but the table now has {} (its definition "
        "changed after this event was written); re-snapshot the table into a new replica",
        name, map.column_count(), schema.columns.size()));
  }
  for (size_t i = 0; i < map.column_count(); ++i) {
    const ColumnDesc& c = schema.columns[i];
    if (i < map.column_names.size() && map.column_names[i] != c.name) {
      return Status::FailedPrecondition(fmt::format(
          "table {}: column {} is `{}` in the binlog row but `{}` in the table now (its "
          "definition changed after this event was written); re-snapshot the table into a new "
          "replica",
          name, i + 1, map.column_names[i], c.name));
    }
    Family b = OfBinlog(map.column_types[i]);
    Family s = OfSchema(c.type);
    if (!Compatible(b, s)) {
      return Status::FailedPrecondition(fmt::format(
          "table {}: column {} (`{}`) holds {} value in the binlog row but is {} in the table "
          "now (its definition changed after this event was written); re-snapshot the table "
          "into a new replica",
          name, i + 1, c.name, Article(FamilyName(b)), c.column_type.empty() ? c.data_type : c.column_type));
    }
  }
  return Status::Ok();
}

std::optional<std::pair<std::string, std::string>> ParseTruncate(std::string_view default_db,
                                                                 std::string_view q) {
  auto st = ddl::Parse(q, default_db);
  if (!st.ok() || st->kind != ddl::Kind::kTruncate || st->tables.empty()) return std::nullopt;
  return std::make_pair(st->tables[0].db, st->tables[0].table);
}

}  // namespace sluice
