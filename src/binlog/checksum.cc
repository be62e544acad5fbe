// CRC32 footer check; see checksum.h for the format. Crc32 uses PCLMULQDQ folding on
// x86-64 CPUs that have it (several GB/s), zlib's crc32 otherwise and for the tail.
#include "binlog/checksum.h"

#include <zlib.h>

#include <array>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <fmt/format.h>

#include "binlog/event_header.h"

namespace sluice::binlog {

namespace {

// Slicing-by-8 tables for tails under 16 bytes (and short inputs without PCLMULQDQ), where
// zlib's per-call setup costs more than the bytes: kCrcTables[0][b] is the register after
// shifting byte b through (reflected polynomial 0xEDB88320); kCrcTables[k][b] after
// shifting b and then k zero bytes.
constexpr std::array<std::array<uint32_t, 256>, 8> MakeCrcTables() {
  std::array<std::array<uint32_t, 256>, 8> t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t c = b;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0xEDB88320u : c >> 1;
    t[0][b] = c;
  }
  for (size_t k = 1; k < 8; ++k)
    for (uint32_t b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xFF];
  return t;
}
constexpr std::array<std::array<uint32_t, 256>, 8> kCrcTables = MakeCrcTables();

uint32_t ZlibCrc32(uint32_t crc, const uint8_t* p, size_t n) {
  if (n < 64) {
    const auto& t = kCrcTables;
    uint32_t reg = ~crc;
    for (; n >= 8; p += 8, n -= 8) {
      const uint32_t lo = reg ^ (uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 |
                                 uint32_t{p[3]} << 24);
      reg = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^ t[4][lo >> 24] ^
            t[3][p[4]] ^ t[2][p[5]] ^ t[1][p[6]] ^ t[0][p[7]];
    }
    for (size_t i = 0; i < n; ++i) reg = t[0][(reg ^ p[i]) & 0xFF] ^ (reg >> 8);
    return ~reg;
  }
  uLong c = crc;
  while (n > 0) {
    uInt chunk = n > (1u << 30) ? (1u << 30) : static_cast<uInt>(n);
    c = crc32(c, p, chunk);
    p += chunk;
    n -= chunk;
  }
  return static_cast<uint32_t>(c);
}

#if defined(__x86_64__)
__attribute__((target("pclmul,sse4.1"), always_inline)) inline __m128i Load128(const uint8_t* q) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
}

// One fold step: x * k (low and high halves, carry-less) xor the next 16 bytes.
__attribute__((target("pclmul,sse4.1"), always_inline)) inline __m128i Fold128(__m128i x, __m128i k,
                                                                            __m128i next) {
  __m128i lo = _mm_clmulepi64_si128(x, k, 0x00);
  __m128i hi = _mm_clmulepi64_si128(x, k, 0x11);
  return _mm_xor_si128(_mm_xor_si128(lo, hi), next);
}

// CRC-32 (the reflected polynomial 0x04C11DB7 of zlib) by carry-less multiplication:
// fold the input 64 bytes at a time in four 128-bit lanes (inputs under 64 bytes start with
// one lane), fold the lanes into one, fold
// 16 bytes at a time, then reduce 128 -> 64 -> 32 bits with a Barrett reduction. Method
// and constants (x^n mod P for the fold distances, and floor(x^64 / P)): Intel, "Fast CRC
// Computation for Generic Polynomials Using PCLMULQDQ Instruction" (2009), section 4 and
// the reflected-bit variant. `reg` is the bit-inverted running CRC (zlib's internal
// register); `n` >= 16 and a multiple of 16. Returns the register after the input.
__attribute__((target("pclmul,sse4.1"))) uint32_t FoldCrc32(uint32_t reg, const uint8_t* p,
                                                             size_t n) {
  // x^(4*128+32) mod P, x^(4*128-32) mod P (bit-reflected, shifted by one).
  const __m128i k1k2 = _mm_set_epi64x(0x01c6e41596, 0x0154442bd4);
  // x^(128+32) mod P, x^(128-32) mod P.
  const __m128i k3k4 = _mm_set_epi64x(0x00ccaa009e, 0x01751997d0);
  // x^64 mod P.
  const __m128i k5 = _mm_set_epi64x(0, 0x0163cd6124);
  // P' (the polynomial) and mu = floor(x^64 / P), both reflected.
  const __m128i poly_mu = _mm_set_epi64x(0x01f7011641, 0x01db710641);
  const __m128i mask32 = _mm_setr_epi32(~0, 0, ~0, 0);

  __m128i x1 = _mm_xor_si128(Load128(p), _mm_cvtsi32_si128(static_cast<int>(reg)));
  if (n >= 64) {
    __m128i x2 = Load128(p + 16), x3 = Load128(p + 32), x4 = Load128(p + 48);
    p += 64;
    n -= 64;
    while (n >= 64) {
      x1 = Fold128(x1, k1k2, Load128(p));
      x2 = Fold128(x2, k1k2, Load128(p + 16));
      x3 = Fold128(x3, k1k2, Load128(p + 32));
      x4 = Fold128(x4, k1k2, Load128(p + 48));
      p += 64;
      n -= 64;
    }
    x1 = Fold128(x1, k3k4, x2);
    x1 = Fold128(x1, k3k4, x3);
    x1 = Fold128(x1, k3k4, x4);
  } else {
    p += 16;
    n -= 16;
  }
  while (n >= 16) {
    x1 = Fold128(x1, k3k4, Load128(p));
    p += 16;
    n -= 16;
  }
  // 128 -> 64 bits.
  __m128i t = _mm_clmulepi64_si128(x1, k3k4, 0x10);
  x1 = _mm_xor_si128(_mm_srli_si128(x1, 8), t);
  t = _mm_srli_si128(x1, 4);
  x1 = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(x1, mask32), k5, 0x00), t);
  // Barrett reduction to 32 bits.
  t = _mm_and_si128(x1, mask32);
  t = _mm_clmulepi64_si128(t, poly_mu, 0x10);
  t = _mm_and_si128(t, mask32);
  t = _mm_clmulepi64_si128(t, poly_mu, 0x00);
  x1 = _mm_xor_si128(x1, t);
  return static_cast<uint32_t>(_mm_extract_epi32(x1, 1));
}

bool HavePclmul() {
  static const bool have = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
  return have;
}
#endif

}  // namespace

uint32_t Crc32(std::span<const uint8_t> bytes, uint32_t seed) {
  const uint8_t* p = bytes.data();
  size_t n = bytes.size();
#if defined(__x86_64__)
  if (n >= 16 && HavePclmul()) {
    const size_t folded = n & ~size_t{15};
    seed = ~FoldCrc32(~seed, p, folded);
    p += folded;
    n -= folded;
  }
#endif
  return ZlibCrc32(seed, p, n);
}

bool EventChecksumMatches(std::span<const uint8_t> event) {
  return event.size() >= kEventHeaderLength + kChecksumLength && VerifyEventChecksum(event, 0).ok();
}

Status VerifyEventChecksum(std::span<const uint8_t> event, uint64_t offset) {
  if (event.size() < kEventHeaderLength + kChecksumLength) {
    return Status::Corruption(
        fmt::format("event at offset {}: {} bytes is too short for a checksum", offset, event.size()));
  }
  const size_t n = event.size() - kChecksumLength;
  uint32_t stored = uint32_t{event[n]} | uint32_t{event[n + 1]} << 8 |
                    uint32_t{event[n + 2]} << 16 | uint32_t{event[n + 3]} << 24;
  uint32_t computed;
  const uint8_t type = event[4];
  if (type == static_cast<uint8_t>(EventType::FORMAT_DESCRIPTION_EVENT) &&
      (event[17] & kFlagBinlogInUse)) {
    // Computed by the server before it set the in-use flag: clear it for the check.
    uint8_t flags_low = static_cast<uint8_t>(event[17] & ~kFlagBinlogInUse);
    uint32_t crc = Crc32(event.subspan(0, 17));
    crc = Crc32(std::span<const uint8_t>(&flags_low, 1), crc);
    computed = Crc32(event.subspan(18, n - 18), crc);
  } else {
    computed = Crc32(event.subspan(0, n));
  }
  if (computed != stored) {
    return Status::Corruption(fmt::format(
        "{} at offset {}: checksum mismatch (stored 0x{:08x}, computed 0x{:08x})",
        EventTypeName(type), offset, stored, computed));
  }
  return Status::Ok();
}

}  // namespace sluice::binlog
