#include "cli/table_config.h"

#include <cstdint>
#include <set>

namespace sluice::cli {
namespace {

Status KeyError(std::string_view origin, std::string_view key, std::string_view msg) {
  return Status::InvalidArgument(fmt::format("{}: {}: {}", origin, key, msg));
}

// "90", "90s", "10m", "2h", "1d" -> seconds.
bool ParseDuration(std::string_view s, uint64_t* out) {
  if (s.empty()) return false;
  uint64_t unit = 1;
  switch (s.back()) {
    case 's': unit = 1; s.remove_suffix(1); break;
    case 'm': unit = 60; s.remove_suffix(1); break;
    case 'h': unit = 3600; s.remove_suffix(1); break;
    case 'd': unit = 86400; s.remove_suffix(1); break;
    default: break;
  }
  if (s.empty() || s.size() > 9) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v * unit;
  return true;
}

}  // namespace

Status ParseTableSections(const toml::table& root, std::string_view origin, Config* config) {
  for (const auto& [k, node] : root) {
    const std::string pattern(k.str());
    const std::string key = fmt::format("table.\"{}\"", pattern);
    const auto dot = pattern.find('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == pattern.size() ||
        pattern.find('.', dot + 1) != std::string::npos)
      return KeyError(origin, key, "not a db.table pattern (e.g. [table.\"shop.orders\"])");
    const toml::table* t = node.as_table();
    if (!t) return KeyError(origin, key, "expected a section");
    static const std::set<std::string> known = {"mode", "write", "cursor", "cursor_time_zone", "lookback", "max_rows"};
    for (const auto& [name, v] : *t) {
      (void)v;
      if (!known.count(std::string(name.str())))
        return KeyError(origin, fmt::format("{}.{}", key, name.str()),
                        "unknown key (known: cursor, cursor_time_zone, lookback, max_rows, mode, write)");
    }
    TableSection s;
    s.pattern = pattern;
    s.key = key;
    auto get_string = [&](const char* name, std::string* out) -> Status {
      const toml::node* n = t->get(name);
      if (!n) return Status::Ok();
      if (!n->is_string()) return KeyError(origin, fmt::format("{}.{}", key, name), "expected a string");
      *out = n->as_string()->get();
      return Status::Ok();
    };
    std::string mode = "cdc", write = "upsert";
    RETURN_IF_ERROR(get_string("mode", &mode));
    if (mode == "cdc") s.mode = TableMode::kCdc;
    else if (mode == "incremental") s.mode = TableMode::kIncremental;
    else if (mode == "full") s.mode = TableMode::kFull;
    else if (mode == "snapshot_only") s.mode = TableMode::kSnapshotOnly;
    else
      return KeyError(origin, key + ".mode",
                      fmt::format("'{}' is not one of: cdc, incremental, full, snapshot_only", mode));
    RETURN_IF_ERROR(get_string("write", &write));
    if (write == "append") s.write = WritePolicy::kAppend;
    else if (write == "upsert") s.write = WritePolicy::kUpsert;
    else return KeyError(origin, key + ".write", fmt::format("'{}' is not one of: append, upsert", write));
    RETURN_IF_ERROR(get_string("cursor", &s.cursor));
    if (t->get("cursor") && s.cursor.empty()) return KeyError(origin, key + ".cursor", "must not be empty");
    RETURN_IF_ERROR(get_string("cursor_time_zone", &s.cursor_time_zone));
    if (t->get("cursor_time_zone") && s.cursor_time_zone.empty())
      return KeyError(origin, key + ".cursor_time_zone",
                      "must not be empty (an offset such as \"+00:00\", or a zone name the server knows)");
    if (const toml::node* n = t->get("lookback")) {
      uint64_t secs = 0;
      bool ok = false;
      if (n->is_integer()) {
        ok = n->as_integer()->get() >= 0;
        secs = ok ? static_cast<uint64_t>(n->as_integer()->get()) : 0;
      } else if (n->is_string()) {
        ok = ParseDuration(n->as_string()->get(), &secs);
      }
      if (!ok || secs > 366u * 86400u)
        return KeyError(origin, key + ".lookback",
                        "expected seconds (an integer) or a duration such as \"90s\", \"10m\", \"2h\", \"1d\" "
                        "(at most 366 days)");
      s.lookback_seconds = static_cast<uint32_t>(secs);
    }
    if (const toml::node* n = t->get("max_rows")) {
      if (!n->is_integer() || n->as_integer()->get() < 0)
        return KeyError(origin, key + ".max_rows", "expected an integer >= 0 (0: no limit)");
      s.max_rows = static_cast<uint64_t>(n->as_integer()->get());
    }
    // Keys that mean nothing for the mode are mistakes, not silently ignored settings. Each
    // message names the modes the key applies to, the same whichever mode it was found in.
    struct ModeKey {
      const char* name;
      bool incremental_only;
    };
    for (const ModeKey k : {ModeKey{"write", false}, ModeKey{"max_rows", false}, ModeKey{"cursor", true},
                            ModeKey{"cursor_time_zone", true}, ModeKey{"lookback", true}}) {
      const bool applies = k.incremental_only ? s.mode == TableMode::kIncremental : s.mode != TableMode::kCdc;
      if (applies || !t->get(k.name)) continue;
      return KeyError(origin, fmt::format("{}.{}", key, k.name),
                      fmt::format("applies to {}, not {}{}",
                                  k.incremental_only ? "mode incremental only" : "modes incremental, full and snapshot_only",
                                  mode, s.mode == TableMode::kCdc ? " (the binlog carries every change)" : ""));
    }
    config->tables.push_back(std::move(s));
  }
  return Status::Ok();
}

std::string UnmatchedSectionMessage(const std::string& key) {
  return fmt::format("[{}] matches no table selected by source.tables/source.exclude: it has no effect", key);
}

namespace {
std::string BothMessage(const std::string& table, const TableSection& first, const TableSection& second) {
  return fmt::format("table {} matches both [{}] and [{}]; make the patterns disjoint", table, first.key, second.key);
}
}  // namespace

Status CheckSectionsDisjoint(const Config& config, std::string_view origin) {
  const TableFilter selected{config.source.tables, config.source.exclude};
  for (const TableSection& literal : config.tables) {
    const size_t dot = literal.pattern.find('.');
    if (dot == std::string::npos || literal.pattern.find_first_of("*?") != std::string::npos) continue;
    const std::string db = literal.pattern.substr(0, dot), table = literal.pattern.substr(dot + 1);
    if (!TableSelected(selected, db, table)) continue;
    // The first two sections (in the config's order, as ModesForTables walks them) that match it.
    const TableSection* found = nullptr;
    for (const TableSection& s : config.tables) {
      if (!TableSelected(TableFilter{{s.pattern}, {}}, db, table)) continue;
      if (found) return Status::InvalidArgument(fmt::format("{}: {}", origin, BothMessage(literal.pattern, *found, s)));
      found = &s;
    }
  }
  return Status::Ok();
}

Result<TableModes> ModesForTables(const Config& config, const std::vector<TableName>& listed) {
  TableModes out;
  for (const TableSection& s : config.tables) {
    bool matched = false;
    for (const TableName& t : listed) matched = matched || TableSelected(TableFilter{{s.pattern}, {}}, t.db, t.table);
    if (!matched) out.unmatched.push_back(s.key);
  }
  for (const TableName& t : listed) {
    const TableSection* found = nullptr;
    for (const TableSection& s : config.tables) {
      if (!TableSelected(TableFilter{{s.pattern}, {}}, t.db, t.table)) continue;
      if (found)
        return Status::InvalidArgument(BothMessage(t.QualifiedName(), *found, s));
      found = &s;
    }
    if (!found || found->mode == TableMode::kCdc) {
      out.cdc.push_back(t);
      continue;
    }
    IncrementalTableOptions o;
    o.name = t;
    o.mode = found->mode;
    o.write = found->write;
    o.cursor = found->cursor;
    o.cursor_time_zone = found->cursor_time_zone;
    o.lookback_seconds = found->lookback_seconds;
    o.max_rows = found->max_rows;
    o.config_key = found->key;
    out.other.push_back(std::move(o));
  }
  return out;
}

}  // namespace sluice::cli
