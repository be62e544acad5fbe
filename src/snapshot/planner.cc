#include "snapshot/planner.h"

#include <algorithm>
#include <charconv>
#include <optional>

#include "mysql/key_literal.h"
#include "schema/column_type.h"
#include "schema/text_value.h"
#include "util/log.h"

namespace sluice {
namespace {

std::string Qualified(const TableSchema& s) {
  return QuoteIdentifier(s.db) + "." + QuoteIdentifier(s.table);
}

Result<uint64_t> ParseCount(const QueryResult& r, std::string_view what) {
  if (r.rows.size() != 1 || r.rows[0].empty() || !r.rows[0][0]) return uint64_t{0};
  const std::string& t = *r.rows[0][0];
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || p != t.data() + t.size())
    return Status::Corruption(fmt::format("{}: not a count: '{}'", what, t));
  return v;
}

__extension__ typedef __int128 I128;
__extension__ typedef unsigned __int128 U128;

// 128-bit signed text conversions for integer keys (the values fit: at most 2^64-1).
bool ParseI128(const std::string& t, I128* out) {
  std::string_view s = t;
  bool neg = !s.empty() && s[0] == '-';
  if (neg) s.remove_prefix(1);
  if (s.empty() || s.size() > 20) return false;
  I128 v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = neg ? -v : v;
  return true;
}

std::string I128Text(I128 v) {
  if (v == 0) return "0";
  bool neg = v < 0;
  U128 u = neg ? static_cast<U128>(-v) : static_cast<U128>(v);
  std::string s;
  while (u > 0) {
    s.push_back(static_cast<char>('0' + static_cast<int>(u % 10)));
    u /= 10;
  }
  if (neg) s.push_back('-');
  return {s.rbegin(), s.rend()};
}

std::vector<RangeProgress> FromBoundaries(const std::vector<KeyTexts>& bounds) {
  std::vector<RangeProgress> out;
  KeyTexts lower;
  for (const KeyTexts& b : bounds) {
    RangeProgress r;
    r.lower = lower;
    r.upper = b;
    out.push_back(std::move(r));
    lower = b;
  }
  RangeProgress last;
  last.lower = lower;
  out.push_back(std::move(last));
  return out;
}

// The optimizer's estimate of the rows with lo < key <= hi (EXPLAIN: index dives, no scan);
// nullopt when the server gives none.
Result<std::optional<uint64_t>> EstimateRange(Connection& conn, const TableSchema& s, const std::string& key,
                                              I128 lo, I128 hi) {
  ASSIGN_OR_RETURN(QueryResult r, conn.Query(fmt::format("EXPLAIN SELECT {0} FROM {1} WHERE {0} > {2} AND {0} <= {3}",
                                                         key, Qualified(s), I128Text(lo), I128Text(hi))));
  const int col = r.ColumnIndex("rows");
  if (col < 0 || r.rows.size() != 1 || !r.rows[0][col]) return std::optional<uint64_t>{};
  uint64_t est = 0;
  const std::string& t = *r.rows[0][col];
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), est);
  if (ec != std::errc() || p != t.data() + t.size()) return std::optional<uint64_t>{};
  return std::optional<uint64_t>(est);
}

// Integer keys: n ranges by value between MIN and MAX, then checked against the optimizer's
// estimates. Values clustered with a few far away (ids 1..1M and one at 2^62; all near 2^64 and
// one at 0) put nearly every row in one range by value, read by one worker while the others
// idle. When one range's estimate exceeds 2.5 times the mean and chunk_rows, the ranges are
// refined by value where the rows are: a piece estimated above rows / n is split in 8 by value
// (about 8 EXPLAINs per split; InnoDB caps a range's estimate near half the table, so a capped
// piece splits too), and the pieces are then joined in order into n ranges of about equal
// estimates. Bounded at 2000 EXPLAINs (then the split by value stands). Boundaries are
// integers, not necessarily keys; nothing is scanned.
Result<std::vector<KeyTexts>> IntegerBoundaries(Connection& conn, const TableSchema& s, size_t n, uint64_t rows,
                                                uint64_t chunk_rows, bool* refined) {
  *refined = false;
  const std::string k = QuoteIdentifier(s.columns[s.primary_key[0]].name);
  ASSIGN_OR_RETURN(QueryResult r,
                   conn.Query(fmt::format("SELECT MIN({0}), MAX({0}) FROM {1}", k, Qualified(s))));
  if (r.rows.size() != 1 || r.rows[0].size() != 2 || !r.rows[0][0] || !r.rows[0][1])
    return std::vector<KeyTexts>{};  // empty table
  I128 lo = 0, hi = 0;
  if (!ParseI128(*r.rows[0][0], &lo) || !ParseI128(*r.rows[0][1], &hi))
    return Status::Corruption(fmt::format("{}: MIN/MAX of key {} are not integers: {} / {}",
                                          s.QualifiedName(), k, *r.rows[0][0], *r.rows[0][1]));
  std::vector<I128> by_value;
  for (size_t i = 1; i < n; ++i) {
    I128 b = lo + (hi - lo) * static_cast<I128>(i) / static_cast<I128>(n);
    if (b >= hi) break;
    if (!by_value.empty() && by_value.back() == b) continue;
    by_value.push_back(b);
  }
  auto texts = [](const std::vector<I128>& bs) {
    std::vector<KeyTexts> out;
    for (I128 b : bs) out.push_back({I128Text(b)});
    return out;
  };
  if (by_value.size() < 2) return texts(by_value);

  struct Piece {
    I128 lo, hi;  // lo < key <= hi
    uint64_t est;
  };
  std::vector<Piece> pieces;
  int explains = 0;
  uint64_t sum = 0, most = 0;
  for (size_t i = 0; i <= by_value.size(); ++i) {
    const I128 a = i == 0 ? lo - 1 : by_value[i - 1], b = i == by_value.size() ? hi : by_value[i];
    ASSIGN_OR_RETURN(std::optional<uint64_t> est, EstimateRange(conn, s, k, a, b));
    ++explains;
    if (!est) return texts(by_value);
    pieces.push_back({a, b, *est});
    sum += *est;
    most = std::max(most, *est);
  }
  const double mean = static_cast<double>(sum) / static_cast<double>(pieces.size());
  if (most <= chunk_rows || static_cast<double>(most) <= 2.5 * mean) return texts(by_value);

  const uint64_t target = std::max<uint64_t>(1, rows / n);
  constexpr int kMaxExplains = 2000, kSplit = 8;
  for (size_t i = 0; i < pieces.size();) {
    const Piece p = pieces[i];
    if (p.est <= target || p.hi - p.lo < 2) {
      ++i;
      continue;
    }
    if (explains + kSplit > kMaxExplains) return texts(by_value);
    std::vector<Piece> parts;
    I128 a = p.lo;
    for (int j = 1; j <= kSplit; ++j) {
      const I128 b = j == kSplit ? p.hi : p.lo + (p.hi - p.lo) * j / kSplit;
      if (b <= a) continue;
      ASSIGN_OR_RETURN(std::optional<uint64_t> est, EstimateRange(conn, s, k, a, b));
      ++explains;
      if (!est) return texts(by_value);
      parts.push_back({a, b, *est});
      a = b;
    }
    // Split in place; the parts are looked at again from the first.
    pieces.erase(pieces.begin() + static_cast<std::ptrdiff_t>(i));
    pieces.insert(pieces.begin() + static_cast<std::ptrdiff_t>(i), parts.begin(), parts.end());
  }
  uint64_t total = 0;
  for (const Piece& p : pieces) total += p.est;
  const double share = static_cast<double>(total) / static_cast<double>(n);
  std::vector<I128> bounds;
  double acc = 0;
  for (size_t i = 0; i + 1 < pieces.size() && bounds.size() + 1 < n; ++i) {
    acc += static_cast<double>(pieces[i].est);
    if (acc >= share * static_cast<double>(bounds.size() + 1)) bounds.push_back(pieces[i].hi);
  }
  *refined = true;
  return texts(bounds);
}

Result<std::vector<KeyTexts>> SampledBoundaries(Connection& conn, const TableSchema& s, size_t n,
                                                uint64_t rows) {
  const uint64_t stride = std::max<uint64_t>(1, (rows + n - 1) / n);
  std::string select;
  for (size_t k = 0; k < s.primary_key.size(); ++k) {
    if (k > 0) select += ", ";
    select += SnapshotSelectExpr(s.columns[s.primary_key[k]]);
  }
  const std::string key_cols = KeyColumnsTuple(s);
  std::vector<KeyTexts> bounds;
  while (bounds.size() + 1 < n) {
    std::string sql = "SELECT " + select + " FROM " + Qualified(s);
    if (!bounds.empty()) {
      ASSIGN_OR_RETURN(std::string prev, KeyTuple(conn, s, bounds.back(), /*standalone=*/false));
      sql += " WHERE " + key_cols + " > " + prev;
    }
    sql += fmt::format(" ORDER BY {} LIMIT 1 OFFSET {}", KeyColumnsList(s), stride - 1);
    ASSIGN_OR_RETURN(QueryResult r, conn.Query(sql));
    if (r.rows.empty()) break;
    KeyTexts key;
    for (size_t k = 0; k < s.primary_key.size(); ++k) {
      const ColumnDesc& col = s.columns[s.primary_key[k]];
      std::optional<std::string_view> cell;
      if (r.rows[0][k]) cell = std::string_view(*r.rows[0][k]);
      ASSIGN_OR_RETURN(Value v, ValueFromText(col, cell));
      if (v.is_null())
        return Status::Corruption(fmt::format("{}: primary key column {} is NULL",
                                              s.QualifiedName(), col.name));
      key.push_back(v.ToText());
    }
    bounds.push_back(std::move(key));
  }
  return bounds;
}

}  // namespace

Result<TablePlan> PlanTable(Connection& conn, const TableSchema& schema, const PlanOptions& options) {
  TablePlan plan;
  ASSIGN_OR_RETURN(QueryResult est,
                   conn.Query(fmt::format("SELECT TABLE_ROWS FROM information_schema.TABLES "
                                          "WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {}",
                                          conn.Quote(schema.db), conn.Quote(schema.table))));
  ASSIGN_OR_RETURN(plan.expected_rows, ParseCount(est, schema.QualifiedName() + " TABLE_ROWS"));
  if (plan.expected_rows < options.exact_count_max_rows) {
    ASSIGN_OR_RETURN(QueryResult cnt, conn.Query("SELECT COUNT(*) FROM " + Qualified(schema)));
    ASSIGN_OR_RETURN(plan.expected_rows, ParseCount(cnt, schema.QualifiedName() + " COUNT(*)"));
    plan.exact_count = true;
  }
  size_t n = 1;
  if (options.parallel && schema.has_primary_key() && options.chunk_rows > 0) {
    uint64_t want = (plan.expected_rows + options.chunk_rows - 1) / options.chunk_rows;
    n = static_cast<size_t>(std::clamp<uint64_t>(want, 1, std::max<uint32_t>(1, options.max_ranges_per_table)));
  }
  if (n == 1 || !schema.has_primary_key()) {
    plan.ranges.emplace_back();
    return plan;
  }
  std::vector<KeyTexts> bounds;
  if (schema.primary_key.size() == 1 && IsIntegerType(schema.columns[schema.primary_key[0]].type)) {
    bool refined = false;
    ASSIGN_OR_RETURN(bounds, IntegerBoundaries(conn, schema, n, plan.expected_rows, options.chunk_rows, &refined));
    if (refined)
      LogInfo("snapshot: {}: its key's values are clustered (split evenly by value, one range would hold most "
              "rows): ranges placed by the optimizer's estimates instead",
              schema.QualifiedName());
  } else {
    ASSIGN_OR_RETURN(bounds, SampledBoundaries(conn, schema, n, plan.expected_rows));
  }
  plan.ranges = FromBoundaries(bounds);
  return plan;
}

}  // namespace sluice
