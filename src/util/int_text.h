// Decimal text of 64-bit integers written through a raw pointer, for the hot JSON line paths.
//
// Shapes: WriteDecimal(v, w) writes the digits of `v` (a leading '-' for negative signed values,
// no padding) at `w` and returns one past the last byte written. The caller guarantees at least
// 20 bytes of room (unsigned) or 20 bytes (signed: '-' plus 19 digits); nothing else is checked.
// The text is exactly std::to_chars's (base 10), which util/int_text_test.cc checks at every
// width and at the edges.
//
// Why not std::to_chars: libstdc++'s counts the digits with a loop of divisions and checks the
// room before writing; here the length comes from the bit width and a table of powers of ten,
// and two digits are written per division by 100. The stream's row images are mostly integers
// of 1-10 digits, one call per column per row.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace sluice {

namespace int_text_detail {

inline constexpr char kDigitPairs[201] =
    "00010203040506070809"
    "10111213141516171819"
    "20212223242526272829"
    "30313233343536373839"
    "40414243444546474849"
    "50515253545556575859"
    "60616263646566676869"
    "70717273747576777879"
    "80818283848586878889"
    "90919293949596979899";

inline constexpr uint64_t kPow10[20] = {1ULL,
                                        10ULL,
                                        100ULL,
                                        1000ULL,
                                        10000ULL,
                                        100000ULL,
                                        1000000ULL,
                                        10000000ULL,
                                        100000000ULL,
                                        1000000000ULL,
                                        10000000000ULL,
                                        100000000000ULL,
                                        1000000000000ULL,
                                        10000000000000ULL,
                                        100000000000000ULL,
                                        1000000000000000ULL,
                                        10000000000000000ULL,
                                        100000000000000000ULL,
                                        1000000000000000000ULL,
                                        10000000000000000000ULL};

// Number of decimal digits of v (1 for 0): bit_width * log10(2) estimates it to within one.
inline unsigned DecimalDigits(uint64_t v) {
  const unsigned t = (static_cast<unsigned>(std::bit_width(v | 1)) * 1233) >> 12;
  return t + (v >= kPow10[t] ? 1 : 0);
}

}  // namespace int_text_detail

inline char* WriteDecimal(uint64_t v, char* w) {
  using namespace int_text_detail;
  if (v < 10) {
    *w = static_cast<char>('0' + v);
    return w + 1;
  }
  const unsigned n = DecimalDigits(v);
  char* p = w + n;
  while (v >= 100) {
    const auto i = static_cast<unsigned>(v % 100) * 2;
    v /= 100;
    p -= 2;
    std::memcpy(p, kDigitPairs + i, 2);
  }
  if (v >= 10) {
    std::memcpy(p - 2, kDigitPairs + v * 2, 2);
  } else {
    p[-1] = static_cast<char>('0' + v);
  }
  return w + n;
}

inline char* WriteDecimal(int64_t v, char* w) {
  // The magnitude in unsigned arithmetic: -INT64_MIN does not fit in int64_t.
  uint64_t u = static_cast<uint64_t>(v);
  if (v < 0) {
    *w++ = '-';
    u = 0 - u;
  }
  return WriteDecimal(u, w);
}

}  // namespace sluice
