#include "mysql/schema_loader.h"

#include "schema/sql_tokenizer.h"
#include "schema/text_value.h"

#include <algorithm>
#include <charconv>

namespace sluice {

namespace {

bool IsSystemSchema(std::string_view db) {
  return db == "mysql" || db == "sys" || db == "information_schema" ||
         db == "performance_schema";
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

template <typename T>
T ParseNumberOr(const TextCell& cell, T fallback) {
  if (!cell) return fallback;
  T v{};
  auto [p, ec] = std::from_chars(cell->data(), cell->data() + cell->size(), v);
  if (ec != std::errc() || p != cell->data() + cell->size()) return fallback;
  return v;
}

}  // namespace

bool HasWildcard(std::string_view part) { return part.find_first_of("*?") != std::string_view::npos; }

bool GlobMatch(std::string_view pattern, std::string_view text) {
  // Iterative matcher with single-star backtracking: O(|p|*|t|) worst case.
  size_t p = 0, t = 0;
  size_t star = std::string_view::npos, star_t = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      star_t = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++star_t;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool PatternMatchesTable(std::string_view pattern, std::string_view db, std::string_view table) {
  size_t dot = pattern.find('.');
  if (dot == std::string_view::npos) return false;
  std::string_view db_pat = pattern.substr(0, dot);
  std::string_view table_pat = pattern.substr(dot + 1);
  if (IsSystemSchema(db) && HasWildcard(db_pat)) return false;
  return GlobMatch(db_pat, db) && GlobMatch(table_pat, table);
}

bool TableSelected(const TableFilter& filter, std::string_view db, std::string_view table) {
  bool included = std::any_of(filter.include.begin(), filter.include.end(),
                              [&](const std::string& p) { return PatternMatchesTable(p, db, table); });
  if (!included) return false;
  return std::none_of(filter.exclude.begin(), filter.exclude.end(),
                      [&](const std::string& p) { return PatternMatchesTable(p, db, table); });
}

std::string SchemaScope(Connection& conn, const std::vector<std::string>& include) {
  std::vector<std::string_view> dbs;
  for (const std::string& p : include) {
    const size_t dot = p.find('.');
    if (dot == std::string::npos) return "";
    std::string_view db = std::string_view(p).substr(0, dot);
    if (HasWildcard(db)) return "";
    if (std::find(dbs.begin(), dbs.end(), db) == dbs.end()) dbs.push_back(db);
  }
  if (dbs.empty()) return "";
  std::string in;
  for (std::string_view db : dbs) in += (in.empty() ? "" : ", ") + conn.Quote(db);
  return " AND TABLE_SCHEMA IN (" + in + ")";
}

Result<std::vector<TableName>> ListTables(Connection& conn, const TableFilter& filter) {
  if (filter.include.empty())
    return Status::InvalidArgument("no tables selected: the include list is empty");
  for (const auto* list : {&filter.include, &filter.exclude})
    for (const std::string& p : *list)
      if (p.find('.') == std::string::npos)
        return Status::InvalidArgument(fmt::format(
            "table pattern '{}' has no '.': write it as db.table (e.g. '{}.*')", p, p));

  ASSIGN_OR_RETURN(QueryResult r,
                   conn.Query("SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES "
                              "WHERE TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED')" +
                              SchemaScope(conn, filter.include) + " ORDER BY TABLE_SCHEMA, TABLE_NAME"));
  std::vector<TableName> all;
  for (const TextRow& row : r.rows)
    if (row.size() >= 2 && row[0] && row[1]) all.push_back({*row[0], *row[1]});

  for (const std::string& p : filter.include) {
    bool any = std::any_of(all.begin(), all.end(), [&](const TableName& t) {
      return PatternMatchesTable(p, t.db, t.table);
    });
    if (!any) {
      // A pattern in another case than the server's names (e.g. 'Shop.*' on a server with
      // lower_case_table_names = 1, which stores shop): say which table it would match.
      auto folded = std::find_if(all.begin(), all.end(), [&](const TableName& t) {
        return PatternMatchesTable(sql::AsciiLower(p), sql::AsciiLower(t.db), sql::AsciiLower(t.table));
      });
      if (folded != all.end())
        return Status::NotFound(fmt::format(
            "table pattern '{}' matches no table on {}: patterns match names with their case, and the server "
            "holds `{}`.`{}` (with lower_case_table_names = 1 it stores every name in lower case); write the "
            "pattern as the server spells the names",
            p, conn.options().Describe(), folded->db, folded->table));
      return Status::NotFound(fmt::format(
          "table pattern '{}' matches no table on {} that this user can see (a table the user "
          "has no privilege on is invisible: if it exists, GRANT SELECT on it)",
          p, conn.options().Describe()));
    }
  }
  std::vector<TableName> out;
  for (TableName& t : all)
    if (TableSelected(filter, t.db, t.table)) out.push_back(std::move(t));
  if (out.empty())
    return Status::NotFound("every table matched by the include patterns is excluded");
  std::sort(out.begin(), out.end());
  return out;
}

Result<std::vector<TableName>> ListTablesSkippingUnmatched(Connection& conn, const TableFilter& filter,
                                                           std::vector<std::string>* unmatched) {
  auto all = ListTables(conn, filter);
  if (all.ok() || all.status().code() != StatusCode::kNotFound) return all;
  std::vector<TableName> out;
  for (const std::string& p : filter.include) {
    auto some = ListTables(conn, TableFilter{{p}, filter.exclude});
    if (some.ok()) {
      out.insert(out.end(), some->begin(), some->end());
    } else if (some.status().code() == StatusCode::kNotFound) {
      const std::string& m = some.status().message();
      if (unmatched) unmatched->push_back(m.find("table pattern") == std::string::npos
                               ? fmt::format("table pattern '{}': every table it matches is excluded (source.exclude)", p)
                               : m);
    } else {
      return some.status();
    }
  }
  if (out.empty()) return all.status();
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Result<std::vector<std::string>> ParseEnumSetLabels(std::string_view column_type) {
  auto bad = [&](std::string_view why) {
    return Status::Corruption(
        fmt::format("cannot parse ENUM/SET labels from COLUMN_TYPE \"{}\": {}", column_type, why));
  };
  size_t open = column_type.find('(');
  if (open == std::string_view::npos) return bad("no '('");
  std::string kind = Lower(column_type.substr(0, open));
  while (!kind.empty() && kind.back() == ' ') kind.pop_back();
  if (kind != "enum" && kind != "set") return bad("not an enum or set type");
  std::vector<std::string> labels;
  size_t i = open + 1;
  if (i < column_type.size() && column_type[i] == ')') return labels;
  while (true) {
    if (i >= column_type.size() || column_type[i] != '\'') return bad("expected a quoted label");
    ++i;
    std::string label;
    bool closed = false;
    while (i < column_type.size()) {
      char c = column_type[i];
      if (c == '\'') {
        if (i + 1 < column_type.size() && column_type[i + 1] == '\'') {
          label.push_back('\'');
          i += 2;
          continue;
        }
        ++i;
        closed = true;
        break;
      }
      if (c == '\\' && i + 1 < column_type.size()) {
        char e = column_type[i + 1];
        switch (e) {
          case '0': label.push_back('\0'); break;
          case 'n': label.push_back('\n'); break;
          case 'r': label.push_back('\r'); break;
          case 't': label.push_back('\t'); break;
          case 'b': label.push_back('\b'); break;
          case 'Z': label.push_back('\x1a'); break;
          default: label.push_back(e); break;
        }
        i += 2;
        continue;
      }
      label.push_back(c);
      ++i;
    }
    if (!closed) return bad("unterminated label");
    labels.push_back(std::move(label));
    if (i >= column_type.size()) return bad("missing ')'");
    if (column_type[i] == ',') {
      ++i;
      continue;
    }
    if (column_type[i] == ')') break;
    return bad("unexpected character after a label");
  }
  return labels;
}

Result<TableSchema> LoadTableSchema(Connection& conn, std::string_view db,
                                    std::string_view table) {
  std::string where = fmt::format("TABLE_SCHEMA = {} AND TABLE_NAME = {}", conn.Quote(db),
                                  conn.Quote(table));
  ASSIGN_OR_RETURN(
      QueryResult cols,
      conn.Query("SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE, CHARACTER_SET_NAME, "
                 "COLLATION_NAME, CHARACTER_MAXIMUM_LENGTH, CHARACTER_OCTET_LENGTH, "
                 "NUMERIC_PRECISION, NUMERIC_SCALE, DATETIME_PRECISION, EXTRA, "
                 "GENERATION_EXPRESSION, COLUMN_DEFAULT "
                 "FROM information_schema.COLUMNS WHERE " +
                 where + " ORDER BY ORDINAL_POSITION"));
  if (cols.rows.empty())
    return Status::NotFound(fmt::format(
        "table {}.{} not found on {}: it does not exist, or this user cannot see it (a table the "
        "user has no privilege on is invisible: if it exists, GRANT SELECT ON {}.{} to the user)",
        db, table, conn.options().Describe(), QuoteIdentifier(db), QuoteIdentifier(table)));
  TableSchema schema;
  schema.db = std::string(db);
  schema.table = std::string(table);
  for (const TextRow& row : cols.rows) {
    if (row.size() < 14) return Status::Internal("information_schema.COLUMNS: short row");
    ColumnDesc c;
    c.name = row[0].value_or("");
    c.SetType(Lower(row[1].value_or("")));
    c.column_type = row[2].value_or("");
    std::string ct_lower = Lower(c.column_type);
    c.is_unsigned = ct_lower.find(" unsigned") != std::string::npos;
    c.nullable = row[3].value_or("YES") == "YES";
    c.charset = row[4].value_or("");
    c.collation = row[5].value_or("");
    if (c.charset.empty() && IsBinaryType(c.type)) c.charset = "binary";
    c.char_max_length = ParseNumberOr<uint64_t>(row[6], 0);
    c.octet_length = ParseNumberOr<uint64_t>(row[7], 0);
    c.numeric_precision = ParseNumberOr<uint32_t>(row[8], 0);
    c.numeric_scale = ParseNumberOr<uint32_t>(row[9], 0);
    c.fsp = ParseNumberOr<uint32_t>(row[10], 0);
    std::string extra = Lower(row[11].value_or(""));
    const std::string gen_expr = row[12].value_or("");
    const bool stored = extra.find("stored generated") != std::string::npos ||
                        extra.find("persistent generated") != std::string::npos;
    if (gen_expr == "ROW START" || gen_expr == "ROW END") {
      // MariaDB: GENERATED ALWAYS AS ROW START/END (system versioning), not an expression.
      c.versioning = gen_expr == "ROW START" ? VersioningRole::kRowStart : VersioningRole::kRowEnd;
    } else if (!gen_expr.empty() || stored || extra.find("virtual generated") != std::string::npos) {
      c.generated = stored ? GeneratedKind::kStored : GeneratedKind::kVirtual;
      c.generation_expression = gen_expr;
    }
    c.is_generated = c.generated != GeneratedKind::kNone;
    c.is_invisible = extra.find("invisible") != std::string::npos;
    c.auto_increment = extra.find("auto_increment") != std::string::npos;
    c.default_value = row[13];
    c.default_kind = ClassifyDefault(row[13], conn.server_version().find("MariaDB") == std::string::npos,
                                     extra.find("default_generated") != std::string::npos);
    // A generated or ROW START/END column has no default (the server prints NULL).
    if (c.generated != GeneratedKind::kNone || c.versioning != VersioningRole::kNone)
      c.default_kind = DefaultKind::kNone;
    if (c.default_kind == DefaultKind::kNull || c.default_kind == DefaultKind::kNone)
      c.default_value.reset();
    // information_schema prints a default in UTF-8: a binary string's bytes that are not UTF-8
    // come out as '?' (VARBINARY DEFAULT 0x00FF prints '\0?'; SHOW CREATE TABLE too). Such a
    // default is not known: taken as written, a MINIMAL row image's insert stored 0x003F (a new
    // user's probe). As an expression, only the server knows it, and a row that needs it stops
    // the sink (SqlApplier). BLOB defaults print as 0x... and are exact.
    if (c.default_kind == DefaultKind::kLiteral && c.default_value && c.charset == "binary" &&
        c.default_value->size() >= 2 && c.default_value->front() == '\'' &&
        c.default_value->find('?') != std::string::npos)
      c.default_kind = DefaultKind::kExpression;
    if (c.type == SqlType::kEnum || c.type == SqlType::kSet) {
      Result<std::vector<std::string>> labels = ParseEnumSetLabels(c.column_type);
      if (!labels.ok())
        return labels.status().WithContext(fmt::format("{}.{} column {}", db, table, c.name));
      c.labels = std::move(labels).value();
    }
    schema.columns.push_back(std::move(c));
  }

  ASSIGN_OR_RETURN(QueryResult info,
                   conn.Query("SELECT ENGINE, TABLE_COLLATION, TABLE_TYPE FROM "
                              "information_schema.TABLES WHERE " + where));
  if (!info.rows.empty() && info.rows[0].size() >= 3) {
    schema.engine = info.rows[0][0].value_or("");
    schema.collation = info.rows[0][1].value_or("");
    schema.system_versioned = info.rows[0][2].value_or("") == "SYSTEM VERSIONED";
  }

  ASSIGN_OR_RETURN(QueryResult pk,
                   conn.Query("SELECT COLUMN_NAME FROM information_schema.STATISTICS WHERE " +
                              where + " AND INDEX_NAME = 'PRIMARY' ORDER BY SEQ_IN_INDEX"));
  for (const TextRow& row : pk.rows) {
    if (row.empty() || !row[0]) continue;
    int idx = schema.ColumnIndex(*row[0]);
    if (idx < 0)
      return Status::Internal(fmt::format("{}.{}: primary key column {} is not among the columns",
                                          db, table, *row[0]));
    schema.primary_key.push_back(static_cast<size_t>(idx));
  }
  return schema;
}

}  // namespace sluice
