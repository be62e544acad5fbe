// Row-image value decoder; the per-type grammar is in value_decoder.h.
#include "binlog/value_decoder.h"

#include <cstring>

#include <fmt/format.h>

#include "binlog/charset.h"
#include "binlog/decimal.h"
#include "binlog/json_binary.h"
#include "binlog/temporal.h"
#include "schema/text_value.h"

namespace sluice::binlog {
namespace {

Result<Value> ReadInt(ByteReader& r, size_t n, bool is_unsigned) {
  ASSIGN_OR_RETURN(uint64_t v, r.ReadLe(n));
  if (is_unsigned) return Value::UInt(v);
  const unsigned shift = static_cast<unsigned>(64 - 8 * n);
  int64_t s = static_cast<int64_t>(v << shift) >> shift;
  return Value::Int(s);
}

Result<std::string_view> ReadPrefixed(ByteReader& r, size_t prefix_bytes) {
  ASSIGN_OR_RETURN(uint64_t len, r.ReadLe(prefix_bytes));
  if (len > r.remaining())
    return r.Error(fmt::format("value length {} exceeds the {} bytes left", len, r.remaining()));
  return r.ReadString(static_cast<size_t>(len));
}

Result<Value> StringValue(ByteReader& r, size_t value_offset, std::string_view bytes,
                          std::string_view charset, bool is_char, uint32_t char_bytes) {
  if (charset.empty()) return Value::Bytes(std::string(bytes));
  if (charset == "binary") {
    std::string out(bytes);
    if (is_char && out.size() < char_bytes) out.resize(char_bytes, '\0');
    return Value::Bytes(std::move(out));
  }
  if (IsUtf8Charset(charset)) {
    // The common case, without ToUtf8's copy: CHAR's pad spaces (one byte each in UTF-8, and
    // never part of a multibyte sequence, so trimming first changes neither validity nor
    // text) are cut before the one copy. Invalid bytes take the general path for its error.
    std::string_view t = bytes;
    if (is_char)
      while (!t.empty() && t.back() == ' ') t.remove_suffix(1);
    if (IsValidUtf8(t)) return Value::Text(std::string(t));
  }
  auto text = ToUtf8(charset, bytes);
  if (!text.ok()) {
    return Status(text.status()).WithContext(
        fmt::format("{} at offset {}", r.what(), value_offset));
  }
  std::string s = std::move(*text);
  if (is_char) {
    size_t end = s.find_last_not_of(' ');
    s.resize(end == std::string::npos ? 0 : end + 1);
  }
  return Value::Text(std::move(s));
}

Result<Value> EnumValue(ByteReader& r, const ColumnContext& c, size_t bytes) {
  const uint64_t at = r.absolute_offset();
  if (bytes != 1 && bytes != 2) return r.Error(fmt::format("ENUM with {} bytes", bytes));
  ASSIGN_OR_RETURN(uint64_t index, r.ReadLe(bytes));
  if (c.labels == nullptr) {
    if (c.allow_unlabeled) return Value::UInt(index);
    return Status::NotSupported(fmt::format("ENUM value at offset {} has no labels", at));
  }
  if (index == 0) return Value::Text("");
  if (index > c.labels->size())
    return Status::Corruption(fmt::format("ENUM index {} at offset {} exceeds the {} labels", index,
                                          at, c.labels->size()));
  return Value::Text((*c.labels)[index - 1]);
}

Result<Value> SetValue(ByteReader& r, const ColumnContext& c, size_t bytes) {
  const uint64_t at = r.absolute_offset();
  if (bytes < 1 || bytes > 8) return r.Error(fmt::format("SET with {} bytes", bytes));
  ASSIGN_OR_RETURN(uint64_t mask, r.ReadLe(bytes));
  if (c.labels == nullptr) {
    if (c.allow_unlabeled) return Value::UInt(mask);
    return Status::NotSupported(fmt::format("SET value at offset {} has no labels", at));
  }
  std::string out;
  for (size_t bit = 0; bit < 64 && mask != 0; ++bit) {
    if ((mask & (uint64_t{1} << bit)) == 0) continue;
    if (bit >= c.labels->size())
      return Status::Corruption(fmt::format("SET bit {} at offset {} exceeds the {} labels", bit,
                                            at, c.labels->size()));
    if (!out.empty()) out.push_back(',');
    out += (*c.labels)[bit];
    mask &= ~(uint64_t{1} << bit);
  }
  return Value::Text(std::move(out));
}

Status Unsupported(const ByteReader& r, const ColumnContext& c, std::string_view why) {
  return Status::NotSupported(fmt::format("{} at offset {}: column type {} (meta 0x{:04x}) {}",
                                          r.what(), r.absolute_offset(), ColumnTypeName(c.type),
                                          c.meta, why));
}

}  // namespace

StringMeta DecodeStringMeta(uint16_t meta) {
  const uint8_t byte0 = static_cast<uint8_t>(meta >> 8);
  const uint8_t byte1 = static_cast<uint8_t>(meta & 0xFF);
  if (byte0 != 0 && (byte0 & 0x30) != 0x30) {
    return StringMeta{static_cast<ColumnType>(byte0 | 0x30),
                      byte1 | (static_cast<uint32_t>((byte0 & 0x30) ^ 0x30) << 4)};
  }
  if (byte0 == 0) return StringMeta{ColumnType::MYSQL_TYPE_STRING, byte1};
  return StringMeta{static_cast<ColumnType>(byte0), byte1};
}

Result<Value> DecodeColumnValue(ByteReader& r, const ColumnContext& c) {
  using T = ColumnType;
  switch (c.type) {
    case T::MYSQL_TYPE_TINY: return ReadInt(r, 1, c.is_unsigned);
    case T::MYSQL_TYPE_SHORT: return ReadInt(r, 2, c.is_unsigned);
    case T::MYSQL_TYPE_INT24: return ReadInt(r, 3, c.is_unsigned);
    case T::MYSQL_TYPE_LONG: return ReadInt(r, 4, c.is_unsigned);
    case T::MYSQL_TYPE_LONGLONG: return ReadInt(r, 8, c.is_unsigned);
    case T::MYSQL_TYPE_FLOAT: {
      ASSIGN_OR_RETURN(uint32_t bits, r.ReadLe32());
      float f;
      std::memcpy(&f, &bits, sizeof f);
      return Value::Float(f);
    }
    case T::MYSQL_TYPE_DOUBLE: {
      ASSIGN_OR_RETURN(uint64_t bits, r.ReadLe64());
      double d;
      std::memcpy(&d, &bits, sizeof d);
      return Value::Double(d);
    }
    case T::MYSQL_TYPE_NEWDECIMAL: {
      ASSIGN_OR_RETURN(std::string s, ReadDecimal(r, c.meta >> 8, c.meta & 0xFF));
      return Value::Text(std::move(s));
    }
    case T::MYSQL_TYPE_BIT: {
      const uint32_t nbits = (c.meta & 0xFFu) * 8u + (c.meta >> 8);
      const size_t n = (nbits + 7) / 8;
      if (n < 1 || n > 8) return r.Error(fmt::format("BIT({}) from metadata 0x{:04x}", nbits, c.meta));
      ASSIGN_OR_RETURN(uint64_t v, r.ReadBe(n));
      return Value::UInt(v);
    }
    case T::MYSQL_TYPE_YEAR: {
      ASSIGN_OR_RETURN(uint8_t v, r.ReadU8());
      return Value::Int(v == 0 ? 0 : 1900 + v);
    }
    case T::MYSQL_TYPE_DATE:
    case T::MYSQL_TYPE_NEWDATE: {
      ASSIGN_OR_RETURN(std::string s, ReadDate(r));
      return Value::Text(std::move(s));
    }
    case T::MYSQL_TYPE_TIME: {
      if (c.meta != 0) return Unsupported(r, c, "(MariaDB pre-10.1 hires TIME)");
      ASSIGN_OR_RETURN(std::string s, ReadOldTime(r));
      return Value::Text(std::move(s));
    }
    case T::MYSQL_TYPE_TIME2: {
      ASSIGN_OR_RETURN(std::string s, ReadTime2(r, c.meta));
      return Value::Text(std::move(s));
    }
    case T::MYSQL_TYPE_DATETIME: {
      if (c.meta != 0) return Unsupported(r, c, "(MariaDB pre-10.1 hires DATETIME)");
      ASSIGN_OR_RETURN(std::string s, ReadOldDatetime(r));
      return Value::Text(std::move(s));
    }
    case T::MYSQL_TYPE_DATETIME2: {
      ASSIGN_OR_RETURN(std::string s, ReadDatetime2(r, c.meta));
      return Value::Text(std::move(s));
    }
    case T::MYSQL_TYPE_TIMESTAMP: {
      if (c.meta != 0) return Unsupported(r, c, "(MariaDB pre-10.1 hires TIMESTAMP)");
      ASSIGN_OR_RETURN(std::string s, ReadOldTimestamp(r));
      return Value::Text(std::move(s));
    }
    case T::MYSQL_TYPE_TIMESTAMP2: {
      ASSIGN_OR_RETURN(std::string s, ReadTimestamp2(r, c.meta));
      return Value::Text(std::move(s));
    }
    case T::MYSQL_TYPE_VARCHAR:
    case T::MYSQL_TYPE_VAR_STRING: {
      const size_t at = r.absolute_offset();
      ASSIGN_OR_RETURN(std::string_view s, ReadPrefixed(r, c.meta < 256 ? 1 : 2));
      return StringValue(r, at, s, c.charset, false, 0);
    }
    case T::MYSQL_TYPE_STRING: {
      StringMeta sm = DecodeStringMeta(c.meta);
      if (sm.real_type == T::MYSQL_TYPE_ENUM) return EnumValue(r, c, sm.length);
      if (sm.real_type == T::MYSQL_TYPE_SET) return SetValue(r, c, sm.length);
      if (sm.real_type != T::MYSQL_TYPE_STRING) return Unsupported(r, c, "(unknown real type)");
      const size_t at = r.absolute_offset();
      ASSIGN_OR_RETURN(std::string_view s, ReadPrefixed(r, sm.length < 256 ? 1 : 2));
      if (c.fixed_binary != FixedBinaryType::kNone) {
        auto text = FixedBinaryToText(c.fixed_binary, s);
        if (!text.ok())
          return Status(text.status()).WithContext(fmt::format("{} at offset {}", r.what(), at));
        return Value::Text(std::move(*text));
      }
      return StringValue(r, at, s, c.charset, true, sm.length);
    }
    case T::MYSQL_TYPE_ENUM:
    case T::MYSQL_TYPE_SET: {
      const size_t n = c.meta & 0xFF;
      if (c.type == T::MYSQL_TYPE_SET) return SetValue(r, c, n);
      if (n != 1 && n != 2) return r.Error(fmt::format("ENUM with {} bytes", n));
      return EnumValue(r, c, n);
    }
    case T::MYSQL_TYPE_TINY_BLOB:
    case T::MYSQL_TYPE_MEDIUM_BLOB:
    case T::MYSQL_TYPE_LONG_BLOB:
    case T::MYSQL_TYPE_BLOB: {
      if (c.meta < 1 || c.meta > 4) return r.Error(fmt::format("BLOB length size {}", c.meta));
      const size_t at = r.absolute_offset();
      ASSIGN_OR_RETURN(std::string_view s, ReadPrefixed(r, c.meta));
      return StringValue(r, at, s, c.charset, false, 0);
    }
    case T::MYSQL_TYPE_GEOMETRY: {
      if (c.meta < 1 || c.meta > 4) return r.Error(fmt::format("GEOMETRY length size {}", c.meta));
      ASSIGN_OR_RETURN(std::string_view s, ReadPrefixed(r, c.meta));
      return Value::Bytes(std::string(s));
    }
    case T::MYSQL_TYPE_VECTOR: {
      // MySQL 9: meta = length-prefix bytes, value = little-endian float32s
      // (sql/field.h Field_vector, a Field_blob; libs/mysql/binlog/event/rows_event.cpp).
      if (c.meta < 1 || c.meta > 4) return r.Error(fmt::format("VECTOR length size {}", c.meta));
      const size_t at = r.absolute_offset();
      ASSIGN_OR_RETURN(std::string_view s, ReadPrefixed(r, c.meta));
      auto text = VectorBytesToText(s);
      if (!text.ok())
        return Status(text.status()).WithContext(fmt::format("{} at offset {}", r.what(), at));
      return Value::Text(std::move(*text));
    }
    case T::MYSQL_TYPE_JSON: {
      if (c.meta < 1 || c.meta > 4) return r.Error(fmt::format("JSON length size {}", c.meta));
      const size_t at = r.absolute_offset();
      ASSIGN_OR_RETURN(std::string_view s, ReadPrefixed(r, c.meta));
      auto text = JsonBinaryToText(std::span<const uint8_t>(
          reinterpret_cast<const uint8_t*>(s.data()), s.size()));
      if (!text.ok())
        return Status(text.status()).WithContext(fmt::format("{} at offset {}", r.what(), at));
      return Value::Text(std::move(*text));
    }
    default:
      return Unsupported(r, c, "is not supported");
  }
}

}  // namespace sluice::binlog
