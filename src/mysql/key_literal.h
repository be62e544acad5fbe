// Primary-key values as SQL: literals for keyset pagination and range bounds, and the
// server-side location of a key among range ends.
//
// Keys travel as canonical texts (Value::ToText of each key column, checkpoint KeyTexts).
// sluice never orders or compares keys itself: every comparison is written as SQL and the
// server decides, under the column's own type and collation.
//
// KeyLiteral(col, text)          the literal to compare with the column itself
//                                (`col > lit`): integers/decimals bare, FLOAT as
//                                CAST(x AS FLOAT), DOUBLE as a double literal, ENUM by index,
//                                SET by bit mask, binary strings as X'..', everything else as
//                                a quoted string (the column's type and collation apply).
// StandaloneKeyLiteral(col, text) the literal typed on its own, for comparisons with no
//                                column present (two literals): text columns as
//                                CONVERT(_utf8mb4 X'..' USING <column charset>) COLLATE
//                                <column collation> (the text is UTF-8), temporal columns
//                                as CAST('..' AS DATETIME(6)) etc., MariaDB UUID/INET as
//                                CAST('..' AS UUID) etc.; the rest as KeyLiteral.
// KeyTuple                        one literal, or a row value (l1, l2, ...) for composite keys.
// LocateKey                       asks the server which of the ordered range ends holds a key.
//
// Errors: kInvalidArgument when a text does not fit its column (named, text cut to 64 bytes);
// connection errors as in connection.h.
// Thread safety: stateless; `conn` is used by one thread at a time.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "mysql/connection.h"
#include "schema/table_schema.h"
#include "util/status.h"

namespace sluice {

Result<std::string> KeyLiteral(Connection& conn, const ColumnDesc& col, std::string_view text);
Result<std::string> StandaloneKeyLiteral(Connection& conn, const ColumnDesc& col,
                                         std::string_view text);

// `key` holds one text per primary-key column of `schema` (kInvalidArgument otherwise).
Result<std::string> KeyTuple(Connection& conn, const TableSchema& schema,
                             const std::vector<std::string>& key, bool standalone);
// The primary-key columns as `k` or `(k1, k2)`, and as an ORDER BY list `k1, k2`.
std::string KeyColumnsTuple(const TableSchema& schema);
std::string KeyColumnsList(const TableSchema& schema);

// The index of the first of `ends` (inclusive upper ends in increasing key order; an empty
// end means "no bound" and must be last) that `key` is <= to, in one query. `key` and every
// non-empty end hold one text per key column.
Result<size_t> LocateKey(Connection& conn, const TableSchema& schema,
                         const std::vector<std::string>& key,
                         const std::vector<std::vector<std::string>>& ends);

}  // namespace sluice
