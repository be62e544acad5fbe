#include "schema/ddl_apply.h"

#include <algorithm>
#include <cctype>

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

// Moves column `from` to position `to` (indexes before the move), keeping the primary key
// and source_of in step.
void MoveColumn(Applied& a, size_t from, size_t to) {
  if (from == to) return;
  TableSchema& t = a.after;
  ColumnDesc c = std::move(t.columns[from]);
  int src = a.source_of[from];
  t.columns.erase(t.columns.begin() + from);
  a.source_of.erase(a.source_of.begin() + from);
  if (to > from) --to;
  t.columns.insert(t.columns.begin() + to, std::move(c));
  a.source_of.insert(a.source_of.begin() + to, src);
  for (size_t& k : t.primary_key) {
    if (k == from) { k = to; continue; }
    if (k > from) --k;
    if (k >= to) ++k;
  }
}

Status Placed(Applied& a, size_t index, const AlterOp& op, const std::string& table) {
  if (op.placement == Placement::kFirst) {
    MoveColumn(a, index, 0);
  } else if (op.placement == Placement::kAfter) {
    int after = Find(a.after, op.after);
    if (after < 0 || static_cast<size_t>(after) == index) {
      return Status::FailedPrecondition(fmt::format(
          "table {}: AFTER `{}`: no such column in the recorded definition", table, op.after));
    }
    MoveColumn(a, index, static_cast<size_t>(after) + 1);
  }
  return Status::Ok();
}

void NotExact(Applied& a, std::string why) {
  if (a.exact) {
    a.exact = false;
    a.why_not_exact = std::move(why);
  }
}

}  // namespace

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
        t.columns.push_back(std::move(c));
        a.source_of.push_back(-1);
        RETURN_IF_ERROR(Placed(a, t.columns.size() - 1, op, table));
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
        if (!WideningOrSame(t.columns[idx], c, &why, options.strict)) NotExact(a, why);
        t.columns[idx] = std::move(c);
        RETURN_IF_ERROR(Placed(a, static_cast<size_t>(idx), op, table));
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
          // Key columns become NOT NULL; a NULL in one would have failed the statement.
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
      case OpKind::kEngine: t.engine = op.name; break;
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
        break;
      case OpKind::kTableOption:
      case OpKind::kRebuild:
      case OpKind::kDisableKeys:
        break;  // the rows and their columns stay as they are
    }
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
