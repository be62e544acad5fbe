// ByteReader: a bounds-checked little-endian cursor over a non-owning byte view.
//
// Every binlog decoder reads through this class; it is the only place that does
// pointer arithmetic on event bytes. Reads past the end return kCorruption naming the
// absolute offset (base_offset + position), so errors point into the file or stream.
// The viewed bytes must outlive the reader and any string_view/span it returns.
// Not thread-safe; cheap to copy.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "util/status.h"

namespace sluice {

class ByteReader {
 public:
  // `base_offset` is the offset of data[0] in the enclosing file or stream; it only
  // feeds error messages. `what` names the thing being read ("QUERY_EVENT"), ditto.
  explicit ByteReader(std::span<const uint8_t> data, uint64_t base_offset = 0,
                      std::string_view what = "event")
      : data_(data), base_(base_offset), what_(what) {}

  size_t position() const { return pos_; }
  size_t size() const { return data_.size(); }
  size_t remaining() const { return data_.size() - pos_; }
  bool empty() const { return pos_ >= data_.size(); }
  uint64_t absolute_offset() const { return base_ + pos_; }
  std::string_view what() const { return what_; }

  Result<uint8_t> ReadU8() {
    RETURN_IF_ERROR(Need(1, "1 byte"));
    return data_[pos_++];
  }
  Result<uint16_t> ReadLe16() { return ReadLeN<uint16_t>(2); }
  Result<uint32_t> ReadLe24() { return ReadLeN<uint32_t>(3); }
  Result<uint32_t> ReadLe32() { return ReadLeN<uint32_t>(4); }
  Result<uint64_t> ReadLe48() { return ReadLeN<uint64_t>(6); }
  Result<uint64_t> ReadLe64() { return ReadLeN<uint64_t>(8); }
  // Little-endian unsigned integer of n bytes, 1 <= n <= 8.
  Result<uint64_t> ReadLe(size_t n) { return ReadLeN<uint64_t>(n); }
  // Big-endian unsigned integer of n bytes, 1 <= n <= 8 (DECIMAL, TIME2, DATETIME2 parts).
  Result<uint64_t> ReadBe(size_t n) {
    RETURN_IF_ERROR(Need(n, "big-endian integer"));
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v = (v << 8) | data_[pos_ + i];
    pos_ += n;
    return v;
  }
  // MySQL length-encoded integer (protocol "int<lenenc>"; binlog "packed integer").
  // 0xFB (NULL) is returned as kCorruption here; callers that allow NULL peek first.
  Result<uint64_t> ReadLenEnc() {
    ASSIGN_OR_RETURN(uint8_t first, ReadU8());
    if (first < 0xFB) return uint64_t{first};
    if (first == 0xFC) return ReadLeN<uint64_t>(2);
    if (first == 0xFD) return ReadLeN<uint64_t>(3);
    if (first == 0xFE) return ReadLeN<uint64_t>(8);
    return Error(fmt::format("invalid length-encoded integer prefix 0x{:02X}", first));
  }
  Result<std::span<const uint8_t>> ReadBytes(size_t n) {
    if (n > remaining()) [[unlikely]] return NeedError(n, "bytes");
    auto out = data_.subspan(pos_, n);
    pos_ += n;
    return out;
  }
  Result<std::string_view> ReadString(size_t n) {
    ASSIGN_OR_RETURN(auto b, ReadBytes(n));
    return std::string_view(reinterpret_cast<const char*>(b.data()), b.size());
  }
  // Length-encoded length followed by that many bytes.
  Result<std::string_view> ReadLenEncString() {
    ASSIGN_OR_RETURN(uint64_t n, ReadLenEnc());
    if (n > remaining()) return Error(fmt::format("length {} exceeds the {} bytes left", n, remaining()));
    return ReadString(static_cast<size_t>(n));
  }
  // Bytes up to a 0x00 terminator, which is consumed and not returned.
  Result<std::string_view> ReadNulTerminated() {
    for (size_t i = pos_; i < data_.size(); ++i) {
      if (data_[i] == 0) {
        std::string_view s(reinterpret_cast<const char*>(data_.data() + pos_), i - pos_);
        pos_ = i + 1;
        return s;
      }
    }
    return Error("missing NUL terminator");
  }
  std::span<const uint8_t> Rest() {
    auto out = data_.subspan(pos_);
    pos_ = data_.size();
    return out;
  }
  std::span<const uint8_t> PeekRest() const { return data_.subspan(pos_); }
  Status Skip(size_t n) {
    RETURN_IF_ERROR(Need(n, "skipped bytes"));
    pos_ += n;
    return Status::Ok();
  }
  // A Corruption status naming what is read and the absolute offset of the cursor.
  Status Error(std::string_view msg) const {
    return Status::Corruption(fmt::format("{} at offset {}: {}", what_, absolute_offset(), msg));
  }

 private:
  Status Need(size_t n, std::string_view what) const {
    if (n <= remaining()) [[likely]] return Status::Ok();
    return NeedError(n, what);
  }
  // The error of Need, kept out of line so that the checked reads stay small and inline.
  [[gnu::noinline, gnu::cold]] Status NeedError(size_t n, std::string_view what) const {
    return Error(fmt::format("truncated: need {} for {}, {} left", n, what, remaining()));
  }
  template <typename T>
  Result<T> ReadLeN(size_t n) {
    if (n > remaining()) [[unlikely]] return NeedError(n, "integer");
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= uint64_t{data_[pos_ + i]} << (8 * i);
    pos_ += n;
    return static_cast<T>(v);
  }

  std::span<const uint8_t> data_;
  size_t pos_ = 0;
  uint64_t base_;
  std::string_view what_;
};

}  // namespace sluice
