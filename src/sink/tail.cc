#include "sink/tail.h"

#include <librdkafka/rdkafka.h>
#include <nats/nats.h>

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "sink/envelope.h"
#include "sink/publish_util.h"
#include "util/redact.h"

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
  ASSIGN_OR_RETURN(rd_kafka_t * c, publish::NewKafkaReader(o, "sluice-tail"));
  Result<std::vector<std::pair<std::string, int32_t>>> parts = publish::KafkaPrefixPartitions(c, o);
  if (!parts.ok()) {
    rd_kafka_destroy(c);
    return parts.status();
  }
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(static_cast<int>(parts->size()) + 1);
  for (const auto& [topic, partition] : *parts) {
    rd_kafka_topic_partition_list_add(list, topic.c_str(), partition)->offset = RD_KAFKA_OFFSET_BEGINNING;
  }
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
  const std::string stream = publish::NatsStreamName(o);
  natsConnection* nc = nullptr;
  jsCtx* js = nullptr;
  natsSubscription* sub = nullptr;
  jsStreamInfo* si = nullptr;
  Status st;
  auto fail = [&](natsStatus s, std::string_view what) {
    return Status::Unavailable(
        fmt::format("nats ({}): {}: {}", RedactUrlCredentials(o.url), what, natsStatus_GetText(s)));
  };
  natsOptions* opts = nullptr;
  natsStatus s = natsOptions_Create(&opts);
  if (s == NATS_OK) s = publish::SetNatsServers(opts, o);
  if (s == NATS_OK) s = publish::SetNatsCredentials(opts, o);
  if (s == NATS_OK) s = natsConnection_Connect(&nc, opts);
  natsOptions_Destroy(opts);
  if (s != NATS_OK) st = fail(s, "connect");
  if (st.ok()) {
    s = natsConnection_JetStream(&js, nc, nullptr);
    if (s != NATS_OK) st = fail(s, "JetStream context");
  }
  uint64_t last = 0;
  if (st.ok()) {
    // A cluster that is electing the stream's leader (a node restarted) answers late or
    // not at all for a few seconds: retry for up to 15 s, as the sink does.
    for (int attempt = 0;; ++attempt) {
      jsErrCode code = static_cast<jsErrCode>(0);
      s = js_GetStreamInfo(&si, js, stream.c_str(), nullptr, &code);
      if ((s != NATS_TIMEOUT && s != NATS_NO_RESPONDERS) || attempt >= 30) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
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
    for (int attempt = 0;; ++attempt) {
      s = js_SubscribeSync(&sub, js, subject.c_str(), nullptr, &so, nullptr);
      if ((s != NATS_TIMEOUT && s != NATS_NO_RESPONDERS) || attempt >= 30) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
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
    line += fmt::format(",\"seq\":{},\"id\":", seen);
    const char* id = nullptr;  // Nats-Msg-Id: what JetStream de-duplicates by (null: none)
    if (natsMsgHeader_Get(m, "Nats-Msg-Id", &id) == NATS_OK && id != nullptr) (void)AppendJsonString(id, &line);
    else line += "null";
    line += ",\"key\":";
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
