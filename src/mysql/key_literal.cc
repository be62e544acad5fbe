#include "mysql/key_literal.h"

#include <cmath>
#include <cstdlib>

#include "schema/column_type.h"
#include "schema/text_value.h"
#include "util/hex.h"

namespace sluice {

namespace {

bool IsDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

bool IsInteger(std::string_view s) {
  if (!s.empty() && s[0] == '-') s.remove_prefix(1);
  return IsDigits(s);
}

bool IsDecimal(std::string_view s) {
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  size_t dot = s.find('.');
  if (dot == std::string_view::npos) return IsDigits(s);
  return IsDigits(s.substr(0, dot)) && (dot + 1 == s.size() || IsDigits(s.substr(dot + 1)));
}

bool IsFloatingText(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  std::string z(s);
  char* end = nullptr;
  double d = std::strtod(z.c_str(), &end);
  return end == z.c_str() + z.size() && std::isfinite(d);
}




}  // namespace

Result<std::string> KeyLiteral(Connection& conn, const ColumnDesc& col, std::string_view text) {
  auto bad = [&]() {
    return Status::InvalidArgument(fmt::format(
        "resume key '{}' does not fit column {} ({})", text.substr(0, 64), col.name,
        col.column_type.empty() ? col.data_type : col.column_type));
  };
  const SqlType t = col.type;
  if (IsIntegerType(t) || t == SqlType::kYear || t == SqlType::kBit) {
    if (!IsInteger(text)) return bad();
    return std::string(text);
  }
  if (t == SqlType::kDecimal) {
    if (!IsDecimal(text)) return bad();
    return std::string(text);
  }
  if (t == SqlType::kFloat) {
    if (!IsFloatingText(text)) return bad();
    return fmt::format("CAST({} AS FLOAT)", text);
  }
  if (t == SqlType::kDouble) {
    if (!IsFloatingText(text)) return bad();
    std::string lit(text);
    if (lit.find_first_of("eE") == std::string::npos) lit += "e0";  // a DOUBLE literal
    return lit;
  }
  if (t == SqlType::kEnum) {
    for (size_t i = 0; i < col.labels.size(); ++i)
      if (col.labels[i] == text) return std::to_string(i + 1);
    if (text.empty()) return std::string("0");  // the '' error value of non-strict inserts
    return bad();
  }
  if (t == SqlType::kSet) {
    uint64_t mask = 0;
    std::string_view rest = text;
    while (!rest.empty()) {
      size_t comma = rest.find(',');
      std::string_view member = rest.substr(0, comma);
      bool found = false;
      for (size_t i = 0; i < col.labels.size() && i < 64; ++i)
        if (col.labels[i] == member) {
          mask |= uint64_t{1} << i;
          found = true;
        }
      if (!found) return bad();
      if (comma == std::string_view::npos) break;
      rest = rest.substr(comma + 1);
    }
    return std::to_string(mask);
  }
  if (col.charset == "binary" || IsBinaryType(t))
    return SqlHexLiteral(text);
  return conn.Quote(text);
}

Result<std::string> StandaloneKeyLiteral(Connection& conn, const ColumnDesc& col,
                                         std::string_view text) {
  const SqlType t = col.type;
  if (IsTemporalType(t)) {
    std::string type = t == SqlType::kDate ? "DATE" : t == SqlType::kTime ? "TIME" : "DATETIME";
    if (t != SqlType::kDate) type += fmt::format("({})", col.fsp);
    return fmt::format("CAST({} AS {})", conn.Quote(text), type);
  }
  if (IsFixedBinaryTextType(t)) {
    const char* type = t == SqlType::kUuid ? "UUID" : t == SqlType::kInet4 ? "INET4" : "INET6";
    return fmt::format("CAST({} AS {})", conn.Quote(text), type);
  }
  Result<std::string> lit = KeyLiteral(conn, col, text);
  // Not ASSIGN_OR_RETURN: gcc 12 took the moved-into string for uninitialized here.
  if (!lit.ok() || !lit->starts_with('\'') || col.charset.empty() || col.charset == "binary") return lit;
  // A text column: key texts are UTF-8 (sluice reads with SET NAMES utf8mb4 and decodes the
  // binlog's strings to UTF-8), so the literal is that text converted to the column's charset,
  // compared under its collation. `_latin1 X'<UTF-8 bytes>'` read the bytes as latin1: 'ü'
  // became 'Ã¼' and sorted after 'å' (a new user's probe: changes judged against another
  // range's point were lost).
  const std::string utf8 = "_utf8mb4 " + SqlHexLiteral(text);
  std::string out = col.charset == "utf8mb4" ? utf8 : "CONVERT(" + utf8 + " USING " + col.charset + ")";
  if (!col.collation.empty()) out += " COLLATE " + col.collation;
  return out;
}

Result<std::string> KeyTuple(Connection& conn, const TableSchema& schema,
                             const std::vector<std::string>& key, bool standalone) {
  const size_t n = schema.primary_key.size();
  if (key.size() != n)
    return Status::InvalidArgument(fmt::format("key for {} has {} values, the primary key has {} columns",
                                               schema.QualifiedName(), key.size(), n));
  std::string out;
  for (size_t k = 0; k < n; ++k) {
    size_t idx = schema.primary_key[k];
    if (idx >= schema.columns.size())
      return Status::Internal(schema.QualifiedName() + ": primary key index out of range");
    const ColumnDesc& col = schema.columns[idx];
    ASSIGN_OR_RETURN(std::string lit, standalone ? StandaloneKeyLiteral(conn, col, key[k])
                                                 : KeyLiteral(conn, col, key[k]));
    if (k > 0) out += ", ";
    out += lit;
  }
  return n > 1 ? "(" + out + ")" : out;
}

std::string KeyColumnsList(const TableSchema& schema) {
  std::string out;
  for (size_t k = 0; k < schema.primary_key.size(); ++k) {
    if (k > 0) out += ", ";
    out += QuoteIdentifier(schema.columns[schema.primary_key[k]].name);
  }
  return out;
}

std::string KeyColumnsTuple(const TableSchema& schema) {
  std::string list = KeyColumnsList(schema);
  return schema.primary_key.size() > 1 ? "(" + list + ")" : list;
}

Result<size_t> LocateKey(Connection& conn, const TableSchema& schema,
                         const std::vector<std::string>& key,
                         const std::vector<std::vector<std::string>>& ends) {
  if (ends.empty()) return Status::InvalidArgument("LocateKey: no ranges");
  if (ends.size() == 1) return size_t{0};
  ASSIGN_OR_RETURN(std::string k, KeyTuple(conn, schema, key, /*standalone=*/true));
  std::string sql = "SELECT ";
  size_t bounded = 0;
  for (size_t i = 0; i < ends.size(); ++i) {
    if (ends[i].empty()) {
      if (i + 1 != ends.size())
        return Status::InvalidArgument("LocateKey: only the last range may be unbounded");
      break;
    }
    ASSIGN_OR_RETURN(std::string e, KeyTuple(conn, schema, ends[i], /*standalone=*/true));
    if (bounded > 0) sql += ", ";
    sql += k + " <= " + e;
    ++bounded;
  }
  ASSIGN_OR_RETURN(QueryResult r, conn.Query(sql));
  if (r.rows.size() != 1 || r.rows[0].size() != bounded)
    return Status::Internal(fmt::format("LocateKey: unexpected result shape for {}", schema.QualifiedName()));
  for (size_t i = 0; i < bounded; ++i) {
    const TextCell& c = r.rows[0][i];
    if (!c) return Status::InvalidArgument(fmt::format(
                "LocateKey: the server could not compare a key of {} (NULL)", schema.QualifiedName()));
    if (*c == "1") return i;
  }
  if (bounded == ends.size())
    return Status::InvalidArgument(fmt::format("LocateKey: a key of {} lies after the last range end",
                                               schema.QualifiedName()));
  return bounded;
}

}  // namespace sluice
