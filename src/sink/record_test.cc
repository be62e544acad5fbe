#include "sink/record.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "sink/envelope.h"

namespace sluice {
namespace {

using Json = nlohmann::json;

TableSchemaPtr Table(bool keyed = true) {
  auto t = std::make_shared<TableSchema>();
  t->db = "shop";
  t->table = "items";
  ColumnDesc id{"id"};
  id.SetType("int");
  id.column_type = "int(11)";
  id.nullable = false;
  ColumnDesc name{"name"};
  name.SetType("varchar");
  name.column_type = "varchar(20)";
  name.charset = "utf8mb4";
  t->columns = {id, name};
  if (keyed) t->primary_key = {0};
  return t;
}

RowChange Change(const TableSchemaPtr& t, Op op, Row before, Row after, uint32_t row = 0) {
  RowChange c;
  c.op = op;
  c.table = t;
  c.before = std::move(before);
  c.after = std::move(after);
  c.source.flavor = Flavor::kMariaDB;
  c.source.server_id = 1;
  c.source.file = "bin.000001";
  c.source.pos = 400;
  c.source.gtid = "0-1-5";
  c.source.timestamp = 1700000000;
  c.source.row = row;
  return c;
}

Transaction Txn(std::vector<RowChange> changes) {
  Transaction t;
  t.changes = std::move(changes);
  t.checkpoint = "{}";
  return t;
}

std::string Envelope(const RowChange& c) {
  std::string s;
  EXPECT_TRUE(AppendEnvelope(c, 42, &s).ok());
  return s;
}

TEST(RecordTest, KeyIsPrimaryKeyAndValueIsEnvelope) {
  auto t = Table();
  Transaction txn = Txn({Change(t, Op::kCreate, {}, {Value::Int(1), Value::Text("a")})});
  RecordSerializer s;
  RecordBatch b;
  ASSERT_TRUE(s.AppendTransaction(txn, 42, &b).ok());
  ASSERT_EQ(b.records.size(), 1u);
  EXPECT_TRUE(b.records[0].has_key);
  EXPECT_EQ(b.key(b.records[0]), R"({"id":1})");
  EXPECT_EQ(b.value(b.records[0]), Envelope(txn.changes[0]));
  EXPECT_EQ(b.records[0].change, &txn.changes[0]);
}

TEST(RecordTest, KeylessTableHasNoKeyAndNoTombstone) {
  auto t = Table(false);
  Transaction txn = Txn({Change(t, Op::kDelete, {Value::Int(1), Value::Text("a")}, {})});
  RecordOptions o;
  o.tombstones = true;
  RecordSerializer s(o);
  RecordBatch b;
  ASSERT_TRUE(s.AppendTransaction(txn, 42, &b).ok());
  ASSERT_EQ(b.records.size(), 1u);
  EXPECT_FALSE(b.records[0].has_key);
}

TEST(RecordTest, TombstoneAfterDelete) {
  auto t = Table();
  Transaction txn = Txn({Change(t, Op::kDelete, {Value::Int(7), Value::Text("a")}, {})});
  RecordOptions o;
  o.tombstones = true;
  RecordSerializer s(o);
  RecordBatch b;
  ASSERT_TRUE(s.AppendTransaction(txn, 42, &b).ok());
  ASSERT_EQ(b.records.size(), 2u);
  EXPECT_EQ(b.key(b.records[0]), R"({"id":7})");
  EXPECT_EQ(b.records[1].kind, RecordKind::kTombstone);
  EXPECT_EQ(b.key(b.records[1]), R"({"id":7})");
  EXPECT_FALSE(b.records[1].has_value);
}

TEST(RecordTest, TransactionMetadata) {
  auto t = Table();
  Transaction txn = Txn({Change(t, Op::kCreate, {}, {Value::Int(1), Value::Text("a")}, 0),
                         Change(t, Op::kCreate, {}, {Value::Int(2), Value::Text("b")}, 1)});
  RecordOptions o;
  o.transaction_metadata = true;
  RecordSerializer s(o);
  RecordBatch b;
  ASSERT_TRUE(s.AppendTransaction(txn, 42, &b).ok());
  ASSERT_EQ(b.records.size(), 4u);
  EXPECT_EQ(b.records[0].kind, RecordKind::kTxnBegin);
  EXPECT_EQ(b.key(b.records[0]), R"({"id":"0-1-5"})");
  EXPECT_EQ(b.value(b.records[0]),
            R"({"status":"BEGIN","id":"0-1-5","event_count":null,"data_collections":null,"ts_ms":1700000000000})");
  Json second = Json::parse(b.value(b.records[2]));
  EXPECT_EQ(second["transaction"],
            Json::parse(R"({"id":"0-1-5","total_order":2,"data_collection_order":2})"));
  EXPECT_EQ(second["after"]["id"], 2);
  EXPECT_EQ(b.records[3].kind, RecordKind::kTxnEnd);
  EXPECT_EQ(b.value(b.records[3]),
            R"({"status":"END","id":"0-1-5","event_count":2,"data_collections":[{"data_collection":"shop.items","event_count":2}],"ts_ms":1700000000000})");
  // Snapshot chunks carry no transaction metadata.
  txn.is_snapshot = true;
  b.clear();
  ASSERT_TRUE(s.AppendTransaction(txn, 42, &b).ok());
  EXPECT_EQ(b.records.size(), 2u);
}

TEST(RecordTest, TransactionIdWithoutGtidIsFileAndPos) {
  auto t = Table();
  Transaction txn = Txn({Change(t, Op::kCreate, {}, {Value::Int(1), Value::Text("a")})});
  txn.changes[0].source.gtid.clear();
  EXPECT_EQ(RecordSerializer::TransactionId(txn), "bin.000001:400");
}

TEST(RecordTest, SchemasWrapping) {
  auto t = Table();
  Transaction txn = Txn({Change(t, Op::kUpdate, {Value::Int(1), Value::Text("a")},
                                {Value::Int(1), Value::Text("b")})});
  RecordOptions o;
  o.schemas = true;
  o.schema_name_prefix = "app";
  RecordSerializer s(o);
  RecordBatch b;
  ASSERT_TRUE(s.AppendTransaction(txn, 42, &b).ok());
  ASSERT_EQ(b.records.size(), 1u);
  Json key = Json::parse(b.key(b.records[0]));
  EXPECT_EQ(key["payload"], Json::parse(R"({"id":1})"));
  EXPECT_EQ(key["schema"]["name"], "app.shop.items.Key");
  EXPECT_EQ(key["schema"]["fields"][0], Json::parse(R"({"type":"int32","optional":false,"field":"id"})"));
  Json value = Json::parse(b.value(b.records[0]));
  EXPECT_EQ(value["payload"], Json::parse(Envelope(txn.changes[0])));
  EXPECT_EQ(value["schema"]["name"], "app.shop.items.Envelope");
  const Json& before = value["schema"]["fields"][0];
  EXPECT_EQ(before["field"], "before");
  EXPECT_EQ(before["fields"][1], Json::parse(R"({"type":"string","optional":true,"field":"name"})"));
}

TEST(RecordTest, KeyChangeSplitsIntoDeleteAndCreate) {
  auto t = Table();
  Transaction txn = Txn({Change(t, Op::kUpdate, {Value::Int(1), Value::Text("a")},
                                {Value::Int(2), Value::Text("a")})});
  RecordOptions o;
  o.tombstones = true;
  o.split_key_changes = true;
  RecordSerializer s(o);
  RecordBatch b;
  ASSERT_TRUE(s.AppendTransaction(txn, 42, &b).ok());
  ASSERT_EQ(b.records.size(), 3u);
  EXPECT_EQ(b.key(b.records[0]), R"({"id":1})");
  EXPECT_EQ(Json::parse(b.value(b.records[0]))["op"], "d");
  EXPECT_EQ(b.records[1].kind, RecordKind::kTombstone);
  EXPECT_EQ(b.key(b.records[2]), R"({"id":2})");
  EXPECT_EQ(Json::parse(b.value(b.records[2]))["op"], "c");
  for (const auto& r : b.records) EXPECT_EQ(r.change, &txn.changes[0]);
}

TEST(RecordTest, SchemaChangeOnceThenAlter) {
  auto t = Table();
  RecordSerializer s;
  RecordBatch b;
  ASSERT_TRUE(s.AppendSchemaChange(*t, 42, &b).ok());
  ASSERT_TRUE(s.AppendSchemaChange(*t, 43, &b).ok());  // unchanged: nothing
  ASSERT_EQ(b.records.size(), 1u);
  Json v = Json::parse(b.value(b.records[0]));
  EXPECT_EQ(v["tableChanges"][0]["type"], "CREATE");
  EXPECT_EQ(v["tableChanges"][0]["table"]["primaryKeyColumnNames"], Json::parse(R"(["id"])"));
  EXPECT_EQ(v["tableChanges"][0]["table"]["columns"][1]["typeExpression"], "varchar(20)");
  EXPECT_EQ(b.key(b.records[0]), R"({"databaseName":"shop"})");
  EXPECT_FALSE(v["tableChanges"][0]["table"]["columns"][1].contains("defaultValueExpression"));
  auto altered = std::make_shared<TableSchema>(*t);
  altered->columns.push_back(ColumnDesc{"extra"});
  // ADD COLUMN ... DEFAULT: existing rows take it without a row event, so the record says it.
  altered->columns.back().default_kind = DefaultKind::kLiteral;
  altered->columns.back().default_value = "'it''s'";
  altered->columns.push_back(ColumnDesc{"at"});
  altered->columns.back().default_kind = DefaultKind::kExpression;
  altered->columns.back().default_value = "current_timestamp()";
  altered->columns.push_back(ColumnDesc{"maybe"});
  altered->columns.back().default_kind = DefaultKind::kNull;
  ASSERT_TRUE(s.AppendSchemaChange(*altered, 44, &b).ok());
  ASSERT_EQ(b.records.size(), 2u);
  Json w = Json::parse(b.value(b.records[1]));
  EXPECT_EQ(w["tableChanges"][0]["type"], "ALTER");
  const Json& cols = w["tableChanges"][0]["table"]["columns"];
  EXPECT_EQ(cols[cols.size() - 3]["defaultValueExpression"], "'it''s'");
  EXPECT_EQ(cols[cols.size() - 2]["defaultValueExpression"], "current_timestamp()");
  EXPECT_EQ(cols[cols.size() - 1]["defaultValueExpression"], "NULL");
}

TEST(RecordTest, TruncateRecord) {
  auto t = Table();
  RecordSerializer s;
  RecordBatch b;
  ASSERT_TRUE(s.AppendTruncate(*t, 42, &b).ok());
  ASSERT_EQ(b.records.size(), 1u);
  EXPECT_FALSE(b.records[0].has_key);
  EXPECT_EQ(b.value(b.records[0]),
            R"({"before":null,"after":null,"op":"t","ts_ms":42,"source":{"connector":"sluice","db":"shop","table":"items"}})");
  EXPECT_EQ(b.records[0].source, nullptr);

  // A TRUNCATE the stream read: its position, as a schema record's source has it.
  SourceInfo at;
  at.file = "mariadb-bin.000002";
  at.pos = 4567;
  at.gtid = "0-1-42";
  at.timestamp = 1700000000;
  ASSERT_TRUE(s.AppendTruncate(*t, 43, &b, &at).ok());
  ASSERT_EQ(b.records.size(), 2u);
  EXPECT_EQ(b.value(b.records[1]),
            R"({"before":null,"after":null,"op":"t","ts_ms":43,"source":{"connector":"sluice","db":"shop","table":"items",)"
            R"("file":"mariadb-bin.000002","pos":4567,"gtid":"0-1-42","ts_ms":1700000000000}})");
  EXPECT_EQ(b.records[1].source, &at);
}

TEST(RecordTest, BadUtf8LeavesBatchAsItWas) {
  auto t = Table();
  Transaction txn = Txn({Change(t, Op::kCreate, {}, {Value::Int(1), Value::Text("a")}),
                         Change(t, Op::kCreate, {}, {Value::Int(2), Value::Text("\xff")})});
  RecordSerializer s;
  RecordBatch b;
  b.buffer = "keep";
  Status st = s.AppendTransaction(txn, 42, &b);
  EXPECT_EQ(st.code(), StatusCode::kCorruption);
  EXPECT_EQ(b.buffer, "keep");
  EXPECT_TRUE(b.records.empty());
}

}  // namespace
}  // namespace sluice
