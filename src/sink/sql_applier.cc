// SqlApplier implementation. Statements it writes (identifiers quoted by the dialect,
// parameters numbered by SqlDialect::Placeholder):
//   upsert   SqlDialect::UpsertSql: INSERT ... VALUES (..)[,(..)...] ON CONFLICT ...
//   update   UPDATE t SET c = $1... WHERE pk1 = $n AND ...
//   delete   DELETE FROM t WHERE pk1 = $1 AND ...
//   no PK    SqlDialect::FirstMatchSql (update or delete of the first null-safe match)
// Statements are prepared once per (table, kind, present-column mask[, rows]) and cached.
#include "sink/sql_applier.h"

#include "checkpoint/checkpoint.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <charconv>
#include <unordered_set>

#include "schema/text_value.h"
#include "util/hash.h"

namespace sluice {

namespace {

// Statement cache key kinds (first byte of the key).
constexpr char kUpsert = 'I';
constexpr char kUpdateByKey = 'U';
constexpr char kDeleteByKey = 'D';
constexpr char kUpdateFirstMatch = 'u';
constexpr char kDeleteFirstMatch = 'd';
constexpr char kDeleteManyByKey = 'X';  // followed by the row count

}  // namespace

std::string SqlDialect::UpsertSql(const SqlTable& t, const std::vector<size_t>& cols,
                                  const std::vector<size_t>& update_cols, size_t rows) const {
  if (cols.empty()) return "INSERT INTO " + t.name.quoted + " DEFAULT VALUES";
  std::string sql = "INSERT INTO " + t.name.quoted + " (";
  for (size_t j = 0; j < cols.size(); ++j) sql += (j ? ", " : "") + t.columns[cols[j]].quoted;
  sql += ") VALUES ";
  int p = 1;
  for (size_t r = 0; r < rows; ++r) {
    sql += r ? ", (" : "(";
    for (size_t j = 0; j < cols.size(); ++j) sql += (j ? ", " : "") + Placeholder(p++);
    sql += ")";
  }
  if (t.schema->has_primary_key()) {
    sql += " ON CONFLICT (";
    for (size_t j = 0; j < t.schema->primary_key.size(); ++j)
      sql += (j ? ", " : "") + t.columns[t.schema->primary_key[j]].quoted;
    sql += ") DO ";
    std::string set;
    for (size_t c : update_cols)
      set += (set.empty() ? "" : ", ") + t.columns[c].quoted + " = excluded." + t.columns[c].quoted;
    sql += set.empty() ? "NOTHING" : "UPDATE SET " + set;
  }
  return sql;
}

std::string SqlDialect::FirstMatchSql(const SqlTable& t, const std::vector<size_t>& set_cols,
                                      const std::vector<size_t>& where_cols) const {
  int p = 1;
  std::string sql;
  if (set_cols.empty()) {
    sql = "DELETE FROM " + t.name.quoted;
  } else {
    sql = "UPDATE " + t.name.quoted + " SET ";
    for (size_t j = 0; j < set_cols.size(); ++j)
      sql += (j ? ", " : "") + t.columns[set_cols[j]].quoted + " = " + Placeholder(p++);
  }
  sql += " WHERE " + t.row_locator + " = (SELECT " + t.row_locator + " FROM " + t.name.quoted;
  for (size_t j = 0; j < where_cols.size(); ++j)
    sql += (j ? " AND " : " WHERE ") + NullSafeEquals(t.columns[where_cols[j]].quoted, Placeholder(p++));
  return sql + " ORDER BY " + t.row_locator + " LIMIT 1)";
}

Result<std::string> SqlDialect::AddColumnSql(const SqlTableName& table, const ColumnDesc& column,
                                             const Value& default_value) const {
  ASSIGN_OR_RETURN(std::string type, ColumnType(column));
  ASSIGN_OR_RETURN(std::string lit, Literal(default_value, column));
  return "ALTER TABLE " + table.quoted + " ADD COLUMN " + Quote(column.name) + (type.empty() ? "" : " " + type) +
         " DEFAULT " + lit;
}

SqlApplier::SqlApplier(std::unique_ptr<SqlDialect> dialect, std::unique_ptr<SqlConnection> conn)
    : dialect_(std::move(dialect)), conn_(std::move(conn)) {}

SqlApplier::~SqlApplier() = default;

Status SqlApplier::Init() {
  for (const std::string& sql : dialect_->CreateMetadataSql()) RETURN_IF_ERROR(Exec(sql));
  return Status::Ok();
}

Result<std::unique_ptr<SqlApplier>> SqlApplier::Open(std::unique_ptr<SqlDialect> dialect,
                                                     std::unique_ptr<SqlConnection> conn) {
  std::unique_ptr<SqlApplier> a(new SqlApplier(std::move(dialect), std::move(conn)));
  RETURN_IF_ERROR(a->Init());
  return a;
}

Status SqlApplier::Exec(const std::string& sql) { return conn_->Exec(sql); }

Result<SqlStatement*> SqlApplier::Meta(SqlMeta which) {
  SqlStatement*& s = meta_[static_cast<size_t>(which)];
  if (s == nullptr) {
    ASSIGN_OR_RETURN(s, conn_->Prepare(dialect_->MetaSql(which)));
  }
  return s;
}

Status SqlApplier::Recover() {
  if (!need_reconnect_) return Status::Ok();
  stored_schemas_.reset();
  part_open_ = false;
  stmts_.clear();
  meta_.fill(nullptr);
  RETURN_IF_ERROR(conn_->Reconnect());
  need_reconnect_ = false;
  return Status::Ok();
}

Status SqlApplier::Note(Status st) {
  if (st.code() == StatusCode::kUnavailable) need_reconnect_ = true;
  return st;
}

Status SqlApplier::Begin() { return part_open_ ? Status::Ok() : conn_->Begin(); }

void SqlApplier::Rollback() {
  part_open_ = false;
  stored_schemas_.reset();  // a history written in the rolled-back transaction is gone
  conn_->Rollback();
}

Status SqlApplier::Commit(const std::string* checkpoint) {
  if (part_open_) return Status::Ok();  // the group that ends the source transaction commits
  Status st = conn_->Commit();
  // A connection lost during COMMIT leaves the outcome unknown: the next call finds out
  // from the stored checkpoint.
  if (st.code() == StatusCode::kUnavailable && checkpoint != nullptr) in_doubt_ = *checkpoint;
  return st;
}

Result<int64_t> SqlApplier::Run(SqlTable* t, SqlStatement* s) {
  Result<int64_t> r = s->Execute();
  if (!r.ok() && t != nullptr) return r.status().WithContext("table " + t->name.display);
  return r;
}

Result<std::optional<std::string>> SqlApplier::LoadCheckpoint() {
  if (Status st = Recover(); !st.ok()) return Note(st);
  auto load = [&]() -> Result<std::optional<std::string>> {
    ASSIGN_OR_RETURN(SqlStatement * s, Meta(SqlMeta::kLoadCheckpoint));
    ASSIGN_OR_RETURN(auto rows, s->Query());
    std::optional<std::string> out;
    if (!rows.empty() && !rows[0].empty() && rows[0][0].has_value()) out = *rows[0][0];
    if (!out) return out;
    const std::string_view ref = CheckpointSchemasRef(*out);
    if (ref.empty()) return out;
    ASSIGN_OR_RETURN(SqlStatement * h, Meta(SqlMeta::kLoadSchemas));
    const Value ref_value = Value::Text(std::string(ref));
    RETURN_IF_ERROR(h->Bind(1, ref_value, nullptr));
    ASSIGN_OR_RETURN(auto hrows, h->Query());
    if (hrows.empty() || hrows[0].empty() || !hrows[0][0].has_value()) {
      return Status::Corruption(fmt::format(
          "the checkpoint refers to schema history {}, which the schemas table does not hold", ref));
    }
    return std::optional<std::string>(JoinCheckpoint(*out, *hrows[0][0]));
  };
  Result<std::optional<std::string>> r = load();
  if (!r.ok()) return Note(r.status().WithContext("load checkpoint"));
  return r;
}

Status SqlApplier::WriteCheckpoint(const std::string& checkpoint,
                                   const std::shared_ptr<const SchemaHistoryText>& schemas) {
  const std::string* text = &checkpoint;
  std::shared_ptr<const SchemaHistoryText> history = schemas;
  SplitCheckpointText split;
  if (!history) {
    split = SplitCheckpoint(checkpoint);
    if (split.schemas) {
      text = &split.split;
      history = split.schemas;
    }
  }
  const bool stored = history && stored_schemas_ &&
                      (stored_schemas_ == history ||
                       (stored_schemas_->ref == history->ref && stored_schemas_->json == history->json));
  if (history && !stored) {
    // Once per schema change: the new history replaces the old in this transaction.
    const Value ref = Value::Text(history->ref);
    ASSIGN_OR_RETURN(SqlStatement * drop, Meta(SqlMeta::kDropOtherSchemas));
    RETURN_IF_ERROR(drop->Bind(1, ref, nullptr).WithContext("bind schema history"));
    Result<int64_t> r = drop->Execute();
    if (!r.ok()) return r.status().WithContext("save schema history");
    ASSIGN_OR_RETURN(SqlStatement * save, Meta(SqlMeta::kSaveSchemas));
    const Value json = Value::Text(history->json);
    RETURN_IF_ERROR(save->Bind(1, ref, nullptr).WithContext("bind schema history"));
    RETURN_IF_ERROR(save->Bind(2, json, nullptr).WithContext("bind schema history"));
    r = save->Execute();
    if (!r.ok()) return r.status().WithContext("save schema history");
    stored_schemas_ = history;
  }
  ASSIGN_OR_RETURN(SqlStatement * s, Meta(SqlMeta::kSaveCheckpoint));
  const Value v = Value::Text(*text);
  RETURN_IF_ERROR(s->Bind(1, v, nullptr).WithContext("bind checkpoint"));
  Result<int64_t> r = s->Execute();
  return r.ok() ? Status::Ok() : r.status().WithContext("save checkpoint");
}

Status SqlApplier::SaveCheckpoint(const std::string& checkpoint) {
  RETURN_IF_ERROR(Note(Recover()));
  Status st = Begin();
  if (st.ok()) st = WriteCheckpoint(checkpoint);
  if (st.ok()) st = Commit(&checkpoint);
  if (!st.ok()) Rollback();
  return Note(st);
}

Status SqlApplier::Flush() { return Status::Ok(); }

Status SqlApplier::ResetTable(const TableSchema& table, const std::string& checkpoint) {
  RETURN_IF_ERROR(Note(Recover()));
  RETURN_IF_ERROR(PrepareTable(table));
  RETURN_IF_ERROR(Note(Begin()));
  Status st = Exec("DELETE FROM " + dialect_->TableName(table).quoted);
  if (st.ok() && !checkpoint.empty()) st = WriteCheckpoint(checkpoint);
  if (st.ok()) st = Commit(checkpoint.empty() ? nullptr : &checkpoint);
  if (!st.ok()) Rollback();
  return Note(st);
}

Status SqlApplier::BuildTable(const TableSchema& schema, SqlTable* t) const {
  t->schema = std::make_shared<const TableSchema>(schema);
  t->name = dialect_->TableName(schema);
  t->columns.clear();
  t->columns.resize(schema.columns.size());
  for (size_t i = 0; i < schema.columns.size(); ++i) {
    SqlColumn& col = t->columns[i];
    col.source = &t->schema->columns[i];
    col.table = t->schema.get();
    col.quoted = dialect_->Quote(col.source->name);
    Result<std::string> type = dialect_->ColumnType(*col.source);
    if (!type.ok())
      return type.status().WithContext(fmt::format("table {}: column {}", t->name.display, col.source->name));
    col.type = *type;
    col.bind_kind = dialect_->BindKind(*col.source);
    Result<Value> d = DefaultValue(*col.source);
    col.default_value = d.ok() ? std::move(d).value() : Value::Null();
    col.default_error = d.ok() ? "" : d.status().ToString();
    // An expression's value (CURRENT_TIMESTAMP, UUID(), a default information_schema cannot
    // print exactly) is the server's alone: a row that leaves the column out cannot be filled.
    if (col.source->default_kind == DefaultKind::kExpression && col.default_error.empty())
      col.default_error = fmt::format("the DEFAULT {} is not known exactly (an expression only the server "
                                      "evaluates, or a binary string information_schema cannot print)",
                                      col.source->default_value.value_or("(unknown)"));
  }
  for (size_t k : schema.primary_key) t->columns[k].is_pk = true;
  t->row_locator.clear();
  if (!schema.has_primary_key()) {
    Result<std::string> loc = dialect_->RowLocator(schema);
    if (!loc.ok()) return loc.status().WithContext("table " + t->name.display);
    t->row_locator = *loc;
  }
  return Status::Ok();
}

Status SqlApplier::CreateTableSql(const TableSchema& schema, const std::string& quoted, bool if_not_exists,
                                  std::string* sql) const {
  *sql = std::string("CREATE TABLE ") + (if_not_exists ? "IF NOT EXISTS " : "") + quoted + " (";
  for (size_t i = 0; i < schema.columns.size(); ++i) {
    Result<std::string> type = dialect_->ColumnType(schema.columns[i]);
    if (!type.ok()) return type.status().WithContext(fmt::format("column {}", schema.columns[i].name));
    *sql += (i ? ", " : "") + dialect_->Quote(schema.columns[i].name) + (type->empty() ? "" : " " + *type);
  }
  if (schema.has_primary_key()) {
    *sql += ", PRIMARY KEY (";
    for (size_t j = 0; j < schema.primary_key.size(); ++j)
      *sql += (j ? ", " : "") + dialect_->Quote(schema.columns[schema.primary_key[j]].name);
    *sql += ")";
  }
  *sql += ")" + dialect_->TableOptionsSql(schema);
  return Status::Ok();
}

namespace {

bool SameShape(const SqlDialect& d, const TableSchema& a, const TableSchema& b, size_t columns) {
  if (a.primary_key != b.primary_key || a.columns.size() < columns || b.columns.size() < columns) return false;
  for (size_t i = 0; i < columns; ++i) {
    if (a.columns[i].name != b.columns[i].name) return false;
    Result<std::string> ta = d.ColumnType(a.columns[i]), tb = d.ColumnType(b.columns[i]);
    if (!ta.ok() || !tb.ok() || !d.SameType(*ta, *tb)) return false;
  }
  return true;
}

// Whether an existing destination table has exactly the columns (names, types, key) `schema`
// gives it.
bool MatchesSchema(const SqlDialect& d, const std::vector<SqlExistingColumn>& have, const TableSchema& schema) {
  if (have.size() != schema.columns.size()) return false;
  for (size_t i = 0; i < have.size(); ++i) {
    int want_pk = 0;
    for (size_t j = 0; j < schema.primary_key.size(); ++j)
      if (schema.primary_key[j] == i) want_pk = static_cast<int>(j) + 1;
    Result<std::string> type = d.ColumnType(schema.columns[i]);
    if (!type.ok() || have[i].name != schema.columns[i].name || !d.SameType(*type, have[i].type) ||
        have[i].pk != want_pk)
      return false;
  }
  return true;
}

}  // namespace

// A source table that would land among sluice's own tables (PostgreSQL: a source database
// named or mapped "_sluice") would overwrite or be overwritten by the checkpoint.
static Status RefuseReserved(const SqlDialect& dialect, const TableSchema& schema, const SqlTableName& name) {
  const std::string_view reserved = dialect.ReservedNamespace();
  if (reserved.empty() || !dialect.NamesEqual(name.namespace_name, reserved)) return Status::Ok();
  return Status::FailedPrecondition(fmt::format(
      "table {}.{} would go to {}, among sluice's own tables (the checkpoint); map its database to another "
      "destination namespace (docs/config.md)",
      schema.db, schema.table, name.display));
}

Status SqlApplier::PrepareTable(const TableSchema& schema) {
  RETURN_IF_ERROR(Note(Recover()));
  const SqlTableName name = dialect_->TableName(schema);
  RETURN_IF_ERROR(RefuseReserved(*dialect_, schema, name));
  RETURN_IF_ERROR(dialect_->CheckNames(schema));
  if (schema.columns.empty()) {
    return Status::InvalidArgument(fmt::format("table {}: no columns", name.display));
  }
  for (size_t k : schema.primary_key) {
    if (k >= schema.columns.size()) {
      return Status::InvalidArgument(
          fmt::format("table {}: primary key index {} out of range", name.display, k));
    }
  }
  auto existing = tables_.find(name.key);
  if (existing != tables_.end()) {
    const TableSchema& old = *existing->second->schema;
    const bool same_source = old.db == schema.db && old.table == schema.table;
    if (!same_source)
      return Status::FailedPrecondition(fmt::format(
          "source tables `{}`.`{}` and `{}`.`{}` both map to the {} table {}", old.db, old.table, schema.db,
          schema.table, dialect_->name(), name.display));
    if (same_source && old.columns.size() == schema.columns.size() &&
        SameShape(*dialect_, old, schema, old.columns.size()))
      return Status::Ok();
    // Columns added at the end (ALTER TABLE ... ADD COLUMN) are followed below; any other
    // change stops the run.
    if (!same_source || old.columns.size() >= schema.columns.size() ||
        !SameShape(*dialect_, old, schema, old.columns.size())) {
      return Status::FailedPrecondition(fmt::format(
          "table {}: its definition changed in a way sluice does not follow yet (only columns "
          "added at the end are); re-snapshot the table into a new replica",
          name.display));
    }
    ForgetTable(name.key);  // rebuilt below with the new columns
  }

  auto t = std::make_unique<SqlTable>();
  RETURN_IF_ERROR(BuildTable(schema, t.get()));
  std::string create;
  RETURN_IF_ERROR(CreateTableSql(schema, name.quoted, true, &create).WithContext("table " + name.display));
  nlohmann::json cols = nlohmann::json::array();
  const std::string type_key = std::string(dialect_->name()) + "_type";
  for (const SqlColumn& c : t->columns)
    cols.push_back({{"name", c.source->name}, {"column_type", c.source->column_type}, {type_key, c.type}});

  RETURN_IF_ERROR(Note(Begin()));
  Status st = [&]() -> Status {
    // A different source table already using this destination name?
    {
      ASSIGN_OR_RETURN(SqlStatement * s, Meta(SqlMeta::kLookupTable));
      const Value key = Value::Text(name.key);
      RETURN_IF_ERROR(s->Bind(1, key, nullptr));
      ASSIGN_OR_RETURN(auto rows, s->Query());
      for (const auto& row : rows) {
        const std::string db = row.size() > 0 && row[0] ? *row[0] : "";
        const std::string tbl = row.size() > 1 && row[1] ? *row[1] : "";
        if (db != schema.db || tbl != schema.table) {
          return Status::FailedPrecondition(fmt::format(
              "source tables `{}`.`{}` and `{}`.`{}` both map to the {} table {}", db, tbl, schema.db,
              schema.table, dialect_->name(), name.display));
        }
      }
    }
    if (std::string ns = dialect_->EnsureNamespaceSql(name); !ns.empty()) RETURN_IF_ERROR(Exec(ns));
    RETURN_IF_ERROR(Exec(create));
    // The table may have existed with fewer columns: a source ALTER TABLE ... ADD COLUMN
    // since the last run. Add the missing ones (rows copied before take the default).
    ASSIGN_OR_RETURN(auto have, dialect_->DescribeTable(*conn_, name));
    if (!have) return Status::Internal(fmt::format("table {}: not found right after CREATE TABLE", name.display));
    {
      bool prefix = have->size() < schema.columns.size();
      for (size_t i = 0; prefix && i < have->size(); ++i) prefix = (*have)[i].name == schema.columns[i].name;
      for (size_t i = prefix ? have->size() : schema.columns.size(); i < schema.columns.size(); ++i) {
        if (t->columns[i].is_pk) break;  // a key change: reported by the check below
        // Rows already there take the column's default, as they do in the source (for a
        // literal default; an expression default such as CURRENT_TIMESTAMP gives NULL).
        ASSIGN_OR_RETURN(std::string add, dialect_->AddColumnSql(name, schema.columns[i], t->columns[i].default_value));
        RETURN_IF_ERROR(Exec(add));
      }
      if (prefix) {
        ASSIGN_OR_RETURN(have, dialect_->DescribeTable(*conn_, name));
        if (!have) return Status::Internal(fmt::format("table {}: lost", name.display));
      }
    }
    // The table may have existed: its columns must be the ones the schema describes.
    RETURN_IF_ERROR(MatchExistingTable(*dialect_, schema, *have).WithContext(conn_->Describe()));
    {
      ASSIGN_OR_RETURN(SqlStatement * s, Meta(SqlMeta::kStoreTable));
      const Value v1 = Value::Text(name.key), v2 = Value::Text(schema.db), v3 = Value::Text(schema.table),
                  v4 = Value::Text(cols.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      RETURN_IF_ERROR(s->Bind(1, v1, nullptr));
      RETURN_IF_ERROR(s->Bind(2, v2, nullptr));
      RETURN_IF_ERROR(s->Bind(3, v3, nullptr));
      RETURN_IF_ERROR(s->Bind(4, v4, nullptr));
      RETURN_IF_ERROR(Run(t.get(), s).status());
    }
    return Commit(nullptr);
  }();
  if (!st.ok()) {
    Rollback();
    return Note(st);
  }
  tables_.emplace(name.key, std::move(t));
  return Status::Ok();
}

Result<std::optional<bool>> SqlApplier::HasTable(const TableSchema& table) {
  if (Status st = Recover(); !st.ok()) return Note(st);
  if (dialect_->MarkerTable("x")) {
    // A statement of several renames cut short by a crash (its marker is there) leaves a name
    // missing until the stream applies the rest: its absence says nothing (a run's start took
    // it for a table dropped by hand and copied it again, then stopped on the rest of the
    // statement; a new user's probe). A marker left over from a finished one says the same.
    Result<std::vector<std::string>> markers = dialect_->ListMarkerTables(*conn_);
    if (!markers.ok()) return Note(markers.status());
    if (!markers->empty()) return std::optional<bool>();
  }
  Result<std::optional<std::vector<SqlExistingColumn>>> have = dialect_->DescribeTable(*conn_, dialect_->TableName(table));
  if (!have.ok()) return Note(have.status());
  return std::optional<bool>(have->has_value());
}

void SqlApplier::ForgetTable(const std::string& key) {
  auto it = tables_.find(key);
  if (it == tables_.end()) return;
  SqlTable* gone = it->second.get();
  std::erase_if(by_schema_, [&](const auto& e) { return e.second.second == gone; });
  tables_.erase(it);
  // Every statement, not only this table's: the connection drops them all (ForgetStatements).
  stmts_.clear();
  meta_.fill(nullptr);
  conn_->ForgetStatements();
}

Status SqlApplier::RefuseTakenNames(const std::vector<SchemaChange>& changes) {
  // Who holds each destination name the statement touches, as the statement leaves it so
  // far: the tables table's row (looked up as the destination compares names), then the
  // statement's own changes.
  struct Holder {
    std::string key, db, table;  // db.table: the source table; "" = the name is free
  };
  std::vector<Holder> held;
  auto holder = [&](const TableSchema& t) -> Result<size_t> {
    const std::string key = dialect_->TableName(t).key;
    for (size_t i = 0; i < held.size(); ++i)
      if (dialect_->NamesEqual(held[i].key, key)) return i;
    Holder h{key, "", ""};
    ASSIGN_OR_RETURN(SqlStatement * s, Meta(SqlMeta::kLookupTable));
    const Value v = Value::Text(key);
    RETURN_IF_ERROR(s->Bind(1, v, nullptr));
    ASSIGN_OR_RETURN(auto rows, s->Query());
    if (!rows.empty() && rows[0].size() > 1 && rows[0][0] && rows[0][1]) {
      h.db = *rows[0][0];
      h.table = *rows[0][1];
    }
    held.push_back(std::move(h));
    return held.size() - 1;
  };
  for (const SchemaChange& c : changes) {
    // A table dropped (and kept, unless sink.drop_tables) or renamed away leaves its name.
    const bool leaves = c.before && (c.kind == SchemaChange::Kind::kDrop ? drop_tables_ : c.after != nullptr);
    if (leaves) {
      ASSIGN_OR_RETURN(size_t i, holder(*c.before));
      if (held[i].db == c.before->db && held[i].table == c.before->table) held[i].db = held[i].table = "";
    }
    if (!c.after) continue;
    ASSIGN_OR_RETURN(size_t i, holder(*c.after));
    Holder& h = held[i];
    if ((!h.db.empty() || !h.table.empty()) && (h.db != c.after->db || h.table != c.after->table)) {
      TableSchema first;
      first.db = h.db;
      first.table = h.table;
      const std::string first_name = dialect_->TableName(first).display;
      const std::string ddl = c.ddl.size() > 120 ? c.ddl.substr(0, 117) + "..." : c.ddl;
      return Status::FailedPrecondition(fmt::format(
          "source tables `{}`.`{}` and `{}`.`{}` would both become the {} table \"{}\"{}: `{}`.`{}` came while "
          "streaming (\"{}\" at binlog {}:{}) and would replace the other's rows there; sluice stops before "
          "applying it: leave `{}`.`{}` out (source.exclude) and run again",
          h.db, h.table, c.after->db, c.after->table, dialect_->name(), first_name,
          first_name != dialect_->TableName(*c.after).display ? fmt::format(" ({} table names ignore case)", dialect_->name())
                                                              : "",
          c.after->db, c.after->table, ddl, c.source.file, c.source.pos, c.after->db, c.after->table));
    }
    h.db = c.after->db;
    h.table = c.after->table;
  }
  return Status::Ok();
}

Status SqlApplier::ApplySchemaChanges(const std::vector<SchemaChange>& changes, const std::string& checkpoint) {
  RETURN_IF_ERROR(Note(Recover()));
  for (const SchemaChange& c : changes) {
    if (!c.after) continue;
    RETURN_IF_ERROR(RefuseReserved(*dialect_, *c.after, dialect_->TableName(*c.after)));
    RETURN_IF_ERROR(dialect_->CheckNames(*c.after));
  }
  // A table that comes while streaming (created, renamed in, copied again) onto the
  // destination name another source table holds replaced that table with its rows (a CREATE
  // drops the name; SQLite: `Item` beside `ITEM`, probe7 F3). The start refuses such a pair
  // (cli/run.h CheckNameCollisions); this stops the stream before anything of it is applied.
  RETURN_IF_ERROR(Note(RefuseTakenNames(changes)));
  std::vector<std::string> touched;  // keys whose cached SqlTable is stale afterwards
  auto forget_meta = [&](const std::string& key) -> Status {
    ASSIGN_OR_RETURN(SqlStatement * s, Meta(SqlMeta::kForgetTable));
    const Value v = Value::Text(key);
    RETURN_IF_ERROR(s->Bind(1, v, nullptr));
    return s->Execute().status();
  };
  auto create = [&](const TableSchema& schema, const SqlTableName& name) -> Status {
    std::string sql;
    RETURN_IF_ERROR(CreateTableSql(schema, name.quoted, false, &sql).WithContext("table " + name.display));
    if (std::string ns = dialect_->EnsureNamespaceSql(name); !ns.empty()) RETURN_IF_ERROR(Exec(ns));
    return Exec(sql);
  };
  // Statement markers. Where DDL is not transactional (MySQL/MariaDB) every DDL commits on its
  // own, so a crash can stop a statement part way, and the statement is applied again after
  // the restart. A single change finds what is done by looking (DescribeTable below), but a
  // statement of several reuses names, which looking cannot tell apart: applied twice, a swap
  // (RENAME TABLE a TO tmp, b TO a, tmp TO b) was swapped back silently, and
  // `RENAME TABLE a TO a_old, a_new TO a` dropped a_old (a new user's probe). So such a
  // statement keeps a marker table, `_sluice_ddl_<hash of the statement>_<step>`, in the
  // bookkeeping database: step 2i+1 = change i renamed its table, 2i+2 = change i done. A
  // rename moves the marker to its step in the same RENAME statement (atomic: the rename and
  // the step are both made or neither); steps that are safe to repeat (CREATE after DROP IF
  // EXISTS, ADD COLUMN after looking) move it right after. It is dropped once the checkpoint
  // is committed; a marker of another statement found here is left over from such a drop
  // (its statement's checkpoint committed, so it is never applied again) and goes too.
  const bool markers = !dialect_->TransactionalDdl() && changes.size() > 1 && dialect_->MarkerTable("x");
  std::string marker_base;
  int step = 0;  // the marker's step: changes before step / 2 are done
  auto marker_at = [&](int n) { return *dialect_->MarkerTable(fmt::format("{}{}", marker_base, n)); };
  // Moves the marker to `to`: with `rename_sql` (that statement too) or on its own.
  auto advance = [&](int to, const std::string& rename_sql = "") -> Status {
    if (!markers || step >= to) return rename_sql.empty() ? Status::Ok() : Exec(rename_sql);
    const SqlTableName from_marker = marker_at(step), to_marker = marker_at(to);
    if (!rename_sql.empty()) {
      RETURN_IF_ERROR(Exec(dialect_->AlsoRenameSql(rename_sql, from_marker, to_marker)));
    } else {
      for (const std::string& sql : dialect_->RenameTableSql(from_marker, to_marker)) RETURN_IF_ERROR(Exec(sql));
    }
    step = to;
    return Status::Ok();
  };
  if (markers) {
    std::string id = fmt::format("{}:{}\n", changes[0].source.file, changes[0].source.pos);
    for (const SchemaChange& c : changes)
      id += fmt::format("{} {} {} {}\n", SchemaChangeKindName(c.kind), c.before ? dialect_->TableName(*c.before).key : "",
                        c.after ? dialect_->TableName(*c.after).key : "", c.ddl);
    marker_base = fmt::format("_sluice_ddl_{:016x}_", Fnv1a64(id));
    Result<std::vector<std::string>> found = dialect_->ListMarkerTables(*conn_);
    if (!found.ok()) return Note(found.status());
    bool mine = false;
    for (const std::string& name : *found) {
      int n = 0;
      const char* digits = name.data() + marker_base.size();
      if (name.starts_with(marker_base) && name.size() > marker_base.size() &&
          std::from_chars(digits, name.data() + name.size(), n).ptr == name.data() + name.size()) {
        step = mine ? std::max(step, n) : n;
        mine = true;
      } else {
        RETURN_IF_ERROR(Note(Exec("DROP TABLE IF EXISTS " + dialect_->MarkerTable(name)->quoted)));
      }
    }
    if (!mine) RETURN_IF_ERROR(Note(Exec("CREATE TABLE " + marker_at(0).quoted + " (step INT)")));
  }
  RETURN_IF_ERROR(Note(Begin()));
  Status st = [&]() -> Status {
    for (size_t ci = 0; ci < changes.size(); ++ci) {
      const SchemaChange& c = changes[ci];
      const int renamed_step = static_cast<int>(2 * ci + 1), done_step = static_cast<int>(2 * ci + 2);
      if (markers && step >= done_step) {  // done before a crash
        if (c.before) touched.push_back(dialect_->TableName(*c.before).key);
        if (c.after) touched.push_back(dialect_->TableName(*c.after).key);
        continue;
      }
      const bool renamed_already = markers && step >= renamed_step;
      switch (c.kind) {
        case SchemaChange::Kind::kCreate: {
          // The source table starts empty: a sink table of that name (kept after a DROP) goes.
          const SqlTableName name = dialect_->TableName(*c.after);
          RETURN_IF_ERROR(Exec("DROP TABLE IF EXISTS " + name.quoted));
          RETURN_IF_ERROR(forget_meta(name.key));
          RETURN_IF_ERROR(create(*c.after, name));
          touched.push_back(name.key);
          RETURN_IF_ERROR(advance(done_step));
          break;
        }
        case SchemaChange::Kind::kRename:
        case SchemaChange::Kind::kAlter: {
          const SqlTableName from = dialect_->TableName(*c.before), to = dialect_->TableName(*c.after);
          touched.push_back(from.key);
          touched.push_back(to.key);
          const TableSchema& b = *c.before;
          const TableSchema& a = *c.after;
          bool identity = c.kind == SchemaChange::Kind::kRename;
          if (!identity && c.source_of.size() == a.columns.size() && a.columns.size() >= b.columns.size()) {
            identity = true;
            for (size_t i = 0; i < a.columns.size(); ++i)
              identity = identity && c.source_of[i] == (i < b.columns.size() ? static_cast<int>(i) : -1);
          }
          // Without transactional DDL this change may have been applied before a crash lost
          // its checkpoint: what is done already is not done again.
          const bool redo_safe = !dialect_->TransactionalDdl();
          bool from_exists = !renamed_already;
          if (redo_safe && !markers) {  // with a marker, the marker says
            ASSIGN_OR_RETURN(auto have_to, dialect_->DescribeTable(*conn_, to));
            if (!dialect_->NamesEqual(from.key, to.key)) {
              ASSIGN_OR_RETURN(auto have_from, dialect_->DescribeTable(*conn_, from));
              from_exists = have_from.has_value();
            }
            if (have_to && (!from_exists || dialect_->NamesEqual(from.key, to.key)) &&
                MatchesSchema(*dialect_, *have_to, a)) {
              if (from.key != to.key) RETURN_IF_ERROR(forget_meta(from.key));
              break;
            }
          }
          if (identity && SameShape(*dialect_, b, a, b.columns.size())) {
            // Same columns (plus new ones at the end): rename, then add the new columns;
            // existing rows read their literal default (or NULL), as in the source.
            if (from.key != to.key && from_exists) {
              if (!dialect_->NamesEqual(from.key, to.key)) RETURN_IF_ERROR(Exec("DROP TABLE IF EXISTS " + to.quoted));
              if (std::string ns = dialect_->EnsureNamespaceSql(to); !ns.empty()) RETURN_IF_ERROR(Exec(ns));
              const std::vector<std::string> renames = dialect_->RenameTableSql(from, to);
              for (size_t r = 0; r < renames.size(); ++r)
                RETURN_IF_ERROR(r + 1 == renames.size() ? advance(renamed_step, renames[r]) : Exec(renames[r]));
              RETURN_IF_ERROR(forget_meta(from.key));
            } else if (from.key != to.key) {
              RETURN_IF_ERROR(forget_meta(from.key));  // renamed before the crash
            }
            size_t first_new = b.columns.size();
            if (redo_safe) {
              // Columns added before the crash (one ALTER each, in order) are there already.
              ASSIGN_OR_RETURN(auto have, dialect_->DescribeTable(*conn_, to));
              if (!have)
                return Status::FailedPrecondition(fmt::format(
                    "table {}: {} of a table the destination does not have (the statement \"{}\" at binlog {}:{}; "
                    "a crash between the renames of one statement leaves the destination between two states, "
                    "MySQL/MariaDB applying each rename on its own): copy the tables the statement names again "
                    "with `sluice resnapshot --config FILE db.table ...`, then run sluice again",
                    from.display, SchemaChangeKindName(c.kind), c.ddl.size() > 120 ? c.ddl.substr(0, 117) + "..." : c.ddl,
                    c.source.file, c.source.pos));
              first_new = std::max(first_new, have->size());
            }
            for (size_t i = first_new; i < a.columns.size(); ++i) {
              ASSIGN_OR_RETURN(Value d, DefaultValue(a.columns[i]));
              ASSIGN_OR_RETURN(std::string add, dialect_->AddColumnSql(to, a.columns[i], d));
              RETURN_IF_ERROR(Exec(add));
            }
            RETURN_IF_ERROR(advance(done_step));
            break;
          }
          // Anything else: a new table filled from the old one column by column.
          if (c.source_of.size() != a.columns.size())
            return Status::Internal(fmt::format("table {}: schema change without a column mapping", to.display));
          // The scratch tables' names carry a hash of the table's: a source table named
          // `_sluice_rebuild` or `_sluice_old` in the same database was dropped by the rebuild of
          // any other table there (a new user's probe). The same for every retry of this
          // change, so that a redo after a crash finds what the crash left.
          const uint64_t h = Fnv1a64(to.key);
          TableSchema scratch_schema = a;
          scratch_schema.table = fmt::format("_sluice_rebuild_{:016x}", h);
          const SqlTableName scratch = dialect_->TableName(scratch_schema);
          scratch_schema.table = fmt::format("_sluice_old_{:016x}", h);
          const SqlTableName old = dialect_->TableName(scratch_schema);
          const std::string swap = redo_safe ? dialect_->SwapTablesSql(from, old, scratch, to) : "";
          if (renamed_already && !swap.empty()) {  // swapped before a crash: what followed
            RETURN_IF_ERROR(Exec("DROP TABLE IF EXISTS " + old.quoted));
            RETURN_IF_ERROR(forget_meta(from.key));
            RETURN_IF_ERROR(advance(done_step));
            break;
          }
          RETURN_IF_ERROR(Exec("DROP TABLE IF EXISTS " + scratch.quoted));
          if (!swap.empty()) RETURN_IF_ERROR(Exec("DROP TABLE IF EXISTS " + old.quoted));
          RETURN_IF_ERROR(create(a, scratch));
          std::string targets, sources;
          for (size_t i = 0; i < a.columns.size(); ++i) {
            targets += (i ? ", " : "") + dialect_->Quote(a.columns[i].name);
            if (c.source_of[i] >= 0) {
              sources += (i ? ", " : "") + dialect_->Quote(b.columns.at(static_cast<size_t>(c.source_of[i])).name);
            } else {
              Result<Value> d = DefaultValue(a.columns[i]);
              if (!d.ok()) return d.status().WithContext(fmt::format("table {} column {}", to.display, a.columns[i].name));
              ASSIGN_OR_RETURN(std::string lit, dialect_->Literal(*d, a.columns[i]));
              sources += (i ? ", " : "") + lit;
            }
          }
          RETURN_IF_ERROR(Exec("INSERT INTO " + scratch.quoted + " (" + targets + ") SELECT " + sources + " FROM " +
                               from.quoted));
          if (!swap.empty()) {
            // One atomic rename: a crash leaves the old table or the new one, never neither.
            if (!dialect_->NamesEqual(from.key, to.key)) RETURN_IF_ERROR(Exec("DROP TABLE IF EXISTS " + to.quoted));
            RETURN_IF_ERROR(advance(renamed_step, swap));
            RETURN_IF_ERROR(Exec("DROP TABLE " + old.quoted));
            RETURN_IF_ERROR(forget_meta(from.key));
            RETURN_IF_ERROR(advance(done_step));
            break;
          }
          RETURN_IF_ERROR(Exec("DROP TABLE " + from.quoted));
          if (!dialect_->NamesEqual(from.key, to.key)) RETURN_IF_ERROR(Exec("DROP TABLE IF EXISTS " + to.quoted));
          for (const std::string& sql : dialect_->RenameTableSql(scratch, to)) RETURN_IF_ERROR(Exec(sql));
          RETURN_IF_ERROR(forget_meta(from.key));
          break;
        }
        case SchemaChange::Kind::kDrop: {
          if (!drop_tables_) break;  // kept, with the rows it had (docs/schema-changes.md)
          const SqlTableName name = dialect_->TableName(*c.before);
          RETURN_IF_ERROR(Exec("DROP TABLE IF EXISTS " + name.quoted));
          RETURN_IF_ERROR(forget_meta(name.key));
          touched.push_back(name.key);
          RETURN_IF_ERROR(advance(done_step));
          break;
        }
      }
    }
    if (!checkpoint.empty()) RETURN_IF_ERROR(WriteCheckpoint(checkpoint));
    return Commit(checkpoint.empty() ? nullptr : &checkpoint);
  }();
  if (!st.ok()) {
    Rollback();
    return Note(st);
  }
  // Failing, it stays: the next statement with a marker drops it.
  if (markers) (void)Exec("DROP TABLE IF EXISTS " + marker_at(step).quoted);
  for (const std::string& key : touched) ForgetTable(key);
  // The cache and the tables table learn the new definitions (CREATE IF NOT EXISTS finds them):
  // those the statement leaves. A name a later change of the statement moves on or drops is
  // left alone: prepared, the intermediate name of `RENAME TABLE b TO b2, b2 TO b3` (or the tmp
  // of a swap) came back as an empty table (a new user's probe).
  for (size_t i = 0; i < changes.size(); ++i) {
    if (!changes[i].after) continue;
    const std::string key = dialect_->TableName(*changes[i].after).key;
    bool moved_on = false;
    for (size_t j = i + 1; j < changes.size() && !moved_on; ++j)
      moved_on = changes[j].before && dialect_->NamesEqual(dialect_->TableName(*changes[j].before).key, key);
    if (!moved_on) RETURN_IF_ERROR(PrepareTable(*changes[i].after));
  }
  return Status::Ok();
}

Result<SqlTable*> SqlApplier::TableFor(const TableSchemaPtr& schema) {
  if (schema == nullptr) return Status::InvalidArgument("row change without a table schema");
  auto it = by_schema_.find(schema.get());
  if (it != by_schema_.end()) return it->second.second;
  RETURN_IF_ERROR(PrepareTable(*schema));  // creates it, or checks it matches
  SqlTable* t = tables_.at(dialect_->TableName(*schema).key).get();
  by_schema_.emplace(schema.get(), std::make_pair(schema, t));
  return t;
}

Result<SqlStatement*> SqlApplier::CachedStatement(SqlTable& t, const std::string& key) {
  auto& cache = stmts_[&t];
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  const size_t n = t.columns.size();
  const char kind = key[0];
  // Columns whose mask byte (at key[offset + i]) is '1'.
  const auto cols_in = [&](size_t offset) {
    std::vector<size_t> v;
    for (size_t i = 0; i < n; ++i)
      if (key[offset + i] == '1') v.push_back(i);
    return v;
  };
  const auto pk_where = [&](int p) {
    std::string w;
    for (size_t j = 0; j < t.schema->primary_key.size(); ++j) {
      w += j == 0 ? " WHERE " : " AND ";
      w += t.columns[t.schema->primary_key[j]].quoted + " = " + dialect_->Placeholder(p++);
    }
    return w;
  };
  std::string sql;
  switch (kind) {
    case kUpsert: {
      // '1': a value from the image; '2': absent from the image, the column's DEFAULT is
      // bound (inserted, but left alone when the row already exists). After the mask: the
      // number of rows.
      std::vector<size_t> cols, update;
      for (size_t i = 0; i < n; ++i) {
        if (key[1 + i] == '1' || key[1 + i] == '2') cols.push_back(i);
        if (key[1 + i] == '1' && !t.columns[i].is_pk) update.push_back(i);
      }
      const size_t rows = key.size() > 1 + n ? std::stoul(key.substr(1 + n)) : 1;
      sql = dialect_->UpsertSql(t, cols, update, rows);
      break;
    }
    case kUpdateByKey: {
      std::vector<size_t> set = cols_in(1);
      int p = 1;
      sql = "UPDATE " + t.name.quoted + " SET ";
      for (size_t j = 0; j < set.size(); ++j)
        sql += (j ? ", " : "") + t.columns[set[j]].quoted + " = " + dialect_->Placeholder(p++);
      sql += pk_where(p);
      break;
    }
    case kDeleteByKey:
      sql = "DELETE FROM " + t.name.quoted + pk_where(1);
      break;
    case kDeleteManyByKey: {
      // DELETE FROM t WHERE k IN (?, ?) | WHERE (a, b) IN ((?, ?), (?, ?))
      const std::vector<size_t>& pk = t.schema->primary_key;
      const size_t rows = std::stoul(key.substr(1));
      sql = "DELETE FROM " + t.name.quoted + " WHERE ";
      if (pk.size() > 1) sql += "(";
      for (size_t j = 0; j < pk.size(); ++j) sql += (j ? ", " : "") + t.columns[pk[j]].quoted;
      sql += pk.size() > 1 ? ") IN (" : " IN (";
      int p = 1;
      for (size_t r = 0; r < rows; ++r) {
        sql += r ? ", " : "";
        if (pk.size() > 1) sql += "(";
        for (size_t j = 0; j < pk.size(); ++j) sql += (j ? ", " : "") + dialect_->Placeholder(p++);
        if (pk.size() > 1) sql += ")";
      }
      sql += ")";
      break;
    }
    case kUpdateFirstMatch:
      sql = dialect_->FirstMatchSql(t, cols_in(1), cols_in(1 + n));
      break;
    case kDeleteFirstMatch:
      sql = dialect_->FirstMatchSql(t, {}, cols_in(1));
      break;
    default:
      return Status::Internal(fmt::format("bad statement kind {}", kind));
  }
  Result<SqlStatement*> s = conn_->Prepare(sql);
  if (!s.ok()) return s.status().WithContext(fmt::format("table {}: prepare {}", t.name.display, sql));
  cache.emplace(key, *s);
  return *s;
}

Status SqlApplier::Bind(SqlTable& t, SqlStatement* s, int index, size_t column, const Value& v) {
  if (v.is_absent()) {
    return Status::Internal(
        fmt::format("table {}: column {}: absent value bound", t.name.display, t.column_name(column)));
  }
  Status st = s->Bind(index, v, &t.columns[column]);
  if (!st.ok()) return st.WithContext(fmt::format("table {}: column {}", t.name.display, t.column_name(column)));
  return st;
}

Status SqlApplier::ApplyInsert(SqlTable& t, const std::vector<const Value*>& image) {
  const size_t n = t.columns.size();
  key_.assign(1 + n, '0');
  key_[0] = kUpsert;
  for (size_t i = 0; i < n; ++i) {
    const bool present = image[i] != nullptr && !image[i]->is_absent();
    if (t.columns[i].is_pk && !present) {
      return Status::InvalidArgument(fmt::format(
          "table {}: row to insert has no value for key column {}", t.name.display, t.column_name(i)));
    }
    // A column the image leaves out (binlog_row_image=MINIMAL) takes the source DEFAULT.
    if (!present && !t.columns[i].default_error.empty()) {
      return Status::InvalidArgument(fmt::format("table {}: column {} is not in the row image "
                                                 "(binlog_row_image=MINIMAL) and sluice cannot fill it from its DEFAULT: {}",
                                                 t.name.display, t.column_name(i), t.columns[i].default_error));
    }
    key_[1 + i] = present ? '1' : '2';
  }
  ASSIGN_OR_RETURN(SqlStatement * s, CachedStatement(t, key_));
  int index = 1;
  for (size_t i = 0; i < n; ++i) {
    const bool present = image[i] != nullptr && !image[i]->is_absent();
    RETURN_IF_ERROR(Bind(t, s, index++, i, present ? *image[i] : t.columns[i].default_value));
  }
  return Run(&t, s).status();
}

namespace {

// Whether the destination compares `t`'s key columns by their bytes (integers, DECIMAL,
// temporal, binary), so that two keys equal as Values are the only ones it equates. A
// character key may be equal to another spelling under a collation ('a' = 'A').
bool KeysCompareByBytes(const SqlTable& t) {
  if (!t.schema->has_primary_key()) return false;
  for (size_t k : t.schema->primary_key) {
    const ColumnDesc& c = t.schema->columns[k];
    const SqlType type = c.type;
    const bool bytes = IsIntegerType(type) || type == SqlType::kYear || type == SqlType::kBit ||
                       type == SqlType::kDecimal || IsTemporalType(type) || IsBinaryType(type) ||
                       (IsCharacterType(type) && c.charset == "binary");
    if (!bytes) return false;
  }
  return true;
}

std::string KeyText(const SqlTable& t, const Value* const* image) {
  std::string s;
  for (size_t p : t.schema->primary_key) {
    s += static_cast<char>(image[p]->kind);
    s += image[p]->ToText();
    s += '\0';
  }
  return s;
}

}  // namespace

// Stream batches: upserts (inserts, and updates that keep the key) and deletes by key of a
// table with a primary key are held per table and sent as multi-row statements. Tables are
// independent (sluice creates no foreign keys or triggers), so only the order within a table
// matters: the pending upserts and deletes of a table hold distinct keys, and when its keys
// compare by bytes they commute, and a change to a key already pending takes the pending
// one's place where the later change alone leaves the same row (an upsert after an upsert
// of the same columns, a delete after an upsert, a whole-row upsert after a delete); else
// the pending statement is sent first. Otherwise (character keys) only one kind is pending
// at a time. Anything else
// (key changes, keyless updates and deletes, malformed changes) sends the table's pending
// statements, then goes through ApplyChange.
Status SqlApplier::Batch(SqlTable& t, const RowChange& c) {
  const size_t n = t.columns.size();
  auto [it, fresh] = pending_.try_emplace(&t);
  Pending& p = it->second;
  if (fresh) {
    p.bytes_keys = KeysCompareByBytes(t);
    dirty_.push_back(&t);
  }
  const auto direct = [&]() -> Status {
    RETURN_IF_ERROR(FlushTable(t));
    return ApplyChange(t, c);
  };
  const bool has_pk = t.schema->has_primary_key();
  bool is_delete = false;
  image_.assign(n, nullptr);
  switch (c.op) {
    case Op::kCreate:
    case Op::kRead:
      if (!c.before.empty() || c.after.size() != n) return direct();
      for (size_t i = 0; i < n; ++i) image_[i] = &c.after[i];
      break;
    case Op::kUpdate:
      if (!has_pk || c.before.size() != n || c.after.size() != n) return direct();
      for (size_t k : t.schema->primary_key)
        if (c.before[k].is_absent() || (!c.after[k].is_absent() && !(c.after[k] == c.before[k]))) return direct();
      // A partial after image (MINIMAL/NOBLOB) stays an UPDATE: an upsert would propose
      // DEFAULTs for the missing columns, which NOT NULL may refuse before the key conflict.
      for (size_t i = 0; i < n; ++i)
        if (c.after[i].is_absent() && !t.columns[i].is_pk) return direct();
      // The key stays: an upsert of the after image (the row inserted when missing) is what
      // ApplyUpdatePk does.
      for (size_t i = 0; i < n; ++i) image_[i] = t.columns[i].is_pk ? &c.before[i] : &c.after[i];
      break;
    case Op::kDelete:
      if (!has_pk || c.before.size() != n || !c.after.empty()) return direct();
      for (size_t k : t.schema->primary_key)
        if (c.before[k].is_absent()) return direct();
      for (size_t i = 0; i < n; ++i) image_[i] = &c.before[i];
      is_delete = true;
      break;
    default:
      return direct();
  }
  const size_t pk_n = t.schema->primary_key.size();
  const std::string key = has_pk ? KeyText(t, image_.data()) : std::string();
  if (is_delete) {
    if (p.bytes_keys) {
      // An upsert then a delete of the key: no row is left whatever was there; only the
      // delete is sent.
      if (auto u = p.up_keys.find(key); u != p.up_keys.end()) {
        p.up_live[u->second] = 0;
        --p.up_rows;
        p.up_keys.erase(u);
      }
    } else if (p.up_rows > 0) {
      RETURN_IF_ERROR(FlushUpserts(t, p));
    }
    if (!p.del_keys.try_emplace(key, p.del_live.size()).second) return Status::Ok();  // already being deleted
    for (size_t k : t.schema->primary_key) p.del_values.push_back(image_[k]);
    p.del_live.push_back(1);
    ++p.del_rows;
    const size_t limit = std::max<size_t>(1, std::min(dialect_->MaxRowsPerStatement(), dialect_->MaxParameters() / pk_n));
    if (p.del_live.size() >= limit) RETURN_IF_ERROR(FlushDeletes(t, p));
    return Status::Ok();
  }
  std::string mask(n, '0');
  size_t bytes = 0;
  for (size_t i = 0; i < n; ++i) {
    const bool present = !image_[i]->is_absent();
    // Errors (absent key, DEFAULT not understood) are ApplyChange's to report.
    if (!present && (t.columns[i].is_pk || !t.columns[i].default_error.empty())) return direct();
    mask[i] = present ? '1' : '2';
    const Value& v = present ? *image_[i] : t.columns[i].default_value;
    bytes += v.kind == Value::Kind::kText || v.kind == Value::Kind::kBytes ? v.s.size() : 8;
  }
  if (has_pk) {
    auto d = p.del_keys.find(key);
    if (d != p.del_keys.end() && p.bytes_keys && mask.find('2') == std::string::npos) {
      // A delete then a whole row under the same key: the upsert of that row leaves the same
      // row whether or not one was there (all its columns are set, and keys compare by
      // bytes), so the delete is not sent. sysbench's write load deletes and re-inserts a
      // row in every transaction: this saves a statement per transaction.
      p.del_live[d->second] = 0;
      --p.del_rows;
      p.del_keys.erase(d);
    } else if (d != p.del_keys.end() || (!p.bytes_keys && p.del_rows > 0)) {
      RETURN_IF_ERROR(FlushDeletes(t, p));
    }
  }
  const size_t max_bytes = dialect_->MaxStatementBytes();
  if (p.up_rows > 0 && (p.mask != mask || (max_bytes != SIZE_MAX && p.up_bytes + bytes > max_bytes)))
    RETURN_IF_ERROR(FlushUpserts(t, p));
  p.up_bytes += bytes;
  if (has_pk) {
    if (auto u = p.up_keys.find(key); u != p.up_keys.end()) {
      // Two upserts of one key with the same columns: the second alone leaves the same row
      // (it sets every column the first set), and one statement cannot touch a row twice
      // in PostgreSQL. sysbench's hot rows are updated many times per group.
      for (size_t i = 0; i < n; ++i)
        p.up_values[u->second * n + i] = mask[i] == '1' ? image_[i] : &t.columns[i].default_value;
      return Status::Ok();
    }
    p.up_keys.emplace(key, p.up_live.size());
  }
  p.mask = mask;
  for (size_t i = 0; i < n; ++i) p.up_values.push_back(mask[i] == '1' ? image_[i] : &t.columns[i].default_value);
  p.up_live.push_back(1);
  ++p.up_rows;
  const size_t limit = std::max<size_t>(1, std::min(dialect_->MaxRowsPerStatement(), dialect_->MaxParameters() / n));
  if (p.up_live.size() >= limit) RETURN_IF_ERROR(FlushUpserts(t, p));
  return Status::Ok();
}

// Sends the pending upserts as statements of power-of-two rows (a few prepared statements
// per table serve any count).
Status SqlApplier::FlushUpserts(SqlTable& t, Pending& p) {
  const size_t n = t.columns.size();
  size_t next = 0;  // the next row of up_values to look at
  for (size_t done = 0; done < p.up_rows;) {
    const size_t rows = std::bit_floor(p.up_rows - done);
    key_.assign(1, kUpsert);
    key_ += p.mask;
    if (rows > 1) key_ += std::to_string(rows);
    ASSIGN_OR_RETURN(SqlStatement * s, CachedStatement(t, key_));
    int index = 1;
    for (size_t r = 0; r < rows; ++r, ++next) {
      while (!p.up_live[next]) ++next;
      for (size_t i = 0; i < n; ++i) RETURN_IF_ERROR(Bind(t, s, index++, i, *p.up_values[next * n + i]));
    }
    RETURN_IF_ERROR(Run(&t, s).status());
    done += rows;
  }
  p.up_values.clear();
  p.up_live.clear();
  p.up_keys.clear();
  p.up_rows = 0;
  p.up_bytes = 0;
  return Status::Ok();
}

Status SqlApplier::FlushDeletes(SqlTable& t, Pending& p) {
  const std::vector<size_t>& pk = t.schema->primary_key;
  size_t next = 0;  // the next row of del_values to look at
  for (size_t done = 0; done < p.del_rows;) {
    const size_t rows = std::bit_floor(p.del_rows - done);
    key_.assign(1, rows > 1 ? kDeleteManyByKey : kDeleteByKey);
    if (rows > 1) key_ += std::to_string(rows);
    ASSIGN_OR_RETURN(SqlStatement * s, CachedStatement(t, key_));
    int index = 1;
    for (size_t r = 0; r < rows; ++r, ++next) {
      while (!p.del_live[next]) ++next;
      for (size_t j = 0; j < pk.size(); ++j)
        RETURN_IF_ERROR(Bind(t, s, index++, pk[j], *p.del_values[next * pk.size() + j]));
    }
    RETURN_IF_ERROR(Run(&t, s).status());
    done += rows;
  }
  p.del_values.clear();
  p.del_live.clear();
  p.del_keys.clear();
  p.del_rows = 0;
  return Status::Ok();
}

Status SqlApplier::FlushTable(SqlTable& t) {
  auto it = pending_.find(&t);
  if (it == pending_.end()) return Status::Ok();
  // Their keys are distinct: either order gives the same rows.
  RETURN_IF_ERROR(FlushDeletes(t, it->second));
  return FlushUpserts(t, it->second);
}

Status SqlApplier::ApplyUpdatePk(SqlTable& t, const RowChange& c) {
  const size_t n = t.columns.size();
  const std::vector<size_t>& pk = t.schema->primary_key;
  bool key_changed = false;
  for (size_t k : pk) {
    if (c.before[k].is_absent()) {
      return Status::InvalidArgument(fmt::format(
          "table {}: update without before value of key column {}", t.name.display, t.column_name(k)));
    }
    if (!c.after[k].is_absent() && !(c.after[k] == c.before[k])) key_changed = true;
  }
  const auto new_key = [&](size_t k) -> const Value& {
    return c.after[k].is_absent() ? c.before[k] : c.after[k];
  };
  if (key_changed) {
    // Free the new key (a row there cannot exist in a faithful replica), then move the row.
    ASSIGN_OR_RETURN(SqlStatement * del, CachedStatement(t, std::string(1, kDeleteByKey)));
    for (size_t j = 0; j < pk.size(); ++j)
      RETURN_IF_ERROR(Bind(t, del, static_cast<int>(j) + 1, pk[j], new_key(pk[j])));
    RETURN_IF_ERROR(Run(&t, del).status());
  }
  key_.assign(1 + n, '0');
  key_[0] = kUpdateByKey;
  bool any = false;
  for (size_t i = 0; i < n; ++i) {
    if (c.after[i].is_absent() || (t.columns[i].is_pk && !key_changed)) continue;
    key_[1 + i] = '1';
    any = true;
  }
  int64_t changes = 0;
  if (any) {
    ASSIGN_OR_RETURN(SqlStatement * s, CachedStatement(t, key_));
    int index = 1;
    for (size_t i = 0; i < n; ++i)
      if (key_[1 + i] == '1') RETURN_IF_ERROR(Bind(t, s, index++, i, c.after[i]));
    for (size_t k : pk) RETURN_IF_ERROR(Bind(t, s, index++, k, c.before[k]));
    ASSIGN_OR_RETURN(changes, Run(&t, s));
  }
  if (changes > 0) return Status::Ok();
  // No row with the old key: insert the after image (upsert semantics).
  image_.assign(n, nullptr);
  for (size_t i = 0; i < n; ++i) image_[i] = t.columns[i].is_pk ? &new_key(i) : &c.after[i];
  return ApplyInsert(t, image_);
}

Status SqlApplier::ApplyUpdateNoPk(SqlTable& t, const RowChange& c) {
  const size_t n = t.columns.size();
  key_.assign(1 + 2 * n, '0');
  key_[0] = kUpdateFirstMatch;
  bool any_set = false, any_where = false;
  for (size_t i = 0; i < n; ++i) {
    if (!c.after[i].is_absent()) key_[1 + i] = '1', any_set = true;
    if (!c.before[i].is_absent()) key_[1 + n + i] = '1', any_where = true;
  }
  if (!any_where) {
    return Status::InvalidArgument(fmt::format("table {}: update with an empty before image", t.name.display));
  }
  if (!any_set) return Status::Ok();
  ASSIGN_OR_RETURN(SqlStatement * s, CachedStatement(t, key_));
  int index = 1;
  for (size_t i = 0; i < n; ++i)
    if (key_[1 + i] == '1') RETURN_IF_ERROR(Bind(t, s, index++, i, c.after[i]));
  for (size_t i = 0; i < n; ++i)
    if (key_[1 + n + i] == '1') RETURN_IF_ERROR(Bind(t, s, index++, i, c.before[i]));
  ASSIGN_OR_RETURN(int64_t changes, Run(&t, s));
  if (changes > 0) return Status::Ok();
  image_.assign(n, nullptr);
  for (size_t i = 0; i < n; ++i) image_[i] = &c.after[i];
  return ApplyInsert(t, image_);
}

Status SqlApplier::ApplyDelete(SqlTable& t, const RowChange& c) {
  const size_t n = t.columns.size();
  if (t.schema->has_primary_key()) {
    ASSIGN_OR_RETURN(SqlStatement * s, CachedStatement(t, std::string(1, kDeleteByKey)));
    int index = 1;
    for (size_t k : t.schema->primary_key) {
      if (c.before[k].is_absent()) {
        return Status::InvalidArgument(
            fmt::format("table {}: delete without value of key column {}", t.name.display, t.column_name(k)));
      }
      RETURN_IF_ERROR(Bind(t, s, index++, k, c.before[k]));
    }
    return Run(&t, s).status();
  }
  key_.assign(1 + n, '0');
  key_[0] = kDeleteFirstMatch;
  bool any = false;
  for (size_t i = 0; i < n; ++i)
    if (!c.before[i].is_absent()) key_[1 + i] = '1', any = true;
  if (!any) return Status::InvalidArgument(fmt::format("table {}: delete with an empty before image", t.name.display));
  ASSIGN_OR_RETURN(SqlStatement * s, CachedStatement(t, key_));
  int index = 1;
  for (size_t i = 0; i < n; ++i)
    if (key_[1 + i] == '1') RETURN_IF_ERROR(Bind(t, s, index++, i, c.before[i]));
  return Run(&t, s).status();
}

Status SqlApplier::ApplyChange(SqlTable& t, const RowChange& c) {
  const size_t n = t.columns.size();
  const auto check = [&](const Row& row, bool want, const char* which) -> Status {
    if (!want && row.empty()) return Status::Ok();
    if (!want) {
      return Status::InvalidArgument(
          fmt::format("table {}: op '{}' has a {} image", t.name.display, static_cast<char>(c.op), which));
    }
    if (row.size() != n) {
      return Status::InvalidArgument(fmt::format("table {}: {} image has {} values, table has {} columns",
                                                 t.name.display, which, row.size(), n));
    }
    return Status::Ok();
  };
  switch (c.op) {
    case Op::kCreate:
    case Op::kRead:
      RETURN_IF_ERROR(check(c.before, false, "before"));
      RETURN_IF_ERROR(check(c.after, true, "after"));
      image_.assign(n, nullptr);
      for (size_t i = 0; i < n; ++i) image_[i] = &c.after[i];
      return ApplyInsert(t, image_);
    case Op::kUpdate:
      RETURN_IF_ERROR(check(c.before, true, "before"));
      RETURN_IF_ERROR(check(c.after, true, "after"));
      return t.schema->has_primary_key() ? ApplyUpdatePk(t, c) : ApplyUpdateNoPk(t, c);
    case Op::kDelete:
      RETURN_IF_ERROR(check(c.before, true, "before"));
      RETURN_IF_ERROR(check(c.after, false, "after"));
      return ApplyDelete(t, c);
  }
  return Status::InvalidArgument(
      fmt::format("table {}: unknown op code {}", t.name.display, static_cast<int>(c.op)));
}

Status SqlApplier::Apply(const Transaction& txn) {
  if (!txn.has_rows() && txn.checkpoint.empty()) return Status::Ok();
  return Note(ApplyChanges(&txn, 1));
}

Status SqlApplier::ApplyGroup(const std::vector<Transaction>& group) {
  if (group.empty()) return Status::Ok();
  return Note(ApplyChanges(group.data(), group.size()));
}

// The statement ApplyInsert picks for a full image (every column present), run for each
// change of flat_ (all full read images of `t`); per row only the binding is left.
Status SqlApplier::InsertReads(SqlTable& t) {
  const size_t n = t.columns.size();
  key_.assign(1 + n, '1');
  key_[0] = kUpsert;
  ASSIGN_OR_RETURN(SqlStatement * s, CachedStatement(t, key_));
  for (const RowChange* c : flat_) {
    for (size_t i = 0; i < n; ++i) RETURN_IF_ERROR(Bind(t, s, static_cast<int>(i) + 1, i, c->after[i]));
    RETURN_IF_ERROR(Run(&t, s).status());
  }
  return Status::Ok();
}

Status SqlApplier::InsertEncodedReads(const Transaction& txn) {
  if (txn.counted.runs.size() != 1 || txn.counted.runs[0].op != Op::kRead)
    return Status::Internal("encoded snapshot reads without their one table");
  ASSIGN_OR_RETURN(SqlTable * t, TableFor(txn.counted.runs[0].table));
  const size_t n = t->columns.size();
  key_.assign(1 + n, '1');
  key_[0] = kUpsert;
  ASSIGN_OR_RETURN(SqlStatement * s, CachedStatement(*t, key_));
  return conn_->LoadEncodedReads(s, n, txn.counted.rows, *txn.preformatted).WithContext("table " + t->name.display);
}

Status SqlApplier::ApplyChanges(const Transaction* txns, size_t count) {
  if (!part_open_) RETURN_IF_ERROR(Recover());
  const std::string* checkpoint = nullptr;
  const Transaction* checkpoint_txn = nullptr;
  for (size_t k = 0; k < count; ++k)
    if (!txns[k].checkpoint.empty()) {
      checkpoint = &txns[k].checkpoint;
      checkpoint_txn = &txns[k];
    }
  if (in_doubt_ && !part_open_) {
    // The last commit's outcome was unknown: if it did commit, this is the same work again.
    std::optional<std::string> doubt = std::move(in_doubt_);
    in_doubt_.reset();
    ASSIGN_OR_RETURN(std::optional<std::string> stored, LoadCheckpoint());
    if (checkpoint != nullptr && stored && *stored == WholeCheckpoint(*checkpoint_txn) && *doubt == *checkpoint)
      return Status::Ok();
  }
  // Create missing tables first, each in its own transaction, outside the data transaction.
  targets_.clear();
  flat_.clear();
  // Snapshot chunks (every change a full read image of one table) take the backend's bulk
  // load, or else one upsert statement looked up once for the whole chunk.
  bool bulk = true;
  bool encoded = false;  // chunks the sink's snapshot Preformatter encoded
  for (size_t k = 0; k < count; ++k) {
    if (txns[k].preformatted) {
      if (!txns[k].changes.empty()) return Status::Internal("a transaction with both changes and encoded reads");
      for (const ChangeCounts::Run& run : txns[k].counted.runs) RETURN_IF_ERROR(TableFor(run.table).status());
      encoded = encoded || !txns[k].counted.empty();
      continue;
    }
    for (const RowChange& c : txns[k].changes) {
      ASSIGN_OR_RETURN(SqlTable * t, TableFor(c.table));
      if (bulk) {
        bulk = c.op == Op::kRead && c.before.empty() && c.after.size() == t->columns.size() &&
               (targets_.empty() || targets_[0] == t);
        for (size_t i = 0; bulk && i < c.after.size(); ++i) bulk = !c.after[i].is_absent();
      }
      targets_.push_back(t);
      flat_.push_back(&c);
    }
  }
  RETURN_IF_ERROR(Begin());
  Status st;
  for (size_t k = 0; encoded && k < count && st.ok(); ++k)
    if (txns[k].preformatted && !txns[k].counted.empty()) st = InsertEncodedReads(txns[k]);
  if (!st.ok() || flat_.empty()) {
    // failed, or encoded reads only
  } else if (bulk && conn_->SupportsBulkLoad()) {
    rows_.clear();
    for (const RowChange* c : flat_) rows_.push_back(&c->after);
    st = conn_->BulkLoad(*targets_[0], rows_).WithContext("table " + targets_[0]->name.display + ": bulk load");
  } else if (bulk && dialect_->MaxRowsPerStatement() == 1) {
    st = InsertReads(*targets_[0]);
  } else {
    if (dialect_->MaxRowsPerStatement() > 1) {
      for (size_t i = 0; i < flat_.size() && st.ok(); ++i) st = Batch(*targets_[i], *flat_[i]);
      for (size_t i = 0; i < dirty_.size() && st.ok(); ++i) st = FlushTable(*dirty_[i]);
      pending_.clear();
      dirty_.clear();
    } else {
      for (size_t i = 0; i < flat_.size() && st.ok(); ++i) st = ApplyChange(*targets_[i], *flat_[i]);
    }
  }
  if (st.ok() && checkpoint != nullptr) st = WriteCheckpoint(*checkpoint, checkpoint_txn->schemas);
  part_open_ = false;  // this group ends the source transaction its parts began
  if (st.ok()) st = Commit(checkpoint);
  if (!st.ok()) Rollback();
  return st;
}

Status SqlApplier::ApplyPart(const Transaction& part) {
  if (!part_open_) RETURN_IF_ERROR(Note(Recover()));
  targets_.clear();
  Status st;
  for (const RowChange& c : part.changes) {
    auto t = TableFor(c.table);  // inside the open transaction once parts began
    if (!t.ok()) {
      st = t.status();
      break;
    }
    targets_.push_back(*t);
  }
  if (st.ok() && !part_open_) {
    st = Begin();
    if (st.ok()) part_open_ = true;
  }
  for (size_t i = 0; i < part.changes.size() && st.ok(); ++i) st = ApplyChange(*targets_[i], part.changes[i]);
  if (!st.ok()) Rollback();
  return Note(st);
}

void SqlApplier::AbortParts() {
  if (part_open_) Rollback();
  part_open_ = false;
}

Status MatchExistingTable(const SqlDialect& dialect, const TableSchema& schema, std::vector<SqlExistingColumn> have) {
  const std::string display = dialect.TableName(schema).display;
  auto want_pk = [&](size_t i) {
    for (size_t j = 0; j < schema.primary_key.size(); ++j)
      if (schema.primary_key[j] == i) return static_cast<int>(j) + 1;
    return 0;
  };
  // Columns appended at the end since the table was made, which PrepareTable adds (up to a
  // key column: a key change is reported below).
  bool prefix = have.size() < schema.columns.size();
  for (size_t i = 0; prefix && i < have.size(); ++i) prefix = have[i].name == schema.columns[i].name;
  for (size_t i = prefix ? have.size() : schema.columns.size(); i < schema.columns.size(); ++i) {
    if (want_pk(i) != 0) break;
    ASSIGN_OR_RETURN(std::string type, dialect.ColumnType(schema.columns[i]));
    have.push_back(SqlExistingColumn{schema.columns[i].name, type, 0});
  }
  for (size_t i = 0; i < have.size(); ++i) {
    const SqlExistingColumn& e = have[i];
    if (i >= schema.columns.size()) {
      return Status::FailedPrecondition(
          fmt::format("table {}: {} table has extra column {}", display, dialect.name(), e.name));
    }
    ASSIGN_OR_RETURN(std::string type, dialect.ColumnType(schema.columns[i]));
    if (e.name != schema.columns[i].name || !dialect.SameType(type, e.type) || e.pk != want_pk(i)) {
      return Status::FailedPrecondition(fmt::format(
          "table {}: existing {} column {} ({} {}, pk {}) does not match source column {} ({}, pk {})", display,
          dialect.name(), i + 1, e.name, e.type, e.pk, schema.columns[i].name, type, want_pk(i)));
    }
  }
  if (have.size() != schema.columns.size()) {
    return Status::FailedPrecondition(fmt::format("table {}: {} table has {} columns, source has {}", display,
                                                  dialect.name(), have.size(), schema.columns.size()));
  }
  return Status::Ok();
}

Result<std::optional<std::vector<SqlExistingColumn>>> DescribeByQuery(SqlConnection& conn, const std::string& sql,
                                                                      const std::vector<std::string>& params) {
  ASSIGN_OR_RETURN(SqlStatement * s, conn.Prepare(sql));
  std::vector<Value> values;  // alive until Query returns (Bind may keep a pointer)
  values.reserve(params.size());
  for (const std::string& p : params) values.push_back(Value::Text(p));
  for (size_t i = 0; i < values.size(); ++i) RETURN_IF_ERROR(s->Bind(static_cast<int>(i + 1), values[i], nullptr));
  ASSIGN_OR_RETURN(auto rows, s->Query());
  if (rows.empty()) return std::optional<std::vector<SqlExistingColumn>>();
  std::vector<SqlExistingColumn> out;
  for (const auto& r : rows) {
    SqlExistingColumn c;
    c.name = r.size() > 0 && r[0] ? *r[0] : "";
    c.type = r.size() > 1 && r[1] ? *r[1] : "";
    c.pk = r.size() > 2 && r[2] ? std::atoi(r[2]->c_str()) : 0;
    out.push_back(std::move(c));
  }
  return std::optional<std::vector<SqlExistingColumn>>(std::move(out));
}

}  // namespace sluice
