// Temporal column values in row images -> canonical text (core/value.h).
//
// Formats (MySQL sql-common/my_time.cc my_time_packed_from_binary,
// my_datetime_packed_from_binary, my_timestamp_from_binary; sql/log_event.cc
// log_event_print_value; MariaDB sql/field.cc):
//   DATE/NEWDATE  3 bytes LE: day (5 bits) | month (4 bits) << 5 | year << 9.
//   TIME (old)    3 bytes LE signed integer HHMMSS (MariaDB hires TIME(n), meta>0: unsupported).
//   TIME2         3 bytes BE (value + 0x800000): sign, hour (10 bits), minute (6), second (6),
//                 then (fsp+1)/2 bytes BE fraction (units 1/100, 1/10000, 1/1000000 s);
//                 negative values store the fraction complemented (see DecodeTime2).
//   DATETIME (old) 8 bytes LE integer YYYYMMDDhhmmss.
//   DATETIME2     5 bytes BE (value + 0x8000000000): year*13+month (17 bits), day (5),
//                 hour (5), minute (6), second (6); then the fraction as in TIME2.
//   TIMESTAMP     4 bytes LE seconds since the epoch.
//   TIMESTAMP2    4 bytes BE seconds since the epoch, then the fraction as in TIME2.
// Text: "YYYY-MM-DD", "[-]HH:MM:SS[.f]" (hours may exceed 99), "YYYY-MM-DD HH:MM:SS[.f]"
// with exactly `fsp` fractional digits. TIMESTAMP is rendered in UTC; 0 seconds renders
// as "0000-00-00 00:00:00" (the zero timestamp), zero dates as "0000-00-00".
// Errors: kCorruption (with the reader's offset) on short input or fsp > 6.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "util/byte_reader.h"
#include "util/status.h"

namespace sluice::binlog {

Result<std::string> ReadDate(ByteReader& r);
Result<std::string> ReadOldTime(ByteReader& r);
Result<std::string> ReadTime2(ByteReader& r, int fsp);
Result<std::string> ReadOldDatetime(ByteReader& r);
Result<std::string> ReadDatetime2(ByteReader& r, int fsp);
Result<std::string> ReadOldTimestamp(ByteReader& r);
Result<std::string> ReadTimestamp2(ByteReader& r, int fsp);

// "YYYY-MM-DD HH:MM:SS[.f]" in UTC for `seconds` since the epoch and `micros`
// (0..999999), with `fsp` digits; seconds == 0 && micros == 0 gives the zero timestamp.
std::string FormatTimestamp(uint64_t seconds, uint32_t micros, int fsp);

// MySQL "packed" temporal longlongs (JSON opaque DATE/TIME/DATETIME/TIMESTAMP values,
// sql-common/my_time.cc TIME_from_longlong_*_packed), formatted as MySQL's JSON
// printer does (my_TIME_to_str with 6 digits; DATE without time).
std::string FormatPackedTime(int64_t packed, int fsp);
std::string FormatPackedDatetime(int64_t packed, int fsp);
std::string FormatPackedDate(int64_t packed);

}  // namespace sluice::binlog
