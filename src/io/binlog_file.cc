// Binlog file reader: magic(4) = FE 62 69 6E, then { header(19) body } until EOF.
#include "io/binlog_file.h"

#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace sluice::io {
namespace {

constexpr uint8_t kMagic[4] = {0xFE, 'b', 'i', 'n'};
constexpr uint32_t kMaxEventSize = 1u << 30;  // max_allowed_packet ceiling (1 GiB)

std::string BaseName(const std::string& path) {
  auto p = path.find_last_of('/');
  return p == std::string::npos ? path : path.substr(p + 1);
}

}  // namespace

BinlogFileReader::BinlogFileReader(std::string path, std::FILE* f, binlog::EventStreamOptions options)
    : path_(std::move(path)), name_(BaseName(path_)), file_(f), stream_(options) {
  stream_.SetPosition(name_, 4);
}

BinlogFileReader::~BinlogFileReader() {
  if (file_ != nullptr) std::fclose(file_);
}

Result<std::unique_ptr<BinlogFileReader>> BinlogFileReader::Open(const std::string& path,
                                                                 binlog::EventStreamOptions options,
                                                                 ReadMode mode) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    int err = errno;
    std::string msg = fmt::format("cannot open binlog file {}: {}", path, std::strerror(err));
    return err == ENOENT ? Status::NotFound(msg) : Status::Unavailable(msg);
  }
  std::unique_ptr<BinlogFileReader> r(new BinlogFileReader(path, f, options));
  // The magic first: anything else (a huge sparse file, a disk image) is refused before it
  // is mapped and paged in.
  uint8_t magic[4];
  size_t n = std::fread(magic, 1, 4, f);
  if (n != 4 || std::memcmp(magic, kMagic, 4) != 0) {
    return Status::Corruption(fmt::format("file {} at offset 0: not a binlog file (bad magic)", r->path_));
  }
  // Map the file when it is a regular file: the decoder then reads the page cache directly.
  struct stat st {};
  if (mode == ReadMode::kMapIfPossible && ::fstat(::fileno(f), &st) == 0 && S_ISREG(st.st_mode) &&
      st.st_size > 4) {
    const size_t len = static_cast<size_t>(st.st_size);
    void* p = ::mmap(nullptr, len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, ::fileno(f), 0);
    if (p != MAP_FAILED) {
      ::madvise(p, len, MADV_SEQUENTIAL);
      r->map_ = static_cast<const uint8_t*>(p);
      r->map_size_ = len;
      r->map_owner_ = std::shared_ptr<const void>(p, [len](const void* q) { ::munmap(const_cast<void*>(q), len); });
    }
  }
  return r;
}

Status BinlogFileReader::Fail(Status st, uint64_t at) {
  done_ = true;
  return st.WithContext(fmt::format("file {} at offset {}", path_, at));
}

Status BinlogFileReader::Fill(size_t n) {
  if (chunk_len_ - chunk_pos_ >= n || eof_) return Status::Ok();
  const size_t left = chunk_len_ - chunk_pos_;
  const size_t want = std::max(kChunkSize, n);
  if (chunk_ && chunk_.use_count() == 1 && chunk_->size() >= want) {
    // No event views this chunk any more: slide the unread tail to the front and reuse it.
    std::memmove(chunk_->data(), chunk_->data() + chunk_pos_, left);
  } else {
    auto next = std::make_shared<std::string>();
    next->resize(want);
    if (left > 0) std::memcpy(next->data(), chunk_->data() + chunk_pos_, left);
    chunk_ = std::move(next);
  }
  chunk_pos_ = 0;
  chunk_len_ = left;
  while (chunk_len_ < chunk_->size()) {
    size_t got = std::fread(chunk_->data() + chunk_len_, 1, chunk_->size() - chunk_len_, file_);
    chunk_len_ += got;
    if (got == 0) {
      if (std::ferror(file_)) {
        done_ = true;
        return Status::Unavailable(fmt::format("file {} at offset {}: read error: {}", path_,
                                               offset_ + chunk_len_, std::strerror(errno)));
      }
      eof_ = true;
      break;
    }
  }
  return Status::Ok();
}

Result<std::optional<binlog::Event>> BinlogFileReader::Next() {
  binlog::Event ev;
  bool end = false;
  RETURN_IF_ERROR(ReadInto(&ev, &end));
  if (end) return std::optional<binlog::Event>();
  return std::optional<binlog::Event>(std::move(ev));
}

Result<const binlog::Event*> BinlogFileReader::NextRef() {
  bool end = false;
  RETURN_IF_ERROR(ReadInto(&current_, &end));
  return end ? nullptr : &current_;
}

Status BinlogFileReader::ReadInto(binlog::Event* ev, bool* end) {
  // Drop the previous event's hold on the chunk, so that Fill can reuse it.
  ev->storage.reset();
  ev->table_map.reset();
  if (done_) {
    *end = true;
    return Status::Ok();
  }
  if (stream_.HasPendingInner()) {
    auto inner = stream_.NextInner();
    if (!inner.ok()) return Fail(inner.status(), last_at_);
    *ev = std::move(inner).value();
    return Status::Ok();
  }
  const uint64_t at = offset_;
  if (map_ != nullptr) return ReadMapped(ev, end, at);
  RETURN_IF_ERROR(Fill(binlog::kEventHeaderLength));
  size_t avail = chunk_len_ - chunk_pos_;
  if (avail == 0) {
    done_ = true;
    *end = true;
    return Status::Ok();
  }
  const auto* header = reinterpret_cast<const uint8_t*>(chunk_->data() + chunk_pos_);
  uint32_t size = 0;
  RETURN_IF_ERROR(EventSize(header, avail, at, &size));
  const uint8_t type = header[4];
  RETURN_IF_ERROR(Fill(size));
  avail = chunk_len_ - chunk_pos_;
  if (avail < size) {
    return Fail(Status::Corruption(fmt::format("truncated {}: event_size {} but only {} bytes left",
                                               binlog::EventTypeName(type), size, avail)), at);
  }
  std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(chunk_->data() + chunk_pos_), size);
  chunk_pos_ += size;
  offset_ = at + size;
  last_at_ = at;
  Status st = stream_.NextAtInto(bytes, at, ev);
  if (!st.ok()) return Fail(std::move(st), at);
  if (!ev->storage) ev->storage = chunk_;
  return Status::Ok();
}

Status BinlogFileReader::EventSize(const uint8_t* header, size_t avail, uint64_t at, uint32_t* size) {
  if (avail < binlog::kEventHeaderLength) {
    return Fail(Status::Corruption(fmt::format("truncated event header: {} of {} bytes", avail,
                                               binlog::kEventHeaderLength)), at);
  }
  *size = uint32_t{header[9]} | uint32_t{header[10]} << 8 | uint32_t{header[11]} << 16 |
          uint32_t{header[12]} << 24;
  if (*size < binlog::kEventHeaderLength || *size > kMaxEventSize) {
    return Fail(Status::Corruption(fmt::format("bad event_size {} ({})", *size,
                                               binlog::EventTypeName(header[4]))), at);
  }
  return Status::Ok();
}

Status BinlogFileReader::ReadMapped(binlog::Event* ev, bool* end, uint64_t at) {
  const size_t avail = at < map_size_ ? map_size_ - at : 0;
  if (avail == 0) {
    done_ = true;
    *end = true;
    return Status::Ok();
  }
  const uint8_t* header = map_ + at;
  uint32_t size = 0;
  RETURN_IF_ERROR(EventSize(header, avail, at, &size));
  const uint8_t type = header[4];
  if (avail < size) {
    return Fail(Status::Corruption(fmt::format("truncated {}: event_size {} but only {} bytes left",
                                               binlog::EventTypeName(type), size, avail)), at);
  }
  std::span<const uint8_t> bytes(header, size);
  offset_ = at + size;
  last_at_ = at;
  Status st = stream_.NextAtInto(bytes, at, ev);
  if (!st.ok()) return Fail(std::move(st), at);
  if (!ev->storage) ev->storage = map_owner_;
  return Status::Ok();
}

}  // namespace sluice::io
