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
// when options.allow_unlabeled_enum).
// PARTIAL_UPDATE_ROWS (MySQL binlog_row_value_options=PARTIAL_JSON):
//   row    ::= before-image shared-image after-image
//   shared ::= value_options(packed int) [if bit 0: partial_bits((json_columns+7)/8)]
// A JSON column marked partial holds a diff vector (json_diff.h) instead of its document;
// it is applied to the before image's document, so the after image carries the full
// document. Without that document (MINIMAL/NOBLOB before images) it is kNotSupported, or
// the diffs as JSON text when options.partial_json_diff_without_base.
#include <fmt/format.h>

#include "binlog/charset.h"
#include "binlog/json_diff.h"
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
    if (desc != nullptr) p.ctx.fixed_binary = FixedBinaryTypeOf(desc->type);
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

Result<Value> DecodePartialJson(ByteReader& r, const TableMap& map, const ColumnPlan& plan,
                                size_t row_index, size_t column, const Row* before,
                                bool diff_without_base) {
  const uint64_t at = r.absolute_offset();
  const std::string where = fmt::format("{}.{} row {} column {} (partial JSON at offset {})",
                                        map.db, map.table, row_index, plan.name, at);
  size_t consumed = 0;
  auto diffs = DecodeJsonDiffs(r.PeekRest(), &consumed);
  if (!diffs.ok()) return diffs.status().WithContext(where);
  RETURN_IF_ERROR(r.Skip(consumed));
  const Value* base = before != nullptr && column < before->size() ? &(*before)[column] : nullptr;
  if (base == nullptr || base->is_absent()) {
    if (diff_without_base) return Value::Text(JsonDiffsToText(*diffs));
    return Status::NotSupported(
        where + ": the before image lacks the document the diff applies to "
                "(binlog_row_image=MINIMAL/NOBLOB with binlog_row_value_options=PARTIAL_JSON); "
                "use binlog_row_image=FULL or binlog_row_value_options=''");
  }
  if (base->kind != Value::Kind::kText)
    return Status::Corruption(where + ": partial JSON update of a NULL or non-JSON value");
  auto doc = ApplyJsonDiffs(base->s, *diffs);
  if (!doc.ok()) return doc.status().WithContext(where);
  return Value::Text(std::move(*doc));
}

// `partial` (may be null): columns whose value is a partial JSON diff vector, applied to
// the document in `before` (json_diff.h).
Status DecodeImage(ByteReader& r, const TableMap& map, const std::vector<ColumnPlan>& plans,
                   const std::vector<bool>& present, size_t row_index, Row* out,
                   const std::vector<bool>* partial = nullptr, const Row* before = nullptr,
                   bool diff_without_base = false) {
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
    if (partial != nullptr && (*partial)[i]) {
      auto v = DecodePartialJson(r, map, plans[i], row_index, i, before, diff_without_base);
      if (!v.ok()) return v.status();
      out->push_back(std::move(*v));
      continue;
    }
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

struct RowPlans {
  std::vector<ColumnPlan> columns;
};

Result<std::shared_ptr<const RowPlans>> BuildRowPlans(const TableMap& map, const TableSchema* schema,
                                                      const DecodeOptions& options) {
  auto plans = std::make_shared<RowPlans>();
  RETURN_IF_ERROR(BuildPlans(map, schema, options, &plans->columns));
  return std::shared_ptr<const RowPlans>(std::move(plans));
}

size_t PlanColumnCount(const RowPlans& plans) { return plans.columns.size(); }
const ColumnContext& PlanColumn(const RowPlans& plans, size_t i) { return plans.columns[i].ctx; }

namespace {

// `prebuilt` null: the plans are built here from `schema`, after the event's shape checks
// (so that errors come in the same order either way).
Status DecodeRowsImpl(const RowsEvent& event, const TableMap& map, const RowPlans* prebuilt,
                      const TableSchema* schema, const DecodeOptions& options, std::vector<DecodedRow>* out) {
  // Built only when an error needs it (this runs once per rows event).
  const auto where = [&] {
    return fmt::format("rows event for {}.{} at offset {}", map.db, map.table, event.body_offset);
  };
  const size_t n = map.column_count();
  if (event.column_count != n)
    return Status::Corruption(fmt::format("{}: event has {} columns, TABLE_MAP has {}", where(),
                                          event.column_count, n));
  if (map.column_meta.size() != n && !map.column_meta.empty())
    return Status::Corruption(fmt::format("{}: TABLE_MAP has {} metadata entries for {} columns",
                                          where(), map.column_meta.size(), n));
  const bool partial_update = event.kind == RowsKind::kPartialUpdate;
  const bool want_before = event.kind == RowsKind::kUpdate || event.kind == RowsKind::kDelete || partial_update;
  const bool want_after = event.kind == RowsKind::kUpdate || event.kind == RowsKind::kWrite || partial_update;
  size_t json_columns = 0;
  for (ColumnType t : map.column_types) json_columns += t == ColumnType::MYSQL_TYPE_JSON;
  if ((want_before && event.present_before.size() != n) ||
      (want_after && event.present_after.size() != n))
    return Status::Corruption(fmt::format("{}: column bitmap size does not match {} columns", where(), n));

  RowPlans local;
  if (prebuilt == nullptr) RETURN_IF_ERROR(BuildPlans(map, schema, options, &local.columns));
  const std::vector<ColumnPlan>& plans = prebuilt ? prebuilt->columns : local.columns;
  if (plans.size() != n)
    return Status::Internal(fmt::format("{}: column plans for {} columns, TABLE_MAP has {}", where(),
                                        plans.size(), n));

  ByteReader r(event.body, event.body_offset, "row image");
  size_t row_index = 0;
  while (!r.empty()) {
    const size_t row_start = r.position();
    DecodedRow row;
    if (want_before) RETURN_IF_ERROR(DecodeImage(r, map, plans, event.present_before, row_index, &row.before));
    if (partial_update) {
      // shared-image: value_options (packed int; bit 0 PARTIAL_JSON_UPDATES), then when set
      // one bit per JSON column of the table, LSB first: 1 = the after value is a diff vector
      // (MySQL sql/rpl_record.h unpack_row, libs/mysql/binlog/event/rows_event.h).
      ASSIGN_OR_RETURN(uint64_t value_options, r.ReadLenEnc());
      std::vector<bool> partial(n, false);
      if (value_options & 1) {
        ASSIGN_OR_RETURN(auto bits, r.ReadBytes((json_columns + 7) / 8));
        size_t k = 0;
        for (size_t i = 0; i < n; ++i) {
          if (map.column_types[i] != ColumnType::MYSQL_TYPE_JSON) continue;
          partial[i] = (bits[k / 8] >> (k % 8)) & 1;
          ++k;
        }
      }
      RETURN_IF_ERROR(DecodeImage(r, map, plans, event.present_after, row_index, &row.after,
                                  &partial, &row.before, options.partial_json_diff_without_base));
    } else if (want_after) {
      RETURN_IF_ERROR(DecodeImage(r, map, plans, event.present_after, row_index, &row.after));
    }
    // A row whose images hold no column reads no bytes: it would repeat forever.
    if (r.position() == row_start)
      return Status::Corruption(fmt::format("{}: row images with no columns, but {} body bytes remain",
                                            where(), r.remaining()));
    out->push_back(std::move(row));
    ++row_index;
  }
  return Status::Ok();
}

}  // namespace

Status DecodeRows(const RowsEvent& event, const TableMap& map, const TableSchema* schema,
                  const DecodeOptions& options, std::vector<DecodedRow>* out) {
  return DecodeRowsImpl(event, map, nullptr, schema, options, out);
}

Status DecodeRows(const RowsEvent& event, const TableMap& map, const RowPlans& plans,
                  const DecodeOptions& options, std::vector<DecodedRow>* out) {
  return DecodeRowsImpl(event, map, &plans, nullptr, options, out);
}

}  // namespace sluice::binlog
