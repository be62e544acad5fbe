// TableSchema: a source table's definition as the server describes it in
// information_schema.COLUMNS / STATISTICS (see mysql/schema_loader.h), used to name
// columns, find the primary key, and fill in what a TABLE_MAP without
// binlog_row_metadata=FULL lacks (signedness, ENUM/SET labels, charsets, BINARY length).
// Thread safety: immutable once built; shared as std::shared_ptr<const TableSchema>.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "schema/column_type.h"

namespace sluice {

// How a column gets its DEFAULT. kLiteral: default_value is the literal as
// information_schema.COLUMNS.COLUMN_DEFAULT prints it (MariaDB quotes strings: 'a''b'; numbers
// and b'101' bare). kExpression: default_value is the expression text (current_timestamp(),
// uuid(), (a*2)); only the server knows its value. kNull: DEFAULT NULL. kNone: no DEFAULT
// clause (NOT NULL columns then take the type's implicit default on insert).
enum class DefaultKind : uint8_t { kNone, kNull, kLiteral, kExpression };
enum class GeneratedKind : uint8_t { kNone, kVirtual, kStored };
// MariaDB system-versioned tables: the ROW START / ROW END columns.
enum class VersioningRole : uint8_t { kNone, kRowStart, kRowEnd };

// The one typed column model. `type` is the classification (schema/column_type.h); set it
// with SetType so that `type` and `data_type` agree.
struct ColumnDesc {
  std::string name;
  SqlType type = SqlType::kUnknown;
  // information_schema.COLUMNS.DATA_TYPE, lower case ("int", "varchar", ...), kept for
  // messages only: classify with `type`, never with this text.
  std::string data_type;
  // information_schema.COLUMNS.COLUMN_TYPE, e.g. "int(10) unsigned", "enum('a','b')".
  std::string column_type;
  bool is_unsigned = false;
  bool nullable = true;
  // Character set name ("utf8mb4", "latin1", "binary"); empty for non-string types.
  std::string charset;
  std::string collation;
  uint64_t char_max_length = 0;    // CHARACTER_MAXIMUM_LENGTH (characters)
  uint64_t octet_length = 0;       // CHARACTER_OCTET_LENGTH (bytes)
  uint32_t numeric_precision = 0;  // DECIMAL precision, BIT width
  uint32_t numeric_scale = 0;      // DECIMAL scale
  uint32_t fsp = 0;                // DATETIME_PRECISION (TIME/DATETIME/TIMESTAMP)
  std::vector<std::string> labels; // ENUM or SET members, in definition order
  bool is_generated = false;       // VIRTUAL/STORED generated column
  GeneratedKind generated = GeneratedKind::kNone;
  std::string generation_expression;
  bool is_invisible = false;
  VersioningRole versioning = VersioningRole::kNone;
  bool auto_increment = false;
  DefaultKind default_kind = DefaultKind::kNone;
  std::optional<std::string> default_value;  // COLUMN_DEFAULT as the server prints it

  void SetType(std::string_view type_name) {
    type = SqlTypeFromName(type_name);
    data_type = type == SqlType::kUnknown ? std::string(type_name) : std::string(SqlTypeName(type));
  }
  bool IsBinaryString() const { return charset == "binary" || charset.empty(); }
  friend bool operator==(const ColumnDesc&, const ColumnDesc&) = default;
};

struct TableSchema {
  std::string db;
  std::string table;
  std::vector<ColumnDesc> columns;  // in ordinal order (as in the binlog row image)
  std::vector<size_t> primary_key;  // indexes into columns, in key order; empty if none
  std::string engine;               // "InnoDB", "MyISAM", "Aria", ...; empty if unknown
  std::string collation;            // the table's default collation; empty if unknown
  bool system_versioned = false;    // MariaDB WITH SYSTEM VERSIONING

  friend bool operator==(const TableSchema&, const TableSchema&) = default;

  std::string QualifiedName() const { return db + "." + table; }
  bool has_primary_key() const { return !primary_key.empty(); }
  // Index of the column named `name`, or -1.
  int ColumnIndex(const std::string& name) const {
    for (size_t i = 0; i < columns.size(); ++i)
      if (columns[i].name == name) return static_cast<int>(i);
    return -1;
  }
};

using TableSchemaPtr = std::shared_ptr<const TableSchema>;

// Why a system-versioned table (MariaDB WITH SYSTEM VERSIONING) is not captured in mode cdc,
// and what to do instead: the snapshot's refusal and the stream's, in one text.
inline std::string SystemVersionedNotCaptured(const std::string& name) {
  return "table " + name +
         " is system-versioned (WITH SYSTEM VERSIONING): its binlog rows carry the hidden ROW START/ROW END columns "
         "and a history row for every change, which sluice does not decode, so it cannot be captured in mode cdc; "
         "read its current rows by queries instead ([table.\"" + name +
         "\"] mode = \"full\" or \"incremental\", docs/incremental.md), or leave it out (source.exclude)";
}

}  // namespace sluice
