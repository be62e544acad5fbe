// Bytes as hexadecimal text: two digits a byte, the high nibble first.
//
// Shapes: HexDigits("\x01\xab") is "01ab" (upper = false) or "01AB"; SqlHexLiteral gives
// MySQL's hexadecimal string literal X'01AB' (MySQL Reference Manual, "Hexadecimal Literals"),
// which stands for any bytes, including none (X''). Pure; no errors.
#pragma once

#include <string>
#include <string_view>

namespace sluice {

inline void AppendHexDigits(std::string_view bytes, std::string* out, bool upper = false) {
  const char* digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  out->reserve(out->size() + bytes.size() * 2);
  for (unsigned char b : bytes) {
    out->push_back(digits[b >> 4]);
    out->push_back(digits[b & 15]);
  }
}

inline std::string HexDigits(std::string_view bytes, bool upper = false) {
  std::string out;
  AppendHexDigits(bytes, &out, upper);
  return out;
}

inline std::string SqlHexLiteral(std::string_view bytes) {
  std::string out = "X'";
  AppendHexDigits(bytes, &out, /*upper=*/true);
  out.push_back('\'');
  return out;
}

}  // namespace sluice
