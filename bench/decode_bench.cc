// Google Benchmark for the hot functions of `sluice decode --rows` on a sysbench binlog:
// event framing + decode of a rows event (CRC32 footer included), DecodeRows for a
// sysbench oltp row (id INT, k INT, c CHAR(120), pad CHAR(60), utf8mb4), the DECIMAL
// and DATETIME2 value decoders, and AppendEnvelope for an update of that row.
// Run: build-bench/decode_bench (see BENCHMARKS.md). Inputs are built in memory; the
// layouts follow MySQL libbinlogevents/src/rows_event.cpp and sql/log_event.cc.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "binlog/checksum.h"
#include "binlog/decimal.h"
#include "binlog/events.h"
#include "binlog/rows_event.h"
#include "binlog/table_map.h"
#include "binlog/temporal.h"
#include "pipeline/change.h"
#include "sink/envelope.h"

namespace sluice::binlog {
namespace {

constexpr uint32_t kUtf8mb4GeneralCi = 45;
// sysbench's c and pad values: groups of 11 digits joined by '-', 119 and 59 characters.
const std::string kC =
    "83868641912-28773972837-60736120486-75162659906-27563526494-20381887404-"
    "41576422241-93426793964-56405065102-33518432330";
const std::string kPad = "67847967377-48000963322-62604785301-91415491898-96926520291";

void PutLe(std::vector<uint8_t>* b, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) b->push_back(static_cast<uint8_t>(v >> (8 * i)));
}

// One sysbench row image: null bitmap, id, k, c (CHAR(120) utf8mb4: 480 bytes max, so a
// 2-byte length), pad (CHAR(60) utf8mb4: 240 bytes max, 1-byte length).
void PutRow(std::vector<uint8_t>* b, int32_t id, int32_t k) {
  b->push_back(0);
  PutLe(b, static_cast<uint32_t>(id), 4);
  PutLe(b, static_cast<uint32_t>(k), 4);
  PutLe(b, kC.size(), 2);
  b->insert(b->end(), kC.begin(), kC.end());
  PutLe(b, kPad.size(), 1);
  b->insert(b->end(), kPad.begin(), kPad.end());
}

TableMap SysbenchMap() {
  TableMap m;
  m.table_id = 42;
  m.db = "sbtest";
  m.table = "sbtest1";
  m.column_types = {ColumnType::MYSQL_TYPE_LONG, ColumnType::MYSQL_TYPE_LONG,
                    ColumnType::MYSQL_TYPE_STRING, ColumnType::MYSQL_TYPE_STRING};
  // STRING meta: CHAR(480 bytes) -> byte0 = 0xFE ^ ((480 & 0x300) >> 4), byte1 = 480 & 0xFF.
  m.column_meta = {0, 0, static_cast<uint16_t>(((0xFE ^ ((480 & 0x300) >> 4)) << 8) | (480 & 0xFF)),
                   static_cast<uint16_t>(0xFE << 8 | 240)};
  m.nullable = {false, false, false, false};
  m.is_unsigned = {false, false, false, false};
  m.has_signedness = true;
  m.collation_ids = {0, 0, kUtf8mb4GeneralCi, kUtf8mb4GeneralCi};
  m.has_charsets = true;
  m.column_names = {"id", "k", "c", "pad"};
  m.primary_key = {0};
  m.has_primary_key = true;
  return m;
}

// A whole UPDATE_ROWS_EVENT_V1 (type 24, MariaDB's form) with one row and a CRC32 footer.
std::vector<uint8_t> SysbenchUpdateEvent() {
  std::vector<uint8_t> body;
  PutLe(&body, 42, 6);      // table id
  PutLe(&body, 1, 2);       // flags: STMT_END_F
  body.push_back(4);        // column count (packed)
  body.push_back(0x0F);     // columns present, before image
  body.push_back(0x0F);     // columns present, after image
  PutRow(&body, 5001, 4999);
  PutRow(&body, 5001, 5000);
  std::vector<uint8_t> ev;
  const uint32_t size = static_cast<uint32_t>(kEventHeaderLength + body.size() + kChecksumLength);
  PutLe(&ev, 1700000000, 4);  // timestamp
  ev.push_back(static_cast<uint8_t>(EventType::UPDATE_ROWS_EVENT_V1));
  PutLe(&ev, 1, 4);           // server id
  PutLe(&ev, size, 4);        // event size
  PutLe(&ev, 1000 + size, 4); // log pos
  PutLe(&ev, 0, 2);           // flags
  ev.insert(ev.end(), body.begin(), body.end());
  PutLe(&ev, Crc32(ev), 4);
  return ev;
}

FormatDescriptionEvent MariadbFde() {
  FormatDescriptionEvent fde;
  fde.binlog_version = 4;
  fde.server_version = "10.11.6-MariaDB-log";
  fde.header_length = kEventHeaderLength;
  fde.checksum_alg = ChecksumAlg::kCrc32;
  fde.flavor = Flavor::kMariaDB;
  return fde;  // post_header_lengths empty: every type takes its default
}

void BM_DecodeRowsEventFraming(benchmark::State& state) {
  const std::vector<uint8_t> ev = SysbenchUpdateEvent();
  const FormatDescriptionEvent fde = MariadbFde();
  DecodeContext ctx;
  ctx.fde = &fde;
  ctx.checksum_present = true;
  ctx.verify_checksum = state.range(0) != 0;
  for (auto _ : state) {
    auto decoded = DecodeEvent(ev, 1000, ctx);
    if (!decoded.ok()) state.SkipWithError(decoded.status().ToString().c_str());
    benchmark::DoNotOptimize(decoded);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * ev.size()));
}
BENCHMARK(BM_DecodeRowsEventFraming)->Arg(1)->Arg(0)->ArgName("verify_crc");

void BM_DecodeRowsSysbenchUpdate(benchmark::State& state) {
  const std::vector<uint8_t> ev = SysbenchUpdateEvent();
  const FormatDescriptionEvent fde = MariadbFde();
  DecodeContext ctx;
  ctx.fde = &fde;
  ctx.checksum_present = true;
  auto decoded = DecodeEvent(ev, 1000, ctx);
  if (!decoded.ok()) {
    state.SkipWithError(decoded.status().ToString().c_str());
    return;
  }
  const RowsEvent& rows = std::get<RowsEvent>(decoded->body);
  const TableMap map = SysbenchMap();
  std::vector<DecodedRow> out;
  for (auto _ : state) {
    out.clear();
    Status st = DecodeRows(rows, map, nullptr, {}, &out);
    if (!st.ok()) state.SkipWithError(st.ToString().c_str());
    benchmark::DoNotOptimize(out);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * rows.body.size()));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_DecodeRowsSysbenchUpdate);

void BM_ReadDecimal(benchmark::State& state) {
  // DECIMAL(20,6) -1234567.000100 in binary form.
  const int precision = 20, scale = 6;
  std::vector<uint8_t> bin(DecimalBinarySize(precision, scale));
  // integer part 14 digits: 5 leading digits (3 bytes) + 9 (4 bytes); fraction 6 digits (3 bytes).
  const uint32_t lead = 0, mid = 1234567, frac = 100;
  auto put = [&bin](size_t at, uint32_t v, int bytes) {  // big-endian, `bytes` low bytes of v
    for (int i = 0; i < bytes; ++i) bin.at(at + i) = static_cast<uint8_t>(v >> (8 * (bytes - 1 - i)));
  };
  put(0, lead, 3);
  put(3, mid, 4);
  put(7, frac, 3);
  for (auto& b : bin) b = static_cast<uint8_t>(~b);  // negative: every byte inverted
  bin[0] ^= 0x80;                                     // then the sign bit flipped
  for (auto _ : state) {
    ByteReader r(bin);
    auto s = ReadDecimal(r, precision, scale);
    if (!s.ok()) state.SkipWithError(s.status().ToString().c_str());
    benchmark::DoNotOptimize(s);
  }
}
BENCHMARK(BM_ReadDecimal);

void BM_ReadDatetime2(benchmark::State& state) {
  // 2024-03-15 12:34:56.123456, fsp 6: 5 bytes + 3 bytes of fraction, big-endian.
  const uint64_t ym = 2024 * 13 + 3;
  const uint64_t packed = (ym << 22 | 15ull << 17 | 12ull << 12 | 34ull << 6 | 56ull) + 0x8000000000ull;
  std::vector<uint8_t> bin;
  for (int i = 4; i >= 0; --i) bin.push_back(static_cast<uint8_t>(packed >> (8 * i)));
  const uint32_t frac = 123456;
  for (int i = 2; i >= 0; --i) bin.push_back(static_cast<uint8_t>(frac >> (8 * i)));
  for (auto _ : state) {
    ByteReader r(bin);
    auto s = ReadDatetime2(r, static_cast<int>(state.range(0)));
    if (!s.ok()) state.SkipWithError(s.status().ToString().c_str());
    benchmark::DoNotOptimize(s);
  }
}
BENCHMARK(BM_ReadDatetime2)->Arg(6)->Arg(0)->ArgName("fsp");

void BM_AppendEnvelopeSysbenchUpdate(benchmark::State& state) {
  auto schema = std::make_shared<TableSchema>();
  schema->db = "sbtest";
  schema->table = "sbtest1";
  for (const char* n : {"id", "k", "c", "pad"}) {
    ColumnDesc c;
    c.name = n;
    schema->columns.push_back(c);
  }
  schema->primary_key = {0};
  RowChange c;
  c.op = Op::kUpdate;
  c.table = schema;
  c.before = {Value::Int(5001), Value::Int(4999), Value::Text(kC), Value::Text(kPad)};
  c.after = {Value::Int(5001), Value::Int(5000), Value::Text(kC), Value::Text(kPad)};
  c.source.flavor = Flavor::kMariaDB;
  c.source.server_id = 1;
  c.source.file = "mariadb-bin.000001";
  c.source.pos = 123456789;
  c.source.timestamp = 1700000000;
  std::string out;
  size_t bytes = 0;
  for (auto _ : state) {
    out.clear();
    Status st = AppendEnvelope(c, 1700000000000, &out);
    if (!st.ok()) state.SkipWithError(st.ToString().c_str());
    bytes += out.size();
    benchmark::DoNotOptimize(out);
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_AppendEnvelopeSysbenchUpdate);

}  // namespace
}  // namespace sluice::binlog
