#include "sink/tail.h"

#include <librdkafka/rdkafka.h>
#include <nats/nats.h>

#include <cctype>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "sink/envelope.h"

namespace sluice {

namespace {

bool Stopped(const std::atomic<bool>* stop) { return stop != nullptr && stop->load(); }

// Appends `text` as it is when it is JSON, else as a JSON string (bytes that are not UTF-8
// as base64 in {"base64":"..."}).
void AppendEmbedded(const char* data, size_t size, bool present, std::string* line) {
  if (!present) {
    line->append("null");
    return;
  }
  std::string_view text(data, size);
  if (nlohmann::json::accept(text)) {
    line->append(text);
    return;
  }
  const size_t mark = line->size();
  if (!AppendJsonString(text, line)) {
    line->resize(mark);
    line->append("{\"base64\":\"");
    AppendBase64(text, line);
    line->append("\"}");
  }
}

}  // namespace

Status TailKafka(const KafkaSinkOptions& o, bool follow, const std::atomic<bool>* stop, std::FILE* out) {
  if (o.bootstrap_servers.empty()) return Status::InvalidArgument("kafka: bootstrap_servers is empty");
  const std::string state_topic = o.state_topic.empty() ? o.topic_prefix + ".sluice_state" : o.state_topic;
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  std::vector<std::pair<std::string, std::string>> props = {
      {"bootstrap.servers", o.bootstrap_servers}, {"group.id", "sluice-tail"},
      {"enable.auto.commit", "false"}, {"enable.partition.eof", "true"},
      {"isolation.level", "read_committed"}, {"log.connection.close", "false"}};
  for (const auto& p : o.properties) {
    if (p.first.rfind("security.", 0) == 0 || p.first.rfind("sasl.", 0) == 0 || p.first.rfind("ssl.", 0) == 0) {
      props.push_back(p);
    }
  }
  for (const auto& [k, v] : props) {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      return Status::InvalidArgument(fmt::format("kafka: property {}: {}", k, err));
    }
  }
  rd_kafka_t* c = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  if (c == nullptr) return Status::InvalidArgument(fmt::format("kafka: {}", err));
  const rd_kafka_metadata_t* md = nullptr;
  rd_kafka_resp_err_t e = rd_kafka_metadata(c, 1, nullptr, &md, 10000);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    rd_kafka_destroy(c);
    return Status::Unavailable(fmt::format("kafka ({}): listing topics: {}", o.bootstrap_servers, rd_kafka_err2str(e)));
  }
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(16);
  for (int i = 0; i < md->topic_cnt; ++i) {
    const std::string name = md->topics[i].topic;
    if (name == state_topic) continue;
    if (name != o.topic_prefix && name.rfind(o.topic_prefix + ".", 0) != 0) continue;
    for (int p = 0; p < md->topics[i].partition_cnt; ++p) {
      rd_kafka_topic_partition_list_add(list, name.c_str(), md->topics[i].partitions[p].id)->offset =
          RD_KAFKA_OFFSET_BEGINNING;
    }
  }
  rd_kafka_metadata_destroy(md);
  int open = list->cnt;
  rd_kafka_assign(c, list);
  rd_kafka_topic_partition_list_destroy(list);
  std::string line;
  Status st;
  while ((open > 0 || follow) && !Stopped(stop)) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(c, 200);
    if (m == nullptr) continue;
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      --open;
    } else if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      st = Status::Unavailable(fmt::format("kafka: reading {}: {}", m->rkt ? rd_kafka_topic_name(m->rkt) : "?",
                                           rd_kafka_err2str(m->err)));
      rd_kafka_message_destroy(m);
      break;
    } else {
      line = "{\"topic\":";
      (void)AppendJsonString(rd_kafka_topic_name(m->rkt), &line);
      line += fmt::format(",\"partition\":{},\"offset\":{},\"key\":", m->partition, m->offset);
      AppendEmbedded(static_cast<const char*>(m->key), m->key_len, m->key != nullptr, &line);
      line += ",\"value\":";
      AppendEmbedded(static_cast<const char*>(m->payload), m->len, m->payload != nullptr, &line);
      line += "}\n";
      if (std::fwrite(line.data(), 1, line.size(), out) != line.size()) {
        st = Status::Unavailable("tail: writing the output failed");
        rd_kafka_message_destroy(m);
        break;
      }
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_consumer_close(c);
  rd_kafka_destroy(c);
  std::fflush(out);
  return st;
}

Status TailNats(const NatsSinkOptions& o, bool follow, const std::atomic<bool>* stop, std::FILE* out) {
  std::string stream = o.stream;
  if (stream.empty()) {
    for (char ch : o.subject_prefix) {
      const bool ok = std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-';
      stream.push_back(ok ? static_cast<char>(std::toupper(static_cast<unsigned char>(ch))) : '_');
    }
  }
  natsConnection* nc = nullptr;
  jsCtx* js = nullptr;
  natsSubscription* sub = nullptr;
  jsStreamInfo* si = nullptr;
  Status st;
  auto fail = [&](natsStatus s, std::string_view what) {
    return Status::Unavailable(fmt::format("nats ({}): {}: {}", o.url, what, natsStatus_GetText(s)));
  };
  natsStatus s = natsConnection_ConnectTo(&nc, o.url.c_str());
  if (s != NATS_OK) st = fail(s, "connect");
  if (st.ok()) {
    s = natsConnection_JetStream(&js, nc, nullptr);
    if (s != NATS_OK) st = fail(s, "JetStream context");
  }
  uint64_t last = 0;
  if (st.ok()) {
    jsErrCode code;
    s = js_GetStreamInfo(&si, js, stream.c_str(), nullptr, &code);
    if (s != NATS_OK) st = fail(s, fmt::format("stream {}", stream));
    else last = si->State.LastSeq;
  }
  if (st.ok()) {
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = stream.c_str();
    so.Ordered = true;
    so.Config.DeliverPolicy = js_DeliverAll;
    const std::string subject = o.subject_prefix + ".>";
    s = js_SubscribeSync(&sub, js, subject.c_str(), nullptr, &so, nullptr);
    if (s != NATS_OK) st = fail(s, "subscribe");
  }
  std::string line;
  uint64_t seen = 0;
  while (st.ok() && (follow || seen < last) && !Stopped(stop)) {
    natsMsg* m = nullptr;
    s = natsSubscription_NextMsg(&m, sub, 500);
    if (s == NATS_TIMEOUT) continue;
    if (s != NATS_OK) {
      st = fail(s, "reading");
      break;
    }
    jsMsgMetaData* meta = nullptr;
    if (natsMsg_GetMetaData(&meta, m) == NATS_OK) {
      seen = meta->Sequence.Stream;
      jsMsgMetaData_Destroy(meta);
    }
    line = "{\"subject\":";
    (void)AppendJsonString(natsMsg_GetSubject(m), &line);
    line += fmt::format(",\"seq\":{},\"key\":", seen);
    const char* key = nullptr;
    const bool has_key = natsMsgHeader_Get(m, "Sluice-Key", &key) == NATS_OK && key != nullptr;
    AppendEmbedded(key, has_key ? std::strlen(key) : 0, has_key, &line);
    line += ",\"value\":";
    const char* tomb = nullptr;
    const bool tombstone = natsMsgHeader_Get(m, "Sluice-Tombstone", &tomb) == NATS_OK;
    AppendEmbedded(natsMsg_GetData(m), static_cast<size_t>(natsMsg_GetDataLength(m)), !tombstone, &line);
    line += "}\n";
    natsMsg_Destroy(m);
    if (std::fwrite(line.data(), 1, line.size(), out) != line.size()) {
      st = Status::Unavailable("tail: writing the output failed");
    }
  }
  if (sub != nullptr) natsSubscription_Destroy(sub);
  if (si != nullptr) jsStreamInfo_Destroy(si);
  if (js != nullptr) jsCtx_Destroy(js);
  if (nc != nullptr) natsConnection_Destroy(nc);
  std::fflush(out);
  return st;
}

}  // namespace sluice
