// UTF-8 validation and escaping for text that must become JSON (or any UTF-8 output) but
// may come from untrusted bytes: names and statements in a binlog file, for instance.
// Pure functions over views; no allocation beyond the returned string; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace sluice {

// Length (1-4) of the valid UTF-8 sequence starting at s[i], or 0 when the bytes there are
// not one (stray continuation byte, overlong form, surrogate, above U+10FFFF, truncated).
size_t Utf8SequenceAt(std::string_view s, size_t i);

bool IsValidUtf8(std::string_view s);

// `s` with each byte that is not part of a valid UTF-8 sequence written as the four
// characters \xNN (upper-case hex); valid text is returned unchanged. The result is always
// valid UTF-8, so it can be dumped as JSON without error.
std::string EscapeInvalidUtf8(std::string_view s);

// `s` for a line of a report or a log: control characters (NUL and newline included: such
// lines are printed as C strings, one a line), DEL and bytes that are not part of a valid UTF-8
// sequence as \xNN (lower-case hex), backslashes doubled; valid printable UTF-8 unchanged.
// The result is valid UTF-8 without control characters.
std::string PrintableText(std::string_view s);

// `s` for one line of a log or a terminal, where a message may quote what a server or a
// source name holds: C0 control characters (tab, newline, CR and ESC included), DEL, the C1
// controls U+0080..U+009F (their UTF-8 bytes: some terminals obey them as ESC sequences) and
// bytes that are not valid UTF-8 become \xNN (lower-case hex). Unlike PrintableText,
// backslashes stay as they are, so a message that holds none of these reads unchanged. The
// result holds no control character: it cannot start a second line or move the cursor.
std::string EscapeControls(std::string_view s);

}  // namespace sluice
