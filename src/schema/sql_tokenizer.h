// SQL tokenizer for the DDL parser (schema/ddl.h): MySQL/MariaDB lexical rules.
//
//   identifiers   bare (letters, digits, _, $, bytes >= 0x80; may start with a digit when
//                 not all digits) or `back quoted` with `` for a backtick; "double quoted"
//                 text is a string (the server's default), or, with `ansi_quotes` (the
//                 statement's sql_mode has ANSI_QUOTES), an identifier with "" for a quote
//   strings       '...' or "...", '' / "" and backslash escapes (\n \t \r \0 \Z \b, \x -> x);
//                 an introducer (_utf8mb4'..', N'..') yields the string; adjacent strings
//                 are kept as separate tokens
//   numbers       123, 1.5, .5, 1e-3, 0x1F, X'1F', b'101', 0b101 (text kept as written)
//   comments      -- to end of line (the "--" must be followed by a space or control char),
//                 # to end of line, /* ... */ skipped; /*! ... */ and /*!NNNNN ... */ and
//                 MariaDB /*M!NNNNNN ... */ contribute their content when NNNNN <= the
//                 `server_version` given (MySQL style number, e.g. 80030, 100611), else skipped
//   punctuation   ( ) , ; . = @ and operator characters, one token each (@@ and := as one)
// Errors: kInvalidArgument naming the byte offset for an unterminated string, quoted
// identifier or comment.
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace sluice::sql {

enum class TokenKind : uint8_t { kWord, kQuotedIdent, kString, kNumber, kPunct };

// Whether `a` and `b` are equal ignoring ASCII case (SQL keywords; identifiers compared as
// MySQL compares column and alias names).
bool EqualsIgnoreAsciiCase(std::string_view a, std::string_view b);
// `s` with ASCII letters in lower case (how sluice folds names where the server ignores case:
// lower_case_table_names; other letters are left as they are).
std::string AsciiLower(std::string_view s);

struct Token {
  TokenKind kind;
  std::string text;   // unquoted / unescaped value; words as written (case kept)
  size_t offset = 0;  // byte offset in the statement

  // Case-insensitive keyword test; only kWord tokens match.
  bool Is(std::string_view keyword) const;
  bool IsPunct(char c) const { return kind == TokenKind::kPunct && text.size() == 1 && text[0] == c; }
  // A name: a bare word or a `quoted` identifier.
  bool IsName() const { return kind == TokenKind::kWord || kind == TokenKind::kQuotedIdent; }
};

inline constexpr uint32_t kAnyServerVersion = 999999;

Result<std::vector<Token>> Tokenize(std::string_view sql, uint32_t server_version = kAnyServerVersion,
                                    bool ansi_quotes = false);

}  // namespace sluice::sql
