// Record serialiser. Shapes: see record.h and docs/sinks.md ("Records").
#include "sink/record.h"

#include <map>

#include "sink/envelope.h"

namespace sluice {

namespace {

// Appends `s` as a JSON string, replacing the result with false on invalid UTF-8.
bool Str(std::string_view s, std::string* out) { return AppendJsonString(s, out); }

// The "columns" array of a schema-change record (Debezium's tableChanges): name, typeName,
// typeExpression, position (1-based), optional, charsetName, and defaultValueExpression when
// the column has a DEFAULT: the literal as information_schema.COLUMNS.COLUMN_DEFAULT prints it
// (MariaDB quotes strings: 'a''b'), the expression text (current_timestamp()), or "NULL". A
// consumer building tables from the stream needs it: an ADD COLUMN ... DEFAULT 1 gives every
// existing row 1 without a row event (a new user's probe replayed NULL there). False when a
// text is not valid UTF-8.
bool AppendColumns(const TableSchema& t, std::string* b) {
  bool ok = true;
  b->push_back('[');
  for (size_t i = 0; i < t.columns.size(); ++i) {
    const ColumnDesc& c = t.columns[i];
    if (i > 0) b->push_back(',');
    *b += "{\"name\":";
    ok = Str(c.name, b) && ok;
    *b += ",\"typeName\":";
    ok = Str(c.data_type, b) && ok;
    *b += ",\"typeExpression\":";
    ok = Str(c.column_type, b) && ok;
    *b += fmt::format(",\"position\":{},\"optional\":{},\"charsetName\":", i + 1, c.nullable ? "true" : "false");
    if (c.charset.empty()) {
      *b += "null";
    } else {
      ok = Str(c.charset, b) && ok;
    }
    if (c.default_kind == DefaultKind::kNull) {
      *b += ",\"defaultValueExpression\":\"NULL\"";
    } else if ((c.default_kind == DefaultKind::kLiteral || c.default_kind == DefaultKind::kExpression) &&
               c.default_value) {
      *b += ",\"defaultValueExpression\":";
      ok = Str(*c.default_value, b) && ok;
    }
    b->push_back('}');
  }
  b->push_back(']');
  return ok;
}

// Kafka Connect JSON-schema type of a column (docs/sinks.md, "Records": schemas).
struct ConnectType {
  const char* type;
  const char* name;  // logical name, or null
};

ConnectType ColumnConnectType(const ColumnDesc& c) {
  switch (c.type) {
    case SqlType::kTinyInt: return {"int16", nullptr};
    case SqlType::kSmallInt: return {c.is_unsigned ? "int32" : "int16", nullptr};
    case SqlType::kMediumInt: return {"int32", nullptr};
    case SqlType::kInt: return {c.is_unsigned ? "int64" : "int32", nullptr};
    case SqlType::kBigInt:
    case SqlType::kBit: return {"int64", nullptr};
    case SqlType::kYear: return {"int32", "io.debezium.time.Year"};
    case SqlType::kFloat: return {"float", nullptr};
    case SqlType::kDouble: return {"double", nullptr};
    case SqlType::kJson: return {"string", "io.debezium.data.Json"};
    case SqlType::kEnum: return {"string", "io.debezium.data.Enum"};
    case SqlType::kSet: return {"string", "io.debezium.data.EnumSet"};
    default: break;
  }
  if (IsBinaryType(c.type) || IsGeometryType(c.type)) return {"bytes", nullptr};
  if (IsCharacterType(c.type) && c.IsBinaryString()) return {"bytes", nullptr};
  return {"string", nullptr};  // decimal, temporal, text, uuid, inet, vector: canonical text
}

// `{"type":T,"optional":O,["name":N,]"field":F}`
bool AppendField(std::string_view type, bool optional, const char* name, std::string_view field,
                 std::string* out) {
  out->append("{\"type\":\"");
  out->append(type);
  out->append(optional ? "\",\"optional\":true" : "\",\"optional\":false");
  if (name != nullptr) {
    out->append(",\"name\":\"");
    out->append(name);
    out->push_back('"');
  }
  out->append(",\"field\":");
  bool ok = Str(field, out);
  out->push_back('}');
  return ok;
}

bool AppendColumnFields(const TableSchema& t, const std::vector<size_t>& which, bool keys,
                        std::string* out) {
  bool ok = true;
  for (size_t n = 0; n < which.size(); ++n) {
    const ColumnDesc& c = t.columns[which[n]];
    if (n > 0) out->push_back(',');
    ConnectType ct = ColumnConnectType(c);
    ok = AppendField(ct.type, keys ? false : c.nullable, ct.name, c.name, out) && ok;
  }
  return ok;
}

bool AppendStructName(std::string_view prefix, const TableSchema& t, std::string_view suffix,
                      std::string* out) {
  std::string name = fmt::format("{}.{}.{}.{}", prefix, t.db, t.table, suffix);
  return Str(name, out);
}

std::string_view KindText(bool create) { return create ? "CREATE" : "ALTER"; }

// The column list a schema change compares: one line per column.
std::string ColumnSignature(const TableSchema& t) {
  std::string s;
  for (const auto& c : t.columns) s += c.name + '\t' + c.column_type + (c.nullable ? "\tN\n" : "\n");
  for (size_t k : t.primary_key) s += fmt::format("{},", k);
  return s;
}

const Value* KeyValue(const RowChange& c, size_t col) {
  const bool use_after = c.op != Op::kDelete;
  if (use_after && col < c.after.size() && !c.after[col].is_absent()) return &c.after[col];
  if (col < c.before.size() && !c.before[col].is_absent()) return &c.before[col];
  return nullptr;
}

}  // namespace

RecordSerializer::RecordSerializer(RecordOptions options) : options_(std::move(options)) {}

std::string RecordSerializer::TransactionId(const Transaction& txn) {
  if (txn.changes.empty()) return {};
  const SourceInfo& s = txn.changes.front().source;
  if (!s.gtid.empty()) return s.gtid;
  return fmt::format("{}:{}", s.file, s.pos);
}

const RecordSerializer::TableSchemas& RecordSerializer::SchemasFor(const TableSchemaPtr& table) {
  auto it = schemas_.find(table.get());
  if (it != schemas_.end()) return it->second;
  TableSchemas s;
  s.hold = table;
  const TableSchema& t = *table;
  const std::string& p = options_.schema_name_prefix;
  // Key.
  s.key = "{\"type\":\"struct\",\"fields\":[";
  (void)AppendColumnFields(t, t.primary_key, true, &s.key);
  s.key += "],\"optional\":false,\"name\":";
  (void)AppendStructName(p, t, "Key", &s.key);
  s.key += '}';
  // Envelope.
  std::vector<size_t> all(t.columns.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  std::string row = "{\"type\":\"struct\",\"fields\":[";
  (void)AppendColumnFields(t, all, false, &row);
  row += "],\"optional\":true,\"name\":";
  (void)AppendStructName(p, t, "Value", &row);
  const std::string absent =
      "{\"type\":\"array\",\"items\":{\"type\":\"string\",\"optional\":false},\"optional\":true,"
      "\"field\":";
  s.value = "{\"type\":\"struct\",\"fields\":[";
  s.value += row + ",\"field\":\"before\"},";
  s.value += absent + "\"before_absent\"},";
  s.value += row + ",\"field\":\"after\"},";
  s.value += absent + "\"after_absent\"},";
  s.value +=
      "{\"type\":\"string\",\"optional\":false,\"field\":\"op\"},"
      "{\"type\":\"int64\",\"optional\":true,\"field\":\"ts_ms\"},"
      "{\"type\":\"struct\",\"fields\":["
      "{\"type\":\"string\",\"optional\":false,\"field\":\"connector\"},"
      "{\"type\":\"string\",\"optional\":false,\"field\":\"flavor\"},"
      "{\"type\":\"int64\",\"optional\":false,\"field\":\"server_id\"},"
      "{\"type\":\"string\",\"optional\":false,\"field\":\"file\"},"
      "{\"type\":\"int64\",\"optional\":false,\"field\":\"pos\"},"
      "{\"type\":\"string\",\"optional\":true,\"field\":\"gtid\"},"
      "{\"type\":\"string\",\"optional\":false,\"field\":\"db\"},"
      "{\"type\":\"string\",\"optional\":false,\"field\":\"table\"},"
      "{\"type\":\"boolean\",\"optional\":false,\"field\":\"snapshot\"},"
      "{\"type\":\"int64\",\"optional\":false,\"field\":\"ts_ms\"},"
      "{\"type\":\"int32\",\"optional\":false,\"field\":\"row\"}"
      "],\"optional\":false,\"name\":\"io.sluice.connector.Source\",\"field\":\"source\"}";
  if (options_.transaction_metadata) {
    s.value +=
        ",{\"type\":\"struct\",\"fields\":["
        "{\"type\":\"string\",\"optional\":false,\"field\":\"id\"},"
        "{\"type\":\"int64\",\"optional\":false,\"field\":\"total_order\"},"
        "{\"type\":\"int64\",\"optional\":false,\"field\":\"data_collection_order\"}"
        "],\"optional\":true,\"name\":\"event.block\",\"field\":\"transaction\"}";
  }
  s.value += "],\"optional\":false,\"name\":";
  (void)AppendStructName(p, t, "Envelope", &s.value);
  s.value += '}';
  return schemas_.emplace(table.get(), std::move(s)).first->second;
}

Status RecordSerializer::AppendChange(const RowChange& c, int64_t ts_ms, const std::string& txn_id,
                                      uint64_t total_order, uint64_t table_order,
                                      RecordBatch* out) {
  if (c.table == nullptr) return Status::InvalidArgument("row change without a table schema");
  const TableSchema& t = *c.table;
  const TableSchemas* schemas = options_.schemas ? &SchemasFor(c.table) : nullptr;
  std::string& b = out->buffer;
  Record r;
  r.kind = RecordKind::kChange;
  r.table = &t;
  r.change = &c;
  if (t.has_primary_key()) {
    r.has_key = true;
    r.key_begin = b.size();
    if (schemas) {
      b += "{\"schema\":";
      b += schemas->key;
      b += ",\"payload\":";
    }
    b.push_back('{');
    bool ok = true;
    for (size_t n = 0; n < t.primary_key.size(); ++n) {
      const size_t col = t.primary_key[n];
      if (n > 0) b.push_back(',');
      ok = Str(t.columns[col].name, &b) && ok;
      b.push_back(':');
      const Value* v = KeyValue(c, col);
      if (v == nullptr) {
        b.append("null");
      } else {
        ok = AppendJsonValue(*v, &b) && ok;
      }
    }
    b.push_back('}');
    if (schemas) b.push_back('}');
    if (!ok) {
      return Status::Corruption(
          fmt::format("key of table {}: text is not valid UTF-8", t.QualifiedName()));
    }
    r.key_size = b.size() - r.key_begin;
  }
  r.has_value = true;
  r.value_begin = b.size();
  if (schemas) {
    b += "{\"schema\":";
    b += schemas->value;
    b += ",\"payload\":";
  }
  RETURN_IF_ERROR(AppendEnvelope(c, ts_ms, &b));
  if (!txn_id.empty()) {
    b.pop_back();  // the envelope's closing brace
    b += ",\"transaction\":{\"id\":";
    (void)Str(txn_id, &b);  // checked by the caller
    b += fmt::format(",\"total_order\":{},\"data_collection_order\":{}}}}}", total_order,
                     table_order);
  }
  if (schemas) b.push_back('}');
  r.value_size = b.size() - r.value_begin;
  out->records.push_back(r);
  if (c.op == Op::kDelete && options_.tombstones && r.has_key) {
    Record tomb = r;
    tomb.kind = RecordKind::kTombstone;
    tomb.has_value = false;
    tomb.value_begin = b.size();
    tomb.value_size = 0;
    out->records.push_back(tomb);
  }
  return Status::Ok();
}

Status RecordSerializer::AppendTransaction(const Transaction& txn, int64_t ts_ms, RecordBatch* out) {
  const size_t mark_bytes = out->buffer.size();
  const size_t mark_records = out->records.size();
  auto fail = [&](Status st) {
    out->buffer.resize(mark_bytes);
    out->records.resize(mark_records);
    return st;
  };
  const bool metadata = options_.transaction_metadata && !txn.is_snapshot && !txn.changes.empty();
  std::string id;
  if (metadata) {
    id = TransactionId(txn);
    std::string probe;
    if (!Str(id, &probe)) return fail(Status::Corruption("transaction id is not valid UTF-8"));
  }
  const int64_t event_ms = txn.changes.empty() ? 0 : int64_t{txn.changes.front().source.timestamp} * 1000;
  std::string& b = out->buffer;
  auto append_txn_record = [&](RecordKind kind, const std::string& payload) {
    Record r;
    r.kind = kind;
    r.has_key = r.has_value = true;
    r.key_begin = b.size();
    if (options_.schemas) {
      b += "{\"schema\":{\"type\":\"struct\",\"fields\":[{\"type\":\"string\",\"optional\":false,"
           "\"field\":\"id\"}],\"optional\":false,\"name\":\"io.debezium.connector.common."
           "TransactionMetadataKey\"},\"payload\":";
    }
    b += "{\"id\":";
    (void)Str(id, &b);
    b.push_back('}');
    if (options_.schemas) b.push_back('}');
    r.key_size = b.size() - r.key_begin;
    r.value_begin = b.size();
    if (options_.schemas) {
      b += "{\"schema\":{\"type\":\"struct\",\"fields\":["
           "{\"type\":\"string\",\"optional\":false,\"field\":\"status\"},"
           "{\"type\":\"string\",\"optional\":false,\"field\":\"id\"},"
           "{\"type\":\"int64\",\"optional\":true,\"field\":\"event_count\"},"
           "{\"type\":\"array\",\"items\":{\"type\":\"struct\",\"fields\":["
           "{\"type\":\"string\",\"optional\":false,\"field\":\"data_collection\"},"
           "{\"type\":\"int64\",\"optional\":false,\"field\":\"event_count\"}],"
           "\"optional\":false},\"optional\":true,\"field\":\"data_collections\"},"
           "{\"type\":\"int64\",\"optional\":false,\"field\":\"ts_ms\"}],\"optional\":false,"
           "\"name\":\"io.debezium.connector.common.TransactionMetadataValue\"},\"payload\":";
    }
    b += payload;
    if (options_.schemas) b.push_back('}');
    r.value_size = b.size() - r.value_begin;
    out->records.push_back(r);
  };
  if (metadata) {
    std::string v = "{\"status\":\"BEGIN\",\"id\":";
    (void)Str(id, &v);
    v += fmt::format(",\"event_count\":null,\"data_collections\":null,\"ts_ms\":{}}}", event_ms);
    append_txn_record(RecordKind::kTxnBegin, v);
  }
  std::map<std::string, uint64_t> per_table;  // ordered: a stable END record
  uint64_t total = 0;
  const std::string no_id;
  for (const RowChange& c : txn.changes) {
    if (c.table == nullptr) return fail(Status::InvalidArgument("row change without a table schema"));
    bool split = false;
    if (options_.split_key_changes && c.op == Op::kUpdate && c.table->has_primary_key() &&
        c.before.size() == c.table->columns.size() && c.after.size() == c.table->columns.size()) {
      for (size_t col : c.table->primary_key) {
        if (!c.after[col].is_absent() && !c.before[col].is_absent() &&
            !(c.after[col] == c.before[col])) {
          split = true;
        }
      }
    }
    uint64_t& table_count = per_table[c.table->QualifiedName()];
    if (split) {
      const auto [del, add] = SplitKeyChange(c);
      // The halves point at temporaries: the records keep the original change.
      const size_t first = out->records.size();
      Status st = AppendChange(del, ts_ms, metadata ? id : no_id, total + 1, table_count + 1, out);
      if (st.ok()) st = AppendChange(add, ts_ms, metadata ? id : no_id, total + 2, table_count + 2, out);
      if (!st.ok()) return fail(st);
      for (size_t i = first; i < out->records.size(); ++i) out->records[i].change = &c;
      total += 2;
      table_count += 2;
      continue;
    }
    ++total;
    ++table_count;
    Status st = AppendChange(c, ts_ms, metadata ? id : no_id, total, table_count, out);
    if (!st.ok()) return fail(st);
  }
  if (metadata) {
    std::string v = "{\"status\":\"END\",\"id\":";
    (void)Str(id, &v);
    v += fmt::format(",\"event_count\":{},\"data_collections\":[", total);
    bool first = true;
    for (const auto& [name, n] : per_table) {
      if (!first) v.push_back(',');
      first = false;
      v += "{\"data_collection\":";
      if (!Str(name, &v)) return fail(Status::Corruption(fmt::format("table name {} is not valid UTF-8", name)));
      v += fmt::format(",\"event_count\":{}}}", n);
    }
    v += fmt::format("],\"ts_ms\":{}}}", event_ms);
    append_txn_record(RecordKind::kTxnEnd, v);
  }
  return Status::Ok();
}

// The key of a schema-change record (Debezium's SchemaChangeKey: the database name), into
// `b` at r's key offsets; r then starts its value. False when the name is not valid UTF-8.
bool RecordSerializer::AppendSchemaChangeKey(const TableSchema& t, Record* r, std::string* out) const {
  std::string& b = *out;
  r->kind = RecordKind::kSchemaChange;
  r->table = &t;
  r->has_key = r->has_value = true;
  bool ok = true;
  r->key_begin = b.size();
  if (options_.schemas) {
    b += "{\"schema\":{\"type\":\"struct\",\"fields\":[{\"type\":\"string\",\"optional\":false,"
         "\"field\":\"databaseName\"}],\"optional\":false,\"name\":\"io.debezium.connector.mysql."
         "SchemaChangeKey\"},\"payload\":";
  }
  b += "{\"databaseName\":";
  ok = Str(t.db, &b) && ok;
  b.push_back('}');
  if (options_.schemas) b.push_back('}');
  r->key_size = b.size() - r->key_begin;
  r->value_begin = b.size();
  return ok;
}

Status RecordSerializer::AppendSchemaChange(const TableSchema& t, int64_t ts_ms, RecordBatch* out) {
  std::string signature = ColumnSignature(t);
  auto seen = seen_tables_.find(t.QualifiedName());
  if (seen != seen_tables_.end() && seen->second == signature) return Status::Ok();
  const bool create = seen == seen_tables_.end();
  std::string& b = out->buffer;
  const size_t mark = b.size();
  Record r;
  bool ok = AppendSchemaChangeKey(t, &r, &b);
  if (options_.schemas) {
    // The value's shape is nested and open-ended (columns); described as a string-keyed
    // payload in the schema would add nothing a consumer uses: schema null, as Debezium's
    // schema-change topic with schemas disabled on the value converter.
    b += "{\"schema\":null,\"payload\":";
  }
  b += "{\"source\":{\"connector\":\"sluice\",\"db\":";
  ok = Str(t.db, &b) && ok;
  b += ",\"table\":";
  ok = Str(t.table, &b) && ok;
  b += fmt::format("}},\"ts_ms\":{},\"databaseName\":", ts_ms);
  ok = Str(t.db, &b) && ok;
  b += ",\"ddl\":null,\"tableChanges\":[{\"type\":\"";
  b += KindText(create);
  b += "\",\"id\":";
  ok = Str(t.QualifiedName(), &b) && ok;
  b += ",\"table\":{\"primaryKeyColumnNames\":[";
  for (size_t n = 0; n < t.primary_key.size(); ++n) {
    if (n > 0) b.push_back(',');
    ok = Str(t.columns[t.primary_key[n]].name, &b) && ok;
  }
  b += "],\"columns\":";
  ok = AppendColumns(t, &b) && ok;
  b += "}}]}";
  if (options_.schemas) b.push_back('}');
  if (!ok) {
    b.resize(mark);
    return Status::Corruption(
        fmt::format("schema change of table {}: a name is not valid UTF-8", t.QualifiedName()));
  }
  r.value_size = b.size() - r.value_begin;
  out->records.push_back(r);
  seen_tables_[t.QualifiedName()] = std::move(signature);
  return Status::Ok();
}

Status RecordSerializer::AppendDdl(const SchemaChange& c, int64_t ts_ms, RecordBatch* out) {
  const TableSchema& t = c.after ? *c.after : *c.before;
  std::string& b = out->buffer;
  const size_t mark = b.size();
  Record r;
  r.source = &c.source;
  bool ok = AppendSchemaChangeKey(t, &r, &b);
  if (options_.schemas) b += "{\"schema\":null,\"payload\":";
  b += "{\"source\":{\"connector\":\"sluice\",\"db\":";
  ok = Str(t.db, &b) && ok;
  b += ",\"table\":";
  ok = Str(t.table, &b) && ok;
  b += ",\"file\":";
  ok = Str(c.source.file, &b) && ok;
  b += fmt::format(",\"pos\":{},\"gtid\":", c.source.pos);
  if (c.source.gtid.empty()) b += "null";
  else ok = Str(c.source.gtid, &b) && ok;
  b += fmt::format(",\"ts_ms\":{}}},\"ts_ms\":{},\"databaseName\":", uint64_t{c.source.timestamp} * 1000, ts_ms);
  ok = Str(t.db, &b) && ok;
  b += ",\"ddl\":";
  ok = Str(c.ddl, &b) && ok;
  b += ",\"tableChanges\":[{\"type\":\"";
  b += c.kind == SchemaChange::Kind::kCreate ? "CREATE" : c.kind == SchemaChange::Kind::kDrop ? "DROP" : "ALTER";
  b += "\",\"id\":";
  ok = Str(t.QualifiedName(), &b) && ok;
  if (c.before && c.after && c.before->QualifiedName() != c.after->QualifiedName()) {
    b += ",\"previousId\":";
    ok = Str(c.before->QualifiedName(), &b) && ok;
  }
  b += ",\"table\":";
  if (!c.after) {
    b += "null";
  } else {
    b += "{\"primaryKeyColumnNames\":[";
    for (size_t n = 0; n < t.primary_key.size(); ++n) {
      if (n > 0) b.push_back(',');
      ok = Str(t.columns[t.primary_key[n]].name, &b) && ok;
    }
    b += "],\"columns\":";
    ok = AppendColumns(t, &b) && ok;
    b += "}";
  }
  b += "}]}";
  if (options_.schemas) b.push_back('}');
  if (!ok) {
    b.resize(mark);
    return Status::Corruption(fmt::format("schema change of table {}: a name or the statement is not valid UTF-8",
                                          t.QualifiedName()));
  }
  r.value_size = b.size() - r.value_begin;
  out->records.push_back(r);
  if (c.after) seen_tables_[c.after->QualifiedName()] = ColumnSignature(*c.after);
  return Status::Ok();
}

Status RecordSerializer::AppendTruncate(const TableSchema& t, int64_t ts_ms, RecordBatch* out, const SourceInfo* at) {
  std::string& b = out->buffer;
  const size_t mark = b.size();
  if (at != nullptr && at->file.empty()) at = nullptr;
  Record r;
  r.kind = RecordKind::kTruncate;
  r.table = &t;
  r.source = at;
  r.has_value = true;
  r.value_begin = b.size();
  if (options_.schemas) b += "{\"schema\":null,\"payload\":";
  b += fmt::format("{{\"before\":null,\"after\":null,\"op\":\"t\",\"ts_ms\":{},\"source\":{{"
                   "\"connector\":\"sluice\",\"db\":",
                   ts_ms);
  bool ok = Str(t.db, &b);
  b += ",\"table\":";
  ok = Str(t.table, &b) && ok;
  if (at != nullptr) {
    b += ",\"file\":";
    ok = Str(at->file, &b) && ok;
    b += fmt::format(",\"pos\":{},\"gtid\":", at->pos);
    if (at->gtid.empty()) b += "null";
    else ok = Str(at->gtid, &b) && ok;
    b += fmt::format(",\"ts_ms\":{}", uint64_t{at->timestamp} * 1000);
  }
  b += "}}";
  if (options_.schemas) b.push_back('}');
  if (!ok) {
    b.resize(mark);
    return Status::Corruption(fmt::format("table {}: name is not valid UTF-8", t.QualifiedName()));
  }
  r.value_size = b.size() - r.value_begin;
  out->records.push_back(r);
  return Status::Ok();
}

}  // namespace sluice
