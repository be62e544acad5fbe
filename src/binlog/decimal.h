// DECIMAL (MYSQL_TYPE_NEWDECIMAL) binary form -> exact decimal text as SELECT prints it.
//
// Format (MySQL strings/decimal.cc, decimal2bin/bin2decimal): the integer part
// (precision - scale digits) and the fraction (scale digits) are each cut into groups
// of 9 digits stored as 4-byte big-endian integers; a leftover group of k < 9 digits
// takes dig2bytes[k] = {0,1,1,2,2,3,3,4,4,4}[k] bytes, leading for the integer part and
// trailing for the fraction. The first byte's top bit is flipped (set = non-negative);
// a negative number has every byte inverted.
// Text form: optional '-', integer digits without leading zeros ("0" when none), then
// '.' and exactly `scale` digits when scale > 0: DECIMAL(65,30) -0.0001 prints as
// "-0.000100000000000000000000000000". Zero never carries a sign.
// Errors: kCorruption for bad precision/scale, short input or a group out of range.
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "util/byte_reader.h"
#include "util/status.h"

namespace sluice::binlog {

// Bytes of the binary form of DECIMAL(precision, scale); 0 for invalid arguments.
size_t DecimalBinarySize(int precision, int scale);

// Decodes exactly DecimalBinarySize(precision, scale) bytes of `bin`.
Result<std::string> DecimalToString(std::span<const uint8_t> bin, int precision, int scale);

// Reads one DECIMAL(precision, scale) value from `r`.
Result<std::string> ReadDecimal(ByteReader& r, int precision, int scale);

}  // namespace sluice::binlog
