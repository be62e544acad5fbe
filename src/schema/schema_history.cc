#include "schema/schema_history.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace sluice {
namespace {

using OJson = nlohmann::ordered_json;
using Json = nlohmann::json;

Status Bad(std::string_view field, std::string_view want) {
  return Status::Corruption(fmt::format("schema history: field \"{}\" missing or not {}", field, want));
}

// Field readers: kCorruption naming `field` when absent or of the wrong type.
Result<std::string> Str(const Json& o, const char* key, const std::string& field) {
  auto it = o.find(key);
  if (it == o.end() || !it->is_string()) return Bad(field + "." + key, "a string");
  return it->get<std::string>();
}
Result<uint64_t> Num(const Json& o, const char* key, const std::string& field) {
  auto it = o.find(key);
  if (it == o.end() || !it->is_number_unsigned()) return Bad(field + "." + key, "an unsigned integer");
  return it->get<uint64_t>();
}
Result<bool> Bool(const Json& o, const char* key, const std::string& field) {
  auto it = o.find(key);
  if (it == o.end() || !it->is_boolean()) return Bad(field + "." + key, "a boolean");
  return it->get<bool>();
}
Result<const Json*> Arr(const Json& o, const char* key, const std::string& field) {
  auto it = o.find(key);
  if (it == o.end() || !it->is_array()) return Bad(field + "." + key, "an array");
  return &*it;
}

std::string_view GeneratedName(GeneratedKind g) {
  switch (g) {
    case GeneratedKind::kVirtual: return "virtual";
    case GeneratedKind::kStored: return "stored";
    case GeneratedKind::kNone: break;
  }
  return "";
}
std::string_view VersioningName(VersioningRole v) {
  switch (v) {
    case VersioningRole::kRowStart: return "row_start";
    case VersioningRole::kRowEnd: return "row_end";
    case VersioningRole::kNone: break;
  }
  return "";
}
std::string_view DefaultKindName(DefaultKind k) {
  switch (k) {
    case DefaultKind::kNull: return "null";
    case DefaultKind::kLiteral: return "literal";
    case DefaultKind::kExpression: return "expression";
    case DefaultKind::kNone: break;
  }
  return "none";
}

OJson ColumnJson(const ColumnDesc& c) {
  OJson j;
  j["name"] = c.name;
  j["type"] = c.data_type;
  j["column_type"] = c.column_type;
  j["unsigned"] = c.is_unsigned;
  j["nullable"] = c.nullable;
  j["charset"] = c.charset;
  j["collation"] = c.collation;
  j["char_max_length"] = c.char_max_length;
  j["octet_length"] = c.octet_length;
  j["precision"] = c.numeric_precision;
  j["scale"] = c.numeric_scale;
  j["fsp"] = c.fsp;
  j["labels"] = c.labels;
  j["generated"] = std::string(GeneratedName(c.generated));
  j["generation_expression"] = c.generation_expression;
  j["invisible"] = c.is_invisible;
  j["versioning"] = std::string(VersioningName(c.versioning));
  j["auto_increment"] = c.auto_increment;
  j["default_kind"] = std::string(DefaultKindName(c.default_kind));
  j["default"] = c.default_value ? OJson(*c.default_value) : OJson(nullptr);
  return j;
}

OJson TableJson(const TableSchema& t) {
  OJson j;
  j["db"] = t.db;
  j["table"] = t.table;
  j["engine"] = t.engine;
  j["collation"] = t.collation;
  j["system_versioned"] = t.system_versioned;
  j["primary_key"] = t.primary_key;
  OJson cols = OJson::array();
  for (const ColumnDesc& c : t.columns) cols.push_back(ColumnJson(c));
  j["columns"] = std::move(cols);
  return j;
}

Result<ColumnDesc> ColumnFromJson(const Json& j, const std::string& field) {
  if (!j.is_object()) return Bad(field, "an object");
  ColumnDesc c;
  ASSIGN_OR_RETURN(c.name, Str(j, "name", field));
  ASSIGN_OR_RETURN(std::string type, Str(j, "type", field));
  c.SetType(type);
  ASSIGN_OR_RETURN(c.column_type, Str(j, "column_type", field));
  ASSIGN_OR_RETURN(c.is_unsigned, Bool(j, "unsigned", field));
  ASSIGN_OR_RETURN(c.nullable, Bool(j, "nullable", field));
  ASSIGN_OR_RETURN(c.charset, Str(j, "charset", field));
  ASSIGN_OR_RETURN(c.collation, Str(j, "collation", field));
  ASSIGN_OR_RETURN(c.char_max_length, Num(j, "char_max_length", field));
  ASSIGN_OR_RETURN(c.octet_length, Num(j, "octet_length", field));
  ASSIGN_OR_RETURN(uint64_t precision, Num(j, "precision", field));
  ASSIGN_OR_RETURN(uint64_t scale, Num(j, "scale", field));
  ASSIGN_OR_RETURN(uint64_t fsp, Num(j, "fsp", field));
  if (precision > UINT32_MAX || scale > UINT32_MAX || fsp > UINT32_MAX)
    return Bad(field + ".precision/scale/fsp", "a 32-bit unsigned integer");
  c.numeric_precision = static_cast<uint32_t>(precision);
  c.numeric_scale = static_cast<uint32_t>(scale);
  c.fsp = static_cast<uint32_t>(fsp);
  ASSIGN_OR_RETURN(const Json* labels, Arr(j, "labels", field));
  for (const Json& l : *labels) {
    if (!l.is_string()) return Bad(field + ".labels[]", "a string");
    c.labels.push_back(l.get<std::string>());
  }
  ASSIGN_OR_RETURN(std::string gen, Str(j, "generated", field));
  if (gen == "virtual") c.generated = GeneratedKind::kVirtual;
  else if (gen == "stored") c.generated = GeneratedKind::kStored;
  else if (!gen.empty()) return Bad(field + ".generated", "\"\", \"virtual\" or \"stored\"");
  c.is_generated = c.generated != GeneratedKind::kNone;
  ASSIGN_OR_RETURN(c.generation_expression, Str(j, "generation_expression", field));
  ASSIGN_OR_RETURN(c.is_invisible, Bool(j, "invisible", field));
  ASSIGN_OR_RETURN(std::string ver, Str(j, "versioning", field));
  if (ver == "row_start") c.versioning = VersioningRole::kRowStart;
  else if (ver == "row_end") c.versioning = VersioningRole::kRowEnd;
  else if (!ver.empty()) return Bad(field + ".versioning", "\"\", \"row_start\" or \"row_end\"");
  ASSIGN_OR_RETURN(c.auto_increment, Bool(j, "auto_increment", field));
  ASSIGN_OR_RETURN(std::string dk, Str(j, "default_kind", field));
  if (dk == "none") c.default_kind = DefaultKind::kNone;
  else if (dk == "null") c.default_kind = DefaultKind::kNull;
  else if (dk == "literal") c.default_kind = DefaultKind::kLiteral;
  else if (dk == "expression") c.default_kind = DefaultKind::kExpression;
  else return Bad(field + ".default_kind", "none, null, literal or expression");
  auto d = j.find("default");
  if (d == j.end() || !(d->is_null() || d->is_string())) return Bad(field + ".default", "a string or null");
  if (d->is_string()) c.default_value = d->get<std::string>();
  return c;
}

Result<TableSchema> TableFromJson(const Json& j, const std::string& field) {
  if (!j.is_object()) return Bad(field, "an object");
  TableSchema t;
  ASSIGN_OR_RETURN(t.db, Str(j, "db", field));
  ASSIGN_OR_RETURN(t.table, Str(j, "table", field));
  ASSIGN_OR_RETURN(t.engine, Str(j, "engine", field));
  ASSIGN_OR_RETURN(t.collation, Str(j, "collation", field));
  ASSIGN_OR_RETURN(t.system_versioned, Bool(j, "system_versioned", field));
  ASSIGN_OR_RETURN(const Json* cols, Arr(j, "columns", field));
  for (size_t i = 0; i < cols->size(); ++i) {
    ASSIGN_OR_RETURN(ColumnDesc c, ColumnFromJson((*cols)[i], fmt::format("{}.columns[{}]", field, i)));
    t.columns.push_back(std::move(c));
  }
  ASSIGN_OR_RETURN(const Json* pk, Arr(j, "primary_key", field));
  for (const Json& k : *pk) {
    if (!k.is_number_unsigned() || k.get<uint64_t>() >= t.columns.size())
      return Bad(field + ".primary_key[]", "a column index");
    t.primary_key.push_back(k.get<size_t>());
  }
  return t;
}

template <typename F>
auto ParseGuarded(std::string_view text, F&& f) -> decltype(f(Json())) {
  // nlohmann reports errors by exception; none leaves this function.
  try {
    return f(Json::parse(text));
  } catch (const Json::parse_error& e) {
    return Status::Corruption(fmt::format("schema history: not valid JSON at byte {}", e.byte));
  } catch (const Json::exception& e) {
    return Status::Corruption(fmt::format("schema history: {}", e.what()));
  }
}

}  // namespace

Status SchemaHistory::Add(std::string_view db, std::string_view table, TableVersion v) {
  json_.reset();
  auto& versions = tables_[{std::string(db), std::string(table)}];
  if (!versions.empty()) {
    int c = ComparePositions(v.since, versions.back().since);
    if (c < 0)
      return Status::InvalidArgument(fmt::format(
          "schema history: a version of {}.{} at {} is older than its latest version at {}", db,
          table, v.since.ToString(), versions.back().since.ToString()));
    if (c == 0) {
      versions.back() = std::move(v);
      return Status::Ok();
    }
  }
  versions.push_back(std::move(v));
  return Status::Ok();
}

const TableVersion* SchemaHistory::At(std::string_view db, std::string_view table,
                                      const BinlogPosition& pos) const {
  auto it = tables_.find({std::string(db), std::string(table)});
  if (it == tables_.end()) return nullptr;
  const TableVersion* found = nullptr;
  for (const TableVersion& v : it->second) {
    if (ComparePositions(v.since, pos) > 0) break;
    found = &v;
  }
  return found;
}

const TableVersion* SchemaHistory::Latest(std::string_view db, std::string_view table) const {
  auto it = tables_.find({std::string(db), std::string(table)});
  if (it == tables_.end() || it->second.empty()) return nullptr;
  return &it->second.back();
}

const std::vector<TableVersion>& SchemaHistory::Versions(std::string_view db,
                                                         std::string_view table) const {
  static const std::vector<TableVersion> kNone;
  auto it = tables_.find({std::string(db), std::string(table)});
  return it == tables_.end() ? kNone : it->second;
}

void SchemaHistory::Prune(const BinlogPosition& pos) {
  json_.reset();
  for (auto it = tables_.begin(); it != tables_.end();) {
    auto& v = it->second;
    size_t keep_from = 0;
    for (size_t i = 0; i < v.size(); ++i)
      if (ComparePositions(v[i].since, pos) <= 0) keep_from = i;
    v.erase(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(keep_from));
    bool only_a_past_drop = v.size() == 1 && v[0].schema == nullptr &&
                            ComparePositions(v[0].since, pos) <= 0;
    if (v.empty() || only_a_past_drop) it = tables_.erase(it);
    else ++it;
  }
}

std::vector<std::string> SchemaHistory::Tables() const {
  std::vector<std::string> out;
  for (const auto& [name, versions] : tables_) out.push_back(name.first + "." + name.second);
  return out;
}

bool operator==(const SchemaHistory& a, const SchemaHistory& b) {
  if (a.tables_.size() != b.tables_.size()) return false;
  for (auto ia = a.tables_.begin(), ib = b.tables_.begin(); ia != a.tables_.end(); ++ia, ++ib) {
    if (ia->first != ib->first || ia->second.size() != ib->second.size()) return false;
    for (size_t i = 0; i < ia->second.size(); ++i) {
      const TableVersion& x = ia->second[i];
      const TableVersion& y = ib->second[i];
      if (!(x.since == y.since) || x.ddl != y.ddl || (x.schema == nullptr) != (y.schema == nullptr))
        return false;
      if (x.schema && !(*x.schema == *y.schema)) return false;
    }
  }
  return true;
}

void SchemaHistory::CacheJson() {
  json_.reset();
  json_ = std::make_shared<const std::string>(ToJson());
}

std::string SchemaHistory::ToJson() const {
  if (json_) return *json_;
  OJson tables = OJson::array();
  for (const auto& [name, versions] : tables_) {
    OJson vs = OJson::array();
    for (const TableVersion& v : versions) {
      OJson e;
      e["since"] = OJson{{"file", v.since.file}, {"pos", v.since.pos}};
      e["ddl"] = v.ddl;
      e["schema"] = v.schema ? TableJson(*v.schema) : OJson(nullptr);
      vs.push_back(std::move(e));
    }
    tables.push_back(OJson{{"db", name.first}, {"table", name.second}, {"versions", std::move(vs)}});
  }
  OJson doc;
  doc["tables"] = std::move(tables);
  return doc.dump(-1, ' ', false, OJson::error_handler_t::replace);
}

Result<SchemaHistory> SchemaHistory::FromJson(std::string_view text) {
  return ParseGuarded(text, [](const Json& doc) -> Result<SchemaHistory> {
    if (!doc.is_object()) return Bad("(top level)", "an object");
    SchemaHistory h;
    ASSIGN_OR_RETURN(const Json* tables, Arr(doc, "tables", "schemas"));
    for (size_t i = 0; i < tables->size(); ++i) {
      const Json& t = (*tables)[i];
      const std::string field = fmt::format("schemas.tables[{}]", i);
      if (!t.is_object()) return Bad(field, "an object");
      ASSIGN_OR_RETURN(std::string db, Str(t, "db", field));
      ASSIGN_OR_RETURN(std::string table, Str(t, "table", field));
      ASSIGN_OR_RETURN(const Json* versions, Arr(t, "versions", field));
      for (size_t k = 0; k < versions->size(); ++k) {
        const Json& v = (*versions)[k];
        const std::string vf = fmt::format("{}.versions[{}]", field, k);
        if (!v.is_object()) return Bad(vf, "an object");
        TableVersion tv;
        auto since = v.find("since");
        if (since == v.end() || !since->is_object()) return Bad(vf + ".since", "an object");
        ASSIGN_OR_RETURN(tv.since.file, Str(*since, "file", vf + ".since"));
        ASSIGN_OR_RETURN(tv.since.pos, Num(*since, "pos", vf + ".since"));
        ASSIGN_OR_RETURN(tv.ddl, Str(v, "ddl", vf));
        auto schema = v.find("schema");
        if (schema == v.end()) return Bad(vf + ".schema", "present");
        if (!schema->is_null()) {
          ASSIGN_OR_RETURN(TableSchema s, TableFromJson(*schema, vf + ".schema"));
          tv.schema = std::make_shared<const TableSchema>(std::move(s));
        }
        if (const TableVersion* last = h.Latest(db, table);
            last != nullptr && ComparePositions(tv.since, last->since) <= 0)
          return Status::Corruption(fmt::format("schema history: {} is not after the version before it", vf));
        RETURN_IF_ERROR(h.Add(db, table, std::move(tv)));
      }
    }
    return h;
  });
}

std::string TableSchemaToJson(const TableSchema& t) {
  return TableJson(t).dump(-1, ' ', false, OJson::error_handler_t::replace);
}

Result<TableSchema> TableSchemaFromJson(std::string_view text) {
  return ParseGuarded(text, [](const Json& j) { return TableFromJson(j, "table"); });
}

}  // namespace sluice
