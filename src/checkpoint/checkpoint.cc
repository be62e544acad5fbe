// Checkpoint <-> JSON text.
//
// Grammar (version 1, or 2 with "schemas"; keys in this order when written, unknown keys
// ignored when read):
//   {
//     "version": 1 | 2,                              integer; anything else -> kFailedPrecondition
//     "flavor": "mariadb" | "mysql" | "unknown",
//     "stream_start": {"file": string, "pos": unsigned integer},
//     "gtid": string,                                may be ""
//     "snapshot": {
//       "done": bool,
//       "tables": {"<db>.<table>": {"done": bool, "rows": unsigned integer,
//                                   "last_key": [string, ...],
//                                   "copied_at": {"file": string, "pos": n} (optional)}, ...}
//     },
//     "schemas": SchemaHistory JSON (schema/schema_history.h)    version 2 only
//   }
// Text that is not JSON, a missing "version", or any field of the wrong type or missing is
// kCorruption naming the field.
#include "checkpoint/checkpoint.h"

#include <nlohmann/json.hpp>

namespace sluice {

namespace {

using OJson = nlohmann::ordered_json;
using Json = nlohmann::json;

Status Missing(std::string_view field, std::string_view want) {
  return Status::Corruption(fmt::format("checkpoint: field \"{}\" missing or not {}", field, want));
}

// Each getter returns kCorruption naming `field` when `obj[key]` is absent or of the wrong type.
Result<const Json*> Member(const Json& obj, const char* key, std::string_view field) {
  auto it = obj.find(key);
  if (it == obj.end()) return Missing(field, "present");
  return &*it;
}

Result<std::string> GetString(const Json& obj, const char* key, std::string_view field) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) return Missing(field, "a string");
  return it->get<std::string>();
}

Result<uint64_t> GetUnsigned(const Json& obj, const char* key, std::string_view field) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number_unsigned()) return Missing(field, "an unsigned integer");
  return it->get<uint64_t>();
}

Result<bool> GetBool(const Json& obj, const char* key, std::string_view field) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_boolean()) return Missing(field, "a boolean");
  return it->get<bool>();
}

Result<const Json*> GetObject(const Json& obj, const char* key, std::string_view field) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_object()) return Missing(field, "an object");
  return &*it;
}

Result<Flavor> ParseFlavor(const std::string& s) {
  if (s == "mariadb") return Flavor::kMariaDB;
  if (s == "mysql") return Flavor::kMySQL;
  if (s == "unknown") return Flavor::kUnknown;
  return Status::Corruption(fmt::format("checkpoint: unknown flavor \"{}\"", s));
}

Result<Checkpoint> FromParsed(const Json& doc) {
  if (!doc.is_object()) return Status::Corruption("checkpoint: top level is not a JSON object");
  ASSIGN_OR_RETURN(const Json* version, Member(doc, "version", "version"));
  if (!version->is_number_integer()) return Missing("version", "an integer");
  const int64_t v = version->get<int64_t>();
  if (v != Checkpoint::kVersion && v != Checkpoint::kVersionWithSchemas) {
    return Status::FailedPrecondition(
        fmt::format("checkpoint: format version {} is not supported (this sluice reads versions {} and {})",
                    v, Checkpoint::kVersion, Checkpoint::kVersionWithSchemas));
  }
  Checkpoint cp;
  ASSIGN_OR_RETURN(std::string flavor, GetString(doc, "flavor", "flavor"));
  ASSIGN_OR_RETURN(cp.flavor, ParseFlavor(flavor));
  ASSIGN_OR_RETURN(const Json* start, GetObject(doc, "stream_start", "stream_start"));
  ASSIGN_OR_RETURN(cp.stream_start.file, GetString(*start, "file", "stream_start.file"));
  ASSIGN_OR_RETURN(cp.stream_start.pos, GetUnsigned(*start, "pos", "stream_start.pos"));
  ASSIGN_OR_RETURN(cp.gtid, GetString(doc, "gtid", "gtid"));
  ASSIGN_OR_RETURN(const Json* snap, GetObject(doc, "snapshot", "snapshot"));
  ASSIGN_OR_RETURN(cp.snapshot_done, GetBool(*snap, "done", "snapshot.done"));
  ASSIGN_OR_RETURN(const Json* tables, GetObject(*snap, "tables", "snapshot.tables"));
  for (auto it = tables->begin(); it != tables->end(); ++it) {
    const std::string field = "snapshot.tables[\"" + it.key() + "\"]";
    if (!it->is_object()) return Missing(field, "an object");
    TableSnapshotProgress p;
    ASSIGN_OR_RETURN(p.done, GetBool(*it, "done", field + ".done"));
    ASSIGN_OR_RETURN(p.rows, GetUnsigned(*it, "rows", field + ".rows"));
    auto key = it->find("last_key");
    if (key == it->end() || !key->is_array()) return Missing(field + ".last_key", "an array");
    for (const Json& k : *key) {
      if (!k.is_string()) return Missing(field + ".last_key[]", "a string");
      p.last_key.push_back(k.get<std::string>());
    }
    auto at = it->find("copied_at");
    if (at != it->end()) {
      if (!at->is_object()) return Missing(field + ".copied_at", "an object");
      ASSIGN_OR_RETURN(p.copied_at.file, GetString(*at, "file", field + ".copied_at.file"));
      ASSIGN_OR_RETURN(p.copied_at.pos, GetUnsigned(*at, "pos", field + ".copied_at.pos"));
    }
    cp.tables.emplace(it.key(), std::move(p));
  }
  auto schemas = doc.find("schemas");
  if (v == Checkpoint::kVersionWithSchemas) {
    if (schemas == doc.end() || !schemas->is_object()) return Missing("schemas", "an object");
    auto h = SchemaHistory::FromJson(schemas->dump());
    if (!h.ok()) return h.status().WithContext("checkpoint");
    cp.schemas = std::make_shared<const SchemaHistory>(std::move(h).value());
  }
  return cp;
}

}  // namespace

std::string Checkpoint::ToJson() const {
  const bool with_schemas = schemas != nullptr && !schemas->empty();
  OJson doc;
  doc["version"] = with_schemas ? kVersionWithSchemas : kVersion;
  doc["flavor"] = std::string(FlavorName(flavor));
  doc["stream_start"] = OJson{{"file", stream_start.file}, {"pos", stream_start.pos}};
  doc["gtid"] = gtid;
  OJson t = OJson::object();
  for (const auto& [name, p] : tables) {
    t[name] = OJson{{"done", p.done}, {"rows", p.rows}, {"last_key", p.last_key}};
    if (!p.copied_at.empty())
      t[name]["copied_at"] = OJson{{"file", p.copied_at.file}, {"pos", p.copied_at.pos}};
  }
  doc["snapshot"] = OJson{{"done", snapshot_done}, {"tables", std::move(t)}};
  if (with_schemas) doc["schemas"] = OJson::parse(schemas->ToJson());
  // Replacement never triggers: every string here is UTF-8 we produced; invalid bytes (if a
  // key ever held them) become U+FFFD instead of throwing.
  return doc.dump(-1, ' ', false, OJson::error_handler_t::replace);
}

Result<Checkpoint> Checkpoint::FromJson(const std::string& text) {
  // nlohmann reports errors by exception; none leaves this function.
  try {
    Json doc = Json::parse(text);
    return FromParsed(doc);
  } catch (const Json::parse_error& e) {
    return Status::Corruption(
        fmt::format("checkpoint: not valid JSON at byte {}: {}", e.byte, e.what()));
  } catch (const Json::exception& e) {
    return Status::Corruption(fmt::format("checkpoint: {}", e.what()));
  }
}

}  // namespace sluice
