// Binlog file reader: magic(4) = FE 62 69 6E, then { header(19) body } until EOF.
#include "io/binlog_file.h"

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
                                                                 binlog::EventStreamOptions options) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    int err = errno;
    std::string msg = fmt::format("cannot open binlog file {}: {}", path, std::strerror(err));
    return err == ENOENT ? Status::NotFound(msg) : Status::Unavailable(msg);
  }
  std::unique_ptr<BinlogFileReader> r(new BinlogFileReader(path, f, options));
  uint8_t magic[4];
  size_t n = std::fread(magic, 1, 4, f);
  if (n != 4 || std::memcmp(magic, kMagic, 4) != 0) {
    return Status::Corruption(fmt::format("file {} at offset 0: not a binlog file (bad magic)", r->name_));
  }
  return r;
}

Status BinlogFileReader::Fail(Status st, uint64_t at) {
  done_ = true;
  return st.WithContext(fmt::format("file {} at offset {}", name_, at));
}

Result<std::optional<binlog::Event>> BinlogFileReader::Next() {
  if (done_) return std::optional<binlog::Event>();
  if (stream_.HasPendingInner()) {
    auto ev = stream_.NextInner();
    if (!ev.ok()) return Fail(ev.status(), last_at_);
    return std::optional<binlog::Event>(std::move(ev).value());
  }
  const uint64_t at = offset_;
  uint8_t header[binlog::kEventHeaderLength];
  size_t n = std::fread(header, 1, sizeof(header), file_);
  if (n == 0 && std::feof(file_)) {
    done_ = true;
    return std::optional<binlog::Event>();
  }
  if (std::ferror(file_)) {
    done_ = true;
    return Status::Unavailable(fmt::format("file {} at offset {}: read error: {}", name_, at, std::strerror(errno)));
  }
  if (n < sizeof(header)) {
    return Fail(Status::Corruption(fmt::format("truncated event header: {} of {} bytes", n, sizeof(header))), at);
  }
  uint32_t size = uint32_t{header[9]} | uint32_t{header[10]} << 8 | uint32_t{header[11]} << 16 |
                  uint32_t{header[12]} << 24;
  if (size < binlog::kEventHeaderLength || size > kMaxEventSize) {
    return Fail(Status::Corruption(fmt::format("bad event_size {} ({})", size,
                                               binlog::EventTypeName(header[4]))), at);
  }
  auto buf = std::make_shared<std::string>(size, '\0');
  std::memcpy(buf->data(), header, sizeof(header));
  size_t want = size - sizeof(header);
  size_t got = std::fread(buf->data() + sizeof(header), 1, want, file_);
  if (got < want) {
    if (std::ferror(file_)) {
      done_ = true;
      return Status::Unavailable(fmt::format("file {} at offset {}: read error: {}", name_, at, std::strerror(errno)));
    }
    return Fail(Status::Corruption(fmt::format("truncated {}: event_size {} but only {} bytes left",
                                               binlog::EventTypeName(header[4]), size,
                                               got + sizeof(header))), at);
  }
  offset_ = at + size;
  last_at_ = at;
  std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(buf->data()), buf->size());
  auto ev = stream_.NextAt(bytes, at);
  if (!ev.ok()) return Fail(ev.status(), at);
  binlog::Event out = std::move(ev).value();
  if (!out.storage) out.storage = std::move(buf);
  return std::optional<binlog::Event>(std::move(out));
}

}  // namespace sluice::io
