// MariaDB UUID/INET4/INET6 binlog bytes -> text; the layouts are in fixed_binary_text.h.
#include "binlog/fixed_binary_text.h"

#include <cstdint>

#include <fmt/format.h>

namespace sluice::binlog {
namespace {

std::string Inet4Text(const unsigned char* b) {
  return fmt::format("{}.{}.{}.{}", b[0], b[1], b[2], b[3]);
}

std::string Inet6Text(const unsigned char* b) {
  uint16_t w[8];
  for (int i = 0; i < 8; ++i) w[i] = static_cast<uint16_t>(b[2 * i] << 8 | b[2 * i + 1]);
  // The first longest run of zero words.
  int gap_pos = -1, gap_len = 0;
  for (int i = 0; i < 8;) {
    if (w[i] != 0) {
      ++i;
      continue;
    }
    int j = i;
    while (j < 8 && w[j] == 0) ++j;
    if (j - i > gap_len) gap_pos = i, gap_len = j - i;
    i = j;
  }
  std::string out;
  for (int i = 0; i < 8; ++i) {
    if (i == gap_pos) {
      out += i == 0 ? "::" : ":";
      i += gap_len - 1;
    } else if (i == 6 && gap_pos == 0 && (gap_len == 6 || (gap_len == 5 && w[5] == 0xffff))) {
      return out + Inet4Text(b + 12);
    } else {
      out += fmt::format("{:x}", w[i]);
      if (i != 7) out.push_back(':');
    }
  }
  return out;
}

}  // namespace

FixedBinaryType FixedBinaryTypeOf(SqlType type) {
  if (type == SqlType::kUuid) return FixedBinaryType::kUuid;
  if (type == SqlType::kInet4) return FixedBinaryType::kInet4;
  if (type == SqlType::kInet6) return FixedBinaryType::kInet6;
  return FixedBinaryType::kNone;
}

Result<std::string> FixedBinaryToText(FixedBinaryType type, std::string_view bytes) {
  const size_t size = type == FixedBinaryType::kInet4 ? 4 : 16;
  if (type == FixedBinaryType::kNone || bytes.size() > size)
    return Status::Corruption(fmt::format("{} bytes for a {}-byte UUID/INET value", bytes.size(), size));
  unsigned char b[16] = {};
  for (size_t i = 0; i < bytes.size(); ++i) b[i] = static_cast<unsigned char>(bytes[i]);
  switch (type) {
    case FixedBinaryType::kInet4: return Inet4Text(b);
    case FixedBinaryType::kInet6: return Inet6Text(b);
    default: break;
  }
  std::string out;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    out += fmt::format("{:02x}", b[i]);
  }
  return out;
}

}  // namespace sluice::binlog
