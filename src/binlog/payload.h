// PayloadReader: pull-based iterator over the inner events of a MySQL
// TRANSACTION_PAYLOAD_EVENT (MySQL 8.0.20+ binlog_transaction_compression).
//
// Source: MySQL libs/mysql/binlog/event/control_events.h (Transaction_payload_event),
// compression/zstd_dec.cpp and compression/payload_event_buffer_istream.cpp. The payload
// is one zstd stream (compression_type 0) or plain bytes (255, NONE) holding whole
// events back to back, each with a normal 19-byte header and no checksum footer.
// Memory: decompresses with ZSTD_DCtx streaming in chunks of ZSTD_DStreamOutSize(), so at
// most one inner event plus one chunk is held, never the whole uncompressed payload. An
// inner event larger than `max_event_size` (default kMaxEventSize, 1 GiB: MySQL's largest
// max_allowed_packet, so no server writes a larger event) is kCorruption as soon as its
// header is seen, before any of its bytes are buffered: a small crafted payload that
// inflates to gigabytes cannot make the reader hold them.
// Ownership: the reader keeps `owner` alive; `payload` must view bytes inside it.
// Errors: kCorruption naming the outer event offset and the inner event's uncompressed
// offset; kNotSupported for unknown compression types.
// Thread safety: not thread-safe; one reader per payload.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "util/status.h"

namespace sluice::binlog {

class PayloadReader {
 public:
  static constexpr uint64_t kZstd = 0;
  static constexpr uint64_t kNone = 255;
  static constexpr uint64_t kMaxEventSize = uint64_t{1} << 30;

  // `offset` is the absolute offset of the outer event, for messages.
  static Result<PayloadReader> Create(std::shared_ptr<const void> owner,
                                      std::span<const uint8_t> payload, uint64_t compression_type,
                                      uint64_t uncompressed_size, uint64_t offset,
                                      uint64_t max_event_size = kMaxEventSize);

  PayloadReader(PayloadReader&&) noexcept;
  PayloadReader& operator=(PayloadReader&&) noexcept;
  ~PayloadReader();

  // The next inner event (header included) in its own buffer, or nullopt after the last.
  Result<std::optional<std::shared_ptr<const std::string>>> Next();

  // Uncompressed offset of the next inner event.
  uint64_t inner_offset() const { return consumed_; }

 private:
  PayloadReader() = default;
  // Decompresses more input into pending_; false when nothing more can come out.
  Result<bool> Fill();

  struct ZstdDeleter {
    void operator()(void* ctx) const;
  };
  std::shared_ptr<const void> owner_;
  std::span<const uint8_t> input_;
  size_t input_pos_ = 0;
  uint64_t compression_type_ = kZstd;
  uint64_t uncompressed_size_ = 0;
  uint64_t offset_ = 0;
  uint64_t max_event_size_ = kMaxEventSize;
  std::unique_ptr<void, ZstdDeleter> dctx_;
  std::string pending_;      // decompressed bytes not yet handed out
  size_t pending_pos_ = 0;
  uint64_t produced_ = 0;    // total decompressed bytes
  uint64_t consumed_ = 0;    // total bytes handed out as events
  bool frame_done_ = false;
};

}  // namespace sluice::binlog
