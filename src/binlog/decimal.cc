// DECIMAL binary form decoder. See decimal.h for the grammar (MySQL strings/decimal.cc).
#include "binlog/decimal.h"

#include <fmt/format.h>

namespace sluice::binlog {
namespace {

constexpr int kDigitsPerGroup = 9;
constexpr int kDig2Bytes[10] = {0, 1, 1, 2, 2, 3, 3, 4, 4, 4};
constexpr uint32_t kPow10[10] = {1,      10,      100,      1000,      10000,
                                 100000, 1000000, 10000000, 100000000, 1000000000};

bool ValidArgs(int precision, int scale) {
  // MySQL: precision 1..65, scale 0..30; MariaDB allows scale up to 38.
  return precision >= 1 && precision <= 65 && scale >= 0 && scale <= 38 && scale <= precision;
}

}  // namespace

size_t DecimalBinarySize(int precision, int scale) {
  if (!ValidArgs(precision, scale)) return 0;
  int intg = precision - scale;
  int intg0 = intg / kDigitsPerGroup, intg0x = intg % kDigitsPerGroup;
  int frac0 = scale / kDigitsPerGroup, frac0x = scale % kDigitsPerGroup;
  return static_cast<size_t>(intg0 * 4 + kDig2Bytes[intg0x] + frac0 * 4 + kDig2Bytes[frac0x]);
}

Result<std::string> DecimalToString(std::span<const uint8_t> bin, int precision, int scale) {
  if (!ValidArgs(precision, scale))
    return Status::Corruption(fmt::format("invalid DECIMAL({},{})", precision, scale));
  const size_t size = DecimalBinarySize(precision, scale);
  if (bin.size() < size)
    return Status::Corruption(fmt::format("DECIMAL({},{}) needs {} bytes, {} given", precision,
                                          scale, size, bin.size()));
  const bool negative = (bin[0] & 0x80) == 0;
  const uint8_t mask = negative ? 0xFF : 0x00;
  size_t pos = 0;
  // Reads one group of `digits` digits (n bytes), checks its range, appends zero-padded.
  auto group = [&](int digits, std::string* out) -> Status {
    const int n = digits == kDigitsPerGroup ? 4 : kDig2Bytes[digits];
    uint32_t v = 0;
    for (int i = 0; i < n; ++i) {
      uint8_t b = bin[pos + i];
      if (pos + i == 0) b ^= 0x80;
      v = (v << 8) | static_cast<uint8_t>(b ^ mask);
    }
    pos += n;
    if (v >= kPow10[digits])
      return Status::Corruption(fmt::format("DECIMAL({},{}) group value {} exceeds {} digits",
                                            precision, scale, v, digits));
    out->append(fmt::format("{:0{}}", v, digits));
    return Status::Ok();
  };
  const int intg = precision - scale;
  std::string int_digits, frac_digits;
  if (intg % kDigitsPerGroup) RETURN_IF_ERROR(group(intg % kDigitsPerGroup, &int_digits));
  for (int i = 0; i < intg / kDigitsPerGroup; ++i) RETURN_IF_ERROR(group(kDigitsPerGroup, &int_digits));
  for (int i = 0; i < scale / kDigitsPerGroup; ++i) RETURN_IF_ERROR(group(kDigitsPerGroup, &frac_digits));
  if (scale % kDigitsPerGroup) RETURN_IF_ERROR(group(scale % kDigitsPerGroup, &frac_digits));

  size_t first = int_digits.find_first_not_of('0');
  std::string int_part = first == std::string::npos ? "0" : int_digits.substr(first);
  bool zero = first == std::string::npos && frac_digits.find_first_not_of('0') == std::string::npos;
  std::string out;
  out.reserve(int_part.size() + frac_digits.size() + 2);
  if (negative && !zero) out.push_back('-');
  out += int_part;
  if (scale > 0) {
    out.push_back('.');
    out += frac_digits;
  }
  return out;
}

Result<std::string> ReadDecimal(ByteReader& r, int precision, int scale) {
  const size_t size = DecimalBinarySize(precision, scale);
  if (size == 0) return r.Error(fmt::format("invalid DECIMAL({},{}) metadata", precision, scale));
  ASSIGN_OR_RETURN(auto bytes, r.ReadBytes(size));
  return DecimalToString(bytes, precision, scale);
}

}  // namespace sluice::binlog
