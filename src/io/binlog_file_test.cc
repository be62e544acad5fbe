// BinlogFileReader over every fixture file, plus damaged copies written to a temp dir.
#include "io/binlog_file.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include <gtest/gtest.h>

#include <sys/resource.h>
#include <unistd.h>

namespace sluice::io {
namespace {

namespace fs = std::filesystem;

fs::path FixtureDir() { return fs::path(SLUICE_SOURCE_DIR) / ".." / "shared" / "fixtures" / "binlogs"; }

struct Outcome {
  std::vector<binlog::Event> events;
  Status status;
};

Outcome ReadAll(const fs::path& p,
                BinlogFileReader::ReadMode mode = BinlogFileReader::ReadMode::kMapIfPossible) {
  Outcome o;
  auto r = BinlogFileReader::Open(p.string(), {}, mode);
  if (!r.ok()) {
    o.status = r.status();
    return o;
  }
  while (true) {
    auto ev = (*r)->Next();
    if (!ev.ok()) {
      o.status = ev.status();
      // The reader is finished after an error.
      auto again = (*r)->Next();
      EXPECT_TRUE(again.ok() && !again->has_value());
      return o;
    }
    if (!ev->has_value()) return o;
    o.events.push_back(std::move(**ev));
  }
}

std::vector<std::string> FixtureNames() {
  std::vector<std::string> names;
  if (!fs::is_directory(FixtureDir())) return {"<fixture directory missing>"};
  for (const auto& e : fs::directory_iterator(FixtureDir())) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// Damaged fixtures and the event offset their error must name.
const std::map<std::string, uint64_t>& Damaged() {
  static const auto* m = new std::map<std::string, uint64_t>{
      {"binlog_truncated_event.000001", 4},
      {"binlog_truncated_prev_gtid_event.000001", 120},
      {"corrupt-relay-bin.000624", 91204},
      {"ver_5_1-wl2325_r.001", 428},
      {"ver_5_1-wl2325_s.001", 411},  // MySQL 5.2 pre-release event numbering
  };
  return *m;
}

class FileWalkTest : public ::testing::TestWithParam<std::string> {};

TEST_P(FileWalkTest, ReadsToEndOrNamesFileAndOffset) {
  ASSERT_TRUE(fs::is_directory(FixtureDir())) << "fixture directory missing: " << FixtureDir();
  const std::string name = GetParam();
  const fs::path path = FixtureDir() / name;
  Outcome o = ReadAll(path);
  auto it = Damaged().find(name);
  if (it == Damaged().end()) {
    EXPECT_TRUE(o.status.ok()) << o.status.ToString();
    EXPECT_FALSE(o.events.empty());
    // Events own their bytes: still readable after the reader moved on.
    for (const auto& ev : o.events) {
      ASSERT_EQ(ev.raw.size(), ev.header.event_size);
      EXPECT_EQ(ev.raw[4], ev.header.type);
      EXPECT_EQ(ev.file, name);
    }
  } else {
    EXPECT_TRUE(o.status.code() == StatusCode::kCorruption || o.status.code() == StatusCode::kNotSupported)
        << o.status.ToString();
    // The file as given to Open, not its base name (that is the events' binlog file name).
    std::string prefix = "file " + path.string() + " at offset " + std::to_string(it->second) + ": ";
    EXPECT_EQ(o.status.message().rfind(prefix, 0), 0u) << o.status.ToString();
  }
}

INSTANTIATE_TEST_SUITE_P(AllFixtures, FileWalkTest, ::testing::ValuesIn(FixtureNames()),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s) {
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return s;
                         });

TEST(BinlogFileReaderTest, FactsThroughTheReader) {
  Outcome o = ReadAll(FixtureDir() / "binlog_transaction.000001");
  ASSERT_TRUE(o.status.ok());
  ASSERT_EQ(o.events.size(), 20u);
  EXPECT_EQ(o.events.back().header.log_pos, 1670u);
  EXPECT_EQ(o.events.back().TypeName(), "ROTATE_EVENT");

  Outcome p = ReadAll(FixtureDir() / "transaction_compression.000001");
  ASSERT_TRUE(p.status.ok());
  std::vector<std::string> inner;
  for (const auto& ev : p.events) {
    if (ev.in_payload) {
      inner.push_back(ev.TypeName());
      EXPECT_EQ(ev.pos, 274u);
      EXPECT_EQ(ev.end_pos, 431u);
    }
  }
  EXPECT_EQ(inner, (std::vector<std::string>{"QUERY_EVENT", "TABLE_MAP_EVENT", "WRITE_ROWS_EVENT", "XID_EVENT"}));
}

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() / ("sluice-io-test-" + std::to_string(::getpid()));
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  fs::path Write(const std::string& name, const std::string& bytes) {
    fs::path p = path_ / name;
    std::ofstream(p, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return p;
  }
 private:
  fs::path path_;
};

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(BinlogFileReaderTest, MissingFileAndBadMagic) {
  auto r = BinlogFileReader::Open("/nonexistent/dir/mysql-bin.000001");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  TempDir dir;
  const fs::path x = dir.Write("x.000001", "\xfe" "bix....");
  auto bad = BinlogFileReader::Open(x.string());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kCorruption);
  EXPECT_EQ(bad.status().message().rfind("file " + x.string() + " at offset 0: ", 0), 0u) << bad.status().ToString();
}

// Issue 6, item 11: a big sparse file that is not a binlog is refused on its first four
// bytes, without being mapped and paged in whole (MAP_POPULATE) first.
TEST(BinlogFileReaderTest, BigSparseNonBinlogIsRefusedBeforeMapping) {
  fs::path dir = fs::temp_directory_path() / ("sluice-sparse-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::path p = dir / "sparse.bin";
  {
    std::ofstream(p) << "not!";
  }
  const uintmax_t kSize = uintmax_t{1} << 30;  // 1 GiB of holes
  fs::resize_file(p, kSize);
  struct rusage before {};
  ::getrusage(RUSAGE_SELF, &before);
  auto r = BinlogFileReader::Open(p.string(), {});
  struct rusage after {};
  ::getrusage(RUSAGE_SELF, &after);
  fs::remove_all(dir);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorruption);
  EXPECT_NE(r.status().message().find("not a binlog file (bad magic)"), std::string::npos)
      << r.status().ToString();
  // ru_maxrss is in KiB; paging in the file would add about 1 GiB.
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 64 * 1024) << "the file was paged in";
}

TEST(BinlogFileReaderTest, TruncatedCopyNamesLastEvent) {
  std::string good = Slurp(FixtureDir() / "mariadb-bin.000001");
  ASSERT_EQ(good.size(), 1074u);
  TempDir dir;
  // Cut inside the last XID_EVENT (offset 1043, 31 bytes).
  const fs::path cut = dir.Write("mariadb-bin.000009", good.substr(0, 1070));
  Outcome o = ReadAll(cut);
  EXPECT_EQ(o.events.size(), 12u);
  EXPECT_EQ(o.status.code(), StatusCode::kCorruption);
  EXPECT_EQ(o.status.message().rfind("file " + cut.string() + " at offset 1043: truncated XID_EVENT", 0), 0u)
      << o.status.ToString();
}

TEST(BinlogFileReaderTest, FlippedByteFailsChecksum) {
  std::string bytes = Slurp(FixtureDir() / "mariadb-bin.000001");
  bytes[500] = static_cast<char>(bytes[500] ^ 0x01);  // inside the TABLE_MAP_EVENT at 476
  TempDir dir;
  const fs::path flipped = dir.Write("mariadb-bin.000010", bytes);
  Outcome o = ReadAll(flipped);
  EXPECT_EQ(o.status.code(), StatusCode::kCorruption);
  EXPECT_EQ(o.status.message().rfind("file " + flipped.string() + " at offset 476: ", 0), 0u) << o.status.ToString();
  EXPECT_NE(o.status.message().find("checksum mismatch"), std::string::npos);
}

// The mapped and the chunked read paths give the same events and the same errors.
TEST(BinlogFileReaderTest, MappedAndChunkedReadsAgreeOnEveryFixture) {
  ASSERT_TRUE(fs::is_directory(FixtureDir())) << "fixture directory missing: " << FixtureDir();
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(FixtureDir())) {
    ++files;
    Outcome mapped = ReadAll(e.path(), BinlogFileReader::ReadMode::kMapIfPossible);
    Outcome chunked = ReadAll(e.path(), BinlogFileReader::ReadMode::kChunked);
    EXPECT_EQ(mapped.status.ToString(), chunked.status.ToString()) << e.path();
    ASSERT_EQ(mapped.events.size(), chunked.events.size()) << e.path();
    for (size_t i = 0; i < mapped.events.size(); ++i)
      EXPECT_EQ(mapped.events[i].DebugString(), chunked.events[i].DebugString()) << e.path() << " event " << i;
  }
  EXPECT_GT(files, 20u);
}

}  // namespace
}  // namespace sluice::io
