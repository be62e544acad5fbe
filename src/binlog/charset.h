// Character sets of MySQL/MariaDB string columns: collation id -> charset name, and
// conversion of column bytes to UTF-8 (the canonical text form, core/value.h).
//
// The id table covers every collation of MariaDB 10.11 (generated from its
// information_schema.COLLATIONS) plus the MySQL 8.0 ids MariaDB lacks (76
// utf8mb3_tolower_ci, 248-250 gb18030, 255-323 utf8mb4_0900_*). Names are the server's
// CHARACTER_SET_NAME ("utf8mb4", "latin1", "binary", ...).
// Conversion: utf8mb3/utf8mb4 are validated only; latin1 uses MySQL's latin1 (cp1252
// with 0x81 0x8D 0x8F 0x90 0x9D passed through as U+0081..., as the server converts it);
// "binary" returns the bytes unchanged; sjis is MariaDB's (ASCII below 0x80, 0x815F = '\\'),
// keybcs2 uses a table read from MariaDB; every other charset goes through glibc iconv.
// Sources: MariaDB strings/ctype-*.c, MySQL strings/ctype-latin1.cc (cs_to_uni table).
// Errors: kCorruption for bytes that are invalid in the charset, kNotSupported for a
// charset iconv does not know. Pure; thread-safe (an iconv handle per call).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "util/status.h"

namespace sluice::binlog {

inline constexpr uint32_t kBinaryCollationId = 63;

// Charset name of a collation id, or "" when the id is unknown.
std::string_view CharsetForCollation(uint32_t collation_id);

// True for the charsets whose bytes already are UTF-8 (utf8mb3, utf8mb4, utf8).
bool IsUtf8Charset(std::string_view charset);

// Converts `bytes` in `charset` to UTF-8. "binary" returns the bytes as they are.
Result<std::string> ToUtf8(std::string_view charset, std::string_view bytes);

// True when `s` is well-formed UTF-8 (no overlongs, surrogates or code points > U+10FFFF).
bool IsValidUtf8(std::string_view s);

}  // namespace sluice::binlog
