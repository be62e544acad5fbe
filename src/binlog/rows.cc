// DecodeRows: the row images of a WRITE/UPDATE/DELETE_ROWS event -> canonical Values.
//
// Grammar of RowsEvent.body (MySQL libbinlogevents/src/rows_event.cpp, sql/log_event.cc
// Rows_log_event::print_verbose; MariaDB sql/log_event.cc):
//   body   ::= row*
//   row    ::= image                 (WRITE: after image; DELETE: before image)
//            | image image           (UPDATE: before image, then after image)
//   image  ::= null-bitmap value*    null-bitmap has one bit per column present in the
//                                    image ((present+7)/8 bytes, LSB first); a value is
//                                    stored only for present, non-NULL columns, in column
//                                    order, in the form binlog/value_decoder.h describes.
// Columns absent from an image (binlog_row_image=MINIMAL/NOBLOB) decode to Value::Absent().
// What the TABLE_MAP lacks comes from the TableSchema when given: signedness
// (else signed), charset (else strings are kBytes), ENUM/SET labels (else index/bitmask
// when options.allow_unlabeled_enum). PARTIAL_UPDATE_ROWS (MySQL partial JSON) is not
// decoded yet: kNotSupported.
#include <fmt/format.h>

#include "binlog/charset.h"
#include "binlog/rows_event.h"
#include "binlog/value_decoder.h"

namespace sluice::binlog {
namespace {

struct ColumnPlan {
  ColumnContext ctx;
  std::vector<std::string> converted_labels;  // labels converted to UTF-8, when needed
  std::string name;                           // column name or "@N"
};

Status BuildPlans(const TableMap& map, const TableSchema* schema, const DecodeOptions& options,
                  std::vector<ColumnPlan>* plans) {
  const size_t n = map.column_count();
  plans->resize(n);
  const bool schema_fits = schema != nullptr && schema->columns.size() == n;
  for (size_t i = 0; i < n; ++i) {
    ColumnPlan& p = (*plans)[i];
    const ColumnDesc* desc = schema_fits ? &schema->columns[i] : nullptr;
    p.ctx.type = map.column_types[i];
    p.ctx.meta = i < map.column_meta.size() ? map.column_meta[i] : 0;
    p.ctx.allow_unlabeled = options.allow_unlabeled_enum;
    if (i < map.column_names.size() && !map.column_names[i].empty()) {
      p.name = map.column_names[i];
    } else if (desc != nullptr) {
      p.name = desc->name;
    } else {
      p.name = fmt::format("@{}", i + 1);
    }
    if (map.has_signedness && i < map.is_unsigned.size()) {
      p.ctx.is_unsigned = map.is_unsigned[i];
    } else if (desc != nullptr) {
      p.ctx.is_unsigned = desc->is_unsigned;
    }
    uint32_t collation = map.has_charsets && i < map.collation_ids.size() ? map.collation_ids[i] : 0;
    if (collation != 0) {
      p.ctx.charset = CharsetForCollation(collation);
      if (p.ctx.charset.empty())
        return Status::NotSupported(fmt::format("{}.{} column {}: unknown collation id {}", map.db,
                                                map.table, p.name, collation));
    } else if (desc != nullptr && !desc->charset.empty()) {
      p.ctx.charset = desc->charset;
    }
    if (map.has_labels && i < map.labels.size() && !map.labels[i].empty()) {
      // TABLE_MAP labels are in the column's charset.
      if (p.ctx.charset.empty() || IsUtf8Charset(p.ctx.charset) || p.ctx.charset == "binary") {
        p.ctx.labels = &map.labels[i];
      } else {
        for (const std::string& l : map.labels[i]) {
          auto u = ToUtf8(p.ctx.charset, l);
          if (!u.ok())
            return u.status().WithContext(
                fmt::format("{}.{} column {} label", map.db, map.table, p.name));
          p.converted_labels.push_back(std::move(*u));
        }
      }
    } else if (desc != nullptr && !desc->labels.empty()) {
      p.ctx.labels = &desc->labels;
    }
  }
  // Pointers into converted_labels are taken once the vector no longer moves.
  for (ColumnPlan& p : *plans)
    if (!p.converted_labels.empty()) p.ctx.labels = &p.converted_labels;
  return Status::Ok();
}

Status DecodeImage(ByteReader& r, const TableMap& map, const std::vector<ColumnPlan>& plans,
                   const std::vector<bool>& present, size_t row_index, Row* out) {
  const size_t n = plans.size();
  size_t present_count = 0;
  for (bool b : present) present_count += b;
  auto bitmap = r.ReadBytes((present_count + 7) / 8);
  if (!bitmap.ok())
    return bitmap.status().WithContext(
        fmt::format("{}.{} row {} null bitmap", map.db, map.table, row_index));
  out->clear();
  out->reserve(n);
  size_t k = 0;  // index among present columns
  for (size_t i = 0; i < n; ++i) {
    if (!present[i]) {
      out->push_back(Value::Absent());
      continue;
    }
    const bool is_null = ((*bitmap)[k / 8] >> (k % 8)) & 1;
    ++k;
    if (is_null) {
      out->push_back(Value::Null());
      continue;
    }
    const uint64_t at = r.absolute_offset();
    auto v = DecodeColumnValue(r, plans[i].ctx);
    if (!v.ok()) {
      return v.status().WithContext(fmt::format("{}.{} row {} column {} (value at offset {})",
                                                map.db, map.table, row_index, plans[i].name, at));
    }
    out->push_back(std::move(*v));
  }
  return Status::Ok();
}

}  // namespace

Status DecodeRows(const RowsEvent& event, const TableMap& map, const TableSchema* schema,
                  const DecodeOptions& options, std::vector<DecodedRow>* out) {
  const std::string where = fmt::format("rows event for {}.{} at offset {}", map.db, map.table,
                                        event.body_offset);
  if (event.kind == RowsKind::kPartialUpdate)
    return Status::NotSupported(where + ": PARTIAL_UPDATE_ROWS (partial JSON) is not decoded yet");
  const size_t n = map.column_count();
  if (event.column_count != n)
    return Status::Corruption(fmt::format("{}: event has {} columns, TABLE_MAP has {}", where,
                                          event.column_count, n));
  if (map.column_meta.size() != n && !map.column_meta.empty())
    return Status::Corruption(fmt::format("{}: TABLE_MAP has {} metadata entries for {} columns",
                                          where, map.column_meta.size(), n));
  const bool want_before = event.kind == RowsKind::kUpdate || event.kind == RowsKind::kDelete;
  const bool want_after = event.kind == RowsKind::kUpdate || event.kind == RowsKind::kWrite;
  if ((want_before && event.present_before.size() != n) ||
      (want_after && event.present_after.size() != n))
    return Status::Corruption(fmt::format("{}: column bitmap size does not match {} columns", where, n));

  std::vector<ColumnPlan> plans;
  RETURN_IF_ERROR(BuildPlans(map, schema, options, &plans));

  ByteReader r(event.body, event.body_offset, "row image");
  size_t row_index = 0;
  while (!r.empty()) {
    DecodedRow row;
    if (want_before) RETURN_IF_ERROR(DecodeImage(r, map, plans, event.present_before, row_index, &row.before));
    if (want_after) RETURN_IF_ERROR(DecodeImage(r, map, plans, event.present_after, row_index, &row.after));
    out->push_back(std::move(row));
    ++row_index;
  }
  return Status::Ok();
}

}  // namespace sluice::binlog
