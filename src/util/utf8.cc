// UTF-8 (RFC 3629): U+0000..U+007F 1 byte; C2..DF + 1 continuation; E0..EF + 2 (E0 needs
// A0..BF next, ED needs 80..9F: no overlong forms, no surrogates); F0..F4 + 3 (F0 needs
// 90..BF, F4 needs 80..8F: nothing above U+10FFFF). Continuation bytes are 80..BF.
#include "util/utf8.h"

namespace sluice {

size_t Utf8SequenceAt(std::string_view s, size_t i) {
  const auto at = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  if (i >= s.size()) return 0;
  const unsigned char c = at(i);
  if (c < 0x80) return 1;
  const size_t left = s.size() - i;
  const auto cont = [&](size_t k) { return (at(k) & 0xC0) == 0x80; };
  if (c >= 0xC2 && c <= 0xDF) return left >= 2 && cont(i + 1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (left < 3 || !cont(i + 1) || !cont(i + 2)) return 0;
    if (c == 0xE0 && at(i + 1) < 0xA0) return 0;
    if (c == 0xED && at(i + 1) > 0x9F) return 0;
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (left < 4 || !cont(i + 1) || !cont(i + 2) || !cont(i + 3)) return 0;
    if (c == 0xF0 && at(i + 1) < 0x90) return 0;
    if (c == 0xF4 && at(i + 1) > 0x8F) return 0;
    return 4;
  }
  return 0;
}

bool IsValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = Utf8SequenceAt(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string EscapeInvalidUtf8(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t n = Utf8SequenceAt(s, i);
    if (n == 0) {
      const auto b = static_cast<unsigned char>(s[i]);
      out += "\\x";
      out.push_back(kHex[b >> 4]);
      out.push_back(kHex[b & 15]);
      ++i;
    } else {
      out.append(s, i, n);
      i += n;
    }
  }
  return out;
}

std::string PrintableText(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t n = Utf8SequenceAt(s, i);
    if (c == '\\') {
      out += "\\\\";
      ++i;
    } else if (n == 0 || c < 0x20 || c == 0x7f) {
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
      ++i;
    } else {
      out.append(s, i, n);
      i += n;
    }
  }
  return out;
}

std::string EscapeControls(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  auto hex = [&](unsigned char c) {
    out += "\\x";
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  };
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t n = Utf8SequenceAt(s, i);
    if (n == 0 || c < 0x20 || c == 0x7f) {
      hex(c);
      ++i;
    } else if (n == 2 && c == 0xc2 && static_cast<unsigned char>(s[i + 1]) < 0xa0) {
      hex(c);
      hex(static_cast<unsigned char>(s[i + 1]));
      i += 2;
    } else {
      out.append(s, i, n);
      i += n;
    }
  }
  return out;
}

}  // namespace sluice
