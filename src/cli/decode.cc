#include "cli/decode.h"

#include <map>
#include <memory>
#include <unordered_map>

#include "binlog/events.h"
#include "io/binlog_file.h"
#include "pipeline/change.h"
#include "sink/envelope.h"

namespace sluice::cli {
namespace {

// A table definition built from the TABLE_MAP alone: column names from the optional
// metadata, or "@1", "@2", ... when the binlog has none.
TableSchemaPtr SchemaFromMap(const binlog::TableMap& map) {
  auto t = std::make_shared<TableSchema>();
  t->db = map.db;
  t->table = map.table;
  for (size_t i = 0; i < map.column_count(); ++i) {
    ColumnDesc c;
    c.name = i < map.column_names.size() ? map.column_names[i] : fmt::format("@{}", i + 1);
    t->columns.push_back(std::move(c));
  }
  for (uint32_t k : map.primary_key) t->primary_key.push_back(k);
  return t;
}

}  // namespace

Status RunDecode(const DecodeOptions& options, std::ostream& out) {
  std::map<std::string, uint64_t> by_type;
  std::map<std::string, uint64_t> rows_by_table;
  std::string buf;
  for (const auto& path : options.files) {
    ASSIGN_OR_RETURN(auto reader, io::BinlogFileReader::Open(path));
    std::unordered_map<const binlog::TableMap*, TableSchemaPtr> schemas;
    while (true) {
      ASSIGN_OR_RETURN(auto ev, reader->Next());
      if (!ev) break;
      if (ev->pos < options.start_position && !ev->in_payload) continue;
      if (options.stop_position && ev->pos >= options.stop_position) break;
      if (options.summary) {
        ++by_type[ev->TypeName()];
        if (auto* rows = std::get_if<binlog::RowsEvent>(&ev->body)) {
          auto map = reader->stream().FindTable(rows->table_id);
          std::string name = map ? map->db + "." + map->table : fmt::format("table_id {}", rows->table_id);
          std::vector<binlog::DecodedRow> decoded;
          if (map) {
            Status st = binlog::DecodeRows(*rows, *map, nullptr, {}, &decoded);
            if (!st.ok()) return st.WithContext(fmt::format("file {} event at offset {}", path, ev->pos));
          }
          rows_by_table[name] += decoded.size();
        }
        continue;
      }
      if (!options.rows) {
        out << binlog::EventToJson(*ev).dump() << '\n';
        continue;
      }
      auto* rows = std::get_if<binlog::RowsEvent>(&ev->body);
      if (!rows) continue;
      auto map = reader->stream().FindTable(rows->table_id);
      if (!map) {
        return Status::Corruption(fmt::format("file {} at offset {}: rows event for table id {} "
                                              "without a TABLE_MAP", path, ev->pos, rows->table_id));
      }
      auto& schema = schemas[map.get()];
      if (!schema) schema = SchemaFromMap(*map);
      std::vector<binlog::DecodedRow> decoded;
      Status st = binlog::DecodeRows(*rows, *map, nullptr, {}, &decoded);
      if (!st.ok()) return st.WithContext(fmt::format("file {} event at offset {}", path, ev->pos));
      RowChange c;
      c.table = schema;
      c.op = rows->kind == binlog::RowsKind::kWrite    ? Op::kCreate
             : rows->kind == binlog::RowsKind::kDelete ? Op::kDelete
                                                       : Op::kUpdate;
      c.source.flavor = reader->stream().flavor();
      c.source.server_id = ev->header.server_id;
      c.source.file = ev->file;
      c.source.pos = ev->pos;
      c.source.timestamp = ev->header.timestamp;
      for (size_t i = 0; i < decoded.size(); ++i) {
        c.before = std::move(decoded[i].before);
        c.after = std::move(decoded[i].after);
        c.source.row = static_cast<uint32_t>(i);
        buf.clear();
        RETURN_IF_ERROR(AppendEnvelope(c, int64_t{ev->header.timestamp} * 1000, &buf));
        buf += '\n';
        out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
      }
    }
  }
  if (options.summary) {
    nlohmann::ordered_json j;
    j["events"] = by_type;
    j["rows"] = rows_by_table;
    out << j.dump(2) << '\n';
  }
  out.flush();
  return Status::Ok();
}

}  // namespace sluice::cli
