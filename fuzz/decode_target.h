// The body of decode_fuzzer: `sluice decode` (cli::RunDecode) run in-process, in every
// output mode, over one mutated binlog file. Shared with the regression test that replays
// tests/fuzz-regressions/decode/* (src/cli/decode_test.cc).
//
// Input: byte 0 mode, bytes 1-2 --start-position (LE16), bytes 3-4 --stop-position
// (LE16), then the file image (normally starting with the binlog magic).
//   mode bits 0-1: 0 events (JSON lines), 1 --rows, 2 --summary, 3 --no-output
//   bit 2: pass --start-position      bit 3: pass --stop-position (when non-zero)
//   bit 4: the file given twice (state carried from file to file)
//   bit 5: --rows together with --summary (summary wins, as on the command line)
//   bit 6: --max-event-size 65536 (the payload limit's error path), else 16 MiB
// Decode errors are expected and ignored; a crash, hang, sanitizer report, exception
// or unbounded allocation is a bug. The inner-event limit is at most 16 MiB (the
// command's default is 1 GiB) so one input stays far below the fuzzer's 1 GiB RSS limit.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <ostream>
#include <streambuf>
#include <string>

#include "cli/decode.h"

namespace sluice::fuzz {

inline constexpr size_t kDecodeHeader = 5;

// A scratch file per process (fuzzers run one input at a time per process), removed at
// exit.
inline const std::string& DecodeScratchPath() {
  struct Scratch {
    std::string path;
    ~Scratch() { std::remove(path.c_str()); }
  };
  static const Scratch scratch{[] {
    const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    return std::string(dir) + "/sluice-decode-fuzz-" + std::to_string(getpid()) + ".bin";
  }()};
  return scratch.path;
}

class NullBuffer : public std::streambuf {
 protected:
  int overflow(int c) override { return traits_type::not_eof(c); }
  std::streamsize xsputn(const char*, std::streamsize n) override { return n; }
};

inline void FuzzDecode(const uint8_t* data, size_t size) {
  if (size < kDecodeHeader) return;
  const uint8_t mode = data[0];
  const std::string& path = DecodeScratchPath();
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr) return;
    std::fwrite(data + kDecodeHeader, 1, size - kDecodeHeader, f);
    std::fclose(f);
  }
  cli::DecodeOptions o;
  o.files = {path};
  if (mode & 0x10) o.files.push_back(path);
  switch (mode & 3) {
    case 1: o.rows = true; break;
    case 2: o.summary = true; break;
    case 3: o.no_output = true; break;
    default: break;
  }
  if (mode & 0x20) o.rows = o.summary = true;
  if (mode & 0x04) o.start_position = data[1] | data[2] << 8;
  if (mode & 0x08) o.stop_position = data[3] | data[4] << 8;
  if (o.stop_position != 0 && o.start_position > o.stop_position) o.start_position = 0;
  o.max_event_size = (mode & 0x40) ? uint64_t{1} << 16 : uint64_t{16} << 20;
  NullBuffer null;
  std::ostream out(&null);
  (void)cli::RunDecode(o, out);
}

}  // namespace sluice::fuzz
