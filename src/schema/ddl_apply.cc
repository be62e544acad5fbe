#include "schema/ddl_apply.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>

#include <fmt/format.h>

namespace sluice::ddl {
namespace {

bool SameName(std::string_view a, std::string_view b) {
  // Column names are case-insensitive in MySQL and MariaDB.
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

int Find(const TableSchema& t, std::string_view name) {
  for (size_t i = 0; i < t.columns.size(); ++i)
    if (SameName(t.columns[i].name, name)) return static_cast<int>(i);
  return -1;
}

int IntRank(SqlType t) {
  switch (t) {
    case SqlType::kTinyInt: return 1;
    case SqlType::kSmallInt: return 2;
    case SqlType::kMediumInt: return 3;
    case SqlType::kInt: return 4;
    case SqlType::kBigInt: return 5;
    default: return 0;
  }
}

// Character kinds whose stored text does not change when the column grows: VARCHAR and
// the TEXTs (CHAR keeps its own kind: its values carry no trailing spaces either way).
int TextRank(SqlType t) {
  switch (t) {
    case SqlType::kVarChar: return 1;
    case SqlType::kTinyText: return 2;
    case SqlType::kText: return 3;
    case SqlType::kMediumText: return 4;
    case SqlType::kLongText: return 5;
    default: return 0;
  }
}
int BlobRank(SqlType t) {
  switch (t) {
    case SqlType::kVarBinary: return 1;
    case SqlType::kTinyBlob: return 2;
    case SqlType::kBlob: return 3;
    case SqlType::kMediumBlob: return 4;
    case SqlType::kLongBlob: return 5;
    default: return 0;
  }
}

std::string Describe(const ColumnDesc& c) {
  return c.column_type.empty() ? std::string(SqlTypeName(c.type)) : c.column_type;
}

void NotExact(Applied& a, std::string why) {
  if (a.exact) {
    a.exact = false;
    a.why_not_exact = std::move(why);
  }
}

// sql_mode bits (MariaDB sql_class.h, MODE_*; MySQL has the same values where it has them).
constexpr uint64_t kModeOracle = 1ull << 9;
constexpr uint64_t kModeNoBackslashEscapes = 1ull << 20;
constexpr uint64_t kModeEmptyStringIsNull = 1ull << 32;

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// Engines whose ALTER ... ENGINE= copies every row as it is. The others keep no rows
// (BLACKHOLE), read them from elsewhere (FEDERATED, CONNECT, SPIDER, MERGE, OQGRAPH, SEQUENCE,
// S3's read-only copies, ...) or are not known here.
bool KeepsRows(std::string_view engine) {
  for (std::string_view e : {"innodb", "xtradb", "myisam", "aria", "maria", "memory", "heap", "rocksdb", "tokudb",
                             "archive"})
    if (SameName(engine, e)) return true;
  return false;
}

// 'text' -> text, for a single-quoted literal of printable ASCII without backslashes ('' for
// a quote); nullopt for anything else (double quotes, introducers, adjacent strings, escapes).
std::optional<std::string> PlainQuoted(std::string_view w) {
  if (w.size() < 2 || w.front() != '\'' || w.back() != '\'') return std::nullopt;
  std::string out;
  for (size_t i = 1; i + 1 < w.size(); ++i) {
    const char c = w[i];
    if (c < 0x20 || c > 0x7e || c == '\\') return std::nullopt;
    if (c == '\'') {
      if (i + 2 >= w.size() || w[i + 1] != '\'') return std::nullopt;
      ++i;
    }
    out.push_back(c);
  }
  return out;
}

bool ValidDate(std::string_view d) {  // YYYY-MM-DD, year 1000..9999
  if (d.size() != 10 || d[4] != '-' || d[7] != '-') return false;
  if (!AllDigits(d.substr(0, 4)) || !AllDigits(d.substr(5, 2)) || !AllDigits(d.substr(8, 2))) return false;
  const int y = std::stoi(std::string(d.substr(0, 4))), m = std::stoi(std::string(d.substr(5, 2))),
            day = std::stoi(std::string(d.substr(8, 2)));
  if (y < 1000 || m < 1 || m > 12 || day < 1) return false;
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return day <= kDays[m - 1] + (m == 2 && leap ? 1 : 0);
}

bool ValidTimeOfDay(std::string_view t, uint32_t fsp) {  // hh:mm:ss[.f{fsp}]
  if (t.size() != 8 + (fsp > 0 ? fsp + 1 : 0) || t[2] != ':' || t[5] != ':') return false;
  if (!AllDigits(t.substr(0, 2)) || !AllDigits(t.substr(3, 2)) || !AllDigits(t.substr(6, 2))) return false;
  if (std::stoi(std::string(t.substr(0, 2))) > 23 || std::stoi(std::string(t.substr(3, 2))) > 59 ||
      std::stoi(std::string(t.substr(6, 2))) > 59)
    return false;
  return fsp == 0 || (t[8] == '.' && AllDigits(t.substr(9)));
}

}  // namespace

std::string DefaultNotExact(const ColumnDesc& col, std::string_view written, uint64_t sql_mode) {
  const std::string what = fmt::format("DEFAULT {}", written.empty() ? col.default_value.value_or("") : written);
  auto no = [&](std::string_view why) { return fmt::format("{}: {}", what, why); };
  if (sql_mode & kModeOracle) return no("sql_mode ORACLE (or not known) changes what the literal stores");
  const bool quoted = !written.empty() && (written.front() == '\'' || written.front() == '"' ||
                                           written.back() == '\'');
  if (quoted && (sql_mode & (kModeNoBackslashEscapes | kModeEmptyStringIsNull)))
    return no("the statement's sql_mode (NO_BACKSLASH_ESCAPES / EMPTY_STRING_IS_NULL, or not known) changes what "
              "a quoted literal stores");
  const std::string converted = "the server converts it to the column's type in a way sluice does not reproduce";
  if (IsIntegerType(col.type)) {
    std::string_view v = written;
    std::string digits;
    if (SameName(v, "TRUE")) digits = "1";
    else if (SameName(v, "FALSE")) digits = "0";
    else digits = std::string(v);
    const bool negative = !digits.empty() && digits[0] == '-';
    const std::string_view mag = std::string_view(digits).substr(negative ? 1 : 0);
    if (!AllDigits(mag)) return no("not a decimal integer; " + converted);
    // |value| up to 2^63: 19 digits at most, compared as numbers below.
    const size_t nz = mag.find_first_not_of('0');
    const std::string_view sig = nz == std::string_view::npos ? std::string_view("0") : mag.substr(nz);
    if (sig.size() > 19) return no("out of the column's range");
    const uint64_t m = std::stoull(std::string(sig));
    const int bits = IntRank(col.type) == 1 ? 8 : IntRank(col.type) == 2 ? 16 : IntRank(col.type) == 3 ? 24
                   : IntRank(col.type) == 4 ? 32 : 64;
    uint64_t max = (col.is_unsigned && bits < 64 ? uint64_t{1} << bits : uint64_t{1} << (bits - 1)) - 1;
    // BIGINT UNSIGNED: at most INT64_MAX, as the sinks hold 64-bit signed integers.
    if (negative && m != 0) {
      if (col.is_unsigned) return no("out of the column's range");
      if (m > max + 1) return no("out of the column's range");
    } else if (m > max) {
      return no("out of the column's range (or above the largest signed 64-bit integer, which the sinks hold)");
    }
    return "";
  }
  if (col.type == SqlType::kDecimal) {
    std::string_view v = written;
    if (!v.empty() && v[0] == '-') v.remove_prefix(1);
    const size_t dot = v.find('.');
    const std::string_view whole = v.substr(0, dot);
    const std::string_view frac = dot == std::string_view::npos ? std::string_view() : v.substr(dot + 1);
    // `.5`: no digit before the point (MariaDB and MySQL read it as 0.5).
    const bool bare_fraction = whole.empty() && dot != std::string_view::npos;
    if ((!bare_fraction && !AllDigits(whole)) || (dot != std::string_view::npos && !AllDigits(frac)))
      return no("not a plain decimal number; " + converted);
    const size_t nz = whole.find_first_not_of('0');
    const size_t int_digits = nz == std::string_view::npos ? 0 : whole.size() - nz;
    if (col.numeric_precision == 0 || frac.size() > col.numeric_scale ||
        int_digits > col.numeric_precision - col.numeric_scale)
      return no("more digits than the column keeps (the server rounds or clips it)");
    return "";
  }
  const std::optional<std::string> text = PlainQuoted(written);
  if (IsCharacterType(col.type)) {
    if (col.charset == "binary") return no("a binary string column pads or keeps bytes sluice does not reproduce");
    if (!text) return no("not a single-quoted ASCII string without escapes or introducer; " + converted);
    size_t max = col.char_max_length;
    if (col.type == SqlType::kTinyText) max = 255;
    else if (col.type == SqlType::kText || col.type == SqlType::kMediumText || col.type == SqlType::kLongText)
      max = 65535;
    if (text->size() > max) return no("longer than the column");
    if (col.type == SqlType::kChar && !text->empty() && text->back() == ' ')
      return no("CHAR drops trailing blanks");
    return "";
  }
  if (col.type == SqlType::kEnum) {
    if (text && std::find(col.labels.begin(), col.labels.end(), *text) != col.labels.end()) return "";
    return no("not a member exactly as defined (the server matches case and trailing blanks)");
  }
  if (col.type == SqlType::kSet) {
    if (!text) return no("not a plain quoted string");
    size_t last = 0;
    bool first = true;
    for (size_t b = 0; !text->empty() && b <= text->size();) {
      size_t e = text->find(',', b);
      if (e == std::string::npos) e = text->size();
      auto it = std::find(col.labels.begin(), col.labels.end(), text->substr(b, e - b));
      if (it == col.labels.end()) return no("not the members exactly as defined");
      const size_t k = static_cast<size_t>(it - col.labels.begin());
      if (!first && k <= last) return no("members not in definition order once each (the server sorts them)");
      first = false;
      last = k;
      b = e + 1;
    }
    return "";
  }
  if (col.type == SqlType::kDate) {
    if (text && ValidDate(*text)) return "";
    return no("not a valid 'YYYY-MM-DD'; " + converted);
  }
  if (col.type == SqlType::kDateTime) {
    if (text && text->size() > 11 && (*text)[10] == ' ' && ValidDate(text->substr(0, 10)) &&
        ValidTimeOfDay(std::string_view(*text).substr(11), col.fsp))
      return "";
    return no(fmt::format("not a valid 'YYYY-MM-DD hh:mm:ss' with {} fraction digits; {}", col.fsp, converted));
  }
  if (col.type == SqlType::kTimestamp) return no("a TIMESTAMP literal is read in the session's time_zone");
  return no(fmt::format("a {} literal: {}", SqlTypeName(col.type), converted));
}

bool WideningOrSame(const ColumnDesc& from, const ColumnDesc& to, std::string* why, bool strict) {
  auto no = [&](std::string reason) {
    if (why) *why = std::move(reason);
    return false;
  };
  const std::string change = fmt::format("`{}` {} to {}", from.name, Describe(from), Describe(to));
  if (from.generated != to.generated || from.generation_expression != to.generation_expression)
    return no(fmt::format("{}: a generated column changes", change));
  if (to.auto_increment && !from.auto_increment)
    return no(fmt::format("{}: AUTO_INCREMENT may renumber existing zero values", change));
  if (from.nullable && !to.nullable && !strict)
    return no(fmt::format("{}: NOT NULL under a non-strict sql_mode may have turned NULLs into implicit defaults", change));
  if (from.versioning != to.versioning) return no(fmt::format("{}: system versioning changes", change));
  if (HasCharset(from.type) && HasCharset(to.type) && from.charset != to.charset)
    return no(fmt::format("{}: the character set changes (the server converts the stored text)", change));

  if (IsIntegerType(from.type) && IsIntegerType(to.type)) {
    int rf = IntRank(from.type), rt = IntRank(to.type);
    if (from.is_unsigned == to.is_unsigned && rt >= rf) return true;
    if (from.is_unsigned && !to.is_unsigned && rt > rf) return true;
    return no(fmt::format("{}: not a widening (values may be clipped)", change));
  }
  if (from.type == SqlType::kDecimal && to.type == SqlType::kDecimal) {
    if (from.numeric_scale != to.numeric_scale)
      return no(fmt::format("{}: the scale changes (the server rounds or pads the stored values)", change));
    if (to.numeric_precision < from.numeric_precision || (to.is_unsigned && !from.is_unsigned))
      return no(fmt::format("{}: not a widening (values may be clipped)", change));
    return true;
  }
  if (TextRank(from.type) && TextRank(to.type)) {
    if (TextRank(to.type) < TextRank(from.type) ||
        (from.type == to.type && to.char_max_length < from.char_max_length))
      return no(fmt::format("{}: not a widening (values may be truncated)", change));
    if (from.type == SqlType::kVarChar && to.type == SqlType::kVarChar &&
        to.char_max_length < from.char_max_length)
      return no(fmt::format("{}: not a widening (values may be truncated)", change));
    return true;
  }
  if (BlobRank(from.type) && BlobRank(to.type)) {
    if (BlobRank(to.type) < BlobRank(from.type) ||
        (from.type == to.type && to.char_max_length < from.char_max_length))
      return no(fmt::format("{}: not a widening (values may be truncated)", change));
    return true;
  }
  if (from.type == SqlType::kChar && to.type == SqlType::kChar) {
    if (to.char_max_length < from.char_max_length)
      return no(fmt::format("{}: not a widening (values may be truncated)", change));
    return true;
  }
  if ((from.type == SqlType::kEnum && to.type == SqlType::kEnum) ||
      (from.type == SqlType::kSet && to.type == SqlType::kSet)) {
    if (to.labels.size() < from.labels.size() ||
        !std::equal(from.labels.begin(), from.labels.end(), to.labels.begin()))
      return no(fmt::format("{}: members are removed, renamed or reordered (stored values change)", change));
    return true;
  }
  if (from.type != to.type) return no(fmt::format("{}: the type changes", change));
  if (from.is_unsigned != to.is_unsigned || from.numeric_precision != to.numeric_precision ||
      from.numeric_scale != to.numeric_scale || from.fsp != to.fsp ||
      from.char_max_length != to.char_max_length || from.labels != to.labels)
    return no(fmt::format("{}: the stored values change", change));
  return true;
}

void FillDefaultCharsets(TableSchema& t, const std::string& db_default_collation) {
  const std::string& coll = t.collation.empty() ? db_default_collation : t.collation;
  if (coll.empty()) return;
  const std::string charset = coll.substr(0, coll.find('_'));
  for (ColumnDesc& c : t.columns) {
    if (!c.charset.empty() || !HasCharset(c.type)) continue;
    c.charset = charset;
    if (c.collation.empty() && coll.find('_') != std::string::npos) c.collation = coll;
  }
}

Result<Applied> ApplyAlter(const TableSchema& before, const Statement& stmt, const ApplyOptions& options) {
  Applied a;
  a.after = before;
  const std::string table = before.QualifiedName();
  for (size_t i = 0; i < before.columns.size(); ++i) a.source_of.push_back(static_cast<int>(i));
  // A SET STATEMENT prefix may have set any session variable for the statement: the QUERY
  // event's sql_mode is not the one it ran under.
  const bool strict = options.strict && !stmt.set_statement;
  const uint64_t sql_mode = stmt.set_statement ? kUnknownSqlMode : options.sql_mode;
  // ALTER IGNORE deletes the rows that duplicate a new unique key and stores converted values
  // where the statement would fail (NOT NULL on a NULL, a narrowing), whatever the sql_mode, all
  // without row events (a new user's probe: the replica kept the deleted duplicates).
  if (stmt.ignore) NotExact(a, "ALTER IGNORE may delete duplicate rows or convert values without row events");
  auto missing = [&](const AlterOp& op, std::string_view name) {
    return Status::FailedPrecondition(fmt::format(
        "table {}: {} `{}`: no such column in the recorded definition", table, OpName(op.kind), name));
  };
  TableSchema& t = a.after;
  // The server resolves the columns a clause names (CHANGE, MODIFY, DROP, RENAME COLUMN, ALTER
  // COLUMN) in the table as it was before the statement, then among the columns the statement
  // adds; names must be unique only in the result. So `CHANGE p q ..., CHANGE q p ...` swaps
  // two columns (a new user's probe: it was refused, the second clause finding the first's q).
  auto find_existing = [&](std::string_view name) {
    for (size_t i = 0; i < t.columns.size(); ++i)
      if (a.source_of[i] >= 0 && SameName(before.columns[static_cast<size_t>(a.source_of[i])].name, name))
        return static_cast<int>(i);
    for (size_t i = 0; i < t.columns.size(); ++i)
      if (a.source_of[i] < 0 && SameName(t.columns[i].name, name)) return static_cast<int>(i);
    return -1;
  };
  // Column order, as the server builds it (MariaDB and MySQL mysql_prepare_alter_table): the
  // clauses first change, rename and drop columns in place, leaving the table's columns in
  // their order; then the clauses that add a column or move one (FIRST/AFTER) are taken in
  // statement order, each AFTER naming a column of the list built so far by its new name. So
  // `ADD n AFTER a, CHANGE a b ..., CHANGE b a ...` puts n after the column now named a (the
  // old b), and `MODIFY d ... AFTER a, CHANGE a b ...` too (a new user's probe: sluice applied
  // the clauses one by one against the old names, and under MINIMAL metadata wrote values into
  // the wrong columns). `id` names each column of `t` across the clauses (the index in `before`,
  // or before.size() + k for the k-th added); `placing` holds the clauses of the second step.
  struct Placing {
    const AlterOp* op;
    int id;
  };
  std::vector<int> id(before.columns.size());
  for (size_t i = 0; i < id.size(); ++i) id[i] = static_cast<int>(i);
  int next_id = static_cast<int>(before.columns.size());
  std::vector<Placing> placing;
  for (const AlterOp& op : stmt.ops) {
    switch (op.kind) {
      case OpKind::kAddColumn: {
        if (!op.column) return Status::Internal("ADD COLUMN without a definition");
        ColumnDesc c = *op.column;
        if (op.if_not_exists && Find(t, c.name) >= 0) break;
        if (c.charset.empty() && HasCharset(c.type) && !t.collation.empty()) {
          c.charset = t.collation.substr(0, t.collation.find('_'));
          if (c.collation.empty()) c.collation = t.collation;
        }
        const std::string what = fmt::format("ADD COLUMN `{}` {}", c.name, Describe(c));
        if (c.auto_increment) NotExact(a, what + ": AUTO_INCREMENT numbers the existing rows");
        else if (c.generated != GeneratedKind::kNone)
          NotExact(a, what + ": a generated column's values are computed by the server");
        else if (c.default_kind == DefaultKind::kExpression)
          NotExact(a, what + ": the existing rows take the value of DEFAULT " + c.default_value.value_or(""));
        else if (c.default_kind == DefaultKind::kNone && !c.nullable)
          NotExact(a, what + ": NOT NULL without a DEFAULT gives the existing rows the type's implicit default");
        else if (c.versioning != VersioningRole::kNone)
          NotExact(a, what + ": system versioning");
        else if (c.type == SqlType::kTimestamp && !op.syntax.null_written && c.default_kind == DefaultKind::kNone)
          NotExact(a, what + ": a TIMESTAMP saying neither NULL nor DEFAULT is NOT NULL DEFAULT CURRENT_TIMESTAMP "
                             "under explicit_defaults_for_timestamp=OFF, which fills the existing rows with the "
                             "current time");
        else if (c.default_kind == DefaultKind::kLiteral) {
          const std::string why = DefaultNotExact(c, op.syntax.default_written, sql_mode);
          if (!why.empty()) NotExact(a, what + ": the existing rows take the value the server stores for " + why);
        }
        t.columns.push_back(std::move(c));
        a.source_of.push_back(-1);
        id.push_back(next_id);
        placing.push_back({&op, next_id++});
        break;
      }
      case OpKind::kDropColumn: {
        int idx = find_existing(op.name);
        if (idx < 0) {
          if (op.if_exists) break;
          return missing(op, op.name);
        }
        size_t k = static_cast<size_t>(idx);
        t.columns.erase(t.columns.begin() + idx);
        a.source_of.erase(a.source_of.begin() + idx);
        id.erase(id.begin() + idx);
        std::erase(t.primary_key, k);
        for (size_t& p : t.primary_key)
          if (p > k) --p;
        break;
      }
      case OpKind::kModifyColumn:
      case OpKind::kChangeColumn: {
        int idx = find_existing(op.name);
        if (idx < 0) {
          if (op.if_exists) break;
          return missing(op, op.name);
        }
        if (!op.column) return Status::Internal("MODIFY/CHANGE COLUMN without a definition");
        ColumnDesc c = *op.column;
        // Without CHARACTER SET, a character column takes the table's default (not its old one).
        if (c.charset.empty() && HasCharset(c.type) && !t.collation.empty()) {
          c.charset = t.collation.substr(0, t.collation.find('_'));
          if (c.collation.empty()) c.collation = t.collation;
        }
        std::string why;
        if (!WideningOrSame(t.columns[idx], c, &why, strict)) NotExact(a, why);
        if (c.type == SqlType::kTimestamp && !op.syntax.null_written && c.default_kind == DefaultKind::kNone &&
            t.columns[idx].nullable)
          NotExact(a, fmt::format("{} `{}` TIMESTAMP saying neither NULL nor DEFAULT: NOT NULL under "
                                  "explicit_defaults_for_timestamp=OFF, which changes the existing NULLs",
                                  OpName(op.kind), c.name));
        if (c.default_kind == DefaultKind::kLiteral) {
          const std::string d = DefaultNotExact(c, op.syntax.default_written, sql_mode);
          if (!d.empty())
            NotExact(a, fmt::format("{} `{}`: the recorded definition would not hold the value the server stores for {}",
                                    OpName(op.kind), c.name, d));
        }
        t.columns[idx] = std::move(c);
        // A changed column of the table stays where it was unless the clause moves it; one the
        // statement adds is taken out and placed again (at the end without FIRST/AFTER).
        if (op.placement != Placement::kDefault || a.source_of[idx] < 0) placing.push_back({&op, id[idx]});
        break;
      }
      case OpKind::kRenameColumn: {
        int idx = find_existing(op.name);
        if (idx < 0) {
          if (op.if_exists) break;
          return missing(op, op.name);
        }
        t.columns[idx].name = op.new_name;
        break;
      }
      case OpKind::kSetDefault: {
        int idx = find_existing(op.name);
        if (idx < 0) return missing(op, op.name);
        if (op.column) {
          t.columns[idx].default_kind = op.column->default_kind;
          t.columns[idx].default_value = op.column->default_value;
          if (op.column->default_kind == DefaultKind::kLiteral) {
            const std::string d = DefaultNotExact(t.columns[idx], op.syntax.default_written, sql_mode);
            if (!d.empty())
              NotExact(a, fmt::format("ALTER COLUMN `{}` SET: the recorded definition would not hold the value the "
                                      "server stores for {}",
                                      t.columns[idx].name, d));
          }
        }
        break;
      }
      case OpKind::kDropDefault: {
        int idx = find_existing(op.name);
        if (idx < 0) return missing(op, op.name);
        t.columns[idx].default_kind = DefaultKind::kNone;
        t.columns[idx].default_value.reset();
        break;
      }
      case OpKind::kSetVisibility: {
        int idx = find_existing(op.name);
        if (idx < 0) return missing(op, op.name);
        if (op.column) t.columns[idx].is_invisible = op.column->is_invisible;
        break;
      }
      case OpKind::kAddPrimaryKey: {
        std::vector<size_t> pk;
        for (const std::string& k : op.key_columns) {
          int idx = Find(t, k);
          if (idx < 0) return missing(op, k);
          pk.push_back(static_cast<size_t>(idx));
        }
        for (size_t k : pk) {
          // Key columns become NOT NULL. A NULL in one fails the statement under a strict
          // sql_mode; otherwise the server turns it into the type's implicit default (0, '')
          // without row events, as MODIFY ... NOT NULL does (WideningOrSame): the table is
          // copied again (a new user's probe: SQLite kept the NULL under the new key, exit 0).
          if (t.columns[k].nullable && !strict)
            NotExact(a, fmt::format("ADD PRIMARY KEY makes `{}` NOT NULL under a non-strict sql_mode: NULLs may have "
                                    "turned into implicit defaults",
                                    t.columns[k].name));
          t.columns[k].nullable = false;
        }
        t.primary_key = std::move(pk);
        break;
      }
      case OpKind::kDropPrimaryKey: t.primary_key.clear(); break;
      case OpKind::kRenameTable:
        t.db = op.new_table.db;
        t.table = op.new_table.table;
        a.renamed = true;
        break;
      case OpKind::kConvertCharset: {
        bool changes = false;
        for (ColumnDesc& c : t.columns) {
          if (!HasCharset(c.type)) continue;
          if (c.charset != op.charset) changes = true;
          c.charset = op.charset;
          c.collation = op.collation;
        }
        t.collation = op.collation.empty() ? op.charset : op.collation;
        if (changes)
          NotExact(a, fmt::format("CONVERT TO CHARACTER SET {}: the server converts the stored text", op.charset));
        break;
      }
      case OpKind::kDefaultCharset:
        t.collation = op.collation.empty() ? op.charset : op.collation;
        break;
      case OpKind::kEngine:
        if (!KeepsRows(op.name))
          NotExact(a, fmt::format("ENGINE={}: an engine sluice does not know to keep the rows (BLACKHOLE keeps none) "
                                  "changes them without row events",
                                  op.name));
        t.engine = op.name;
        break;
      case OpKind::kAddSystemVersioning:
      case OpKind::kDropSystemVersioning:
      case OpKind::kAddPeriod:
      case OpKind::kDropPeriod:
        NotExact(a, fmt::format("{}: system versioning adds or removes hidden columns", OpName(op.kind)));
        break;
      case OpKind::kAddIndex:
      case OpKind::kDropIndex:
      case OpKind::kRenameIndex:
      case OpKind::kAlterIndex:
      case OpKind::kAddForeignKey:
      case OpKind::kDropForeignKey:
      case OpKind::kAddCheck:
      case OpKind::kDropConstraint:
      case OpKind::kAutoIncrement:
      case OpKind::kPartition:
        // DROP and TRUNCATE PARTITION remove rows, EXCHANGE and CONVERT move them between this
        // table and another one, all with no row events (a new user's probe: the replica kept
        // every removed row). ADD, REORGANIZE, COALESCE, PARTITION BY, REMOVE PARTITIONING and
        // the maintenance verbs keep every row.
        if (op.name == "drop" || op.name == "truncate" || op.name == "exchange" || op.name == "convert")
          NotExact(a, fmt::format("{} PARTITION removes or moves rows without row events",
                                  op.name == "drop" ? "DROP" : op.name == "truncate" ? "TRUNCATE"
                                                             : op.name == "exchange" ? "EXCHANGE" : "CONVERT"));
        else if (op.name == "import")
          NotExact(a, "IMPORT PARTITION ... TABLESPACE replaces the partition's rows without row events");
        break;
      case OpKind::kDisableKeys:
        // IMPORT TABLESPACE replaces every row with those of the imported file (a new user's
        // probe: the replica kept the old ones). DISCARD leaves the table unreadable, taking no
        // DML until the IMPORT, which re-reads it.
        if (op.name == "import_tablespace")
          NotExact(a, "IMPORT TABLESPACE replaces the table's rows without row events");
        break;
      case OpKind::kTableOption:
      case OpKind::kRebuild:
        break;  // the rows and their columns stay as they are
    }
  }
  if (!placing.empty()) {
    auto pos_of = [&](int want) {
      for (size_t i = 0; i < id.size(); ++i)
        if (id[i] == want) return static_cast<int>(i);
      return -1;
    };
    std::vector<int> order;  // ids, in the new order
    for (size_t i = 0; i < t.columns.size(); ++i)
      if (a.source_of[i] >= 0) order.push_back(id[i]);
    for (const Placing& p : placing) {
      if (pos_of(p.id) < 0) continue;  // dropped again by a later clause
      std::erase(order, p.id);
      if (p.op->placement == Placement::kFirst) {
        order.insert(order.begin(), p.id);
      } else if (p.op->placement == Placement::kAfter) {
        auto at = std::find_if(order.begin(), order.end(), [&](int k) {
          return SameName(t.columns[static_cast<size_t>(pos_of(k))].name, p.op->after);
        });
        if (at == order.end())
          return Status::FailedPrecondition(fmt::format(
              "table {}: AFTER `{}`: no such column in the definition the statement builds from the recorded one",
              table, p.op->after));
        order.insert(at + 1, p.id);
      } else {
        order.push_back(p.id);
      }
    }
    if (order.size() != t.columns.size()) return Status::Internal("ALTER: column order lost a column");
    std::vector<size_t> new_pos(t.columns.size());
    std::vector<ColumnDesc> columns;
    std::vector<int> source_of;
    for (size_t k = 0; k < order.size(); ++k) {
      const size_t from = static_cast<size_t>(pos_of(order[k]));
      new_pos[from] = k;
      columns.push_back(std::move(t.columns[from]));
      source_of.push_back(a.source_of[from]);
    }
    t.columns = std::move(columns);
    a.source_of = std::move(source_of);
    for (size_t& k : t.primary_key) k = new_pos[k];
  }
  if (t.columns.empty())
    return Status::FailedPrecondition(fmt::format("table {}: the statement leaves no columns", table));
  for (size_t i = 0; i < t.columns.size(); ++i)
    for (size_t j = i + 1; j < t.columns.size(); ++j)
      if (SameName(t.columns[i].name, t.columns[j].name))
        return Status::FailedPrecondition(fmt::format(
            "table {}: the statement leaves two columns named `{}` by the recorded definition", table,
            t.columns[j].name));
  return a;
}

}  // namespace sluice::ddl
