// Per-table replication modes: the [table."db.table"] sections of the TOML config
// (docs/config.md, docs/incremental.md).
//
//   [table."shop.orders"]          a db.table glob, like source.tables
//   mode = "incremental"           "cdc" (default: snapshot + binlog) | "incremental" | "full" |
//                                  "snapshot_only"
//   write = "upsert"               "append" | "upsert" (default)
//   cursor = "updated_at"          incremental only; default: chosen among the usual names
//   lookback = "10m"               incremental only; seconds as an integer, or "90s", "10m",
//                                  "2h", "1d"; default 0
//   max_rows = 100000              not with cdc; rows per run, 0 (default) = no limit
// Unknown keys, wrong types, bad values and keys that do not apply to the mode are
// kInvalidArgument naming the key ("table.\"shop.orders\".mode: 'incremantal' is not one of:
// ..."). A table matched by two sections is an error naming both: when the config is loaded
// if one of them names the table literally (CheckSectionsDisjoint), else at run time
// (ModesForTables).
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <toml++/toml.h>

#include "cli/config.h"
#include "mysql/schema_loader.h"
#include "snapshot/incremental.h"
#include "util/status.h"

namespace sluice::cli {

// Parses the [table] root section into config->tables.
[[nodiscard]] Status ParseTableSections(const toml::table& t, std::string_view origin, Config* config);

// The tables of `listed` split by mode: cdc ones (read as today) and the others with their
// options; and the keys of the sections that match none of `listed` (a typo in a pattern, a
// table not selected by source.tables/source.exclude: the section has no effect, which
// `run` logs as a warning and `check` shows as a WARN line). kInvalidArgument when two
// sections match one table.
struct TableModes {
  std::vector<TableName> cdc;
  std::vector<IncrementalTableOptions> other;
  std::vector<std::string> unmatched;  // "table.\"shop.zzz\"", in the config's order
};
// The message for a section that matches no selected table (TableModes::unmatched).
std::string UnmatchedSectionMessage(const std::string& key);
// kInvalidArgument when the config alone shows a table matched by two sections: a section
// naming one table literally ("shop.orders", selected by source.tables/source.exclude) whose
// name another section's glob matches. The message is ModesForTables' for that table,
// prefixed with `origin`. Overlaps of two globs depend on the server's tables and are found
// by ModesForTables.
[[nodiscard]] Status CheckSectionsDisjoint(const Config& config, std::string_view origin);
[[nodiscard]] Result<TableModes> ModesForTables(const Config& config, const std::vector<TableName>& listed);

}  // namespace sluice::cli
