// EventToJson: a deterministic JSON object per event (used by `sluice decode` and
// DebugString). Keys appear in a fixed order; strings that are not valid UTF-8 have each
// invalid byte written as the four characters \xNN so the output is always valid JSON.
#include <fmt/format.h>

#include "binlog/events.h"
#include "util/utf8.h"

namespace sluice::binlog {
namespace {

using Json = nlohmann::ordered_json;

std::string Text(std::string_view s) { return EscapeInvalidUtf8(s); }

std::string Bits(const std::vector<bool>& v) {
  std::string s;
  for (bool b : v) s.push_back(b ? '1' : '0');
  return s;
}

std::string_view KindName(RowsKind k) {
  switch (k) {
    case RowsKind::kWrite: return "write";
    case RowsKind::kUpdate: return "update";
    case RowsKind::kDelete: return "delete";
    case RowsKind::kPartialUpdate: return "partial_update";
  }
  return "unknown";
}

Json TableMapJson(const TableMap& m) {
  Json j;
  j["table_id"] = m.table_id;
  j["db"] = Text(m.db);
  j["table"] = Text(m.table);
  j["column_count"] = m.column_count();
  Json cols = Json::array();
  for (size_t i = 0; i < m.column_count(); ++i) {
    Json c;
    if (i < m.column_names.size()) c["name"] = Text(m.column_names[i]);
    c["type"] = std::string(ColumnTypeName(m.column_types[i]));
    c["meta"] = m.column_meta[i];
    c["nullable"] = i < m.nullable.size() && m.nullable[i];
    if (m.has_signedness && i < m.is_unsigned.size() && m.is_unsigned[i]) c["unsigned"] = true;
    if (i < m.collation_ids.size() && m.collation_ids[i] != 0) c["collation"] = m.collation_ids[i];
    if (i < m.labels.size() && !m.labels[i].empty()) {
      Json l = Json::array();
      for (const auto& s : m.labels[i]) l.push_back(Text(s));
      c["labels"] = std::move(l);
    }
    if (i < m.geometry_types.size() && m.geometry_types[i] != 0) c["geometry_type"] = m.geometry_types[i];
    if (i < m.visible.size() && !m.visible[i]) c["visible"] = false;
    if (i < m.vector_dimensions.size() && m.vector_dimensions[i] != 0) c["dimensions"] = m.vector_dimensions[i];
    cols.push_back(std::move(c));
  }
  j["columns"] = std::move(cols);
  if (m.has_primary_key) {
    j["primary_key"] = m.primary_key;
    bool any_prefix = false;
    for (auto p : m.primary_key_prefix) any_prefix |= p != 0;
    if (any_prefix) j["primary_key_prefix"] = m.primary_key_prefix;
  }
  return j;
}

template <typename T>
void PutOpt(Json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}

struct BodyJson {
  Json& j;
  const Event& ev;

  void operator()(const OpaqueEvent& e) {
    j["ignorable"] = e.ignorable;
    j["size"] = ev.raw.size();
  }
  void operator()(const FormatDescriptionEvent& e) {
    j["binlog_version"] = e.binlog_version;
    j["server_version"] = Text(e.server_version);
    j["flavor"] = std::string(FlavorName(e.flavor));
    j["checksum"] = e.checksum_alg == ChecksumAlg::kCrc32 ? "CRC32" : "NONE";
    j["header_length"] = e.header_length;
  }
  void operator()(const RotateEvent& e) {
    j["position"] = e.position;
    j["next_file"] = Text(e.next_file);
  }
  void operator()(const QueryEvent& e) {
    j["thread_id"] = e.thread_id;
    j["exec_time"] = e.exec_time;
    j["error_code"] = e.error_code;
    j["schema"] = Text(e.schema);
    j["query"] = Text(e.query);
    if (e.compressed) j["compressed"] = true;
  }
  void operator()(const XidEvent& e) { j["xid"] = e.xid; }
  void operator()(const TableMapEvent& e) {
    Json tm = TableMapJson(*e.map);
    for (auto& [k, v] : tm.items()) j[k] = v;
  }
  void operator()(const RowsEvent& e) {
    j["table_id"] = e.table_id;
    if (ev.table_map) {
      j["db"] = Text(ev.table_map->db);
      j["table"] = Text(ev.table_map->table);
    }
    j["kind"] = std::string(KindName(e.kind));
    j["version"] = e.version;
    if (e.compressed) j["compressed"] = true;
    j["flags"] = e.flags;
    j["stmt_end"] = e.stmt_end();
    j["column_count"] = e.column_count;
    if (!e.present_before.empty()) j["columns_before"] = Bits(e.present_before);
    if (!e.present_after.empty()) j["columns_after"] = Bits(e.present_after);
    if (!e.extra_data.empty()) j["extra_data_size"] = e.extra_data.size();
    j["rows_size"] = e.body.size();
  }
  void operator()(const GtidEvent& e) {
    if (!e.anonymous) j["gtid"] = e.GtidText();
    j["anonymous"] = e.anonymous;
    if (e.tagged) j["tag"] = e.tag;
    j["gtid_flags"] = e.flags;
    if (e.has_logical_clock) {
      j["last_committed"] = e.last_committed;
      j["sequence_number"] = e.sequence_number;
    }
    PutOpt(j, "immediate_commit_timestamp", e.immediate_commit_timestamp);
    PutOpt(j, "original_commit_timestamp", e.original_commit_timestamp);
    PutOpt(j, "transaction_length", e.transaction_length);
    PutOpt(j, "immediate_server_version", e.immediate_server_version);
    PutOpt(j, "original_server_version", e.original_server_version);
    PutOpt(j, "commit_group_ticket", e.commit_group_ticket);
  }
  void operator()(const PreviousGtidsEvent& e) { j["gtid_set"] = e.gtid_set; }
  void operator()(const MariadbGtidEvent& e) {
    j["gtid"] = e.GtidText();
    j["domain_id"] = e.domain_id;
    j["seq_no"] = e.seq_no;
    j["gtid_flags"] = e.flags;
    j["standalone"] = e.standalone();
    PutOpt(j, "commit_id", e.commit_id);
    if (!e.xid.empty()) j["xid"] = Text(e.xid);
  }
  void operator()(const MariadbGtidListEvent& e) { j["gtid_list"] = e.GtidListText(); }
  void operator()(const BinlogCheckpointEvent& e) { j["checkpoint_file"] = Text(e.file); }
  void operator()(const RowsQueryEvent& e) { j["query"] = Text(e.query); }
  void operator()(const HeartbeatEvent& e) {
    j["log_file"] = Text(e.log_file);
    PutOpt(j, "log_position", e.log_position);
  }
  void operator()(const IntvarEvent& e) {
    j["kind"] = e.kind == 1 ? "LAST_INSERT_ID" : e.kind == 2 ? "INSERT_ID" : "UNKNOWN";
    j["value"] = e.value;
  }
  void operator()(const RandEvent& e) {
    j["seed1"] = e.seed1;
    j["seed2"] = e.seed2;
  }
  void operator()(const UserVarEvent& e) {
    j["name"] = Text(e.name);
    j["value_size"] = e.value_raw.size();
  }
  void operator()(const XaPrepareEvent& e) {
    j["one_phase"] = e.one_phase;
    j["format_id"] = e.format_id;
    j["gtrid"] = Text(e.gtrid);
    j["bqual"] = Text(e.bqual);
  }
  void operator()(const StopEvent&) {}
  void operator()(const IncidentEvent& e) {
    j["incident"] = e.incident;
    j["message"] = Text(e.message);
  }
  void operator()(const TransactionPayloadEvent& e) {
    j["compression"] = e.compression_type == 0 ? "ZSTD" : e.compression_type == 255 ? "NONE" : "UNKNOWN";
    j["payload_size"] = e.payload_size;
    j["uncompressed_size"] = e.uncompressed_size;
  }
};

}  // namespace

nlohmann::ordered_json EventToJson(const Event& ev) {
  Json j;
  j["file"] = Text(ev.file);
  j["pos"] = ev.pos;
  j["end_pos"] = ev.end_pos;
  j["log_pos"] = ev.header.log_pos;
  j["type"] = ev.TypeName();
  j["type_code"] = ev.header.type;
  j["server_id"] = ev.header.server_id;
  j["timestamp"] = ev.header.timestamp;
  j["flags"] = ev.header.flags;
  if (ev.in_payload) j["in_payload"] = true;
  std::visit(BodyJson{j, ev}, ev.body);
  return j;
}

}  // namespace sluice::binlog
