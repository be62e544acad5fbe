// TRANSACTION_PAYLOAD inner-event iterator; format notes in payload.h.
//   payload := zstd_frame( event* )      event := header(19, event_size at bytes 9..12) body
#include "binlog/payload.h"

#include <zstd.h>

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "binlog/event_header.h"

namespace sluice::binlog {

void PayloadReader::ZstdDeleter::operator()(void* ctx) const {
  ZSTD_freeDCtx(static_cast<ZSTD_DCtx*>(ctx));
}

PayloadReader::PayloadReader(PayloadReader&&) noexcept = default;
PayloadReader& PayloadReader::operator=(PayloadReader&&) noexcept = default;
PayloadReader::~PayloadReader() = default;

Result<PayloadReader> PayloadReader::Create(std::shared_ptr<const void> owner,
                                            std::span<const uint8_t> payload,
                                            uint64_t compression_type, uint64_t uncompressed_size,
                                            uint64_t offset, uint64_t max_event_size) {
  if (compression_type != kZstd && compression_type != kNone) {
    return Status::NotSupported(fmt::format(
        "TRANSACTION_PAYLOAD_EVENT at offset {}: unknown compression type {}", offset, compression_type));
  }
  PayloadReader r;
  r.owner_ = std::move(owner);
  r.input_ = payload;
  r.compression_type_ = compression_type;
  r.uncompressed_size_ = uncompressed_size;
  r.offset_ = offset;
  r.max_event_size_ = std::min(max_event_size, kMaxEventSize);
  if (compression_type == kZstd) {
    ZSTD_DCtx* ctx = ZSTD_createDCtx();
    if (ctx == nullptr) return Status::Internal("ZSTD_createDCtx failed");
    r.dctx_.reset(ctx);
  }
  return r;
}

Result<bool> PayloadReader::Fill() {
  // Compact consumed bytes so the buffer stays bounded.
  if (pending_pos_ > 0) {
    pending_.erase(0, pending_pos_);
    pending_pos_ = 0;
  }
  if (compression_type_ == kNone) {
    if (input_pos_ >= input_.size()) return false;
    size_t n = std::min<size_t>(input_.size() - input_pos_, 1 << 17);
    pending_.append(reinterpret_cast<const char*>(input_.data() + input_pos_), n);
    input_pos_ += n;
    produced_ += n;
    return true;
  }
  if (frame_done_ && input_pos_ >= input_.size()) return false;
  const size_t chunk = ZSTD_DStreamOutSize();
  size_t old = pending_.size();
  pending_.resize(old + chunk);
  ZSTD_inBuffer in{input_.data(), input_.size(), input_pos_};
  ZSTD_outBuffer out{pending_.data() + old, chunk, 0};
  size_t rc = ZSTD_decompressStream(static_cast<ZSTD_DCtx*>(dctx_.get()), &out, &in);
  pending_.resize(old + out.pos);
  bool progressed = in.pos != input_pos_ || out.pos > 0;
  input_pos_ = in.pos;
  produced_ += out.pos;
  if (ZSTD_isError(rc)) {
    return Status::Corruption(fmt::format(
        "TRANSACTION_PAYLOAD_EVENT at offset {}: zstd error after {} uncompressed bytes: {}",
        offset_, produced_, ZSTD_getErrorName(rc)));
  }
  if (rc == 0) frame_done_ = true;
  if (uncompressed_size_ != 0 && produced_ > uncompressed_size_) {
    return Status::Corruption(fmt::format(
        "TRANSACTION_PAYLOAD_EVENT at offset {}: payload inflates past its declared {} bytes",
        offset_, uncompressed_size_));
  }
  return progressed;
}

Result<std::optional<std::shared_ptr<const std::string>>> PayloadReader::Next() {
  auto avail = [&] { return pending_.size() - pending_pos_; };
  while (avail() < kEventHeaderLength) {
    ASSIGN_OR_RETURN(bool more, Fill());
    if (!more) break;
  }
  if (avail() == 0) {
    if (compression_type_ == kZstd && !frame_done_) {
      return Status::Corruption(fmt::format(
          "TRANSACTION_PAYLOAD_EVENT at offset {}: zstd stream is truncated", offset_));
    }
    if (uncompressed_size_ != 0 && produced_ != uncompressed_size_) {
      return Status::Corruption(fmt::format(
          "TRANSACTION_PAYLOAD_EVENT at offset {}: inflated to {} bytes, header says {}", offset_,
          produced_, uncompressed_size_));
    }
    return std::optional<std::shared_ptr<const std::string>>();
  }
  if (avail() < kEventHeaderLength) {
    return Status::Corruption(fmt::format(
        "TRANSACTION_PAYLOAD_EVENT at offset {}: inner event at uncompressed offset {} is truncated "
        "({} header bytes)", offset_, consumed_, avail()));
  }
  const auto* h = reinterpret_cast<const uint8_t*>(pending_.data() + pending_pos_);
  uint32_t size = uint32_t{h[9]} | uint32_t{h[10]} << 8 | uint32_t{h[11]} << 16 | uint32_t{h[12]} << 24;
  if (size < kEventHeaderLength ||
      (uncompressed_size_ != 0 && consumed_ + size > uncompressed_size_)) {
    return Status::Corruption(fmt::format(
        "TRANSACTION_PAYLOAD_EVENT at offset {}: inner event at uncompressed offset {} has bad size {}",
        offset_, consumed_, size));
  }
  if (size > max_event_size_) {
    return Status::Corruption(fmt::format(
        "TRANSACTION_PAYLOAD_EVENT at offset {}: inner event at uncompressed offset {} declares {} "
        "bytes, above the {}-byte limit for one event",
        offset_, consumed_, size, max_event_size_));
  }
  if (avail() < size) {
    // Room for the whole event plus one more chunk, so growing never copies it twice.
    pending_.reserve(pending_pos_ + size + ZSTD_DStreamOutSize());
  }
  while (avail() < size) {
    ASSIGN_OR_RETURN(bool more, Fill());
    if (!more) {
      return Status::Corruption(fmt::format(
          "TRANSACTION_PAYLOAD_EVENT at offset {}: inner event at uncompressed offset {} is truncated "
          "({} of {} bytes)", offset_, consumed_, avail(), size));
    }
  }
  std::shared_ptr<std::string> ev;
  if (pending_pos_ == 0 && size > (size_t{1} << 20)) {
    // A large event takes the buffer over (no second copy of it); the few bytes after it
    // move to a new buffer.
    std::string rest(pending_.data() + size, pending_.size() - size);
    pending_.resize(size);
    ev = std::make_shared<std::string>(std::move(pending_));
    pending_ = std::move(rest);
    pending_pos_ = 0;
  } else {
    ev = std::make_shared<std::string>(pending_.data() + pending_pos_, size);
    pending_pos_ += size;
  }
  consumed_ += size;
  return std::optional<std::shared_ptr<const std::string>>(std::move(ev));
}

}  // namespace sluice::binlog
