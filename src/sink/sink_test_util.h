// Test helpers shared by the sink tests: one small keyed table and inserts into it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "pipeline/change.h"

namespace sluice::sink_test {

// shop.items (id, name), primary key id; columns without types (the sinks under test need none).
inline TableSchemaPtr ShopItems() {
  auto t = std::make_shared<TableSchema>();
  t->db = "shop";
  t->table = "items";
  t->columns = {ColumnDesc{"id"}, ColumnDesc{"name"}};
  t->primary_key = {0};
  return t;
}

// INSERT INTO shop.items VALUES (id, name), read from the binlog at mariadb-bin.000001:100+id.
inline RowChange ShopInsert(int64_t id, std::string name) {
  RowChange c;
  c.op = Op::kCreate;
  c.table = ShopItems();
  c.after = {Value::Int(id), Value::Text(std::move(name))};
  c.source.flavor = Flavor::kMariaDB;
  c.source.file = "mariadb-bin.000001";
  c.source.pos = 100 + static_cast<uint64_t>(id);
  return c;
}

}  // namespace sluice::sink_test
