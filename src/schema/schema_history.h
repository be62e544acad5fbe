// SchemaHistory: the definitions of captured tables over binlog positions (the schema
// registry's durable part).
//
// Each table has a list of versions ordered by the position from which they hold. A row
// event at position P of table T is decoded with T's version whose `since` is the greatest
// one <= P (At). A version with a null schema says the table did not exist from `since` on
// (dropped, or renamed away). `since` is the end of the DDL event that made the version (the
// position of the first event that sees it), or the snapshot point for a definition read
// from the server.
//
// The history is stored with the checkpoint (checkpoint/checkpoint.h, key "schemas") so a
// restart that replays old events decodes them with the definitions they were written
// under. Prune(stream_start) drops versions no event at or after stream_start can need.
//
// JSON (ToJson/FromJson), keys written in this order, unknown keys ignored when read:
//   {"tables": [{"db": s, "table": s,
//                "versions": [{"since": {"file": s, "pos": n}, "ddl": s, "schema": TABLE | null},
//                             ...]}, ...]}
//   TABLE  = {"db": s, "table": s, "engine": s, "collation": s, "system_versioned": b,
//             "primary_key": [n, ...], "columns": [COLUMN, ...]}
//   COLUMN = {"name": s, "type": DATA_TYPE name, "column_type": s, "unsigned": b,
//             "nullable": b, "charset": s, "collation": s, "char_max_length": n,
//             "octet_length": n, "precision": n, "scale": n, "fsp": n, "labels": [s...],
//             "generated": "" | "virtual" | "stored", "generation_expression": s,
//             "invisible": b, "versioning": "" | "row_start" | "row_end",
//             "auto_increment": b, "default_kind": "none" | "null" | "literal" | "expression",
//             "default": s | null}
// FromJson: kCorruption naming the field for text that is not JSON or a field of the wrong
// type; versions out of position order are kCorruption too.
// Thread safety: plain value type; share as std::shared_ptr<const SchemaHistory>.
#pragma once

#include <map>
#include <memory>
#include <utility>
#include <string>
#include <string_view>
#include <vector>

#include "core/position.h"
#include "schema/table_schema.h"
#include "util/status.h"

namespace sluice {

struct TableVersion {
  BinlogPosition since;
  TableSchemaPtr schema;  // null: the table does not exist from `since` on
  std::string ddl;        // the statement that made this version; "" when read from the server
};

class SchemaHistory {
 public:
  // Adds a version of db.table holding from v.since. A version at the same position as the
  // table's latest replaces it; one before the latest is kInvalidArgument (versions are
  // recorded in binlog order).
  Status Add(std::string_view db, std::string_view table, TableVersion v);

  // The version in effect for an event of db.table at `pos`, or nullptr when none is known
  // there (no version at or before `pos`). A dropped table's version has a null schema.
  const TableVersion* At(std::string_view db, std::string_view table,
                         const BinlogPosition& pos) const;
  // The latest version of db.table, or nullptr.
  const TableVersion* Latest(std::string_view db, std::string_view table) const;
  // Every version of db.table, oldest first (empty if none).
  const std::vector<TableVersion>& Versions(std::string_view db, std::string_view table) const;

  // Keeps, per table, the version in effect at `pos` and every later one; a table whose only
  // remaining version is a drop before `pos` is forgotten.
  void Prune(const BinlogPosition& pos);

  // "db.table" names with at least one version, sorted.
  std::vector<std::string> Tables() const;
  bool empty() const { return tables_.empty(); }

  std::string ToJson() const;
  // Computes ToJson() once and keeps it until the next Add/Prune: a history shared by many
  // checkpoints (one per transaction) is then formatted once, not once per checkpoint.
  void CacheJson();
  static Result<SchemaHistory> FromJson(std::string_view text);

  friend bool operator==(const SchemaHistory& a, const SchemaHistory& b);

 private:
  std::map<std::pair<std::string, std::string>, std::vector<TableVersion>> tables_;
  std::shared_ptr<const std::string> json_;  // CacheJson; not part of the value
};

// One TableSchema as the JSON object TABLE above (for the history and for schema-change
// records); FromJson kCorruption naming `field` for a missing or mistyped member.
std::string TableSchemaToJson(const TableSchema& t);
Result<TableSchema> TableSchemaFromJson(std::string_view text);

}  // namespace sluice
