// TableMap: the decoded body of a TABLE_MAP_EVENT, including its optional metadata.
//
// Layout source: MySQL libbinlogevents/src/rows_event.cpp (Table_map_event) and
// sql/log_event.cc (Table_map_log_event::init_*_field); MariaDB sql/log_event.cc.
// Post-header: table_id (6 bytes; 4 in very old FDEs), flags (2). Body: db name (len byte
// + bytes + NUL), table name (ditto), column count (packed int), column types (count
// bytes), metadata block (packed length, then per-type metadata), null bitmap
// ((count+7)/8 bytes), then optional metadata TLVs (type byte, packed length, value):
//   1 SIGNEDNESS, 2 DEFAULT_CHARSET, 3 COLUMN_CHARSET, 4 COLUMN_NAME, 5 SET_STR_VALUE,
//   6 ENUM_STR_VALUE, 7 GEOMETRY_TYPE, 8 SIMPLE_PRIMARY_KEY, 9 PRIMARY_KEY_WITH_PREFIX,
//   10 ENUM_AND_SET_DEFAULT_CHARSET, 11 ENUM_AND_SET_COLUMN_CHARSET, 12 COLUMN_VISIBILITY,
//   13 VECTOR_DIMENSIONALITY (MySQL 9).
// Every per-column vector below has one entry per column (already expanded from the
// "numeric columns only"/"string columns only" encodings), or is empty when the event
// did not carry that metadata.
// Thread safety: plain value; strings own their bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "binlog/types.h"

namespace sluice::binlog {

struct TableMap {
  uint64_t table_id = 0;
  uint16_t flags = 0;
  std::string db;
  std::string table;
  std::vector<ColumnType> column_types;  // the real binlog type byte per column
  // Per-column type metadata as the binlog gives it (0 when the type has none):
  //   FLOAT/DOUBLE: pack length; VARCHAR/VAR_STRING: max length in bytes;
  //   BLOB/TEXT/GEOMETRY/JSON: length-prefix bytes (1..4); NEWDECIMAL: precision<<8|scale;
  //   BIT: (bits%8)<<8 | bytes... stored as (meta byte0 << 8 | byte1) exactly as
  //   MySQL's Table_map_log_event reads them, see rows.cc for each decoder;
  //   STRING: the two bytes (real_type<<8 | length) with the ENUM/SET/long-CHAR tricks;
  //   TIME2/DATETIME2/TIMESTAMP2: fsp.
  std::vector<uint16_t> column_meta;
  std::vector<bool> nullable;

  // Optional metadata (binlog_row_metadata=FULL, or MINIMAL for some).
  std::vector<bool> is_unsigned;                  // per column; false for non-numeric
  bool has_signedness = false;
  std::vector<uint32_t> collation_ids;            // per column; 0 = not a string / unknown
  bool has_charsets = false;
  std::vector<std::string> column_names;          // empty when absent
  std::vector<std::vector<std::string>> labels;   // per column; ENUM/SET labels, raw bytes
  bool has_labels = false;
  std::vector<uint32_t> geometry_types;           // per column; 0 when not geometry
  std::vector<uint32_t> primary_key;              // column indexes; empty when unknown
  std::vector<uint32_t> primary_key_prefix;       // per primary_key entry: prefix length, 0 = whole
  bool has_primary_key = false;
  std::vector<bool> visible;                      // per column; empty when not given
  std::vector<uint32_t> vector_dimensions;        // per column (MySQL 9 VECTOR)

  size_t column_count() const { return column_types.size(); }
};

}  // namespace sluice::binlog
