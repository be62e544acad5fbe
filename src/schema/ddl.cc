// Recursive-descent parser over sql::Token for the table-shaping subset of MySQL/MariaDB DDL.
// Grammar sources: MySQL 8.4 Reference Manual 15.1.9 (ALTER TABLE), 15.1.20 (CREATE TABLE),
// 15.1.36 (RENAME TABLE), 15.1.32 (DROP TABLE), 15.1.37 (TRUNCATE TABLE); MariaDB Knowledge
// Base pages of the same statements (IF [NOT] EXISTS on clauses, system versioning,
// PERSISTENT, /*M! */ comments).
#include "schema/ddl.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

namespace sluice::ddl {
namespace {

using sql::Token;
using sql::TokenKind;

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

// A plain decimal literal ([-+]digits[.digits], or .digits) as a DECIMAL(precision, scale)
// column prints it: no leading zeros, `scale` fraction digits, no sign on zero. Nothing when it
// is not such a literal, or holds more digits than the column keeps (the server rounds).
std::optional<std::string> CanonicalDecimal(std::string_view v, uint32_t precision, uint32_t scale) {
  bool negative = false;
  if (!v.empty() && (v[0] == '-' || v[0] == '+')) {
    negative = v[0] == '-';
    v.remove_prefix(1);
  }
  const size_t dot = v.find('.');
  std::string_view whole = v.substr(0, dot);
  const std::string_view frac = dot == std::string_view::npos ? std::string_view() : v.substr(dot + 1);
  const auto digits = [](std::string_view d) {
    return std::all_of(d.begin(), d.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if ((whole.empty() && frac.empty()) || !digits(whole) || !digits(frac) || (dot != std::string_view::npos && frac.empty()))
    return std::nullopt;
  while (!whole.empty() && whole[0] == '0') whole.remove_prefix(1);
  if (precision == 0 || precision < scale || frac.size() > scale || whole.size() > precision - scale) return std::nullopt;
  std::string out(whole.empty() ? "0" : whole);
  if (scale > 0) out += "." + std::string(frac) + std::string(scale - frac.size(), '0');
  const bool zero = out.find_first_not_of("0.") == std::string::npos;
  return negative && !zero ? "-" + out : out;
}

std::string QuoteLiteral(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "''";
    else if (c == '\\') out += "\\\\";
    else out.push_back(c);
  }
  out.push_back('\'');
  return out;
}

// Table options: the word starts an option whose value follows (with or without '=').
constexpr std::string_view kTableOptions[] = {
    "COMMENT", "ROW_FORMAT", "KEY_BLOCK_SIZE", "STATS_PERSISTENT", "STATS_AUTO_RECALC",
    "STATS_SAMPLE_PAGES", "CHECKSUM", "TABLE_CHECKSUM", "PACK_KEYS", "DELAY_KEY_WRITE", "MAX_ROWS",
    "MIN_ROWS", "AVG_ROW_LENGTH", "COMPRESSION", "ENCRYPTION", "PAGE_CHECKSUM", "TRANSACTIONAL",
    "INSERT_METHOD", "TABLESPACE", "UNION", "PAGE_COMPRESSED", "PAGE_COMPRESSION_LEVEL",
    "IETF_QUOTES", "SECONDARY_ENGINE", "AUTOEXTEND_SIZE", "ENCRYPTION_KEY_ID", "ENCRYPTED",
    "SEQUENCE", "ENGINE_ATTRIBUTE", "SECONDARY_ENGINE_ATTRIBUTE", "CONNECTION", "PASSWORD",
    "START"};

class Parser {
 public:
  Parser(const std::vector<Token>& t, std::string_view default_db, const ParseOptions& o,
         std::string_view sql = {})
      : t_(t), db_(default_db), options_(o), sql_(sql) {}

  Statement Run() {
    Statement s;
    if (PeekWord("SET") && PeekWord("STATEMENT", 1)) {  // MariaDB SET STATEMENT v=x[, ...] FOR stmt
      s.set_statement = true;
      while (!AtEnd() && !PeekWord("FOR")) {
        if (PeekPunct('(')) SkipParens();
        else ++i_;
      }
      AcceptWord("FOR");
    }
    if (AcceptWord("CREATE")) Create(s);
    else if (AcceptWord("ALTER")) Alter(s);
    else if (AcceptWord("RENAME")) Rename(s);
    else if (AcceptWord("DROP")) Drop(s);
    else if (AcceptWord("TRUNCATE")) Truncate(s);
    if (s.kind != Kind::kNone && s.understood && !AtEnd()) NotUnderstood(s);
    return s;
  }

  // ---- token helpers ------------------------------------------------------------------
  bool AtEnd() const { return i_ >= t_.size() || t_[i_].IsPunct(';'); }
  const Token* Peek(size_t k = 0) const { return i_ + k < t_.size() ? &t_[i_ + k] : nullptr; }
  bool PeekWord(std::string_view w, size_t k = 0) const {
    const Token* p = Peek(k);
    return p != nullptr && p->Is(w);
  }
  bool PeekPunct(char c, size_t k = 0) const {
    const Token* p = Peek(k);
    return p != nullptr && p->IsPunct(c);
  }
  bool AcceptWord(std::string_view w) {
    if (!PeekWord(w)) return false;
    ++i_;
    return true;
  }
  bool AcceptWords(std::initializer_list<std::string_view> ws) {
    size_t k = 0;
    for (std::string_view w : ws)
      if (!PeekWord(w, k++)) return false;
    i_ += ws.size();
    return true;
  }
  bool AcceptPunct(char c) {
    if (!PeekPunct(c)) return false;
    ++i_;
    return true;
  }
  std::optional<std::string> Name() {
    const Token* p = Peek();
    if (p == nullptr || !p->IsName()) return std::nullopt;
    ++i_;
    return p->text;
  }
  std::optional<TableRef> Table() {
    auto first = Name();
    if (!first) return std::nullopt;
    if (AcceptPunct('.')) {
      auto second = Name();
      if (!second) return std::nullopt;
      return TableRef{*first, *second};
    }
    return TableRef{db_, *first};
  }
  // At '(' : skips to after the matching ')'.
  void SkipParens() {
    if (!PeekPunct('(')) return;
    int depth = 0;
    while (i_ < t_.size()) {
      if (t_[i_].IsPunct('(')) ++depth;
      if (t_[i_].IsPunct(')') && --depth == 0) {
        ++i_;
        return;
      }
      ++i_;
    }
  }
  // Skips to the next ',' or ')' at depth 0 (not consumed) or the end.
  void SkipToListEnd() {
    while (!AtEnd() && !PeekPunct(',') && !PeekPunct(')')) {
      if (PeekPunct('(')) SkipParens();
      else ++i_;
    }
  }
  std::string TokenText(size_t from, size_t to) const {
    std::string out;
    for (size_t k = from; k < to && k < t_.size(); ++k) {
      const Token& tk = t_[k];
      bool glue = tk.kind == TokenKind::kPunct && (tk.text == "(" || tk.text == ")" || tk.text == "," ||
                                                   tk.text == ".");
      bool prev_open = !out.empty() && (out.back() == '(' || out.back() == '.');
      if (!out.empty() && !glue && !prev_open) out.push_back(' ');
      if (tk.kind == TokenKind::kString) out += QuoteLiteral(tk.text);
      else if (tk.kind == TokenKind::kQuotedIdent) out += "`" + tk.text + "`";
      else if (tk.kind == TokenKind::kWord) out += Lower(tk.text);
      else out += tk.text;
      if (tk.text == ",") out.push_back(' ');
    }
    return out;
  }
  void NotUnderstood(Statement& s) {
    if (!s.understood) return;
    s.understood = false;
    const Token* p = Peek();
    s.not_understood = p == nullptr ? "end of statement"
                                    : fmt::format("'{}' at byte {}", p->text, p->offset);
  }
  // Skips an option value: [=] value [value...] up to a ',' / ')' / end, or one value.
  void SkipOptionValue() {
    AcceptPunct('=');
    if (PeekPunct('(')) {
      SkipParens();
      return;
    }
    if (!AtEnd() && !PeekPunct(',')) ++i_;
  }
  std::vector<std::string> KeyColumns() {
    std::vector<std::string> cols;
    if (!AcceptPunct('(')) return cols;
    while (!AtEnd() && !PeekPunct(')')) {
      if (PeekPunct('(')) {  // functional key part ((expr))
        SkipParens();
        cols.push_back("(expression)");
      } else if (auto n = Name()) {
        cols.push_back(*n);
        if (PeekPunct('(')) SkipParens();  // prefix length
      } else {
        ++i_;
      }
      AcceptWord("ASC") || AcceptWord("DESC");
      if (!AcceptPunct(',')) break;
    }
    AcceptPunct(')');
    return cols;
  }
  // Index options after the key columns: USING x, KEY_BLOCK_SIZE, COMMENT, VISIBLE, ...
  void SkipIndexOptions() {
    while (!AtEnd() && !PeekPunct(',') && !PeekPunct(')')) {
      if (AcceptWord("USING") || AcceptWord("KEY_BLOCK_SIZE") || AcceptWord("COMMENT") ||
          AcceptWord("ENGINE_ATTRIBUTE") || AcceptWord("SECONDARY_ENGINE_ATTRIBUTE")) {
        SkipOptionValue();
      } else if (AcceptWords({"WITH", "PARSER"})) {
        ++i_;
      } else if (AcceptWord("VISIBLE") || AcceptWord("INVISIBLE") || AcceptWord("IGNORED") ||
                 AcceptWords({"NOT", "IGNORED"}) || AcceptWord("CLUSTERING")) {
        AcceptPunct('=');
        if (PeekWord("YES") || PeekWord("NO")) ++i_;
      } else {
        return;
      }
    }
  }
  // FOREIGN KEY [name] (cols) REFERENCES t (cols) [MATCH ..] [ON DELETE ..] [ON UPDATE ..]
  void SkipForeignKeyBody() {
    AcceptWords({"IF", "NOT", "EXISTS"});
    if (!PeekPunct('(')) Name();
    KeyColumns();
    SkipReferences();
  }
  void SkipReferences() {
    if (!AcceptWord("REFERENCES")) return;
    Table();
    KeyColumns();
    while (true) {
      if (AcceptWord("MATCH")) {
        ++i_;
      } else if (AcceptWords({"ON", "DELETE"}) || AcceptWords({"ON", "UPDATE"})) {
        if (AcceptWords({"SET", "NULL"}) || AcceptWords({"SET", "DEFAULT"}) ||
            AcceptWords({"NO", "ACTION"}) || AcceptWord("RESTRICT") || AcceptWord("CASCADE")) {
        }
      } else {
        return;
      }
    }
  }

  // ---- statements ---------------------------------------------------------------------
  void Create(Statement& s) {
    s.or_replace = AcceptWords({"OR", "REPLACE"});
    s.temporary = AcceptWord("TEMPORARY");
    if (AcceptWord("TABLE")) {
      if (s.temporary) return;  // never replicated as rows
      CreateTable(s);
      return;
    }
    AcceptWord("ONLINE") || AcceptWord("OFFLINE");
    bool unique = AcceptWord("UNIQUE");
    bool other = AcceptWord("FULLTEXT") || AcceptWord("SPATIAL");
    if (AcceptWord("INDEX") || AcceptWord("KEY")) {
      AlterOp op{OpKind::kAddIndex};
      op.if_not_exists = AcceptWords({"IF", "NOT", "EXISTS"});
      op.name = Name().value_or("");
      if (AcceptWord("USING")) ++i_;
      s.kind = Kind::kAlterTable;
      if (!AcceptWord("ON")) return NotUnderstood(s);
      auto t = Table();
      if (!t) return NotUnderstood(s);
      s.tables.push_back(*t);
      op.key_columns = KeyColumns();
      SkipIndexOptions();
      SkipAlgorithmLock();
      (void)unique;
      (void)other;
      s.ops.push_back(std::move(op));
    }
  }

  void SkipAlgorithmLock() {
    while (AcceptWord("ALGORITHM") || AcceptWord("LOCK") || AcceptWord("WAIT")) SkipOptionValue();
    AcceptWord("NOWAIT");
  }

  void CreateTable(Statement& s) {
    s.kind = Kind::kCreateTable;
    s.if_not_exists = AcceptWords({"IF", "NOT", "EXISTS"});
    auto t = Table();
    if (!t) return NotUnderstood(s);
    s.tables.push_back(*t);
    TableSchema def;
    def.db = t->db;
    def.table = t->table;
    if (AcceptWord("LIKE") || (PeekPunct('(') && PeekWord("LIKE", 1) && (++i_, AcceptWord("LIKE")))) {
      auto like = Table();
      if (!like) return NotUnderstood(s);
      s.like = *like;
      AcceptPunct(')');
      return;
    }
    std::vector<std::string> pk;
    if (PeekPunct('(') && !PeekWord("SELECT", 1)) {
      ++i_;
      while (!AtEnd()) {
        if (!TableElement(s, def, pk)) return;
        if (AcceptPunct(',')) continue;
        if (AcceptPunct(')')) break;
        return NotUnderstood(s);
      }
    }
    TableOptions(s, &def);
    if (!s.understood) return;
    if (AcceptWord("IGNORE") || AcceptWord("REPLACE")) {
    }
    AcceptWord("AS");
    if (PeekWord("SELECT") || PeekWord("WITH") || PeekWord("TABLE") || PeekWord("VALUES") ||
        (PeekPunct('(') && PeekWord("SELECT", 1))) {
      s.as_select = true;
      i_ = t_.size();
    }
    for (const std::string& k : pk) {
      int idx = def.ColumnIndex(k);
      if (idx < 0) {
        s.understood = false;
        s.not_understood = fmt::format("PRIMARY KEY column {} is not among the columns", k);
        return;
      }
      def.primary_key.push_back(static_cast<size_t>(idx));
    }
    for (ColumnDesc& c : def.columns)
      if (c.charset.empty() && HasCharset(c.type)) c.charset = s.default_charset;
    s.definition = std::move(def);
  }

  // One element of CREATE TABLE ( ... ). False when parsing must stop.
  bool TableElement(Statement& s, TableSchema& def, std::vector<std::string>& pk) {
    if (AcceptWord("CONSTRAINT")) {
      if (!PeekWord("PRIMARY") && !PeekWord("UNIQUE") && !PeekWord("FOREIGN") && !PeekWord("CHECK"))
        Name();
    }
    if (AcceptWords({"PRIMARY", "KEY"})) {
      if (AcceptWord("USING")) ++i_;
      pk = KeyColumns();
      SkipIndexOptions();
      return true;
    }
    if (AcceptWord("UNIQUE") || AcceptWord("FULLTEXT") || AcceptWord("SPATIAL") ||
        PeekWord("INDEX") || PeekWord("KEY")) {
      AcceptWord("INDEX") || AcceptWord("KEY");
      if (!PeekPunct('(') && !PeekWord("USING")) Name();
      if (AcceptWord("USING")) ++i_;
      KeyColumns();
      SkipIndexOptions();
      return true;
    }
    if (AcceptWords({"FOREIGN", "KEY"})) {
      SkipForeignKeyBody();
      return true;
    }
    if (AcceptWord("CHECK")) {
      SkipParens();
      AcceptWords({"NOT", "ENFORCED"}) || AcceptWord("ENFORCED");
      return true;
    }
    if (PeekWord("PERIOD") && PeekWord("FOR", 1)) {
      i_ += 2;
      Name();
      SkipParens();
      return true;
    }
    auto name = Name();
    if (!name) {
      NotUnderstood(s);
      return false;
    }
    bool inline_pk = false;
    auto col = Column(*name, &inline_pk);
    if (col.ok()) s.column_syntax.push_back(Syntax());
    if (!col.ok()) {
      s.understood = false;
      s.not_understood = std::string(col.status().message());
      return false;
    }
    if (inline_pk) pk = {*name};
    def.columns.push_back(std::move(*col));
    return true;
  }

  // Table options (CREATE and the option clauses of ALTER); stops at anything else.
  void TableOptions(Statement& s, TableSchema* def) {
    while (!AtEnd()) {
      AcceptPunct(',');
      size_t at = i_;
      bool dflt = AcceptWord("DEFAULT");
      if (AcceptWord("CHARSET") || AcceptWords({"CHARACTER", "SET"})) {
        AcceptPunct('=');
        s.default_charset = Lower(Name().value_or(""));
        continue;
      }
      if (AcceptWord("COLLATE")) {
        AcceptPunct('=');
        s.default_collation = Lower(Name().value_or(""));
        if (s.default_charset.empty()) s.default_charset = s.default_collation.substr(0, s.default_collation.find('_'));
        continue;
      }
      if (dflt) {
        i_ = at;
        return;
      }
      if (AcceptWord("ENGINE") || AcceptWord("TYPE")) {
        AcceptPunct('=');
        std::string e = Name().value_or("");
        if (def) def->engine = e;
        continue;
      }
      if (AcceptWord("AUTO_INCREMENT")) {
        SkipOptionValue();
        continue;
      }
      if (AcceptWords({"WITH", "SYSTEM", "VERSIONING"})) {
        if (def) def->system_versioned = true;
        continue;
      }
      if (AcceptWord("SEQUENCE")) {
        AcceptPunct('=');
        const Token* v = Peek();
        if (v != nullptr) {
          s.sequence = v->text == "1" || v->Is("YES");
          ++i_;
        }
        continue;
      }
      if (AcceptWords({"DATA", "DIRECTORY"}) || AcceptWords({"INDEX", "DIRECTORY"})) {
        SkipOptionValue();
        continue;
      }
      bool option = false;
      for (std::string_view o : kTableOptions)
        if (PeekWord(o)) option = true;
      if (option) {
        ++i_;
        SkipOptionValue();
        if (PeekWord("STORAGE")) i_ += 2;  // TABLESPACE x STORAGE DISK
        continue;
      }
      if (PeekWord("PARTITION") && PeekWord("BY", 1)) {
        SkipPartitionSpec();
        continue;
      }
      return;
    }
  }

  // PARTITION BY ... [PARTITIONS n] [SUBPARTITION BY ...] [(partition definitions)]
  void SkipPartitionSpec() {
    while (!AtEnd()) {
      if (PeekWord("SELECT") || PeekWord("AS") || PeekWord("IGNORE") || PeekWord("REPLACE")) return;
      if (PeekPunct('(')) {
        SkipParens();
        continue;
      }
      ++i_;
    }
  }

  void Alter(Statement& s) {
    AcceptWord("ONLINE") || AcceptWord("OFFLINE");
    s.ignore = AcceptWord("IGNORE");
    if (!AcceptWord("TABLE")) return;  // DATABASE, VIEW, USER, EVENT, ... : not table-shaping
    s.kind = Kind::kAlterTable;
    s.if_exists = AcceptWords({"IF", "EXISTS"});
    auto t = Table();
    if (!t) return NotUnderstood(s);
    s.tables.push_back(*t);
    while (!AtEnd()) {
      if (AcceptPunct(',')) continue;
      size_t before = i_;
      AlterClause(s);
      if (!s.understood) {
        // Keep classifying the statement's later clauses is not needed: the caller must not
        // apply a partly understood ALTER.
        return;
      }
      if (i_ == before) return NotUnderstood(s);
    }
  }

  void Placement(AlterOp& op) {
    if (AcceptWord("FIRST")) op.placement = Placement::kFirst;
    else if (AcceptWord("AFTER")) {
      op.placement = Placement::kAfter;
      op.after = Name().value_or("");
    }
  }

  bool ColumnDef(Statement& s, AlterOp& op, std::string name) {
    bool pk = false;
    auto col = Column(std::move(name), &pk);
    op.syntax = Syntax();
    if (!col.ok()) {
      s.understood = false;
      s.not_understood = std::string(col.status().message());
      return false;
    }
    op.column = std::move(*col);
    Placement(op);
    return true;
  }

  void AlterClause(Statement& s) {
    const TableRef& self = s.tables.front();
    if (AcceptWord("ADD")) {
      if (AcceptWords({"SYSTEM", "VERSIONING"})) {
        s.ops.push_back({OpKind::kAddSystemVersioning});
        return;
      }
      if (PeekWord("PERIOD") && PeekWord("FOR", 1)) {
        i_ += 2;
        AlterOp op{OpKind::kAddPeriod};
        AcceptWords({"IF", "NOT", "EXISTS"});
        op.name = Name().value_or("");
        SkipParens();
        s.ops.push_back(std::move(op));
        return;
      }
      if (AcceptWord("PARTITION")) {
        AlterOp op{OpKind::kPartition};
        op.name = "add";
        AcceptWords({"IF", "NOT", "EXISTS"});
        SkipParens();
        if (AcceptWord("PARTITIONS")) ++i_;
        s.ops.push_back(std::move(op));
        return;
      }
      std::string constraint;
      if (AcceptWord("CONSTRAINT")) {
        AcceptWords({"IF", "NOT", "EXISTS"});
        if (!PeekWord("PRIMARY") && !PeekWord("UNIQUE") && !PeekWord("FOREIGN") && !PeekWord("CHECK"))
          constraint = Name().value_or("");
      }
      if (AcceptWords({"PRIMARY", "KEY"})) {
        AlterOp op{OpKind::kAddPrimaryKey};
        if (AcceptWord("USING")) ++i_;
        op.key_columns = KeyColumns();
        SkipIndexOptions();
        s.ops.push_back(std::move(op));
        return;
      }
      if (AcceptWords({"FOREIGN", "KEY"})) {
        AlterOp op{OpKind::kAddForeignKey};
        op.if_not_exists = AcceptWords({"IF", "NOT", "EXISTS"});
        op.name = constraint;
        if (!PeekPunct('(')) op.name = Name().value_or(constraint);
        op.key_columns = KeyColumns();
        SkipReferences();
        s.ops.push_back(std::move(op));
        return;
      }
      if (AcceptWord("CHECK")) {
        AlterOp op{OpKind::kAddCheck};
        op.name = constraint;
        SkipParens();
        AcceptWords({"NOT", "ENFORCED"}) || AcceptWord("ENFORCED");
        s.ops.push_back(std::move(op));
        return;
      }
      if (AcceptWord("UNIQUE") || AcceptWord("FULLTEXT") || AcceptWord("SPATIAL") || PeekWord("INDEX") ||
          PeekWord("KEY")) {
        AcceptWord("INDEX") || AcceptWord("KEY");
        AlterOp op{OpKind::kAddIndex};
        op.if_not_exists = AcceptWords({"IF", "NOT", "EXISTS"});
        if (!PeekPunct('(') && !PeekWord("USING")) op.name = Name().value_or("");
        if (AcceptWord("USING")) ++i_;
        op.key_columns = KeyColumns();
        SkipIndexOptions();
        s.ops.push_back(std::move(op));
        return;
      }
      if (!constraint.empty()) return NotUnderstood(s);
      AcceptWord("COLUMN");
      bool ine = AcceptWords({"IF", "NOT", "EXISTS"});
      if (AcceptPunct('(')) {  // ADD COLUMN (a INT, b INT)
        while (!AtEnd()) {
          AlterOp op{OpKind::kAddColumn};
          op.if_not_exists = ine;
          auto n = Name();
          if (!n) return NotUnderstood(s);
          if (!ColumnDef(s, op, *n)) return;
          s.ops.push_back(std::move(op));
          if (AcceptPunct(',')) continue;
          if (AcceptPunct(')')) return;
          return NotUnderstood(s);
        }
        return;
      }
      AlterOp op{OpKind::kAddColumn};
      op.if_not_exists = ine;
      auto n = Name();
      if (!n) return NotUnderstood(s);
      if (!ColumnDef(s, op, *n)) return;
      s.ops.push_back(std::move(op));
      return;
    }
    if (AcceptWord("DROP")) {
      if (AcceptWords({"SYSTEM", "VERSIONING"})) {
        s.ops.push_back({OpKind::kDropSystemVersioning});
        return;
      }
      if (AcceptWords({"PRIMARY", "KEY"})) {
        s.ops.push_back({OpKind::kDropPrimaryKey});
        return;
      }
      if (PeekWord("PERIOD") && PeekWord("FOR", 1)) {
        i_ += 2;
        AlterOp op{OpKind::kDropPeriod};
        op.if_exists = AcceptWords({"IF", "EXISTS"});
        op.name = Name().value_or("");
        s.ops.push_back(std::move(op));
        return;
      }
      if (AcceptWord("PARTITION")) {
        AlterOp op{OpKind::kPartition};
        op.name = "drop";
        AcceptWords({"IF", "EXISTS"});
        SkipNameList();
        s.ops.push_back(std::move(op));
        return;
      }
      OpKind kind = OpKind::kDropColumn;
      if (AcceptWords({"FOREIGN", "KEY"})) kind = OpKind::kDropForeignKey;
      else if (AcceptWord("INDEX") || AcceptWord("KEY")) kind = OpKind::kDropIndex;
      else if (AcceptWord("CONSTRAINT") || AcceptWord("CHECK")) kind = OpKind::kDropConstraint;
      else AcceptWord("COLUMN");
      AlterOp op{kind};
      op.if_exists = AcceptWords({"IF", "EXISTS"});
      auto n = Name();
      if (!n) return NotUnderstood(s);
      op.name = *n;
      if (kind == OpKind::kDropColumn) AcceptWord("RESTRICT") || AcceptWord("CASCADE");
      s.ops.push_back(std::move(op));
      return;
    }
    if (AcceptWord("MODIFY")) {
      AcceptWord("COLUMN");
      AlterOp op{OpKind::kModifyColumn};
      op.if_exists = AcceptWords({"IF", "EXISTS"});
      auto n = Name();
      if (!n) return NotUnderstood(s);
      op.name = *n;
      if (!ColumnDef(s, op, *n)) return;
      s.ops.push_back(std::move(op));
      return;
    }
    if (AcceptWord("CHANGE")) {
      AcceptWord("COLUMN");
      AlterOp op{OpKind::kChangeColumn};
      op.if_exists = AcceptWords({"IF", "EXISTS"});
      auto from = Name();
      auto to = Name();
      if (!from || !to) return NotUnderstood(s);
      op.name = *from;
      op.new_name = *to;
      if (!ColumnDef(s, op, *to)) return;
      s.ops.push_back(std::move(op));
      return;
    }
    if (AcceptWord("RENAME")) {
      const bool column = AcceptWord("COLUMN");
      if (column || AcceptWord("INDEX") || AcceptWord("KEY")) {  // RENAME COLUMN|INDEX a TO b
        AlterOp op{column ? OpKind::kRenameColumn : OpKind::kRenameIndex};
        op.if_exists = AcceptWords({"IF", "EXISTS"});
        auto from = Name();
        if (!from || !AcceptWord("TO")) return NotUnderstood(s);
        auto to = Name();
        if (!to) return NotUnderstood(s);
        op.name = *from;
        op.new_name = *to;
        s.ops.push_back(std::move(op));
        return;
      }
      AcceptWord("TO") || AcceptWord("AS");
      auto to = Table();
      if (!to) return NotUnderstood(s);
      AlterOp op{OpKind::kRenameTable};
      op.new_table = *to;
      s.renames.push_back({self, *to});
      s.ops.push_back(std::move(op));
      return;
    }
    if (AcceptWord("ALTER")) {
      if (AcceptWord("INDEX") || AcceptWord("KEY")) {
        AlterOp op{OpKind::kAlterIndex};
        op.name = Name().value_or("");
        AcceptWord("VISIBLE") || AcceptWord("INVISIBLE") || AcceptWord("IGNORED") ||
            AcceptWords({"NOT", "IGNORED"});
        s.ops.push_back(std::move(op));
        return;
      }
      if (AcceptWord("CHECK") || AcceptWord("CONSTRAINT")) {
        AlterOp op{OpKind::kAddCheck};
        op.name = Name().value_or("");
        AcceptWords({"NOT", "ENFORCED"}) || AcceptWord("ENFORCED");
        s.ops.push_back(std::move(op));
        return;
      }
      AcceptWord("COLUMN");
      AlterOp op{OpKind::kSetDefault};
      op.if_exists = AcceptWords({"IF", "EXISTS"});
      auto n = Name();
      if (!n) return NotUnderstood(s);
      op.name = *n;
      if (AcceptWords({"DROP", "DEFAULT"})) {
        op.kind = OpKind::kDropDefault;
      } else if (AcceptWords({"SET", "DEFAULT"})) {
        ColumnDesc c;
        c.name = *n;
        const size_t from = i_;
        if (!DefaultValue(c)) return NotUnderstood(s);
        op.syntax.default_written = Written(from, i_);
        op.column = std::move(c);
      } else if (AcceptWords({"SET", "VISIBLE"}) || PeekWord("INVISIBLE", 1)) {
        op.kind = OpKind::kSetVisibility;
        ColumnDesc c;
        c.name = *n;
        c.is_invisible = AcceptWords({"SET", "INVISIBLE"});
        op.column = std::move(c);
      } else {
        return NotUnderstood(s);
      }
      s.ops.push_back(std::move(op));
      return;
    }
    if (PeekWord("CONVERT") && (PeekWord("PARTITION", 1) || PeekWord("TABLE", 1))) {
      // MariaDB 10.7: CONVERT PARTITION p TO TABLE t / CONVERT TABLE t TO PARTITION p. The
      // other table (new_table) gains or gives its rows with no row events.
      const bool to_table = PeekWord("PARTITION", 1);
      i_ += 2;
      AlterOp op{OpKind::kPartition, "convert"};
      if (to_table) {
        Name();
        if (AcceptWords({"TO", "TABLE"})) {
          if (auto t = Table()) op.new_table = *t;
        }
      } else if (auto t = Table()) {
        op.new_table = *t;
      }
      s.ops.push_back(std::move(op));
      while (!AtEnd() && !PeekPunct(',')) {
        if (PeekPunct('(')) SkipParens();
        else ++i_;
      }
      return;
    }
    if (AcceptWord("CONVERT")) {
      if (!AcceptWord("TO")) return NotUnderstood(s);
      if (!(AcceptWord("CHARSET") || AcceptWords({"CHARACTER", "SET"}))) return NotUnderstood(s);
      AlterOp op{OpKind::kConvertCharset};
      op.charset = Lower(Name().value_or(""));
      if (AcceptWord("COLLATE")) op.collation = Lower(Name().value_or(""));
      s.ops.push_back(std::move(op));
      return;
    }
    if (PeekWord("DEFAULT") || PeekWord("CHARSET") || PeekWord("CHARACTER") || PeekWord("COLLATE")) {
      std::string cs = s.default_charset, coll = s.default_collation;
      s.default_charset.clear();
      s.default_collation.clear();
      TableOptions(s, nullptr);
      AlterOp op{OpKind::kDefaultCharset};
      op.charset = s.default_charset;
      op.collation = s.default_collation;
      if (op.charset.empty() && op.collation.empty()) return NotUnderstood(s);
      s.ops.push_back(std::move(op));
      return;
    }
    if (AcceptWord("ENGINE") || AcceptWord("TYPE")) {
      AcceptPunct('=');
      AlterOp op{OpKind::kEngine};
      op.name = Name().value_or("");
      s.ops.push_back(std::move(op));
      return;
    }
    if (AcceptWord("AUTO_INCREMENT")) {
      SkipOptionValue();
      s.ops.push_back({OpKind::kAutoIncrement});
      return;
    }
    if (AcceptWords({"WITH", "SYSTEM", "VERSIONING"})) {
      s.ops.push_back({OpKind::kAddSystemVersioning});
      return;
    }
    if (AcceptWord("ALGORITHM") || AcceptWord("LOCK")) {  // how, not what: no op
      SkipOptionValue();
      return;
    }
    if (AcceptWord("WAIT")) {
      ++i_;
      return;
    }
    if (AcceptWord("NOWAIT") || AcceptWords({"WITH", "VALIDATION"}) || AcceptWords({"WITHOUT", "VALIDATION"}))
      return;
    if (AcceptWord("FORCE")) {
      s.ops.push_back({OpKind::kRebuild, "force"});
      return;
    }
    if (AcceptWords({"ORDER", "BY"})) {
      while (Name()) {
        AcceptWord("ASC") || AcceptWord("DESC");
        // A ',' followed by a column name continues the list; by a clause keyword, ends it.
        if (!PeekPunct(',') || Peek(1) == nullptr || !Peek(1)->IsName() || IsClauseStart(1)) break;
        AcceptPunct(',');
      }
      s.ops.push_back({OpKind::kRebuild, "order_by"});
      return;
    }
    if (AcceptWords({"DISABLE", "KEYS"}) || AcceptWords({"ENABLE", "KEYS"})) {
      s.ops.push_back({OpKind::kDisableKeys, "keys"});
      return;
    }
    if (AcceptWords({"DISCARD", "TABLESPACE"})) {
      s.ops.push_back({OpKind::kDisableKeys, "discard_tablespace"});
      return;
    }
    if (AcceptWords({"IMPORT", "TABLESPACE"})) {
      s.ops.push_back({OpKind::kDisableKeys, "import_tablespace"});
      return;
    }
    if (PeekWord("PARTITION") && PeekWord("BY", 1)) {
      SkipPartitionSpec();
      s.ops.push_back({OpKind::kPartition, "by"});
      return;
    }
    if (AcceptWords({"REMOVE", "PARTITIONING"})) {
      s.ops.push_back({OpKind::kPartition, "remove"});
      return;
    }
    for (std::string_view verb : {"TRUNCATE", "COALESCE", "REORGANIZE", "EXCHANGE", "ANALYZE", "CHECK",
                                  "OPTIMIZE", "REBUILD", "REPAIR", "DISCARD", "IMPORT"}) {
      if (PeekWord(verb) && (PeekWord("PARTITION", 1) || PeekWord("PARTITIONS", 1))) {
        i_ += 2;
        AlterOp op{OpKind::kPartition, Lower(verb)};
        SkipNameList();
        // EXCHANGE PARTITION p WITH TABLE t: t's rows and p's change places, with no row events.
        if (verb == "EXCHANGE" && AcceptWords({"WITH", "TABLE"})) {
          if (auto t = Table()) op.new_table = *t;
        }
        s.ops.push_back(std::move(op));
        while (!AtEnd() && !PeekPunct(',')) {
          if (PeekPunct('(')) SkipParens();
          else ++i_;
        }
        return;
      }
    }
    for (std::string_view o : kTableOptions) {
      if (PeekWord(o)) {
        AlterOp op{OpKind::kTableOption, Lower(o)};
        ++i_;
        SkipOptionValue();
        if (o == "TABLESPACE" && AcceptWord("STORAGE")) ++i_;  // TABLESPACE ts STORAGE DISK
        s.ops.push_back(std::move(op));
        return;
      }
    }
    if (AcceptWords({"DATA", "DIRECTORY"}) || AcceptWords({"INDEX", "DIRECTORY"})) {
      SkipOptionValue();
      s.ops.push_back({OpKind::kTableOption, "directory"});
      return;
    }
    NotUnderstood(s);
  }

  // p0, p1, ... (or ALL): names joined by commas, ending before a ',' that starts a clause.
  void SkipNameList() {
    while (Name() || AcceptWord("ALL") || (Peek() && Peek()->kind == TokenKind::kNumber && (++i_, true))) {
      if (!PeekPunct(',') || Peek(1) == nullptr || !Peek(1)->IsName() || IsClauseStart(1)) return;
      ++i_;
    }
  }

  bool IsClauseStart(size_t k) const {
    for (std::string_view w : {"ADD", "DROP", "MODIFY", "CHANGE", "ALTER", "RENAME", "ALGORITHM", "LOCK",
                               "ENGINE", "CONVERT", "FORCE", "ORDER"})
      if (PeekWord(w, k)) return true;
    return false;
  }

  // DEFAULT value after the DEFAULT keyword; fills c.default_kind/default_value.
  bool DefaultValue(ColumnDesc& c) {
    const Token* p = Peek();
    if (p == nullptr) return false;
    size_t start = i_;
    if (p->Is("NULL")) {
      ++i_;
      c.default_kind = DefaultKind::kNull;
      c.default_value.reset();
      return true;
    }
    if (p->kind == TokenKind::kString) {
      std::string text = p->text;
      ++i_;
      while (Peek() != nullptr && Peek()->kind == TokenKind::kString) text += t_[i_++].text;
      c.default_kind = DefaultKind::kLiteral;
      c.default_value = QuoteLiteral(text);
      return true;
    }
    // A number at token k: `5`, `5.2`, `1e3`, or `.5` (after a word such as DEFAULT the
    // tokenizer reads the point as punctuation, as in db.t: a point and digits right after it
    // make 0.5). Sets *used to the tokens it takes.
    const auto number_at = [&](size_t k, size_t* used) -> std::optional<std::string> {
      const Token* a = Peek(k);
      if (a == nullptr) return std::nullopt;
      if (a->kind == TokenKind::kNumber) {
        *used = 1;
        return a->text;
      }
      const Token* b = Peek(k + 1);
      if (a->IsPunct('.') && b != nullptr && b->kind == TokenKind::kNumber && b->offset == a->offset + 1 &&
          !b->text.empty() && b->text[0] >= '0' && b->text[0] <= '9' && b->text.find('.') == std::string::npos &&
          b->text.find_first_of("xX") == std::string::npos) {
        *used = 2;
        return "0." + b->text;
      }
      return std::nullopt;
    };
    if (p->IsPunct('-') || p->IsPunct('+')) {
      size_t used = 0;
      std::optional<std::string> n = number_at(1, &used);
      if (!n) return false;
      i_ += 1 + used;
      c.default_kind = DefaultKind::kLiteral;
      c.default_value = (p->text == "-" ? "-" : "") + *n;
      return true;
    }
    {
      size_t used = 0;
      if (std::optional<std::string> n = number_at(0, &used)) {
        i_ += used;
        c.default_kind = DefaultKind::kLiteral;
        c.default_value = *n;
        return true;
      }
    }
    if (p->Is("TRUE") || p->Is("FALSE")) {
      ++i_;
      c.default_kind = DefaultKind::kLiteral;
      c.default_value = p->Is("TRUE") ? "1" : "0";
      return true;
    }
    if (p->kind == TokenKind::kWord && p->text.size() > 1 && p->text[0] == '_' && Peek(1) != nullptr &&
        (Peek(1)->kind == TokenKind::kString || Peek(1)->kind == TokenKind::kNumber)) {
      // A character set introducer before a literal (_latin1 0xE9, _utf8mb4 'x'): a literal
      // whose stored value depends on the conversion (ColumnSyntax keeps it as written).
      const Token& v = t_[i_ + 1];
      i_ += 2;
      c.default_kind = DefaultKind::kLiteral;
      c.default_value = v.kind == TokenKind::kString ? QuoteLiteral(v.text) : v.text;
      return true;
    }
    if (p->IsPunct('(')) {
      SkipParens();
    } else if (p->kind == TokenKind::kWord) {
      ++i_;  // CURRENT_TIMESTAMP, NOW(), UUID(), NEXTVAL(s), ...
      if (PeekPunct('(')) SkipParens();
    } else {
      return false;
    }
    c.default_kind = DefaultKind::kExpression;
    c.default_value = TokenText(start, i_);
    return true;
  }

  // ---- column definitions -------------------------------------------------------------
  Result<ColumnDesc> Column(std::string name, bool* primary_key) {
    ColumnDesc c;
    c.name = std::move(name);
    syntax_ = {};
    const Token* p = Peek();
    if (p == nullptr || p->kind != TokenKind::kWord)
      return Status::NotSupported(fmt::format("column {}: no data type", c.name));
    // Longest type name of up to three words.
    size_t words = 0;
    SqlType type = SqlType::kUnknown;
    for (size_t n = 3; n >= 1 && words == 0; --n) {
      std::string joined;
      bool ok = true;
      for (size_t k = 0; k < n; ++k) {
        const Token* w = Peek(k);
        if (w == nullptr || w->kind != TokenKind::kWord) {
          ok = false;
          break;
        }
        joined += (k ? " " : "") + w->text;
      }
      if (!ok) continue;
      SqlType t = SqlTypeFromName(joined);
      if (t != SqlType::kUnknown) {
        type = t;
        words = n;
      }
    }
    if (type == SqlType::kUnknown)
      return Status::NotSupported(fmt::format("column {}: unknown data type '{}' at byte {}", c.name,
                                              p->text, p->offset));
    const std::string written = Lower(p->text);
    i_ += words;
    c.SetType(SqlTypeName(type));
    std::vector<std::string> args;
    if (AcceptPunct('(')) {
      while (!AtEnd() && !PeekPunct(')')) {
        const Token& a = t_[i_++];
        if (a.kind == TokenKind::kString || a.kind == TokenKind::kNumber) args.push_back(a.text);
        else if (!a.IsPunct(',')) return Status::NotSupported(fmt::format(
                     "column {}: unexpected '{}' in the type at byte {}", c.name, a.text, a.offset));
      }
      if (!AcceptPunct(')')) return Status::NotSupported(fmt::format("column {}: unclosed type", c.name));
    }
    auto num = [&](size_t k, uint64_t dflt) -> uint64_t {
      if (k >= args.size()) return dflt;
      try {
        return std::stoull(args[k]);
      } catch (...) {
        return dflt;
      }
    };
    bool serial = written == "serial";
    if (written == "bool" || written == "boolean") args = {"1"};
    if (type == SqlType::kEnum || type == SqlType::kSet) {
      c.labels = args;
    } else if (type == SqlType::kDecimal) {
      c.numeric_precision = static_cast<uint32_t>(num(0, 10));
      c.numeric_scale = static_cast<uint32_t>(num(1, 0));
    } else if (type == SqlType::kFloat) {
      if (args.size() == 1 && num(0, 0) > 24) c.SetType("double");  // FLOAT(p), p > 24
      if (args.size() == 2) {
        c.numeric_precision = static_cast<uint32_t>(num(0, 0));
        c.numeric_scale = static_cast<uint32_t>(num(1, 0));
      }
    } else if (type == SqlType::kDouble && args.size() == 2) {
      c.numeric_precision = static_cast<uint32_t>(num(0, 0));
      c.numeric_scale = static_cast<uint32_t>(num(1, 0));
    } else if (type == SqlType::kBit) {
      c.numeric_precision = static_cast<uint32_t>(num(0, 1));
    } else if (type == SqlType::kTime || type == SqlType::kDateTime || type == SqlType::kTimestamp) {
      c.fsp = static_cast<uint32_t>(num(0, 0));
    } else if (type == SqlType::kChar || type == SqlType::kBinary) {
      c.char_max_length = num(0, 1);
    } else if (type == SqlType::kVarChar || type == SqlType::kVarBinary) {
      if (args.empty()) return Status::NotSupported(fmt::format("column {}: {} needs a length", c.name, written));
      c.char_max_length = num(0, 0);
    } else if (type == SqlType::kVector) {
      c.char_max_length = num(0, 2048);
    }
    if (c.type == SqlType::kJson && options_.mariadb) {
      c.SetType("longtext");
      c.charset = "utf8mb4";
      c.collation = "utf8mb4_bin";
    }
    if (IsBinaryType(c.type)) {
      c.charset = "binary";
      c.octet_length = c.char_max_length;
    }
    if (written == "nchar" || written == "nvarchar" || written == "national") c.charset = "utf8mb3";
    bool zerofill = false;
    // Attributes.
    while (!AtEnd() && !PeekPunct(',') && !PeekPunct(')') && !PeekWord("FIRST") && !PeekWord("AFTER")) {
      const Token* a = Peek();
      if (AcceptWord("UNSIGNED")) c.is_unsigned = true;
      else if (AcceptWord("SIGNED")) c.is_unsigned = false;
      else if (AcceptWord("ZEROFILL")) zerofill = c.is_unsigned = true;
      else if (AcceptWords({"CHARACTER", "SET"}) || AcceptWord("CHARSET")) c.charset = Lower(Name().value_or(""));
      else if (AcceptWord("COLLATE")) {
        c.collation = Lower(Name().value_or(""));
        if (c.charset.empty()) c.charset = c.collation.substr(0, c.collation.find('_'));
      } else if (AcceptWord("BINARY")) {
        // CHAR(n) BINARY: the charset's _bin collation; the stored value is unchanged.
      } else if (AcceptWord("ASCII")) c.charset = "latin1";
      else if (AcceptWord("UNICODE")) c.charset = "ucs2";
      else if (AcceptWord("BYTE")) c.charset = "binary";
      else if (AcceptWords({"NOT", "NULL"})) c.nullable = false, syntax_.null_written = true;
      else if (AcceptWord("NULL")) c.nullable = true, syntax_.null_written = true;
      else if (AcceptWord("DEFAULT")) {
        const size_t from = i_;
        if (!DefaultValue(c))
          return Status::NotSupported(fmt::format("column {}: DEFAULT value not understood at byte {}",
                                                  c.name, a->offset));
        syntax_.default_written = Written(from, i_);
        if (c.default_kind == DefaultKind::kNull) syntax_.null_written = true;
      } else if (AcceptWords({"ON", "UPDATE"})) {
        ColumnDesc scratch;
        if (!DefaultValue(scratch))
          return Status::NotSupported(fmt::format("column {}: ON UPDATE not understood", c.name));
      } else if (AcceptWord("AUTO_INCREMENT")) c.auto_increment = true;
      else if (AcceptWords({"SERIAL", "DEFAULT", "VALUE"})) {
        c.auto_increment = true;
        c.nullable = false;
      } else if (AcceptWords({"PRIMARY", "KEY"})) {
        *primary_key = true;
        c.nullable = false;
      } else if (AcceptWord("UNIQUE")) AcceptWord("KEY");
      else if (AcceptWord("KEY")) *primary_key = true;  // KEY alone in a column means PRIMARY KEY
      else if (AcceptWord("COMPRESSED")) {
        if (AcceptPunct('=')) ++i_;
      } else if (AcceptWord("COMMENT") || AcceptWord("COLUMN_FORMAT") || AcceptWord("STORAGE") ||
                 AcceptWord("ENGINE_ATTRIBUTE") || AcceptWord("SECONDARY_ENGINE_ATTRIBUTE") ||
                 AcceptWord("SRID")) {
        SkipOptionValue();
      } else if (AcceptWord("INVISIBLE")) c.is_invisible = true;
      else if (AcceptWord("VISIBLE")) c.is_invisible = false;
      else if (AcceptWords({"WITH", "SYSTEM", "VERSIONING"}) || AcceptWords({"WITHOUT", "SYSTEM", "VERSIONING"})) {
      } else if (PeekWord("GENERATED") || PeekWord("AS")) {
        if (AcceptWord("GENERATED")) {
          if (!AcceptWord("ALWAYS")) return Status::NotSupported(fmt::format("column {}: GENERATED without ALWAYS", c.name));
        }
        if (!AcceptWord("AS")) return Status::NotSupported(fmt::format("column {}: GENERATED without AS", c.name));
        if (AcceptWords({"ROW", "START"})) {
          c.versioning = VersioningRole::kRowStart;
        } else if (AcceptWords({"ROW", "END"})) {
          c.versioning = VersioningRole::kRowEnd;
        } else {
          size_t from = i_;
          if (!PeekPunct('(')) return Status::NotSupported(fmt::format("column {}: AS without (expression)", c.name));
          SkipParens();
          std::string expr = TokenText(from + 1, i_ - 1);
          c.generation_expression = expr;
          c.generated = GeneratedKind::kVirtual;
          if (AcceptWord("STORED") || AcceptWord("PERSISTENT")) c.generated = GeneratedKind::kStored;
          else AcceptWord("VIRTUAL");
          c.is_generated = true;
        }
      } else if (AcceptWord("CHECK")) {
        SkipParens();
        AcceptWords({"NOT", "ENFORCED"}) || AcceptWord("ENFORCED");
      } else if (AcceptWord("CONSTRAINT")) {
        if (!PeekWord("CHECK")) Name();
      } else if (PeekWord("REFERENCES")) {
        SkipReferences();
      } else {
        return Status::NotSupported(fmt::format("column {}: '{}' at byte {} not understood", c.name,
                                                a->text, a->offset));
      }
    }
    if (serial) {
      c.is_unsigned = true;
      c.nullable = false;
      c.auto_increment = true;
    }
    // ENUM/SET members lose their trailing spaces when the server creates the column (a
    // character set's spaces; a binary column keeps them: sql_table.cc, the interval's
    // lengthsp). Kept, every row of `ENUM('x ', ...)` read with binlog_row_metadata=MINIMAL
    // (where rows carry no labels) came out as 'x ' (a new user's probe). A column that takes
    // a binary table default is not known to be binary here; with FULL metadata its labels
    // are checked against the binlog's (CheckTableMap).
    if ((c.type == SqlType::kEnum || c.type == SqlType::kSet) && c.charset != "binary")
      for (std::string& label : c.labels) {
        const size_t end = label.find_last_not_of(' ');
        label.resize(end == std::string::npos ? 0 : end + 1);
      }
    // A DECIMAL's literal default as the server prints it (information_schema, SHOW CREATE):
    // `007.5` is 7.50, `-0.00` is 0.00, `.5` is 0.50 in a DECIMAL(6,2). The sinks fill
    // existing rows from it and schema records carry it (a new user's probe: records said
    // "007.5"). A literal with more digits than the column keeps is left as written: the
    // server rounds it, and DefaultNotExact has the table copied again.
    if (c.type == SqlType::kDecimal && c.default_kind == DefaultKind::kLiteral && c.default_value)
      if (std::optional<std::string> canonical = CanonicalDecimal(*c.default_value, c.numeric_precision, c.numeric_scale))
        c.default_value = std::move(canonical);
    // COLUMN_TYPE as the server prints it (display widths left out).
    std::string ct(c.data_type);
    if (c.type == SqlType::kEnum || c.type == SqlType::kSet) {
      ct += "(";
      for (size_t k = 0; k < c.labels.size(); ++k) ct += (k ? "," : "") + QuoteLiteral(c.labels[k]);
      ct += ")";
    } else if (c.type == SqlType::kDecimal || (c.numeric_scale != 0 && (c.type == SqlType::kFloat ||
                                                                        c.type == SqlType::kDouble))) {
      ct += fmt::format("({},{})", c.numeric_precision, c.numeric_scale);
    } else if (c.type == SqlType::kBit) {
      ct += fmt::format("({})", c.numeric_precision);
    } else if (IsTemporalType(c.type) && c.fsp > 0) {
      ct += fmt::format("({})", c.fsp);
    } else if (c.type == SqlType::kChar || c.type == SqlType::kVarChar || c.type == SqlType::kBinary ||
               c.type == SqlType::kVarBinary || c.type == SqlType::kVector) {
      ct += fmt::format("({})", c.char_max_length);
    } else if (written == "bool" || written == "boolean") {
      ct += "(1)";
    }
    if (c.is_unsigned) ct += " unsigned";
    if (zerofill) ct += " zerofill";
    c.column_type = ct;
    return c;
  }

  // The statement's bytes from token `from` up to token `to` (or the end), trailing blanks
  // cut; "" when the parser was given tokens only.
  std::string Written(size_t from, size_t to) const {
    if (sql_.empty() || from >= t_.size() || from >= to) return "";
    size_t begin = t_[from].offset;
    // A string's token starts at its quote: an introducer glued to it (N'x', _latin1'x') is
    // part of what was written.
    auto word_byte = [](unsigned char c) { return std::isalnum(c) || c == '_' || c == '$' || c >= 0x80; };
    if (t_[from].kind == TokenKind::kString)
      while (begin > 0 && begin <= sql_.size() && word_byte(static_cast<unsigned char>(sql_[begin - 1]))) --begin;
    const size_t end = to < t_.size() ? t_[to].offset : sql_.size();
    if (begin >= end || end > sql_.size()) return "";
    std::string_view w = sql_.substr(begin, end - begin);
    while (!w.empty() && (w.back() == ' ' || w.back() == '\t' || w.back() == '\n' || w.back() == '\r')) w.remove_suffix(1);
    return std::string(w);
  }
  ColumnSyntax Syntax() const { return syntax_; }

  const std::vector<Token>& t_;
  std::string db_;
  ParseOptions options_;
  std::string_view sql_;
  ColumnSyntax syntax_;  // of the column definition Column() parsed last
  size_t i_ = 0;

  void Rename(Statement& s) {
    if (!AcceptWord("TABLE") && !AcceptWord("TABLES")) return;  // RENAME USER: not table-shaping
    s.kind = Kind::kRenameTable;
    s.if_exists = AcceptWords({"IF", "EXISTS"});
    while (!AtEnd()) {
      auto from = Table();
      AcceptWord("WAIT") ? (void)++i_ : (void)AcceptWord("NOWAIT");
      if (!from || !AcceptWord("TO")) return NotUnderstood(s);
      auto to = Table();
      if (!to) return NotUnderstood(s);
      s.renames.push_back({*from, *to});
      if (!AcceptPunct(',')) break;
    }
    for (auto& [from, to] : s.renames) s.tables.push_back(from);
    for (auto& [from, to] : s.renames) s.tables.push_back(to);
  }

  void Drop(Statement& s) {
    if (AcceptWord("DATABASE") || AcceptWord("SCHEMA")) {
      s.kind = Kind::kDropTable;
      s.if_exists = AcceptWords({"IF", "EXISTS"});
      auto db = Name();
      if (!db) return NotUnderstood(s);
      s.drop_database = *db;
      return;
    }
    s.temporary = AcceptWord("TEMPORARY");
    if (AcceptWord("TABLE") || AcceptWord("TABLES")) {
      if (s.temporary) return;
      s.kind = Kind::kDropTable;
      s.if_exists = AcceptWords({"IF", "EXISTS"});
      while (!AtEnd()) {
        auto t = Table();
        if (!t) return NotUnderstood(s);
        s.tables.push_back(*t);
        if (!AcceptPunct(',')) break;
      }
      if (AcceptWord("WAIT")) ++i_;
      AcceptWord("NOWAIT");
      AcceptWord("RESTRICT") || AcceptWord("CASCADE");
      return;
    }
    AcceptWord("ONLINE") || AcceptWord("OFFLINE");
    if (AcceptWord("INDEX") || AcceptWord("KEY")) {
      AlterOp op{OpKind::kDropIndex};
      op.if_exists = AcceptWords({"IF", "EXISTS"});
      op.name = Name().value_or("");
      s.kind = Kind::kAlterTable;
      if (!AcceptWord("ON")) return NotUnderstood(s);
      auto t = Table();
      if (!t) return NotUnderstood(s);
      s.tables.push_back(*t);
      if (op.name == "PRIMARY") {
        op.kind = OpKind::kDropPrimaryKey;
        op.name.clear();
      }
      s.ops.push_back(std::move(op));
      SkipAlgorithmLock();
    }
  }

  void Truncate(Statement& s) {
    AcceptWord("TABLE");
    s.kind = Kind::kTruncate;
    auto t = Table();
    // A name that is not one (`TRUNCATE "db"."t"` read without ANSI_QUOTES) is not passed as
    // "no statement": the caller cannot tell which table it empties.
    if (!t) return NotUnderstood(s);
    s.tables.push_back(*t);
    if (AcceptWord("WAIT")) ++i_;
    AcceptWord("NOWAIT");
  }
};

}  // namespace

Result<ColumnDesc> ParseColumnDefinition(const std::vector<sql::Token>& tokens, size_t* pos,
                                         std::string name, bool* primary_key,
                                         const ParseOptions& options) {
  Parser p(tokens, "", options);
  p.i_ = *pos;
  bool pk = false;
  Result<ColumnDesc> c = p.Column(std::move(name), &pk);
  *pos = p.i_;
  if (primary_key) *primary_key = pk;
  return c;
}

std::string_view KindName(Kind k) {
  switch (k) {
    case Kind::kNone: return "none";
    case Kind::kCreateTable: return "create";
    case Kind::kAlterTable: return "alter";
    case Kind::kRenameTable: return "rename";
    case Kind::kDropTable: return "drop";
    case Kind::kTruncate: return "truncate";
  }
  return "none";
}

std::string_view OpName(OpKind k) {
  switch (k) {
    case OpKind::kAddColumn: return "add_column";
    case OpKind::kDropColumn: return "drop_column";
    case OpKind::kModifyColumn: return "modify_column";
    case OpKind::kChangeColumn: return "change_column";
    case OpKind::kRenameColumn: return "rename_column";
    case OpKind::kSetDefault: return "set_default";
    case OpKind::kDropDefault: return "drop_default";
    case OpKind::kSetVisibility: return "set_visibility";
    case OpKind::kAddPrimaryKey: return "add_primary_key";
    case OpKind::kDropPrimaryKey: return "drop_primary_key";
    case OpKind::kAddIndex: return "add_index";
    case OpKind::kDropIndex: return "drop_index";
    case OpKind::kRenameIndex: return "rename_index";
    case OpKind::kAlterIndex: return "alter_index";
    case OpKind::kAddForeignKey: return "add_foreign_key";
    case OpKind::kDropForeignKey: return "drop_foreign_key";
    case OpKind::kAddCheck: return "add_check";
    case OpKind::kDropConstraint: return "drop_constraint";
    case OpKind::kRenameTable: return "rename_table";
    case OpKind::kConvertCharset: return "convert_charset";
    case OpKind::kDefaultCharset: return "default_charset";
    case OpKind::kEngine: return "engine";
    case OpKind::kAutoIncrement: return "auto_increment";
    case OpKind::kTableOption: return "option";
    case OpKind::kPartition: return "partition";
    case OpKind::kAddSystemVersioning: return "add_system_versioning";
    case OpKind::kDropSystemVersioning: return "drop_system_versioning";
    case OpKind::kAddPeriod: return "add_period";
    case OpKind::kDropPeriod: return "drop_period";
    case OpKind::kRebuild: return "rebuild";
    case OpKind::kDisableKeys: return "keys";
  }
  return "?";
}

std::string Statement::Summary() const {
  std::string out(KindName(kind));
  if (kind == Kind::kNone) return temporary ? out + " (temporary)" : out;
  if (kind == Kind::kRenameTable) {
    for (size_t k = 0; k < renames.size(); ++k)
      out += (k ? ", " : " ") + renames[k].first.ToString() + "->" + renames[k].second.ToString();
  } else {
    for (size_t k = 0; k < tables.size(); ++k) out += (k ? ", " : " ") + tables[k].ToString();
  }
  if (!drop_database.empty()) out += " database " + drop_database;
  if (like) out += " like " + like->ToString();
  if (as_select) out += " select";
  if (definition && !definition->columns.empty()) {
    out += " (";
    for (size_t k = 0; k < definition->columns.size(); ++k)
      out += (k ? " " : "") + definition->columns[k].name;
    out += ")";
  }
  if (!ops.empty()) {
    out += ":";
    for (size_t k = 0; k < ops.size(); ++k) {
      const AlterOp& op = ops[k];
      out += (k ? ", " : " ") + std::string(OpName(op.kind));
      std::string arg = op.name;
      if (op.kind == OpKind::kAddColumn && op.column) arg = op.column->name;
      if (!op.new_name.empty()) arg += "->" + op.new_name;
      if (op.kind == OpKind::kRenameTable) arg = op.new_table.ToString();
      if (op.kind == OpKind::kConvertCharset || op.kind == OpKind::kDefaultCharset)
        arg = op.charset.empty() ? op.collation : op.charset;
      out += "(" + arg + ")";
    }
  }
  if (!understood) out += " (partial: " + not_understood + ")";
  return out;
}

void ForEachTableRef(Statement& st, const std::function<void(TableRef&)>& fn) {
  for (TableRef& t : st.tables) fn(t);
  for (auto& [from, to] : st.renames) {
    fn(from);
    fn(to);
  }
  if (st.like) fn(*st.like);
  if (st.definition) {
    TableRef t{st.definition->db, st.definition->table};
    fn(t);
    st.definition->db = std::move(t.db);
    st.definition->table = std::move(t.table);
  }
  for (AlterOp& op : st.ops)
    if (!op.new_table.table.empty()) fn(op.new_table);
}

Result<Statement> Parse(std::string_view sql, std::string_view default_db,
                        const ParseOptions& options) {
  ASSIGN_OR_RETURN(std::vector<sql::Token> tokens, sql::Tokenize(sql, options.server_version, options.ansi_quotes));
  return Parser(tokens, default_db, options, sql).Run();
}

}  // namespace sluice::ddl
