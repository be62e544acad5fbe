// Temporal value decoders. See temporal.h for each format's grammar.
#include "binlog/temporal.h"

#include <fmt/format.h>

namespace sluice::binlog {
namespace {

constexpr uint32_t kPow10[7] = {1, 10, 100, 1000, 10000, 100000, 1000000};

// Appends "." and the first `fsp` digits of `micros` (0..999999).
void AppendFraction(std::string* out, uint32_t micros, int fsp) {
  if (fsp <= 0) return;
  out->append(fmt::format(".{:0{}}", micros / kPow10[6 - fsp], fsp));
}

Status CheckFsp(ByteReader& r, int fsp) {
  if (fsp < 0 || fsp > 6) return r.Error(fmt::format("invalid fractional precision {}", fsp));
  return Status::Ok();
}

// Reads the (fsp+1)/2-byte big-endian fraction; returns it in microseconds' units of
// its own size (raw value) and the byte count.
Result<uint64_t> ReadFractionRaw(ByteReader& r, int fsp, int* bytes) {
  *bytes = (fsp + 1) / 2;
  if (*bytes == 0) return uint64_t{0};
  return r.ReadBe(static_cast<size_t>(*bytes));
}

std::string FormatTime(bool negative, uint64_t hour, uint32_t minute, uint32_t second,
                       uint32_t micros, int fsp) {
  std::string out = fmt::format("{}{:02}:{:02}:{:02}", negative ? "-" : "", hour, minute, second);
  AppendFraction(&out, micros, fsp);
  return out;
}

std::string FormatDatetime(uint32_t year, uint32_t month, uint32_t day, uint32_t hour,
                           uint32_t minute, uint32_t second, uint32_t micros, int fsp) {
  std::string out = fmt::format("{:04}-{:02}-{:02} {:02}:{:02}:{:02}", year, month, day, hour,
                                minute, second);
  AppendFraction(&out, micros, fsp);
  return out;
}

// Days since 1970-01-01 -> civil date (Howard Hinnant's algorithm).
void CivilFromDays(int64_t z, int64_t* y, unsigned* m, unsigned* d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t yy = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = yy + (*m <= 2);
}

// The packed TIME value (MY_PACKED_TIME_MAKE(int, frac)) -> text.
std::string FormatPackedTimeImpl(int64_t packed, int fsp) {
  bool negative = packed < 0;
  uint64_t v = negative ? -static_cast<uint64_t>(packed) : static_cast<uint64_t>(packed);
  uint32_t micros = static_cast<uint32_t>(v % (1u << 24));
  uint64_t hms = v >> 24;
  uint64_t hour = (hms >> 12) % (1u << 10);
  uint32_t minute = static_cast<uint32_t>((hms >> 6) % (1u << 6));
  uint32_t second = static_cast<uint32_t>(hms % (1u << 6));
  return FormatTime(negative, hour, minute, second, micros, fsp);
}

}  // namespace

Result<std::string> ReadDate(ByteReader& r) {
  ASSIGN_OR_RETURN(uint32_t v, r.ReadLe24());
  return fmt::format("{:04}-{:02}-{:02}", v >> 9, (v >> 5) & 15, v & 31);
}

Result<std::string> ReadOldTime(ByteReader& r) {
  ASSIGN_OR_RETURN(uint32_t raw, r.ReadLe24());
  int32_t v = (raw & 0x800000) ? static_cast<int32_t>(raw | 0xFF000000u) : static_cast<int32_t>(raw);
  bool negative = v < 0;
  uint32_t a = negative ? static_cast<uint32_t>(-static_cast<int64_t>(v)) : static_cast<uint32_t>(v);
  return FormatTime(negative, a / 10000, (a / 100) % 100, a % 100, 0, 0);
}

Result<std::string> ReadTime2(ByteReader& r, int fsp) {
  RETURN_IF_ERROR(CheckFsp(r, fsp));
  ASSIGN_OR_RETURN(uint64_t raw, r.ReadBe(3));
  int frac_bytes = 0;
  ASSIGN_OR_RETURN(uint64_t frac_raw, ReadFractionRaw(r, fsp, &frac_bytes));
  // my_time_packed_from_binary: build the packed value (intpart << 24) + micros.
  int64_t intpart = static_cast<int64_t>(raw) - 0x800000;
  int64_t frac = 0;
  switch (frac_bytes) {
    case 0:
      break;
    case 1:
      frac = static_cast<int64_t>(frac_raw);
      if (intpart < 0 && frac) {
        ++intpart;
        frac -= 0x100;
      }
      frac *= 10000;
      break;
    case 2:
      frac = static_cast<int64_t>(frac_raw);
      if (intpart < 0 && frac) {
        ++intpart;
        frac -= 0x10000;
      }
      frac *= 100;
      break;
    case 3: {
      // The 6-byte value is one signed quantity with offset 0x800000000000.
      int64_t whole = static_cast<int64_t>((raw << 24) | frac_raw) - 0x800000000000LL;
      return FormatPackedTimeImpl(whole, fsp);
    }
  }
  int64_t packed = static_cast<int64_t>(static_cast<uint64_t>(intpart) << 24) + frac;
  return FormatPackedTimeImpl(packed, fsp);
}

Result<std::string> ReadOldDatetime(ByteReader& r) {
  ASSIGN_OR_RETURN(uint64_t v, r.ReadLe64());
  uint64_t date = v / 1000000, time = v % 1000000;
  return FormatDatetime(static_cast<uint32_t>(date / 10000), static_cast<uint32_t>((date / 100) % 100),
                        static_cast<uint32_t>(date % 100), static_cast<uint32_t>(time / 10000),
                        static_cast<uint32_t>((time / 100) % 100), static_cast<uint32_t>(time % 100), 0, 0);
}

Result<std::string> ReadDatetime2(ByteReader& r, int fsp) {
  RETURN_IF_ERROR(CheckFsp(r, fsp));
  ASSIGN_OR_RETURN(uint64_t raw, r.ReadBe(5));
  int frac_bytes = 0;
  ASSIGN_OR_RETURN(uint64_t frac_raw, ReadFractionRaw(r, fsp, &frac_bytes));
  int64_t intpart = static_cast<int64_t>(raw) - 0x8000000000LL;
  if (intpart < 0) return r.Error("negative DATETIME2 value");
  uint64_t v = static_cast<uint64_t>(intpart);
  uint64_t ymd = v >> 17, hms = v % (1u << 17);
  uint64_t ym = ymd >> 5;
  uint32_t micros = static_cast<uint32_t>(frac_bytes == 1 ? frac_raw * 10000
                                          : frac_bytes == 2 ? frac_raw * 100
                                                            : frac_raw);
  if (micros > 999999) return r.Error(fmt::format("DATETIME2 fraction {} out of range", micros));
  return FormatDatetime(static_cast<uint32_t>(ym / 13), static_cast<uint32_t>(ym % 13),
                        static_cast<uint32_t>(ymd % 32), static_cast<uint32_t>(hms >> 12),
                        static_cast<uint32_t>((hms >> 6) % 64), static_cast<uint32_t>(hms % 64),
                        micros, fsp);
}

Result<std::string> ReadOldTimestamp(ByteReader& r) {
  ASSIGN_OR_RETURN(uint32_t secs, r.ReadLe32());
  return FormatTimestamp(secs, 0, 0);
}

Result<std::string> ReadTimestamp2(ByteReader& r, int fsp) {
  RETURN_IF_ERROR(CheckFsp(r, fsp));
  ASSIGN_OR_RETURN(uint64_t secs, r.ReadBe(4));
  int frac_bytes = 0;
  ASSIGN_OR_RETURN(uint64_t frac_raw, ReadFractionRaw(r, fsp, &frac_bytes));
  uint32_t micros = static_cast<uint32_t>(frac_bytes == 1 ? frac_raw * 10000
                                          : frac_bytes == 2 ? frac_raw * 100
                                                            : frac_raw);
  if (micros > 999999) return r.Error(fmt::format("TIMESTAMP2 fraction {} out of range", micros));
  return FormatTimestamp(secs, micros, fsp);
}

std::string FormatTimestamp(uint64_t seconds, uint32_t micros, int fsp) {
  if (seconds == 0 && micros == 0) return FormatDatetime(0, 0, 0, 0, 0, 0, 0, fsp);
  int64_t days = static_cast<int64_t>(seconds / 86400);
  uint64_t rem = seconds % 86400;
  int64_t y;
  unsigned m, d;
  CivilFromDays(days, &y, &m, &d);
  return FormatDatetime(static_cast<uint32_t>(y), m, d, static_cast<uint32_t>(rem / 3600),
                        static_cast<uint32_t>((rem / 60) % 60), static_cast<uint32_t>(rem % 60),
                        micros, fsp);
}

std::string FormatPackedTime(int64_t packed, int fsp) { return FormatPackedTimeImpl(packed, fsp); }

std::string FormatPackedDatetime(int64_t packed, int fsp) {
  uint64_t v = packed < 0 ? -static_cast<uint64_t>(packed) : static_cast<uint64_t>(packed);
  uint32_t micros = static_cast<uint32_t>(v % (1u << 24));
  uint64_t ymdhms = v >> 24;
  uint64_t ymd = ymdhms >> 17, hms = ymdhms % (1u << 17);
  uint64_t ym = ymd >> 5;
  return FormatDatetime(static_cast<uint32_t>(ym / 13), static_cast<uint32_t>(ym % 13),
                        static_cast<uint32_t>(ymd % 32), static_cast<uint32_t>(hms >> 12),
                        static_cast<uint32_t>((hms >> 6) % 64), static_cast<uint32_t>(hms % 64),
                        micros, fsp);
}

std::string FormatPackedDate(int64_t packed) {
  uint64_t v = packed < 0 ? -static_cast<uint64_t>(packed) : static_cast<uint64_t>(packed);
  uint64_t ymd = (v >> 24) >> 17;
  uint64_t ym = ymd >> 5;
  return fmt::format("{:04}-{:02}-{:02}", ym / 13, ym % 13, ymd % 32);
}

}  // namespace sluice::binlog
