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
#include <vector>

namespace sluice {

struct ColumnDesc {
  std::string name;
  // information_schema.COLUMNS.DATA_TYPE, lower case: "int", "varchar", "enum", "json",
  // "geometry", "point", "timestamp", "decimal", ... MariaDB's UUID/INET4/INET6 too.
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
  bool is_invisible = false;
  std::optional<std::string> default_value;  // COLUMN_DEFAULT as the server prints it

  bool IsBinaryString() const { return charset == "binary" || charset.empty(); }
};

struct TableSchema {
  std::string db;
  std::string table;
  std::vector<ColumnDesc> columns;  // in ordinal order (as in the binlog row image)
  std::vector<size_t> primary_key;  // indexes into columns, in key order; empty if none

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

}  // namespace sluice
