// Reads only as far as the changed tables; grammar in dml_tables.h (MySQL 8.4 Reference
// Manual 15.2.7 INSERT, 15.2.12 REPLACE, 15.2.17 UPDATE, 15.2.2 DELETE, 15.2.9 LOAD DATA;
// MariaDB Knowledge Base pages of the same statements).
#include "schema/dml_tables.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

namespace sluice::ddl {
namespace {

using sql::Token;
using sql::TokenKind;

// A table reference of UPDATE/DELETE: the table and the alias it goes by ("" when none).
struct Ref {
  TableRef table;
  std::string alias;
};

class Reader {
 public:
  Reader(const std::vector<Token>& tokens, std::string_view default_db)
      : t_(tokens), default_db_(default_db) {}

  DmlTables Read() {
    DmlTables out;
    if (t_.empty()) return out;
    const Token& verb = t_[0];
    i_ = 1;
    bool ok = false;
    if (verb.Is("INSERT")) {
      out.kind = DmlKind::kInsert;
      Skip({"LOW_PRIORITY", "DELAYED", "HIGH_PRIORITY", "IGNORE"});
      ok = Single();
    } else if (verb.Is("REPLACE")) {
      out.kind = DmlKind::kReplace;
      Skip({"LOW_PRIORITY", "DELAYED"});
      ok = Single();
    } else if (verb.Is("UPDATE")) {
      out.kind = DmlKind::kUpdate;
      Skip({"LOW_PRIORITY", "IGNORE"});
      std::vector<Ref> refs;
      ok = References(&refs) && Expect("SET");
      for (const Ref& r : refs) Add(r.table);
    } else if (verb.Is("DELETE")) {
      out.kind = DmlKind::kDelete;
      Skip({"LOW_PRIORITY", "QUICK", "IGNORE"});
      ok = Delete();
    } else if (verb.Is("LOAD") && i_ < t_.size() && (t_[i_].Is("DATA") || t_[i_].Is("XML"))) {
      out.kind = DmlKind::kLoadData;
      ok = LoadData();
    } else {
      return out;
    }
    out.known = ok;
    if (ok) {
      out.tables = std::move(tables_);
      out.calls = Calls();
    } else {
      out.unknown = why_;
    }
    return out;
  }

 private:
  bool AtEnd() const { return i_ >= t_.size() || t_[i_].IsPunct(';'); }
  bool At(std::string_view word) const { return i_ < t_.size() && t_[i_].Is(word); }
  bool AtPunct(char c) const { return i_ < t_.size() && t_[i_].IsPunct(c); }
  void Skip(std::initializer_list<std::string_view> words) {
    for (bool moved = true; moved;) {
      moved = false;
      for (std::string_view w : words)
        if (At(w)) {
          ++i_;
          moved = true;
        }
    }
  }
  bool Fail(std::string_view what) {
    if (AtEnd())
      why_ = fmt::format("{} expected at the end of the statement", what);
    else
      why_ =
          fmt::format("{} expected at offset {}, found \"{}\"", what, t_[i_].offset, t_[i_].text);
    return false;
  }
  bool Expect(std::string_view word) {
    if (!At(word)) return Fail(word);
    ++i_;
    return true;
  }
  // From an opening parenthesis to past its closing one.
  bool SkipParens() {
    int depth = 0;
    for (; i_ < t_.size(); ++i_) {
      if (t_[i_].IsPunct('(')) ++depth;
      if (t_[i_].IsPunct(')') && --depth == 0) {
        ++i_;
        return true;
      }
    }
    return Fail("\")\"");
  }
  void Add(const TableRef& t) {
    if (std::find(tables_.begin(), tables_.end(), t) == tables_.end()) tables_.push_back(t);
  }
  // name | db.name; an unqualified name is in the default database.
  bool Name(TableRef* out) {
    if (i_ >= t_.size() || !t_[i_].IsName()) return Fail("a table name");
    std::string first = t_[i_++].text;
    if (AtPunct('.') && i_ + 1 < t_.size() && t_[i_ + 1].IsName()) {
      *out = TableRef{first, t_[i_ + 1].text};
      i_ += 2;
      return true;
    }
    if (default_db_.empty()) {
      why_ =
          fmt::format("table {} is not qualified and the statement has no default database", first);
      return false;
    }
    *out = TableRef{std::string(default_db_), first};
    return true;
  }
  // INSERT / REPLACE: [INTO] t.
  bool Single() {
    if (At("INTO")) ++i_;
    TableRef t;
    if (!Name(&t)) return false;
    Add(t);
    return true;
  }
  // LOAD DATA|XML [LOW_PRIORITY|CONCURRENT] [LOCAL] INFILE 'file' [REPLACE|IGNORE] INTO TABLE t
  bool LoadData() {
    ++i_;
    Skip({"LOW_PRIORITY", "CONCURRENT", "LOCAL"});
    if (!Expect("INFILE")) return false;
    if (i_ >= t_.size() || t_[i_].kind != TokenKind::kString) return Fail("a file name");
    ++i_;
    Skip({"REPLACE", "IGNORE"});
    if (!Expect("INTO") || !Expect("TABLE")) return false;
    TableRef t;
    if (!Name(&t)) return false;
    Add(t);
    return true;
  }

  // Words that end a table factor where an alias could stand.
  static bool Reserved(const Token& tok) {
    if (tok.kind != TokenKind::kWord) return false;
    for (std::string_view w :
         {"SET",    "WHERE", "ON",        "USING",         "JOIN",  "INNER",     "CROSS",
          "LEFT",   "RIGHT", "NATURAL",   "STRAIGHT_JOIN", "FULL",  "OUTER",     "USE",
          "IGNORE", "FORCE", "PARTITION", "ORDER",         "LIMIT", "RETURNING", "AS",
          "FROM",   "FOR",   "WINDOW",    "GROUP",         "HAVING"})
      if (tok.Is(w)) return true;
    return false;
  }
  bool AtJoin() const {
    if (i_ >= t_.size()) return false;
    // LEFT( and RIGHT( are the string functions.
    if ((At("LEFT") || At("RIGHT")) && i_ + 1 < t_.size() && t_[i_ + 1].IsPunct('(')) return false;
    for (std::string_view w :
         {"JOIN", "INNER", "CROSS", "LEFT", "RIGHT", "NATURAL", "STRAIGHT_JOIN", "FULL"})
      if (At(w)) return true;
    return false;
  }
  // One table factor: a name with its options, a derived table, or ( references ).
  bool Factor(std::vector<Ref>* refs) {
    if (AtPunct('(')) {
      if (i_ + 1 < t_.size() &&
          (t_[i_ + 1].Is("SELECT") || t_[i_ + 1].Is("WITH") || t_[i_ + 1].Is("VALUES") ||
           t_[i_ + 1].Is("TABLE") || t_[i_ + 1].IsPunct('('))) {
        // A derived table (only read), or a parenthesised query: "((SELECT ...))".
        if (!SkipParens()) return false;
        if (At("AS")) ++i_;
        if (i_ < t_.size() && t_[i_].IsName() && !Reserved(t_[i_])) ++i_;
        if (AtPunct('(') && !SkipParens()) return false;  // column names
        return true;
      }
      ++i_;
      if (!References(refs)) return false;
      if (!AtPunct(')')) return Fail("\")\"");
      ++i_;
      return true;
    }
    Ref r;
    if (!Name(&r.table)) return false;
    if (At("PARTITION")) {
      ++i_;
      if (!AtPunct('(')) return Fail("\"(\"");
      if (!SkipParens()) return false;
    }
    if (At("FOR") && i_ + 1 < t_.size() && t_[i_ + 1].Is("SYSTEM_TIME"))
      return Fail("a table reference");
    if (At("AS")) {
      ++i_;
      if (i_ >= t_.size() || !t_[i_].IsName()) return Fail("an alias");
      r.alias = t_[i_++].text;
    } else if (i_ < t_.size() && t_[i_].IsName() && !Reserved(t_[i_])) {
      r.alias = t_[i_++].text;
    }
    // Index hints: {USE|IGNORE|FORCE} {INDEX|KEY} [FOR {JOIN|ORDER BY|GROUP BY}] (...)
    while ((At("USE") || At("IGNORE") || At("FORCE")) && i_ + 1 < t_.size() &&
           (t_[i_ + 1].Is("INDEX") || t_[i_ + 1].Is("KEY"))) {
      i_ += 2;
      if (At("FOR")) {
        ++i_;
        Skip({"JOIN", "ORDER", "GROUP", "BY"});
      }
      if (!AtPunct('(')) return Fail("\"(\"");
      if (!SkipParens()) return false;
    }
    refs->push_back(std::move(r));
    return true;
  }
  // Past an ON condition: to the next "," or join or clause word outside parentheses.
  bool SkipCondition() {
    int depth = 0;
    for (; i_ < t_.size(); ++i_) {
      const Token& tok = t_[i_];
      if (tok.IsPunct('('))
        ++depth;
      else if (tok.IsPunct(')')) {
        if (depth == 0) return true;  // the end of a parenthesised join
        --depth;
      } else if (depth == 0 &&
                 (tok.IsPunct(',') || tok.IsPunct(';') || AtJoin() || tok.Is("SET") ||
                  tok.Is("WHERE") || tok.Is("ORDER") || tok.Is("LIMIT") || tok.Is("RETURNING"))) {
        return true;
      }
    }
    return true;
  }
  // <table references>, up to what follows them (SET, WHERE, ")", the end ...).
  bool References(std::vector<Ref>* refs) {
    if (!Factor(refs)) return false;
    for (;;) {
      if (AtPunct(',')) {
        ++i_;
        if (!Factor(refs)) return false;
        continue;
      }
      if (AtJoin()) {
        Skip({"NATURAL"});
        Skip({"INNER", "CROSS", "LEFT", "RIGHT", "FULL"});
        Skip({"OUTER"});
        if (At("STRAIGHT_JOIN"))
          ++i_;
        else if (!Expect("JOIN"))
          return false;
        if (!Factor(refs)) return false;
        if (At("ON")) {
          ++i_;
          if (!SkipCondition()) return false;
        } else if (At("USING")) {
          ++i_;
          if (!AtPunct('(')) return Fail("\"(\"");
          if (!SkipParens()) return false;
        }
        continue;
      }
      return true;
    }
  }
  // Multi-table DELETE targets: t[.*] or db.t[.*], by "," ; `qualified` says which had a db.
  bool Targets(std::vector<std::pair<std::string, std::string>>* targets) {
    for (;;) {
      if (i_ >= t_.size() || !t_[i_].IsName()) return Fail("a table name");
      std::string db, name = t_[i_++].text;
      if (AtPunct('.') && i_ + 1 < t_.size() && t_[i_ + 1].IsName()) {
        db = name;
        name = t_[i_ + 1].text;
        i_ += 2;
      }
      if (AtPunct('.') && i_ + 1 < t_.size() && t_[i_ + 1].IsPunct('*')) i_ += 2;
      targets->emplace_back(db, name);
      if (!AtPunct(',')) return true;
      ++i_;
    }
  }
  bool Delete() {
    std::vector<std::pair<std::string, std::string>> targets;
    std::vector<Ref> refs;
    if (At("FROM")) {
      ++i_;
      const size_t start = i_;
      if (!Targets(&targets)) return false;
      if (!At("USING")) {
        // Single-table: DELETE FROM t [[AS] alias] [PARTITION (...)] [WHERE ...]
        i_ = start;
        TableRef t;
        if (!Name(&t)) return false;
        if (AtPunct(',')) return Fail("USING");
        Add(t);
        return true;
      }
      ++i_;
    } else {
      if (!Targets(&targets) || !Expect("FROM")) return false;
    }
    if (!References(&refs)) return false;
    // Each target is an alias of a reference, or the name of one without an alias.
    for (const auto& [db, name] : targets) {
      bool found = false;
      for (const Ref& r : refs) {
        const bool by_alias = db.empty() && !r.alias.empty() && sql::EqualsIgnoreAsciiCase(r.alias, name);
        const bool by_name =
            r.alias.empty() && r.table.table == name && (db.empty() || r.table.db == db);
        if (by_alias || by_name) {
          Add(r.table);
          found = true;
        }
      }
      if (!found) {
        if (db.empty() && default_db_.empty()) {
          why_ = fmt::format("table {} is not qualified and the statement has no default database",
                             name);
          return false;
        }
        Add(TableRef{db.empty() ? std::string(default_db_) : db, name});
      }
    }
    return true;
  }

  // Every [db.]name( of the statement (DmlTables::calls).
  std::vector<TableRef> Calls() const {
    std::vector<TableRef> out;
    for (size_t i = 0; i + 1 < t_.size(); ++i) {
      if (!t_[i].IsName() || !t_[i + 1].IsPunct('(')) continue;
      TableRef f;
      if (i >= 2 && t_[i - 1].IsPunct('.') && t_[i - 2].IsName()) {
        f = TableRef{t_[i - 2].text, t_[i].text};
      } else if (!default_db_.empty()) {
        f = TableRef{std::string(default_db_), t_[i].text};
      } else {
        continue;  // a bare name with no default database is no stored function
      }
      if (std::find(out.begin(), out.end(), f) == out.end()) out.push_back(std::move(f));
    }
    return out;
  }

  const std::vector<Token>& t_;
  std::string_view default_db_;
  size_t i_ = 0;
  std::vector<TableRef> tables_;
  std::string why_;
};

}  // namespace

DmlTables TablesChangedBy(std::string_view sql, std::string_view default_db,
                          uint32_t server_version, bool ansi_quotes) {
  auto tokens = sql::Tokenize(sql, server_version, ansi_quotes);
  if (!tokens.ok()) {
    DmlTables out;
    // The kind from the first word, so that the caller still knows it met a data change.
    std::string_view s = sql.substr(0, 16);
    while (!s.empty() &&
           (s.front() == ' ' || s.front() == '\n' || s.front() == '\t' || s.front() == '\r'))
      s.remove_prefix(1);
    for (auto [word, kind] : {std::pair{"INSERT", DmlKind::kInsert},
                              {"REPLACE", DmlKind::kReplace},
                              {"UPDATE", DmlKind::kUpdate},
                              {"DELETE", DmlKind::kDelete},
                              {"LOAD", DmlKind::kLoadData}})
      if (s.size() >= std::string_view(word).size() &&
          sql::EqualsIgnoreAsciiCase(s.substr(0, std::string_view(word).size()), word))
        out.kind = kind;
    out.unknown = std::string(tokens.status().message());
    return out;
  }
  return Reader(*tokens, default_db).Read();
}

}  // namespace sluice::ddl
