// TABLE_MAP_EVENT decoder (MySQL libs/mysql/binlog/event/rows_event.cpp Table_map_event,
// sql/log_event.cc Table_map_log_event::init_*_field and print_columns; MariaDB
// sql/log_event_server.cc / log_event_client.cc).
//
//   post_header := table_id(6; 4 when the post-header is 6) flags(2)
//   body        := db_len(1) db NUL table_len(1) table NUL column_count(packed)
//                  column_type[count] meta_len(packed) meta[meta_len]
//                  null_bitmap[(count+7)/8] { opt_type(1) opt_len(packed) opt_value }*
//   per-type metadata: FLOAT DOUBLE BLOB* GEOMETRY JSON VECTOR TIME2 DATETIME2 TIMESTAMP2:
//     1 byte; VARCHAR VAR_STRING: 2 bytes LE; NEWDECIMAL STRING ENUM SET BIT: 2 bytes
//     stored as byte0<<8|byte1 (see table_map.h); others none.
//   optional metadata (values are packed ints unless said):
//     1 SIGNEDNESS bitmap MSB-first over numeric columns
//     2 DEFAULT_CHARSET default_collation {char_col_index collation}*
//     3 COLUMN_CHARSET collation per character column
//     4 COLUMN_NAME {len name} per column
//     5 SET_STR_VALUE / 6 ENUM_STR_VALUE {count {len label}*} per SET / ENUM column
//     7 GEOMETRY_TYPE per geometry column   8 SIMPLE_PRIMARY_KEY {index}*
//     9 PRIMARY_KEY_WITH_PREFIX {index prefix}*
//     10 ENUM_AND_SET_DEFAULT_CHARSET / 11 ENUM_AND_SET_COLUMN_CHARSET as 2/3 over ENUM+SET
//     12 COLUMN_VISIBILITY bitmap MSB-first per column   13 VECTOR_DIMENSIONALITY per VECTOR
//   Column classes use the "real" type: a STRING column whose metadata byte 0 is ENUM or
//   SET is an ENUM/SET column. numeric = TINY SHORT INT24 LONG LONGLONG NEWDECIMAL FLOAT
//   DOUBLE, and YEAR on MariaDB; character = STRING VAR_STRING VARCHAR BLOB(+TINY/MEDIUM/LONG) and also VECTOR
//   (MySQL) or GEOMETRY (MariaDB).
#include <fmt/format.h>

#include "binlog/events.h"
#include "util/byte_reader.h"

namespace sluice::binlog {
namespace {

using CT = ColumnType;

// MariaDB counts YEAR too (its Field_year is a Field_tiny, and init_signedness_field in
// sql/log_event_server.cc takes every field with a signedness); MySQL does not
// (is_numeric_type in libs/mysql/binlog/event/rows_event.cpp).
bool IsNumeric(CT t, Flavor flavor) {
  if (t == CT::MYSQL_TYPE_YEAR) return flavor == Flavor::kMariaDB;
  switch (t) {
    case CT::MYSQL_TYPE_TINY: case CT::MYSQL_TYPE_SHORT: case CT::MYSQL_TYPE_INT24:
    case CT::MYSQL_TYPE_LONG: case CT::MYSQL_TYPE_LONGLONG: case CT::MYSQL_TYPE_NEWDECIMAL:
    case CT::MYSQL_TYPE_FLOAT: case CT::MYSQL_TYPE_DOUBLE:
      return true;
    default:
      return false;
  }
}

bool IsCharacter(CT t, Flavor flavor) {
  switch (t) {
    case CT::MYSQL_TYPE_STRING: case CT::MYSQL_TYPE_VAR_STRING: case CT::MYSQL_TYPE_VARCHAR:
    case CT::MYSQL_TYPE_BLOB: case CT::MYSQL_TYPE_TINY_BLOB: case CT::MYSQL_TYPE_MEDIUM_BLOB:
    case CT::MYSQL_TYPE_LONG_BLOB:
      return true;
    case CT::MYSQL_TYPE_GEOMETRY: return flavor == Flavor::kMariaDB;
    case CT::MYSQL_TYPE_VECTOR: return flavor != Flavor::kMariaDB;
    default:
      return false;
  }
}

// Expands "one value per column of class X" lists onto all columns.
std::vector<size_t> ColumnsWhere(const std::vector<CT>& real, auto pred) {
  std::vector<size_t> out;
  for (size_t i = 0; i < real.size(); ++i) {
    if (pred(real[i])) out.push_back(i);
  }
  return out;
}

std::vector<bool> ReadMsbBits(std::span<const uint8_t> v, size_t n) {
  std::vector<bool> out(n);
  for (size_t i = 0; i < n && i / 8 < v.size(); ++i) out[i] = (v[i / 8] >> (7 - i % 8)) & 1;
  return out;
}

Status ReadCharsets(ByteReader& r, bool is_default, const std::vector<size_t>& cols,
                    std::vector<uint32_t>* collations) {
  if (is_default) {
    ASSIGN_OR_RETURN(uint64_t def, r.ReadLenEnc());
    for (size_t c : cols) (*collations)[c] = static_cast<uint32_t>(def);
    while (!r.empty()) {
      ASSIGN_OR_RETURN(uint64_t idx, r.ReadLenEnc());
      ASSIGN_OR_RETURN(uint64_t coll, r.ReadLenEnc());
      if (idx >= cols.size()) {
        return r.Error(fmt::format("charset override for column #{} of {} character columns", idx,
                                   cols.size()));
      }
      (*collations)[cols[idx]] = static_cast<uint32_t>(coll);
    }
    return Status::Ok();
  }
  for (size_t c : cols) {
    ASSIGN_OR_RETURN(uint64_t coll, r.ReadLenEnc());
    (*collations)[c] = static_cast<uint32_t>(coll);
  }
  if (!r.empty()) return r.Error("trailing bytes after column charsets");
  return Status::Ok();
}

Status ReadLabels(ByteReader& r, const std::vector<size_t>& cols,
                  std::vector<std::vector<std::string>>* labels) {
  for (size_t c : cols) {
    ASSIGN_OR_RETURN(uint64_t count, r.ReadLenEnc());
    if (count > r.remaining()) return r.Error(fmt::format("label count {} too large", count));
    auto& out = (*labels)[c];
    out.clear();
    for (uint64_t i = 0; i < count; ++i) {
      ASSIGN_OR_RETURN(auto s, r.ReadLenEncString());
      out.emplace_back(s);
    }
  }
  if (!r.empty()) return r.Error("trailing bytes after labels");
  return Status::Ok();
}

Status ReadPerColumnInts(ByteReader& r, const std::vector<size_t>& cols, std::vector<uint32_t>* out) {
  for (size_t c : cols) {
    ASSIGN_OR_RETURN(uint64_t v, r.ReadLenEnc());
    (*out)[c] = static_cast<uint32_t>(v);
  }
  if (!r.empty()) return r.Error("trailing bytes after per-column values");
  return Status::Ok();
}

}  // namespace

Result<TableMap> DecodeTableMap(std::span<const uint8_t> body, uint64_t offset,
                                uint8_t post_header_len, Flavor flavor) {
  ByteReader r(body, offset, "TABLE_MAP_EVENT");
  TableMap m;
  if (post_header_len == 6) {
    ASSIGN_OR_RETURN(m.table_id, r.ReadLe32());
  } else {
    ASSIGN_OR_RETURN(m.table_id, r.ReadLe48());
  }
  ASSIGN_OR_RETURN(m.flags, r.ReadLe16());
  if (post_header_len > 8) RETURN_IF_ERROR(r.Skip(post_header_len - 8));
  ASSIGN_OR_RETURN(uint8_t db_len, r.ReadU8());
  ASSIGN_OR_RETURN(auto db, r.ReadString(db_len));
  m.db = std::string(db);
  ASSIGN_OR_RETURN(uint8_t nul1, r.ReadU8());
  if (nul1 != 0) return r.Error("schema name is not NUL-terminated");
  ASSIGN_OR_RETURN(uint8_t tbl_len, r.ReadU8());
  ASSIGN_OR_RETURN(auto tbl, r.ReadString(tbl_len));
  m.table = std::string(tbl);
  ASSIGN_OR_RETURN(uint8_t nul2, r.ReadU8());
  if (nul2 != 0) return r.Error("table name is not NUL-terminated");
  ASSIGN_OR_RETURN(uint64_t n, r.ReadLenEnc());
  if (n > r.remaining()) return r.Error(fmt::format("column count {} exceeds the event", n));
  ASSIGN_OR_RETURN(auto types, r.ReadBytes(static_cast<size_t>(n)));
  m.column_types.reserve(n);
  for (uint8_t t : types) m.column_types.push_back(static_cast<CT>(t));

  ASSIGN_OR_RETURN(uint64_t meta_len, r.ReadLenEnc());
  if (meta_len > r.remaining()) return r.Error(fmt::format("metadata length {} exceeds the event", meta_len));
  uint64_t meta_at = r.absolute_offset();
  ASSIGN_OR_RETURN(auto meta, r.ReadBytes(static_cast<size_t>(meta_len)));
  ByteReader mr(meta, meta_at, "TABLE_MAP_EVENT metadata");
  m.column_meta.assign(n, 0);
  std::vector<CT> real(m.column_types);
  for (size_t i = 0; i < n; ++i) {
    switch (m.column_types[i]) {
      case CT::MYSQL_TYPE_FLOAT: case CT::MYSQL_TYPE_DOUBLE: case CT::MYSQL_TYPE_BLOB:
      case CT::MYSQL_TYPE_TINY_BLOB: case CT::MYSQL_TYPE_MEDIUM_BLOB: case CT::MYSQL_TYPE_LONG_BLOB:
      case CT::MYSQL_TYPE_GEOMETRY: case CT::MYSQL_TYPE_JSON: case CT::MYSQL_TYPE_VECTOR:
      case CT::MYSQL_TYPE_TIME2: case CT::MYSQL_TYPE_DATETIME2: case CT::MYSQL_TYPE_TIMESTAMP2: {
        ASSIGN_OR_RETURN(uint8_t v, mr.ReadU8());
        m.column_meta[i] = v;
        break;
      }
      case CT::MYSQL_TYPE_VARCHAR: case CT::MYSQL_TYPE_VAR_STRING: {
        ASSIGN_OR_RETURN(uint16_t v, mr.ReadLe16());
        m.column_meta[i] = v;
        break;
      }
      case CT::MYSQL_TYPE_NEWDECIMAL: case CT::MYSQL_TYPE_STRING: case CT::MYSQL_TYPE_ENUM:
      case CT::MYSQL_TYPE_SET: case CT::MYSQL_TYPE_BIT: {
        ASSIGN_OR_RETURN(uint64_t v, mr.ReadBe(2));
        m.column_meta[i] = static_cast<uint16_t>(v);
        if (m.column_types[i] == CT::MYSQL_TYPE_STRING) {
          uint8_t rt = static_cast<uint8_t>(v >> 8);
          if (rt == static_cast<uint8_t>(CT::MYSQL_TYPE_ENUM) || rt == static_cast<uint8_t>(CT::MYSQL_TYPE_SET)) {
            real[i] = static_cast<CT>(rt);
          }
        }
        break;
      }
      default:
        break;
    }
  }
  if (!mr.empty()) return mr.Error(fmt::format("{} unused metadata bytes", mr.remaining()));

  ASSIGN_OR_RETURN(auto nulls, r.ReadBytes(static_cast<size_t>((n + 7) / 8)));
  m.nullable.resize(n);
  for (size_t i = 0; i < n; ++i) m.nullable[i] = (nulls[i / 8] >> (i % 8)) & 1;

  auto numeric = ColumnsWhere(real, [&](CT t) { return IsNumeric(t, flavor); });
  auto character = ColumnsWhere(real, [&](CT t) { return IsCharacter(t, flavor); });
  auto enums = ColumnsWhere(real, [](CT t) { return t == CT::MYSQL_TYPE_ENUM; });
  auto sets = ColumnsWhere(real, [](CT t) { return t == CT::MYSQL_TYPE_SET; });
  auto enum_or_set = ColumnsWhere(real, [](CT t) { return t == CT::MYSQL_TYPE_ENUM || t == CT::MYSQL_TYPE_SET; });
  auto geoms = ColumnsWhere(real, [](CT t) { return t == CT::MYSQL_TYPE_GEOMETRY; });
  auto vectors = ColumnsWhere(real, [](CT t) { return t == CT::MYSQL_TYPE_VECTOR; });

  while (!r.empty()) {
    ASSIGN_OR_RETURN(uint8_t opt, r.ReadU8());
    ASSIGN_OR_RETURN(uint64_t len, r.ReadLenEnc());
    if (len > r.remaining()) {
      return r.Error(fmt::format("optional metadata {} length {} exceeds the {} bytes left", opt, len,
                                 r.remaining()));
    }
    uint64_t at = r.absolute_offset();
    ASSIGN_OR_RETURN(auto value, r.ReadBytes(static_cast<size_t>(len)));
    const std::string what = fmt::format("TABLE_MAP_EVENT optional metadata {}", opt);
    ByteReader v(value, at, what);  // `what` must outlive v: the reader keeps a view
    switch (opt) {
      case 1: {  // SIGNEDNESS
        auto bits = ReadMsbBits(value, numeric.size());
        if (value.size() < (numeric.size() + 7) / 8) return v.Error("signedness bitmap too short");
        m.is_unsigned.assign(n, false);
        for (size_t k = 0; k < numeric.size(); ++k) m.is_unsigned[numeric[k]] = bits[k];
        m.has_signedness = true;
        break;
      }
      case 2: case 3: {  // DEFAULT_CHARSET / COLUMN_CHARSET
        if (m.collation_ids.empty()) m.collation_ids.assign(n, 0);
        RETURN_IF_ERROR(ReadCharsets(v, opt == 2, character, &m.collation_ids));
        m.has_charsets = true;
        break;
      }
      case 10: case 11: {  // ENUM_AND_SET_DEFAULT_CHARSET / ENUM_AND_SET_COLUMN_CHARSET
        if (m.collation_ids.empty()) m.collation_ids.assign(n, 0);
        RETURN_IF_ERROR(ReadCharsets(v, opt == 10, enum_or_set, &m.collation_ids));
        break;
      }
      case 4: {  // COLUMN_NAME
        m.column_names.clear();
        for (size_t i = 0; i < n; ++i) {
          ASSIGN_OR_RETURN(auto name, v.ReadLenEncString());
          m.column_names.emplace_back(name);
        }
        if (!v.empty()) return v.Error("trailing bytes after column names");
        break;
      }
      case 5: case 6: {  // SET_STR_VALUE / ENUM_STR_VALUE
        if (m.labels.empty()) m.labels.assign(n, {});
        RETURN_IF_ERROR(ReadLabels(v, opt == 5 ? sets : enums, &m.labels));
        m.has_labels = true;
        break;
      }
      case 7: {  // GEOMETRY_TYPE
        m.geometry_types.assign(n, 0);
        RETURN_IF_ERROR(ReadPerColumnInts(v, geoms, &m.geometry_types));
        break;
      }
      case 8: case 9: {  // SIMPLE_PRIMARY_KEY / PRIMARY_KEY_WITH_PREFIX
        m.primary_key.clear();
        m.primary_key_prefix.clear();
        while (!v.empty()) {
          ASSIGN_OR_RETURN(uint64_t idx, v.ReadLenEnc());
          if (idx >= n) return v.Error(fmt::format("primary key column {} of {} columns", idx, n));
          uint64_t prefix = 0;
          if (opt == 9) {
            ASSIGN_OR_RETURN(prefix, v.ReadLenEnc());
          }
          m.primary_key.push_back(static_cast<uint32_t>(idx));
          m.primary_key_prefix.push_back(static_cast<uint32_t>(prefix));
        }
        m.has_primary_key = true;
        break;
      }
      case 12: {  // COLUMN_VISIBILITY
        if (value.size() < (n + 7) / 8) return v.Error("visibility bitmap too short");
        m.visible = ReadMsbBits(value, n);
        break;
      }
      case 13: {  // VECTOR_DIMENSIONALITY
        m.vector_dimensions.assign(n, 0);
        RETURN_IF_ERROR(ReadPerColumnInts(v, vectors, &m.vector_dimensions));
        break;
      }
      default:
        break;  // newer metadata kinds: skippable by design (TLV)
    }
  }
  return m;
}

}  // namespace sluice::binlog
