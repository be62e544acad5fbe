#include "stream/schema_check.h"

#include "binlog/charset.h"
#include "schema/ddl.h"

#include <cctype>
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

std::string ResnapshotHint(const std::string& table) {
  return fmt::format("copy the table again with `sluice resnapshot --config FILE {}` (this replica; then run "
                     "sluice again), or re-snapshot into a new replica",
                     table);
}

Status CheckRowLayout(const binlog::TableMap& map, const TableSchema& schema,
                      bool allow_appended_columns) {
  const std::string name = schema.db + "." + schema.table;
  const bool appended = allow_appended_columns && map.column_count() < schema.columns.size();
  if (map.column_count() != schema.columns.size() && !appended) {
    return Status::FailedPrecondition(fmt::format(
        "table {}: the binlog row has {} columns but the table now has {} (its definition "
        "changed after this event was written); {}",
        name, map.column_count(), schema.columns.size(), ResnapshotHint(name)));
  }
  for (size_t i = 0; i < map.column_count(); ++i) {
    const ColumnDesc& c = schema.columns[i];
    if (i < map.column_names.size() && map.column_names[i] != c.name) {
      return Status::FailedPrecondition(fmt::format(
          "table {}: column {} is `{}` in the binlog row but `{}` in the table now (its "
          "definition changed after this event was written); {}",
          name, i + 1, map.column_names[i], c.name, ResnapshotHint(name)));
    }
    Family b = OfBinlog(map.column_types[i]);
    Family s = OfSchema(c.type);
    if (!Compatible(b, s)) {
      return Status::FailedPrecondition(fmt::format(
          "table {}: column {} (`{}`) holds {} value in the binlog row but is {} in the table "
          "now (its definition changed after this event was written); {}",
          name, i + 1, c.name, Article(FamilyName(b)), c.column_type.empty() ? c.data_type : c.column_type,
          ResnapshotHint(name)));
    }
  }
  return Status::Ok();
}

namespace {

bool NamesEqual(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

// The integer binlog type a definition's integer column is logged as.
std::optional<ColumnType> IntegerBinlogType(SqlType t) {
  switch (t) {
    case SqlType::kTinyInt: return ColumnType::MYSQL_TYPE_TINY;
    case SqlType::kSmallInt: return ColumnType::MYSQL_TYPE_SHORT;
    case SqlType::kMediumInt: return ColumnType::MYSQL_TYPE_INT24;
    case SqlType::kInt: return ColumnType::MYSQL_TYPE_LONG;
    case SqlType::kBigInt: return ColumnType::MYSQL_TYPE_LONGLONG;
    default: return std::nullopt;
  }
}

}  // namespace

Status CheckTableMap(const binlog::TableMap& map, const TableSchema& schema, std::string_view where,
                     std::string_view ddl, std::string_view ddl_at) {
  const std::string name = schema.db + "." + schema.table;
  auto mismatch = [&](std::string what) {
    if (!ddl.empty()) {
      // Blaming an unlogged change here sent the operator looking for one that never happened
      // (a new user's probe: the statement was in the binlog, and sluice had misapplied it).
      std::string text(ddl.substr(0, 200));
      for (char& c : text)
        if (c == '\n' || c == '\r' || c == '\t') c = ' ';
      return Status::FailedPrecondition(fmt::format(
          "table {} at {}: {}; the recorded definition is what sluice made of the statement \"{}{}\" it read "
          "at {}, and the row disagrees with it: sluice misread that statement (please report it), or the "
          "table changed again after it without a statement in the binlog (e.g. under SET sql_log_bin=0); "
          "its rows cannot be mapped onto columns safely; {} (docs/schema-changes.md)",
          name, where, what, text, ddl.size() > 200 ? "..." : "", ddl_at, ResnapshotHint(name)));
    }
    return Status::FailedPrecondition(fmt::format(
        "table {} at {}: {}; the table's definition changed without a DDL statement sluice "
        "read from the binlog (e.g. under SET sql_log_bin=0), so its rows cannot be mapped "
        "onto columns safely; {} (docs/schema-changes.md)",
        name, where, what, ResnapshotHint(name)));
  };
  if (map.column_count() > schema.columns.size()) {
    // MariaDB's long unique indexes (UNIQUE on a BLOB/TEXT column, or USING HASH) add a hidden
    // hash column each, DB_ROW_HASH_<n>, after the table's columns, logged in every row. Named
    // with FULL metadata; without, a trailing BIGINT is the sign. No DDL or resnapshot changes
    // that, so the stop says what does (a new user's probe: it advised a resnapshot that did
    // not help).
    bool hashes = true;
    for (size_t i = schema.columns.size(); i < map.column_count(); ++i)
      hashes = hashes && map.column_types[i] == ColumnType::MYSQL_TYPE_LONGLONG &&
               (i >= map.column_names.size() || map.column_names[i].rfind("DB_ROW_HASH_", 0) == 0);
    if (hashes)
      return Status::FailedPrecondition(fmt::format(
          "table {} at {}: the binlog row has {} columns, the table {}: {} the hidden hash column of a MariaDB long "
          "unique index (UNIQUE on a BLOB/TEXT column, or USING HASH), which sluice does not map yet; read the table "
          "without the binlog ([table.\"{}\"] mode = \"full\" or \"incremental\"), leave it out "
          "(source.exclude), or make the index a unique one on a prefix (UNIQUE (c(255))); `sluice check` lists "
          "such tables",
          name, where, map.column_count(), schema.columns.size(),
          map.column_names.size() > schema.columns.size() ? "the rest is" : "the rest is most likely", name));
  }
  if (map.column_count() != schema.columns.size()) {
    return mismatch(fmt::format("the binlog row has {} columns but the recorded definition has {}",
                                map.column_count(), schema.columns.size()));
  }
  for (size_t i = 0; i < map.column_count(); ++i) {
    const ColumnDesc& c = schema.columns[i];
    const std::string col = fmt::format("column {} (`{}`)", i + 1, c.name);
    if (i < map.column_names.size() && !NamesEqual(map.column_names[i], c.name)) {
      return mismatch(fmt::format("column {} is `{}` in the binlog row but `{}` in the recorded definition",
                                  i + 1, map.column_names[i], c.name));
    }
    const ColumnType bt = map.column_types[i];
    const std::string declared = c.column_type.empty() ? c.data_type : c.column_type;
    Family b = OfBinlog(bt);
    Family s = OfSchema(c.type);
    if (!Compatible(b, s)) {
      return mismatch(fmt::format("{} holds {} value in the binlog row but is {} in the recorded definition",
                                  col, Article(FamilyName(b)), declared));
    }
    if (auto want = IntegerBinlogType(c.type); want && b == Family::kInteger && *want != bt) {
      return mismatch(fmt::format("{} is logged as a {} but is {} in the recorded definition", col,
                                  binlog::ColumnTypeName(bt), declared));
    }
    const uint16_t meta = i < map.column_meta.size() ? map.column_meta[i] : 0;
    if (c.type == SqlType::kDecimal && bt == ColumnType::MYSQL_TYPE_NEWDECIMAL) {
      const uint32_t p = meta >> 8, sc = meta & 0xff;
      if (p != c.numeric_precision || sc != c.numeric_scale) {
        return mismatch(fmt::format("{} is logged as DECIMAL({},{}) but is {} in the recorded definition", col,
                                    p, sc, declared));
      }
    }
    if ((bt == ColumnType::MYSQL_TYPE_TIME2 || bt == ColumnType::MYSQL_TYPE_DATETIME2 ||
         bt == ColumnType::MYSQL_TYPE_TIMESTAMP2) &&
        IsTemporalType(c.type) && meta != c.fsp) {
      return mismatch(fmt::format("{} is logged with {} fractional digits but is {} in the recorded definition",
                                  col, meta, declared));
    }
    if (map.has_signedness && i < map.is_unsigned.size() && b == Family::kInteger &&
        map.is_unsigned[i] != c.is_unsigned) {
      return mismatch(fmt::format("{} is logged as {} but is {} in the recorded definition", col,
                                  map.is_unsigned[i] ? "unsigned" : "signed", declared));
    }
    if (map.has_charsets && i < map.collation_ids.size() && map.collation_ids[i] != 0 && HasCharset(c.type) &&
        !c.charset.empty()) {
      auto norm = [](std::string_view x) { return x == "utf8" ? std::string_view("utf8mb3") : x; };
      std::string_view cs = binlog::CharsetForCollation(map.collation_ids[i]);
      if (!cs.empty() && norm(cs) != norm(c.charset)) {
        return mismatch(fmt::format("{} is logged in character set {} but is {} in the recorded definition",
                                    col, cs, c.charset));
      }
    }
    // Labels come in the column's character set; compared where that cannot matter (ASCII).
    auto ascii = [](const std::string& x) {
      for (unsigned char ch : x)
        if (ch >= 0x80) return false;
      return true;
    };
    bool labels_differ = false;
    if (map.has_labels && i < map.labels.size() && !map.labels[i].empty() &&
        (c.type == SqlType::kEnum || c.type == SqlType::kSet)) {
      labels_differ = map.labels[i].size() != c.labels.size();
      const bool ascii_compatible = c.charset == "utf8mb4" || c.charset == "utf8mb3" || c.charset == "utf8" ||
                                    c.charset == "latin1" || c.charset == "ascii";
      for (size_t k = 0; ascii_compatible && !labels_differ && k < c.labels.size(); ++k)
        labels_differ = ascii(map.labels[i][k]) && ascii(c.labels[k]) && map.labels[i][k] != c.labels[k];
    }
    if (labels_differ) {
      return mismatch(fmt::format("{} has other ENUM/SET members in the binlog row than in the recorded definition",
                                  col));
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
