// Binlog event checksums (CRC32 footer).
//
// Source: MySQL libs/mysql/binlog/event/binlog_event.cpp (Log_event_footer,
// event_checksum_test) and MariaDB sql/log_event.cc. When the FORMAT_DESCRIPTION_EVENT
// says CRC32, every event (the FDE included) ends with 4 bytes: zlib crc32 of all the
// bytes before them, little-endian. The FDE's crc is computed with its
// LOG_EVENT_BINLOG_IN_USE_F header flag cleared (the server clears it in place on close).
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <span>

#include "util/status.h"

namespace sluice::binlog {

enum class ChecksumAlg : uint8_t { kOff = 0, kCrc32 = 1, kUndefined = 255 };

uint32_t Crc32(std::span<const uint8_t> bytes, uint32_t seed = 0);

// Checks the CRC32 footer of one whole event (header included). kCorruption naming the
// event type and `offset` (absolute offset of event[0]) on a mismatch or short event.
Status VerifyEventChecksum(std::span<const uint8_t> event, uint64_t offset);

// Whether `event` ends in a CRC32 footer that matches it (what VerifyEventChecksum checks),
// without an error: a thread that only carries events (the replication reader) checks them
// ahead, so the decoding thread need not (EventStream::Next's crc_checked).
bool EventChecksumMatches(std::span<const uint8_t> event);

}  // namespace sluice::binlog
