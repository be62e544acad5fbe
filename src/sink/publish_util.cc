#include "sink/publish_util.h"

#include <cctype>
#include <charconv>
#include <chrono>
#include <mutex>
#include <nlohmann/json.hpp>

#include "util/log.h"

namespace sluice::publish {

int64_t SystemNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string Printable(std::string_view s, size_t max) {
  std::string out;
  for (char c : s.substr(0, max)) out.push_back(static_cast<unsigned char>(c) < 0x20 ? ' ' : c);
  if (s.size() > max) out += "...";
  return out;
}

std::string RecordExcerpt(const char* key, size_t key_size, const char* value, size_t value_size) {
  if (key != nullptr) return "key " + Printable({key, key_size});
  return "value " + Printable({value != nullptr ? value : "", value != nullptr ? value_size : 0});
}

std::string NatsToken(std::string_view s) {
  std::string t(s);
  for (char& c : t) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) c = '_';
  }
  return t.empty() ? "_" : t;
}

std::string NatsStreamName(const NatsSinkOptions& o) {
  if (!o.stream.empty()) return o.stream;
  std::string name;
  for (char c : NatsToken(o.subject_prefix)) {
    name.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  }
  return name;
}

DestinationOwners::DestinationOwners(std::string what, std::string how,
                                     std::function<std::string(std::string_view, std::string_view)> name)
    : what_(std::move(what)), how_(std::move(how)), name_(std::move(name)) {}

DestinationOwners DestinationOwners::ForKafka(const KafkaSinkOptions& o) {
  return DestinationOwners(
      "Kafka topic",
      fmt::format("sink.kafka.topic = \"{}\"; characters outside [A-Za-z0-9._-] become '_'", o.topic_template),
      [o](std::string_view db, std::string_view table) { return KafkaTopicFor(o, db, table); });
}

Status KafkaPropertyError(std::string_view prefix, const std::string& name, const std::string& value,
                          std::string err) {
  if (KafkaPropertyIsSecret(name) && !value.empty())
    for (size_t at; (at = err.find(value)) != std::string::npos;) err.replace(at, value.size(), "***");
  return Status::InvalidArgument(fmt::format("{}property {}: {}", prefix, name, err));
}

natsStatus SetNatsCredentials(natsOptions* opts, const NatsSinkOptions& o) {
  if (!o.user.empty()) return natsOptions_SetUserInfo(opts, o.user.c_str(), o.password.c_str());
  if (!o.token.empty()) return natsOptions_SetToken(opts, o.token.c_str());
  return NATS_OK;
}

natsStatus SetNatsServers(natsOptions* opts, const NatsSinkOptions& o) {
  std::vector<std::string> urls;
  for (size_t at = 0; at <= o.url.size();) {
    size_t comma = o.url.find(',', at);
    if (comma == std::string::npos) comma = o.url.size();
    if (comma > at) urls.push_back(o.url.substr(at, comma - at));
    at = comma + 1;
  }
  std::vector<const char*> servers;
  for (const auto& u : urls) servers.push_back(u.c_str());
  // libnats copies the strings.
  return natsOptions_SetServers(opts, servers.data(), static_cast<int>(servers.size()));
}

DestinationOwners DestinationOwners::ForNats(const NatsSinkOptions& o) {
  return DestinationOwners(
      "NATS subject", "characters outside [A-Za-z0-9_-] become '_'",
      [o](std::string_view db, std::string_view table) { return NatsSubjectFor(o, db, table); });
}

Status DestinationOwners::Claim(std::string_view db, std::string_view table) {
  const std::string name = name_(db, table);
  auto [it, inserted] = owners_.try_emplace(name, std::string(db), std::string(table));
  if (inserted || (it->second.first == db && it->second.second == table)) return Status::Ok();
  return Status::FailedPrecondition(fmt::format(
      "source tables `{}`.`{}` and `{}`.`{}` both publish to the {} {} ({}), where a delete in one would send a "
      "tombstone for a key of the other; sluice stops rather than mix them: leave `{}`.`{}` out (source.exclude) "
      "and run again",
      it->second.first, it->second.second, db, table, what_, name, how_, db, table));
}

void DestinationOwners::Know(std::string_view db, std::string_view table) {
  owners_.try_emplace(name_(db, table), std::string(db), std::string(table));
}

void DestinationOwners::Leave(const SchemaChange& change) {
  const TableSchemaPtr& b = change.before;
  if (!b || (change.after && change.after->db == b->db && change.after->table == b->table)) return;
  auto it = owners_.find(name_(b->db, b->table));
  if (it != owners_.end() && it->second.first == b->db && it->second.second == b->table) owners_.erase(it);
}

namespace {

void KafkaLogLine(const rd_kafka_t*, int level, const char* fac, const char* buf) {
  if (level > 4) return;  // LOG_NOTICE and below: librdkafka's chatter
  static std::mutex mu;
  static std::string last;
  static int64_t last_ms = 0;
  static int repeated = 0;
  std::string line = fmt::format("kafka: {}: {}", fac, buf);
  const int64_t now = SteadyMs();
  std::lock_guard<std::mutex> lock(mu);
  if (line == last && now - last_ms < 10000) {
    ++repeated;
    return;
  }
  if (repeated > 0) LogWarning("{} (and {} more time(s))", last, repeated);
  repeated = 0;
  last = line;
  last_ms = now;
  LogWarning("{}", line);
}

}  // namespace

void SetKafkaLog(rd_kafka_conf_t* conf) { rd_kafka_conf_set_log_cb(conf, KafkaLogLine); }

Status StopForTheNextRun(const Status& st, std::string_view how) {
  if (st.code() != StatusCode::kUnavailable) return st;
  return Status::FailedPrecondition(fmt::format(
      "{}; the run stops, and the next one resumes from the last stored checkpoint ({})", st.message(), how));
}

Result<rd_kafka_t*> NewKafkaReader(const KafkaSinkOptions& o, const char* group_id) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  std::vector<std::pair<std::string, std::string>> props = {
      {"bootstrap.servers", o.bootstrap_servers}, {"group.id", group_id},
      {"enable.auto.commit", "false"},             {"enable.partition.eof", "true"},
      {"isolation.level", "read_committed"},       {"log.connection.close", "false"},
      // These readers stop at the end of each partition: answer an empty fetch at once
      // instead of the default 500 ms wait for more.
      {"fetch.wait.max.ms", "10"}};
  for (const auto& p : o.properties) {
    if (p.first.rfind("security.", 0) == 0 || p.first.rfind("sasl.", 0) == 0 || p.first.rfind("ssl.", 0) == 0) {
      props.push_back(p);
    }
  }
  for (const auto& [k, v] : props) {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      return KafkaPropertyError("kafka: ", k, v, err);
    }
  }
  SetKafkaLog(conf);
  rd_kafka_t* c = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  if (c == nullptr) return Status::InvalidArgument(fmt::format("kafka: {}", err));
  return c;
}

Result<std::vector<std::pair<std::string, int32_t>>> KafkaPrefixPartitions(rd_kafka_t* rk,
                                                                            const KafkaSinkOptions& o) {
  const rd_kafka_metadata_t* md = nullptr;
  rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 1, nullptr, &md, 10000);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Status::Unavailable(fmt::format("kafka ({}): listing topics: {}", o.bootstrap_servers, rd_kafka_err2str(e)));
  }
  const std::string state_topic = KafkaStateTopic(o);
  std::vector<std::pair<std::string, int32_t>> out;
  for (int i = 0; i < md->topic_cnt; ++i) {
    const std::string name = md->topics[i].topic;
    if (name == state_topic) continue;
    if (name != o.topic_prefix && name.rfind(o.topic_prefix + ".", 0) != 0) continue;
    for (int p = 0; p < md->topics[i].partition_cnt; ++p) out.emplace_back(name, md->topics[i].partitions[p].id);
  }
  rd_kafka_metadata_destroy(md);
  return out;
}

std::string RecordIdentity(std::string_view key, bool has_key, std::string_view value, bool has_value) {
  std::string id = has_key ? std::string(key) : std::string("\x01");
  id.push_back('\0');
  if (!has_value) return id + "\x02";  // tombstone
  nlohmann::json v = nlohmann::json::parse(value, nullptr, false);
  if (v.is_discarded() || !v.is_object()) return id.append(value);
  nlohmann::json* body = &v;
  if (v.contains("schema") && v.contains("payload") && v["payload"].is_object()) body = &v["payload"];
  body->erase("ts_ms");
  return id + v.dump();
}

std::string FormatKafkaOffsets(const std::map<std::pair<std::string, int32_t>, int64_t>& offsets) {
  std::string text;
  for (const auto& [p, off] : offsets) text += fmt::format("{}{}:{}:{}", text.empty() ? "" : ",", p.first, p.second, off);
  return text;
}

Result<std::map<std::pair<std::string, int32_t>, int64_t>> ParseKafkaOffsets(std::string_view text) {
  std::map<std::pair<std::string, int32_t>, int64_t> out;
  for (size_t at = 0; at < text.size();) {
    size_t comma = text.find(',', at);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view item = text.substr(at, comma - at);
    at = comma + 1;
    const size_t c2 = item.rfind(':');
    const size_t c1 = c2 == std::string_view::npos || c2 == 0 ? std::string_view::npos : item.rfind(':', c2 - 1);
    int32_t partition = 0;
    int64_t offset = 0;
    if (c1 == std::string_view::npos || c1 == 0 ||
        std::from_chars(item.data() + c1 + 1, item.data() + c2, partition).ec != std::errc() ||
        std::from_chars(item.data() + c2 + 1, item.data() + item.size(), offset).ec != std::errc()) {
      return Status::Corruption(fmt::format("bad entry '{}' (expected <topic>:<partition>:<offset>)", Printable(item)));
    }
    out[{std::string(item.substr(0, c1)), partition}] = offset;
  }
  return out;
}

}  // namespace sluice::publish
