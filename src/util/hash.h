// Fnv1a64: the 64-bit FNV-1a hash of bytes (http://www.isthe.com/chongo/tech/comp/fnv/), for
// names and fingerprints that must be the same in every build and run (std::hash need not be).
// Not for anything an adversary chooses to collide. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

namespace sluice {

inline constexpr uint64_t kFnv64OffsetBasis = 14695981039346656037ull;

// `basis`: the offset basis; another one only where stored values were made with it.
inline uint64_t Fnv1a64(std::string_view bytes, uint64_t basis = kFnv64OffsetBasis) {
  uint64_t h = basis;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace sluice
