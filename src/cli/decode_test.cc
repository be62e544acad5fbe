// `sluice decode` in-process (RunDecode) over fixture binlogs edited by hand: every mode
// must end with output or a clear Status, never an exception or a crash.
#include "cli/decode.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <zstd.h>
#include <nlohmann/json.hpp>

#include "../../fuzz/decode_target.h"
#include "binlog/checksum.h"
#include "binlog/event_stream.h"
#include "binlog/events.h"

namespace sluice::cli {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

fs::path FixtureDir() { return fs::path(SLUICE_SOURCE_DIR) / ".." / "shared" / "fixtures" / "binlogs"; }

Bytes ReadBytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  EXPECT_TRUE(in.good()) << "fixture missing: " << p;
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A file in a fresh temporary directory, removed with it.
class TempFile {
 public:
  explicit TempFile(const Bytes& data) {
    char tmpl[] = "/tmp/sluice-decode-test-XXXXXX";
    dir_ = mkdtemp(tmpl);
    path_ = (fs::path(dir_) / "edited-bin.000001").string();
    std::ofstream out(path_, std::ios::binary);
    out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  }
  ~TempFile() { fs::remove_all(dir_); }
  const std::string& path() const { return path_; }

 private:
  std::string dir_;
  std::string path_;
};

struct DecodeRun {
  Status status;
  std::string output;
};

DecodeRun Decode(const std::string& path, bool rows, bool summary, bool no_output = false) {
  DecodeOptions o;
  o.files = {path};
  o.rows = rows;
  o.summary = summary;
  o.no_output = no_output;
  std::ostringstream out;
  DecodeRun r;
  r.status = RunDecode(o, out);
  r.output = out.str();
  return r;
}

// The fixture with the table name of its first TABLE_MAP changed in place (same length)
// to hold `replacement` bytes, and the event's CRC32 fixed.
Bytes WithTableName(const std::string& fixture, const std::string& replacement) {
  Bytes data = ReadBytes(FixtureDir() / fixture);
  std::vector<binlog::EventSlice> slices;
  EXPECT_TRUE(binlog::SplitEvents(std::span<const uint8_t>(data).subspan(4), 4, &slices).ok());
  binlog::EventStream stream;
  stream.SetPosition(fixture, 4);
  for (const auto& s : slices) {
    auto ev = stream.NextAt(s.bytes, s.offset);
    EXPECT_TRUE(ev.ok()) << ev.status().ToString();
    if (!ev.ok()) break;
    const auto* map = std::get_if<binlog::TableMapEvent>(&ev->body);
    if (!map) continue;
    const std::string& name = map->map->table;
    EXPECT_EQ(name.size(), replacement.size());
    // Layout after the header: table_id(6) flags(2) db_len(1) db NUL table_len(1) table.
    const size_t at = s.offset + 19 + 8 + 1 + map->map->db.size() + 1 + 1;
    EXPECT_EQ(std::string(data.begin() + at, data.begin() + at + name.size()), name);
    std::copy(replacement.begin(), replacement.end(), data.begin() + at);
    if (stream.checksum_alg() == binlog::ChecksumAlg::kCrc32) {
      const size_t end = s.offset + s.bytes.size();
      uint32_t crc = binlog::Crc32(std::span<const uint8_t>(data).subspan(s.offset, s.bytes.size() - 4));
      for (int i = 0; i < 4; ++i) data[end - 4 + i] = static_cast<uint8_t>(crc >> (8 * i));
    }
    return data;
  }
  ADD_FAILURE() << "no TABLE_MAP in " << fixture;
  return data;
}

TEST(Decode, TableNameThatIsNotUtf8IsEscapedInEveryMode) {
  // "outbox" -> "out\xFF\xFEx": not UTF-8.
  TempFile f(WithTableName("mariadb-bin.000001", std::string("out\xFF\xFE" "x")));
  DecodeRun summary = Decode(f.path(), false, true);
  ASSERT_TRUE(summary.status.ok()) << summary.status.ToString();
  auto j = nlohmann::json::parse(summary.output);
  EXPECT_TRUE(j["rows"].contains("toddy_test.out\\xFF\\xFEx")) << summary.output;

  DecodeRun events = Decode(f.path(), false, false);
  ASSERT_TRUE(events.status.ok()) << events.status.ToString();
  EXPECT_NE(events.output.find(R"("table":"out\\xFF\\xFEx")"), std::string::npos) << events.output;

  DecodeRun rows = Decode(f.path(), true, false);
  ASSERT_TRUE(rows.status.ok()) << rows.status.ToString();
  std::istringstream lines(rows.output);
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    auto r = nlohmann::json::parse(line);  // every line is valid JSON
    // The first transaction uses the edited TABLE_MAP, the second a later, intact one.
    EXPECT_EQ(r["source"]["table"], n == 0 ? "out\\xFF\\xFEx" : "outbox");
    ++n;
  }
  EXPECT_EQ(n, 2);
  EXPECT_TRUE(Decode(f.path(), false, false, true).status.ok());
}

TEST(Decode, PreGaRowsEventIsNotSupportedNamingFileAndOffset) {
  const std::string path = (FixtureDir() / "ver_5_1-wl2325_s.001").string();
  for (int mode = 0; mode < 4; ++mode) {
    DecodeRun r = Decode(path, mode == 1, mode == 2, mode == 3);
    EXPECT_EQ(r.status.code(), StatusCode::kNotSupported) << r.status.ToString();
    const std::string msg = r.status.ToString();
    EXPECT_NE(msg.find("pre-GA rows event"), std::string::npos) << msg;
    // The file as given on the command line (a base name alone is ambiguous).
    EXPECT_NE(msg.find("file " + path + " at offset 411"), std::string::npos) << msg;
  }
}

void PutLe(Bytes& b, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void PutLenEnc(Bytes& b, uint64_t v) {  // values below 2^24 only
  if (v < 251) {
    b.push_back(static_cast<uint8_t>(v));
  } else if (v < (1u << 16)) {
    b.push_back(0xFC);
    PutLe(b, v, 2);
  } else if (v < (1u << 24)) {
    b.push_back(0xFD);
    PutLe(b, v, 3);
  } else {
    b.push_back(0xFE);
    PutLe(b, v, 8);
  }
}

// header(19) + body + CRC32.
Bytes MakeEvent(uint8_t type, const Bytes& body, uint32_t log_pos) {
  Bytes e;
  PutLe(e, 1700000000, 4);
  e.push_back(type);
  PutLe(e, 1, 4);
  PutLe(e, 19 + body.size() + 4, 4);
  PutLe(e, log_pos, 4);
  PutLe(e, 0, 2);
  e.insert(e.end(), body.begin(), body.end());
  PutLe(e, binlog::Crc32(e), 4);
  return e;
}

// zstd of `head` followed by `zeros` zero bytes, compressed in pieces (the zeros are never
// all in memory).
Bytes ZstdOf(const Bytes& head, uint64_t zeros) {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  Bytes out;
  std::vector<uint8_t> buf(ZSTD_CStreamOutSize());
  auto feed = [&](const void* p, size_t n, ZSTD_EndDirective end) {
    ZSTD_inBuffer in{p, n, 0};
    while (true) {
      ZSTD_outBuffer o{buf.data(), buf.size(), 0};
      size_t rc = ZSTD_compressStream2(cctx, &o, &in, end);
      EXPECT_FALSE(ZSTD_isError(rc));
      out.insert(out.end(), buf.begin(), buf.begin() + o.pos);
      if (end == ZSTD_e_end ? rc == 0 : in.pos == in.size) break;
    }
  };
  feed(head.data(), head.size(), ZSTD_e_continue);
  const std::vector<uint8_t> zero(1 << 20, 0);
  for (uint64_t left = zeros; left > 0;) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(left, zero.size()));
    feed(zero.data(), n, ZSTD_e_continue);
    left -= n;
  }
  feed(nullptr, 0, ZSTD_e_end);
  ZSTD_freeCCtx(cctx);
  return out;
}

// A binlog file: the MySQL 8 FDE of transaction_compression.000001, then one
// TRANSACTION_PAYLOAD whose zstd stream holds one inner event (a QUERY_EVENT header
// declaring `declared` bytes) followed by `zeros` zero bytes; the payload header claims
// `declared` uncompressed bytes.
Bytes PayloadBomb(uint32_t declared, uint64_t zeros) {
  Bytes all = ReadBytes(FixtureDir() / "transaction_compression.000001");
  Bytes file(all.begin(), all.begin() + 126);  // magic + FDE (with CRC32)
  Bytes inner;
  PutLe(inner, 1700000000, 4);
  inner.push_back(2);  // QUERY_EVENT
  PutLe(inner, 1, 4);
  PutLe(inner, declared, 4);
  PutLe(inner, 0, 4);
  PutLe(inner, 0, 2);
  Bytes z = ZstdOf(inner, zeros);
  Bytes body;
  Bytes v;
  PutLenEnc(v, 0);  // compression type: zstd
  body.push_back(2); PutLenEnc(body, v.size()); body.insert(body.end(), v.begin(), v.end());
  v.clear();
  PutLenEnc(v, declared);
  body.push_back(3); PutLenEnc(body, v.size()); body.insert(body.end(), v.begin(), v.end());
  v.clear();
  PutLenEnc(v, z.size());
  body.push_back(1); PutLenEnc(body, v.size()); body.insert(body.end(), v.begin(), v.end());
  body.push_back(0);  // end of header
  body.insert(body.end(), z.begin(), z.end());
  Bytes ev = MakeEvent(40, body, static_cast<uint32_t>(file.size() + 19 + body.size() + 4));
  file.insert(file.end(), ev.begin(), ev.end());
  return file;
}

TEST(Decode, PayloadThatInflatesToGigabytesIsRefusedAtTheInnerHeader) {
  // 2.5 GB declared; the zstd stream holds the header and 64 MiB of zeros (a few KB on
  // disk). Before any of the inner event is buffered, every mode stops with an error
  // naming the file, the payload's offset and the limit.
  const uint32_t declared = 2500000000u;
  Bytes bomb = PayloadBomb(declared, 64u << 20);
  EXPECT_LT(bomb.size(), 20000u);
  TempFile f(bomb);
  for (int mode = 0; mode < 4; ++mode) {
    DecodeRun r = Decode(f.path(), mode == 1, mode == 2, mode == 3);
    ASSERT_EQ(r.status.code(), StatusCode::kCorruption) << r.status.ToString();
    const std::string msg = r.status.ToString();
    EXPECT_NE(msg.find("file " + f.path() + " at offset 126"), std::string::npos) << msg;
    EXPECT_NE(msg.find("declares 2500000000 bytes, above the 1073741824-byte limit"), std::string::npos) << msg;
  }

  // The limit is configurable downwards: a 3 MiB inner event passes 4 MiB, not 1 MiB.
  TempFile small(PayloadBomb(3u << 20, (3u << 20) - 19));
  DecodeOptions o;
  o.files = {small.path()};
  o.no_output = true;
  o.max_event_size = 1u << 20;
  std::ostringstream out;
  Status st = RunDecode(o, out);
  EXPECT_EQ(st.code(), StatusCode::kCorruption) << st.ToString();
  EXPECT_NE(st.ToString().find("above the 1048576-byte limit"), std::string::npos) << st.ToString();
  o.max_event_size = 4u << 20;
  st = RunDecode(o, out);
  // Past the limit check the zero-filled QUERY_EVENT body is decoded (and found bad).
  EXPECT_EQ(st.ToString().find("limit"), std::string::npos) << st.ToString();
}

// Every committed decode_fuzzer input (tests/fuzz-regressions/decode), replayed through the
// fuzzer's own body.
TEST(Decode, FuzzRegressionInputs) {
  const fs::path dir = fs::path(SLUICE_SOURCE_DIR) / "tests" / "fuzz-regressions" / "decode";
  ASSERT_TRUE(fs::is_directory(dir)) << dir << " is missing";
  std::vector<fs::path> inputs;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().filename() != "README.md") inputs.push_back(e.path());
  std::sort(inputs.begin(), inputs.end());
  EXPECT_FALSE(inputs.empty());
  for (const fs::path& p : inputs) {
    SCOPED_TRACE(p.string());
    Bytes b = ReadBytes(p);
    sluice::fuzz::FuzzDecode(b.data(), b.size());
  }
}

}  // namespace
}  // namespace sluice::cli
