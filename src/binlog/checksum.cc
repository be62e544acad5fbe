// CRC32 footer check; see checksum.h for the format.
#include "binlog/checksum.h"

#include <zlib.h>

#include <fmt/format.h>

#include "binlog/event_header.h"

namespace sluice::binlog {

uint32_t Crc32(std::span<const uint8_t> bytes, uint32_t seed) {
  uLong crc = seed;
  const uint8_t* p = bytes.data();
  size_t n = bytes.size();
  while (n > 0) {
    uInt chunk = n > (1u << 30) ? (1u << 30) : static_cast<uInt>(n);
    crc = crc32(crc, p, chunk);
    p += chunk;
    n -= chunk;
  }
  return static_cast<uint32_t>(crc);
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
