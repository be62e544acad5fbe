// Kafka sink on librdkafka. Protocol behaviour (idempotence, transactions, retries) is
// librdkafka's; this file maps records to topics, tracks delivery for the checkpoint, and
// groups source transactions into Kafka transactions. See kafka_sink.h.
#include "sink/kafka_sink.h"

#include <librdkafka/rdkafka.h>

#include <chrono>
#include <deque>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "sink/publish_util.h"
#include "util/log.h"

namespace sluice {

namespace {

using publish::SteadyMs;

// Header of each checkpoint record: "<topic>:<partition>:<offset>,..." for every partition
// written so far, the offset of its last record up to this checkpoint.
constexpr char kOffsetsHeader[] = "sluice-offsets";
// Header of each checkpoint record written in a transaction: "<producer nonce>:<commit
// number>", unique per commit attempt, so that after a failed commit a new producer can tell
// whether that commit went through (the checkpoint text alone may repeat).
constexpr char kCommitHeader[] = "sluice-commit";
constexpr size_t kMaxVisibleBytes = size_t{256} << 20;

// Errors a retry cannot fix: the run must stop and a person act.
bool IsDefinite(rd_kafka_resp_err_t e) {
  switch (e) {
    case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED:
    case RD_KAFKA_RESP_ERR__AUTHENTICATION:
    case RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION:
    case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC:
    case RD_KAFKA_RESP_ERR_INVALID_RECORD:
    case RD_KAFKA_RESP_ERR_POLICY_VIOLATION:
    case RD_KAFKA_RESP_ERR_INVALID_REQUIRED_ACKS:
    case RD_KAFKA_RESP_ERR_PRODUCER_FENCED:
    case RD_KAFKA_RESP_ERR__FENCED:
    case RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH:
      return true;
    default:
      return false;
  }
}

}  // namespace

bool KafkaPropertyIsSecret(std::string_view name) {
  return name.find("password") != std::string_view::npos || name.find("secret") != std::string_view::npos ||
         name == "ssl.key.pem";
}

std::string KafkaTopicFor(const KafkaSinkOptions& o, std::string_view db, std::string_view table) {
  std::string t;
  const std::string& tpl = o.topic_template;
  for (size_t i = 0; i < tpl.size();) {
    if (tpl.compare(i, 8, "{prefix}") == 0) {
      t += o.topic_prefix;
      i += 8;
    } else if (tpl.compare(i, 4, "{db}") == 0) {
      t += db;
      i += 4;
    } else if (tpl.compare(i, 7, "{table}") == 0) {
      t += table;
      i += 7;
    } else {
      t += tpl[i++];
    }
  }
  for (char& c : t) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) c = '_';
  }
  return t;
}

std::string KafkaStateTopic(const KafkaSinkOptions& o) {
  return o.state_topic.empty() ? o.topic_prefix + ".sluice_state" : o.state_topic;
}

class KafkaSink::Impl {
 public:
  explicit Impl(KafkaSinkOptions options)
      : o(std::move(options)), serializer(o.records), owners(publish::DestinationOwners::ForKafka(o)) {}
  ~Impl() {
    for (auto& [name, rkt] : topics)
      if (rkt != nullptr) rd_kafka_topic_destroy(rkt);
    if (rk != nullptr) {
      rd_kafka_flush(rk, 2000);
      rd_kafka_destroy(rk);
    }
  }

  Status Open();
  Result<std::optional<std::string>> Load();
  // Exactly-once: runs `body` (one public call: its records and checkpoints) as a whole
  // inside the open Kafka transaction, committing afterwards when the group is full. A
  // failure takes the call's records back out of the group and leaves the producer to be
  // started again (Rebuild) by the next call, which the caller makes with the same data.
  template <class Body>
  Status Atomically(const std::string& last_checkpoint, Body&& body);
  Status Prepare(const TableSchema& table);
  // Prepare without the schema record: the table's topic is claimed (and created).
  Status Claim(const TableSchema& table);
  Status Publish(const std::string& checkpoint);  // batch's records, then the checkpoint
  Status Save(const std::string& checkpoint);
  Status FlushAll();
  Status AdvanceState(bool force);

  // Delivery report (librdkafka thread-free: called from rd_kafka_poll/flush).
  void OnDelivery(const rd_kafka_message_t* m);

  KafkaSinkOptions o;
  RecordSerializer serializer;
  RecordBatch batch;
  publish::DestinationOwners owners;  // which table publishes to each table topic
  rd_kafka_t* rk = nullptr;
  bool transactional = false;
  using Topics = std::map<std::string, rd_kafka_topic_t*>;  // null: the handle of an old producer
  Topics topics;
  std::map<std::string, bool> created;
  Status broken;

  // Delivery tracking: every record produced gets a sequence number; base_seq is the
  // first not yet confirmed (all below it are delivered).
  uint64_t next_seq = 0;
  uint64_t base_seq = 0;
  std::deque<uint8_t> done;
  Status delivery_error;

  // At-least-once checkpointing.
  std::deque<std::pair<uint64_t, std::string>> pending;  // (records before it, checkpoint)
  std::optional<std::string> ready;                      // confirmed, not yet written
  std::optional<std::string> in_flight;                  // written, delivery not confirmed
  uint64_t in_flight_seq = 0;
  std::optional<std::string> stored;
  int64_t last_state_ms = 0;

  // Exactly-once: the open Kafka transaction's records, kept for a retry.
  struct Kept {
    Topics::iterator topic;
    int32_t partition;
    bool has_key, has_value;
    size_t key_begin, key_size, value_begin, value_size;
  };
  bool txn_open = false;
  int64_t txn_started_ms = 0;
  std::string group_buf;
  std::vector<Kept> group;
  std::string group_checkpoint;
  bool group_checkpointed = false;  // group_checkpoint came with a record of the group

  // A new producer after a failure the open transaction cannot survive: a fatal error of the
  // producer (librdkafka: "sequence desynchronization", a rewound sequence number; not a
  // fencing, which is definite) or transient failures that retries in place did not fix.
  // The next call starts it (init_transactions fences the old one, so its open transaction
  // is aborted, or finished if its commit had been written), reads the checkpoint back,
  // and produces the kept group again unless that checkpoint shows it committed.
  bool rebuild = false;
  std::string attempted;                 // the last checkpoint of the call that failed at its commit
  std::optional<std::string> replayed;   // ... found committed by Rebuild: its retry is a no-op
  std::string nonce;                     // this sink's, for kCommitHeader
  uint64_t commits = 0;
  std::string pending_commit;            // kCommitHeader of a commit not known to have gone through
  std::string loaded_commit;             // kCommitHeader of the checkpoint Load read
  int depth = 0;                         // Atomically calls in progress
  struct Mark {
    size_t records, bytes;
    std::string checkpoint;
    bool checkpointed;
  };
  Status Rebuild();
  Status RebuildIfNeeded();
  Status Abandon(const Mark& mark, const std::string& last_checkpoint, bool at_commit, Status st);
  bool ProducerFatal() const {
    char why[8];
    return rk != nullptr && rd_kafka_fatal_error(rk, why, sizeof why) != RD_KAFKA_RESP_ERR_NO_ERROR;
  }

  // Exactly-once without transaction markers (docs/sinks.md, "Exactly-once"): per
  // partition, the offset of the last record of the committed prefix (stored with each
  // checkpoint as the header kOffsetsHeader), and the records a read_committed reader sees
  // after it, which a restarted run (or a retried group) regenerates and skips.
  using Partition = std::pair<std::string, int32_t>;
  std::map<Partition, int64_t> committed_offsets;
  std::map<Partition, int64_t> txn_offsets;  // the open transaction's deliveries and skips
  bool dedupe = false;                       // committed_offsets known: tails can be read
  struct Visible {
    std::string identity;
    Partition partition;
    int64_t offset;
  };
  std::map<std::string, std::deque<Visible>> visible;  // topic '\0' key -> in log order
  uint64_t skipped = 0;
  Status ReadTails();
  Status ParseOffsets(std::string_view text);
  bool SkipVisible(const std::string& topic, const Kept& k);

 private:
  Status CreateProducer();
  Result<Topics::iterator> Topic(const std::string& name);
  Status CreateTopic(const std::string& name, int partitions, bool compacted);
  Status Produce(rd_kafka_topic_t* rkt, int32_t partition, const char* key, size_t key_size,
                 const char* value, size_t value_size, bool has_value,
                 const std::string* offsets_header = nullptr, const std::string* commit_header = nullptr);
  Status ProduceBatch();
  Status ProduceKept(size_t first);
  Status RetryGroup();
  Status ProduceState(const std::string& checkpoint);
  Status BeginTxn();
  Status CommitTxn();
  Status WaitDeliveries();
  Status TxnError(rd_kafka_error_t* e, std::string_view what);
  // The definite error that stopped the sink. Exactly-once: a transient delivery error is
  // the commit's to retry (CommitTxn), not sticky. At-least-once: any delivery error stops
  // the run (records already handed to the producer cannot be sent again from here; the next
  // run resumes from the stored checkpoint).
  Status Check() {
    if (!broken.ok()) return broken;
    if (delivery_error.ok() || (transactional && delivery_error.code() == StatusCode::kUnavailable)) return broken;
    broken = Definite(delivery_error);
    return broken;
  }
  Status Definite(const Status& st) const {
    return transactional ? st : publish::StopForTheNextRun(st, "at-least-once");
  }
  std::string TopicOf(const Record& r) const;
};

namespace {
void DeliveryCallback(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
  static_cast<KafkaSink::Impl*>(opaque)->OnDelivery(m);
}
}  // namespace

void KafkaSink::Impl::OnDelivery(const rd_kafka_message_t* m) {
  const uint64_t seq = reinterpret_cast<uintptr_t>(m->_private);
  if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR && m->offset >= 0 && transactional) {
    Partition p{rd_kafka_topic_name(m->rkt), m->partition};
    if (p.first != o.state_topic) {
      int64_t& last = txn_offsets.try_emplace(std::move(p), -1).first->second;
      last = std::max(last, m->offset);
    }
  }
  // Records purged by our own abort_transaction are produced again: not an error.
  const bool purged = m->err == RD_KAFKA_RESP_ERR__PURGE_QUEUE || m->err == RD_KAFKA_RESP_ERR__PURGE_INFLIGHT;
  if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR && !purged && delivery_error.ok()) {
    std::string what = publish::RecordExcerpt(static_cast<const char*>(m->key), m->key_len,
                                              static_cast<const char*>(m->payload), m->len);
    std::string reason = rd_kafka_err2str(m->err);
    if (m->err == RD_KAFKA_RESP_ERR__FATAL) {
      char buf[512];
      rd_kafka_fatal_error(rk, buf, sizeof buf);
      reason = buf;
    }
    std::string msg = fmt::format("kafka: record to topic {} ({}) not delivered: {}",
                                  rd_kafka_topic_name(m->rkt), what, reason);
    delivery_error = IsDefinite(m->err) ? Status::FailedPrecondition(msg) : Status::Unavailable(msg);
  }
  if (seq < base_seq || seq - base_seq >= done.size()) return;
  done[seq - base_seq] = 1;
  while (!done.empty() && done.front() != 0) {
    done.pop_front();
    ++base_seq;
  }
}

Status KafkaSink::Impl::Open() {
  if (o.bootstrap_servers.empty()) return Status::InvalidArgument("kafka sink: bootstrap_servers is empty");
  if (!o.now_ms) o.now_ms = publish::SystemNowMs;
  o.state_topic = KafkaStateTopic(o);
  if (o.state_key.empty()) o.state_key = o.transactional_id.empty() ? o.topic_prefix : o.transactional_id;
  transactional = !o.transactional_id.empty();
  RETURN_IF_ERROR(CreateProducer());
  if (o.create_topics) RETURN_IF_ERROR(CreateTopic(o.state_topic, 1, true));
  return Status::Ok();
}

// The producer, and with transactional_id its transactions initialised (fencing an older
// producer of the same id).
Status KafkaSink::Impl::CreateProducer() {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  std::vector<std::pair<std::string, std::string>> props = {
      {"bootstrap.servers", o.bootstrap_servers},
      {"client.id", "sluice"},
      {"enable.idempotence", "true"},
      {"acks", "all"},
      {"partitioner", "murmur2_random"},
      {"linger.ms", "5"},
      {"message.timeout.ms", std::to_string(o.delivery_timeout_ms)},
      {"queue.buffering.max.kbytes", std::to_string(o.queue_max_kbytes)},
      {"log.connection.close", "false"},
  };
  if (transactional) {
    props.emplace_back("transactional.id", o.transactional_id);
    props.emplace_back("transaction.timeout.ms",
                       std::to_string(std::max<uint32_t>(o.delivery_timeout_ms, 60000)));
  }
  for (const auto& p : o.properties) props.push_back(p);
  for (const auto& [k, v] : props) {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      return publish::KafkaPropertyError("kafka sink: ", k, v, err);
    }
  }
  rd_kafka_conf_set_dr_msg_cb(conf, DeliveryCallback);
  publish::SetKafkaLog(conf);
  rd_kafka_conf_set_opaque(conf, this);
  rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (rk == nullptr) return Status::InvalidArgument(fmt::format("kafka sink: {}", err));
  if (transactional) {
    for (int attempt = 0;; ++attempt) {
      rd_kafka_error_t* e = rd_kafka_init_transactions(rk, o.delivery_timeout_ms);
      if (e == nullptr) break;
      const bool retry = rd_kafka_error_is_retriable(e) && attempt < 5;
      Status st = Status::Unavailable(fmt::format("kafka sink: init_transactions ({}): {}",
                                                  o.transactional_id, rd_kafka_error_string(e)));
      rd_kafka_error_destroy(e);
      if (!retry) return st;
      std::this_thread::sleep_for(std::chrono::milliseconds(500 << attempt));
    }
  }
  return Status::Ok();
}

Status KafkaSink::Impl::CreateTopic(const std::string& name, int partitions, bool compacted) {
  if (created.count(name)) return Status::Ok();
  char err[512];
  rd_kafka_NewTopic_t* nt = rd_kafka_NewTopic_new(name.c_str(), partitions, o.replication_factor, err, sizeof err);
  if (nt == nullptr) return Status::InvalidArgument(fmt::format("kafka sink: topic {}: {}", name, err));
  if (compacted) (void)rd_kafka_NewTopic_set_config(nt, "cleanup.policy", "compact");
  rd_kafka_queue_t* q = rd_kafka_queue_new(rk);
  rd_kafka_CreateTopics(rk, &nt, 1, nullptr, q);
  rd_kafka_event_t* ev = rd_kafka_queue_poll(q, 30000);
  Status st;
  if (ev == nullptr) {
    st = Status::Unavailable(fmt::format("kafka sink: creating topic {}: no answer in 30 s", name));
  } else if (rd_kafka_event_error(ev) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    st = Status::Unavailable(fmt::format("kafka sink: creating topic {}: {}", name,
                                         rd_kafka_event_error_string(ev)));
  } else {
    size_t n = 0;
    const rd_kafka_topic_result_t** res =
        rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &n);
    for (size_t i = 0; i < n; ++i) {
      rd_kafka_resp_err_t e = rd_kafka_topic_result_error(res[i]);
      if (e != RD_KAFKA_RESP_ERR_NO_ERROR && e != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
        const char* why = rd_kafka_topic_result_error_string(res[i]);
        std::string msg = fmt::format("kafka sink: creating topic {}: {}", name,
                                      why != nullptr ? why : rd_kafka_err2str(e));
        st = IsDefinite(e) ||
                     e == RD_KAFKA_RESP_ERR_INVALID_REPLICATION_FACTOR ||
                     e == RD_KAFKA_RESP_ERR_INVALID_PARTITIONS || e == RD_KAFKA_RESP_ERR_INVALID_CONFIG
                 ? Status::FailedPrecondition(msg)
                 : Status::Unavailable(msg);
      }
    }
  }
  if (ev != nullptr) rd_kafka_event_destroy(ev);
  rd_kafka_queue_destroy(q);
  rd_kafka_NewTopic_destroy(nt);
  if (st.ok()) created[name] = true;
  return st;
}

Result<KafkaSink::Impl::Topics::iterator> KafkaSink::Impl::Topic(const std::string& name) {
  auto it = topics.try_emplace(name, nullptr).first;
  if (it->second != nullptr) return it;
  it->second = rd_kafka_topic_new(rk, name.c_str(), nullptr);
  if (it->second == nullptr) {
    return Status::InvalidArgument(
        fmt::format("kafka sink: topic {}: {}", name, rd_kafka_err2str(rd_kafka_last_error())));
  }
  return it;
}

std::string KafkaSink::Impl::TopicOf(const Record& r) const {
  switch (r.kind) {
    case RecordKind::kTxnBegin:
    case RecordKind::kTxnEnd:
      return o.topic_prefix + ".transaction";
    case RecordKind::kSchemaChange:
      return o.topic_prefix;
    default:
      return KafkaTopicFor(o, r.table->db, r.table->table);
  }
}

Status KafkaSink::Impl::Produce(rd_kafka_topic_t* rkt, int32_t partition, const char* key,
                                size_t key_size, const char* value, size_t value_size,
                                bool has_value, const std::string* offsets_header,
                                const std::string* commit_header) {
  for (;;) {
    void* opaque = reinterpret_cast<void*>(static_cast<uintptr_t>(next_seq));
    rd_kafka_headers_t* headers = nullptr;
    if (offsets_header != nullptr || commit_header != nullptr) headers = rd_kafka_headers_new(2);
    if (offsets_header != nullptr) {
      rd_kafka_header_add(headers, kOffsetsHeader, -1, offsets_header->data(),
                          static_cast<ssize_t>(offsets_header->size()));
    }
    if (commit_header != nullptr) {
      rd_kafka_header_add(headers, kCommitHeader, -1, commit_header->data(),
                          static_cast<ssize_t>(commit_header->size()));
    }
    // rd_kafka_produceva, not producev: producev's RD_KAFKA_V_* macros are GNU statement
    // expressions, which clang's -Wpedantic reports at every use.
    rd_kafka_vu_t vu[7] = {};
    vu[0].vtype = RD_KAFKA_VTYPE_RKT;
    vu[0].u.rkt = rkt;
    vu[1].vtype = RD_KAFKA_VTYPE_PARTITION;
    vu[1].u.i32 = partition;
    vu[2].vtype = RD_KAFKA_VTYPE_MSGFLAGS;
    vu[2].u.i = RD_KAFKA_MSG_F_COPY;
    vu[3].vtype = RD_KAFKA_VTYPE_VALUE;
    vu[3].u.mem.ptr = has_value ? const_cast<char*>(value) : nullptr;
    vu[3].u.mem.size = has_value ? value_size : 0;
    vu[4].vtype = RD_KAFKA_VTYPE_KEY;
    vu[4].u.mem.ptr = const_cast<char*>(key);
    vu[4].u.mem.size = key_size;
    vu[5].vtype = RD_KAFKA_VTYPE_HEADERS;
    vu[5].u.headers = headers;
    vu[6].vtype = RD_KAFKA_VTYPE_OPAQUE;
    vu[6].u.ptr = opaque;
    rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR_NO_ERROR;
    if (rd_kafka_error_t* err = rd_kafka_produceva(rk, vu, 7)) {
      e = rd_kafka_error_code(err);
      rd_kafka_error_destroy(err);
    }
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
      ++next_seq;
      done.push_back(0);
      return Status::Ok();
    }
    if (headers != nullptr) rd_kafka_headers_destroy(headers);  // not taken on failure
    if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
      rd_kafka_poll(rk, 100);  // back-pressure: wait for deliveries
      RETURN_IF_ERROR(Check());
      continue;
    }
    std::string what = publish::RecordExcerpt(key, key_size, value, value_size);
    std::string msg = fmt::format("kafka: record to topic {} ({}) refused: {}", rd_kafka_topic_name(rkt),
                                  what, rd_kafka_err2str(e));
    if (transactional && !IsDefinite(e)) return Status::Unavailable(msg);  // the group is retried
    broken = IsDefinite(e) ? Status::FailedPrecondition(msg) : Definite(Status::Unavailable(msg));
    return broken;
  }
}

Status KafkaSink::Impl::ProduceBatch() {
  const size_t first = group.size();
  for (const Record& r : batch.records) {
    const std::string name = TopicOf(r);
    ASSIGN_OR_RETURN(Topics::iterator topic, Topic(name));
    const int32_t partition = r.has_key ? RD_KAFKA_PARTITION_UA : 0;
    if (transactional) {
      Kept k{topic, partition, r.has_key, r.has_value, 0, 0, 0, 0};
      k.key_begin = group_buf.size();
      k.key_size = r.key_size;
      group_buf.append(batch.key(r));
      k.value_begin = group_buf.size();
      k.value_size = r.value_size;
      group_buf.append(batch.value(r));
      group.push_back(k);
      continue;
    }
    RETURN_IF_ERROR(Produce(topic->second, partition, r.has_key ? batch.buffer.data() + r.key_begin : nullptr,
                            r.key_size, batch.buffer.data() + r.value_begin, r.value_size,
                            r.has_value));
  }
  if (transactional) return ProduceKept(first);
  return Status::Ok();
}

Status KafkaSink::Impl::ProduceKept(size_t first) {
  for (size_t i = first; i < group.size(); ++i) {
    const Kept& k = group[i];
    if (!visible.empty() && SkipVisible(k.topic->first, k)) continue;
    if (k.topic->second == nullptr) RETURN_IF_ERROR(Topic(k.topic->first).status());
    RETURN_IF_ERROR(Produce(k.topic->second, k.partition, k.has_key ? group_buf.data() + k.key_begin : nullptr,
                            k.key_size, group_buf.data() + k.value_begin, k.value_size, k.has_value));
  }
  return Status::Ok();
}

// Aborts the open transaction and produces the whole group again in a new one.
Status KafkaSink::Impl::RetryGroup() {
  if (rd_kafka_error_t* a = rd_kafka_abort_transaction(rk, o.delivery_timeout_ms)) {
    return TxnError(a, "abort_transaction");
  }
  rd_kafka_poll(rk, 0);  // serve the purge reports of the aborted records
  delivery_error = Status::Ok();
  done.clear();
  base_seq = next_seq;
  txn_open = false;
  txn_offsets.clear();
  // On a real cluster the aborted records are invisible now and all are produced again; a
  // broker that wrote no abort marker (the mock) still shows those it took: skip them.
  RETURN_IF_ERROR(ReadTails());
  RETURN_IF_ERROR(BeginTxn());
  return ProduceKept(0);
}

template <class Body>
Status KafkaSink::Impl::Atomically(const std::string& last_checkpoint, Body&& body) {
  if (!transactional || depth > 0) return body();
  RETURN_IF_ERROR(Check());
  RETURN_IF_ERROR(RebuildIfNeeded());
  if (replayed) {
    const bool same = !last_checkpoint.empty() && *replayed == last_checkpoint;
    replayed.reset();
    if (same) return Status::Ok();  // the retry of a call whose commit went through
  }
  const Mark mark{group.size(), group_buf.size(), group_checkpoint, group_checkpointed};
  ++depth;
  Status st = body();
  --depth;
  bool at_commit = false;
  if (st.ok() && txn_open &&
      (group.size() >= o.group_max_records || SteadyMs() - txn_started_ms >= o.group_max_ms)) {
    st = CommitTxn();
    at_commit = true;
  }
  return st.ok() ? st : Abandon(mark, last_checkpoint, at_commit, std::move(st));
}

// The failed call's records leave the group (the caller makes the call again); the open
// Kafka transaction, which may hold some of them, must never commit: the next call starts a
// new producer, which aborts it. A definite error stops the sink as it is.
Status KafkaSink::Impl::Abandon(const Mark& mark, const std::string& last_checkpoint, bool at_commit, Status st) {
  if (!broken.ok()) return broken;
  group.resize(mark.records);
  group_buf.resize(mark.bytes);
  group_checkpoint = mark.checkpoint;
  group_checkpointed = mark.checkpointed;
  attempted = at_commit ? last_checkpoint : std::string();
  rebuild = true;
  return st;
}

Status KafkaSink::Impl::RebuildIfNeeded() {
  if (!rebuild) return Status::Ok();
  Status st = Rebuild();
  if (st.ok() || !broken.ok()) return broken;
  if (st.code() != StatusCode::kUnavailable) return st;
  return Status::Unavailable(fmt::format("kafka sink ({}): starting a new producer: {}", o.transactional_id,
                                         st.message()));
}

Status KafkaSink::Impl::Rebuild() {
  if (rk != nullptr) {
    rd_kafka_purge(rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    rd_kafka_poll(rk, 0);  // the purge reports: not errors (OnDelivery)
    for (auto& [name, rkt] : topics) {
      if (rkt != nullptr) rd_kafka_topic_destroy(rkt);
      rkt = nullptr;  // the group's records keep their topic by name; a new handle when produced
    }
    rd_kafka_destroy(rk);
    rk = nullptr;
  }
  txn_open = false;
  delivery_error = Status::Ok();
  done.clear();
  base_seq = next_seq;
  txn_offsets.clear();
  RETURN_IF_ERROR(CreateProducer());  // init_transactions: the old transaction ends
  stored.reset();
  RETURN_IF_ERROR(Load().status());  // the checkpoint that committed, and what follows it
  // A commit whose answer was lost may have gone through (its checkpoint record, and so the
  // whole transaction, is visible): then the kept group, and the failed call if the commit
  // was its own, are done.
  const bool group_committed = !pending_commit.empty() && loaded_commit == pending_commit;
  pending_commit.clear();
  if (group_committed) {
    if (!attempted.empty()) replayed = attempted;
    group_checkpoint = stored.value_or("");
    group.clear();
    group_buf.clear();
    group_checkpointed = false;
  } else if (!group.empty() || group_checkpointed) {
    RETURN_IF_ERROR(BeginTxn());
    RETURN_IF_ERROR(ProduceKept(0));
  }
  LogWarning("kafka sink ({}): a new producer took over; the open transaction {}", o.transactional_id,
             group_committed ? "had committed"
                             : fmt::format("was aborted and its {} record(s) are produced again", group.size()));
  attempted.clear();
  rebuild = false;
  return Status::Ok();
}

Status KafkaSink::Impl::ProduceState(const std::string& checkpoint) {
  ASSIGN_OR_RETURN(Topics::iterator topic, Topic(o.state_topic));
  rd_kafka_topic_t* rkt = topic->second;
  if (!transactional) {
    return Produce(rkt, 0, o.state_key.data(), o.state_key.size(), checkpoint.data(), checkpoint.size(), true);
  }
  std::map<Partition, int64_t> offsets = committed_offsets;
  for (const auto& [p, off] : txn_offsets) offsets[p] = std::max(offsets.count(p) ? offsets[p] : -1, off);
  const std::string header = publish::FormatKafkaOffsets(offsets);
  if (nonce.empty()) {
    std::random_device rd;
    nonce = fmt::format("{:08x}{:08x}", rd(), rd());
  }
  pending_commit = fmt::format("{}:{}", nonce, ++commits);
  return Produce(rkt, 0, o.state_key.data(), o.state_key.size(), checkpoint.data(), checkpoint.size(), true,
                 &header, &pending_commit);
}

// A fencing (another producer with our transactional_id) or a refusal is definite: the run
// stops. Any other error, fatal to this producer or not, is transient: the group is produced
// again, by a new producer when this one is unusable (Rebuild).
Status KafkaSink::Impl::TxnError(rd_kafka_error_t* e, std::string_view what) {
  std::string msg = fmt::format("kafka sink ({}): {}: {}", o.transactional_id, what, rd_kafka_error_string(e));
  const rd_kafka_resp_err_t code = rd_kafka_error_code(e);
  const bool fatal = rd_kafka_error_is_fatal(e);
  rd_kafka_error_destroy(e);
  char why[8];
  const rd_kafka_resp_err_t cause = fatal ? rd_kafka_fatal_error(rk, why, sizeof why) : code;
  if (IsDefinite(code) || IsDefinite(cause)) {
    broken = Status::FailedPrecondition(msg);
    return broken;
  }
  if (fatal) msg += " (fatal to this producer: a new one is started)";
  return Status::Unavailable(msg);
}

Status KafkaSink::Impl::BeginTxn() {
  if (txn_open) return Status::Ok();
  if (rd_kafka_error_t* e = rd_kafka_begin_transaction(rk)) return TxnError(e, "begin_transaction");
  txn_open = true;
  txn_started_ms = SteadyMs();
  return Status::Ok();
}

// Commits the open transaction with the group's checkpoint. An abortable failure (a record
// not delivered, a broker error) aborts it and produces the whole group again.
Status KafkaSink::Impl::CommitTxn() {
  if (!txn_open) return Status::Ok();
  int backoff_ms = 500;
  for (int attempt = 1;; ++attempt) {
    // Every record of the group is delivered before its checkpoint is produced, so that even
    // a broker that shows aborted records (the mock) never shows a checkpoint without the
    // records before it.
    Status st = WaitDeliveries();
    if (st.ok() && !group_checkpoint.empty()) st = ProduceState(group_checkpoint);
    rd_kafka_error_t* e = st.ok() ? rd_kafka_commit_transaction(rk, o.delivery_timeout_ms) : nullptr;
    if (st.ok() && e == nullptr) {
      pending_commit.clear();
      if (!group_checkpoint.empty()) stored = group_checkpoint;
      for (const auto& [p, off] : txn_offsets) {
        int64_t& last = committed_offsets.try_emplace(p, -1).first->second;
        last = std::max(last, off);
      }
      txn_offsets.clear();
      txn_open = false;
      group.clear();
      group_buf.clear();
      group_checkpointed = false;
      delivery_error = Status::Ok();
      return Status::Ok();
    }
    if (!st.ok()) {
      if (!broken.ok()) return broken;
      if (attempt >= 5 || ProducerFatal()) return st;
      std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));
      backoff_ms *= 2;
      st = RetryGroup();
      if (!st.ok() && (!broken.ok() || ProducerFatal())) return broken.ok() ? st : broken;
      continue;
    }
    if (rd_kafka_error_is_fatal(e) || (!rd_kafka_error_txn_requires_abort(e) && !rd_kafka_error_is_retriable(e))) {
      return TxnError(e, "commit_transaction");
    }
    if (delivery_error.code() == StatusCode::kFailedPrecondition || attempt >= 5) {
      Status definite = delivery_error.ok() ? Status::Ok() : delivery_error;
      Status failed = TxnError(e, fmt::format("commit_transaction (attempt {})", attempt));
      if (!definite.ok()) broken = definite;
      return broken.ok() ? failed : broken;
    }
    LogWarning("kafka sink: commit failed ({}); retrying the transaction in {} ms", rd_kafka_error_string(e),
               backoff_ms);
    const bool abort = rd_kafka_error_txn_requires_abort(e);
    rd_kafka_error_destroy(e);
    std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));
    backoff_ms *= 2;
    if (!abort) continue;  // retriable: commit again
    st = RetryGroup();
    // A transient produce failure: next attempt.
    if (!st.ok() && (!broken.ok() || ProducerFatal())) return broken.ok() ? st : broken;
  }
}

// At-least-once: moves confirmed checkpoints forward and writes the newest to the state
// topic (at most every group_max_ms unless forced).
Status KafkaSink::Impl::AdvanceState(bool force) {
  rd_kafka_poll(rk, 0);
  RETURN_IF_ERROR(Check());
  while (!pending.empty() && pending.front().first <= base_seq) {
    ready = std::move(pending.front().second);
    pending.pop_front();
  }
  if (in_flight && base_seq > in_flight_seq) {
    stored = std::move(in_flight);
    in_flight.reset();
  }
  const int64_t now = SteadyMs();
  if (ready && !in_flight && (force || now - last_state_ms >= o.group_max_ms)) {
    in_flight_seq = next_seq;
    RETURN_IF_ERROR(ProduceState(*ready));
    in_flight = std::move(ready);
    ready.reset();
    last_state_ms = now;
  }
  return Status::Ok();
}

Status KafkaSink::Impl::Publish(const std::string& checkpoint) {
  if (transactional) {  // inside Atomically, which commits
    RETURN_IF_ERROR(Check());
    RETURN_IF_ERROR(BeginTxn());
    Status st = ProduceBatch();
    for (int attempt = 1; !st.ok() && broken.ok() && !ProducerFatal() && attempt <= 5; ++attempt) {
      LogWarning("{}; producing the transaction again", st.message());
      std::this_thread::sleep_for(std::chrono::milliseconds(250 << attempt));
      st = RetryGroup();
    }
    if (!st.ok()) return broken.ok() ? st : broken;
    if (!checkpoint.empty()) {
      group_checkpoint = checkpoint;
      group_checkpointed = true;
    }
    rd_kafka_poll(rk, 0);
    return Check();
  }
  RETURN_IF_ERROR(Check());
  RETURN_IF_ERROR(ProduceBatch());
  if (!checkpoint.empty()) pending.emplace_back(next_seq, checkpoint);
  return AdvanceState(false);
}

Status KafkaSink::Impl::Save(const std::string& checkpoint) {
  batch.clear();
  if (transactional && !txn_open && stored && *stored == checkpoint) return Status::Ok();
  return Publish(checkpoint);
}

Status KafkaSink::Impl::FlushAll() {
  RETURN_IF_ERROR(Check());
  if (transactional) {
    RETURN_IF_ERROR(RebuildIfNeeded());
    replayed.reset();
    const Mark now{group.size(), group_buf.size(), group_checkpoint, group_checkpointed};
    Status st = CommitTxn();
    return st.ok() ? st : Abandon(now, "", /*at_commit=*/true, std::move(st));
  }
  for (int round = 0; round < 2; ++round) {
    rd_kafka_resp_err_t e = rd_kafka_flush(rk, o.delivery_timeout_ms);
    RETURN_IF_ERROR(Check());
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      broken = Definite(Status::Unavailable(fmt::format("kafka sink: records not delivered within {} ms ({})",
                                                        o.delivery_timeout_ms, o.bootstrap_servers)));
      return broken;
    }
    RETURN_IF_ERROR(AdvanceState(true));
  }
  return Status::Ok();
}

namespace {

std::string VisibleKey(std::string_view topic, std::string_view key, bool has_key) {
  std::string k(topic);
  k.push_back('\0');
  if (has_key) k.append(key);
  k.push_back(has_key ? 'k' : 'n');
  return k;
}

}  // namespace

Status KafkaSink::Impl::ParseOffsets(std::string_view text) {
  Result<std::map<Partition, int64_t>> parsed = publish::ParseKafkaOffsets(text);
  if (!parsed.ok()) {
    return Status::Corruption(fmt::format("kafka sink: topic {} key {}: header {}: {}", o.state_topic, o.state_key,
                                          kOffsetsHeader, parsed.status().message()));
  }
  committed_offsets = std::move(*parsed);
  return Status::Ok();
}

// Reads, read_committed, every partition of the prefix's topics after its committed
// offset, and keeps what is there per (topic, key) in log order. On a real cluster this is
// what committed without a checkpoint after it (rare: a group without one); on a broker
// that shows aborted records, also those of killed runs and aborted groups.
Status KafkaSink::Impl::ReadTails() {
  visible.clear();
  if (!dedupe) return Status::Ok();
  ASSIGN_OR_RETURN(rd_kafka_t * c, publish::NewKafkaReader(o, "sluice-tail-reader"));
  Result<std::vector<Partition>> listed = publish::KafkaPrefixPartitions(c, o);
  if (!listed.ok()) {
    rd_kafka_destroy(c);
    return listed.status();
  }
  std::set<Partition> parts(listed->begin(), listed->end());
  for (const auto& [p, off] : committed_offsets) parts.insert(p);  // topics outside the prefix
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(static_cast<int>(parts.size()) + 1);
  for (const Partition& p : parts) {
    auto it = committed_offsets.find(p);
    rd_kafka_topic_partition_list_add(list, p.first.c_str(), p.second)->offset =
        it == committed_offsets.end() ? RD_KAFKA_OFFSET_BEGINNING : it->second + 1;
  }
  int open = list->cnt;
  if (open > 0) rd_kafka_assign(c, list);
  rd_kafka_topic_partition_list_destroy(list);
  size_t records = 0, bytes = 0;
  Status st;
  const int64_t deadline = SteadyMs() + 60000;
  while (open > 0) {
    if (SteadyMs() > deadline) {
      st = Status::Unavailable(fmt::format("kafka sink ({}): reading back the topics after the checkpoint took over 60 s",
                                           o.bootstrap_servers));
      break;
    }
    rd_kafka_message_t* m = rd_kafka_consumer_poll(c, 200);
    if (m == nullptr) continue;
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      --open;
    } else if (m->err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART || m->err == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC ||
               m->err == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION) {
      --open;  // a topic in the checkpoint that is gone: nothing to skip there
    } else if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      st = Status::Unavailable(fmt::format("kafka sink: reading back topic {} after the checkpoint: {}",
                                           m->rkt != nullptr ? rd_kafka_topic_name(m->rkt) : "?", rd_kafka_err2str(m->err)));
      rd_kafka_message_destroy(m);
      break;
    } else {
      const std::string topic = rd_kafka_topic_name(m->rkt);
      std::string_view key(static_cast<const char*>(m->key), m->key_len);
      std::string_view value(static_cast<const char*>(m->payload), m->len);
      Visible v{publish::RecordIdentity(key, m->key != nullptr, value, m->payload != nullptr), {topic, m->partition}, m->offset};
      bytes += v.identity.size();
      visible[VisibleKey(topic, key, m->key != nullptr)].push_back(std::move(v));
      ++records;
    }
    rd_kafka_message_destroy(m);
    if (bytes > kMaxVisibleBytes) {
      LogWarning("kafka sink: over {} MB of records after the checkpoint in the topics of {}; not skipping "
                 "any (at-least-once for this run)", kMaxVisibleBytes >> 20, o.topic_prefix);
      visible.clear();
      break;
    }
  }
  rd_kafka_consumer_close(c);
  rd_kafka_destroy(c);
  RETURN_IF_ERROR(st);
  if (records > 0) {
    LogInfo("kafka sink: {} record(s) already in the topics after the last checkpoint; the same records "
            "regenerated now are not produced again", records);
  }
  return Status::Ok();
}

// True when the next record of (topic, key) that a read_committed reader already sees is
// this one: it is not produced again. A different record means the source replays
// differently (a snapshot row read again after it changed): from there on this key is
// produced without skipping, and a consumer may see it repeated.
bool KafkaSink::Impl::SkipVisible(const std::string& topic, const Kept& k) {
  std::string_view key(group_buf.data() + k.key_begin, k.key_size);
  auto it = visible.find(VisibleKey(topic, key, k.has_key));
  if (it == visible.end()) return false;
  const Visible& front = it->second.front();
  std::string_view value(group_buf.data() + k.value_begin, k.value_size);
  if (publish::RecordIdentity(key, k.has_key, value, k.has_value) != front.identity) {
    LogWarning("kafka sink: topic {} ({}): the record regenerated after the checkpoint differs from the one at "
               "partition {} offset {}; producing this key from here on without skipping",
               topic, publish::RecordExcerpt(k.has_key ? key.data() : nullptr, key.size(), value.data(), value.size()),
               front.partition.second, front.offset);
    visible.erase(it);
    return false;
  }
  int64_t& last = txn_offsets.try_emplace(front.partition, -1).first->second;
  last = std::max(last, front.offset);
  it->second.pop_front();
  if (it->second.empty()) visible.erase(it);
  ++skipped;
  return true;
}

Status KafkaSink::Impl::WaitDeliveries() {
  const rd_kafka_resp_err_t e = rd_kafka_flush(rk, o.delivery_timeout_ms);
  if (!delivery_error.ok()) {
    if (delivery_error.code() == StatusCode::kFailedPrecondition) broken = delivery_error;
    return delivery_error;
  }
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Status::Unavailable(fmt::format("kafka sink: records not delivered within {} ms ({})",
                                           o.delivery_timeout_ms, o.bootstrap_servers));
  }
  return Status::Ok();
}

Result<std::optional<std::string>> KafkaSink::Impl::Load() {
  RETURN_IF_ERROR(Check());
  if (transactional ? txn_open : (!pending.empty() || ready || in_flight)) {
    return Status::FailedPrecondition("kafka sink: LoadCheckpoint after records were published");
  }
  if (stored) return stored;
  ASSIGN_OR_RETURN(rd_kafka_t * c, publish::NewKafkaReader(o, "sluice-state-reader"));
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(list, o.state_topic.c_str(), 0)->offset = RD_KAFKA_OFFSET_BEGINNING;
  rd_kafka_assign(c, list);
  rd_kafka_topic_partition_list_destroy(list);
  std::optional<std::string> last;
  std::optional<std::string> last_offsets;  // the kOffsetsHeader of `last`
  loaded_commit.clear();
  Status st;
  const int64_t deadline = SteadyMs() + 30000;
  for (;;) {
    if (SteadyMs() > deadline) {
      st = Status::Unavailable(fmt::format(
          "kafka sink: reading the checkpoint from topic {} took over 30 s (sink.kafka.bootstrap_servers = {}: is a "
          "broker there? librdkafka's warnings above give its reason)",
          o.state_topic, o.bootstrap_servers));
      break;
    }
    rd_kafka_message_t* m = rd_kafka_consumer_poll(c, 200);
    if (m == nullptr) continue;
    const rd_kafka_resp_err_t e = m->err;
    if (e == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      rd_kafka_message_destroy(m);
      break;
    }
    if (e == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART || e == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC ||
        e == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION) {
      rd_kafka_message_destroy(m);
      break;  // no state topic yet: a new sink
    }
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      st = Status::Unavailable(fmt::format("kafka sink: reading topic {}: {}", o.state_topic, rd_kafka_err2str(e)));
      rd_kafka_message_destroy(m);
      if (IsDefinite(e)) break;
      continue;
    }
    std::string_view key(static_cast<const char*>(m->key), m->key_len);
    if (key == o.state_key) {
      if (m->payload != nullptr) {
        last = std::string(static_cast<const char*>(m->payload), m->len);
      } else {
        last.reset();
      }
      last_offsets.reset();
      loaded_commit.clear();
      rd_kafka_headers_t* headers = nullptr;
      const void* text = nullptr;
      size_t size = 0;
      if (rd_kafka_message_headers(m, &headers) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        if (rd_kafka_header_get_last(headers, kOffsetsHeader, &text, &size) == RD_KAFKA_RESP_ERR_NO_ERROR)
          last_offsets = std::string(static_cast<const char*>(text), size);
        if (rd_kafka_header_get_last(headers, kCommitHeader, &text, &size) == RD_KAFKA_RESP_ERR_NO_ERROR)
          loaded_commit = std::string(static_cast<const char*>(text), size);
      }
    }
    st = Status::Ok();
    rd_kafka_message_destroy(m);
  }
  rd_kafka_consumer_close(c);
  rd_kafka_destroy(c);
  RETURN_IF_ERROR(st);
  stored = last;
  if (transactional) {
    // No checkpoint: whatever the prefix's topics show came from transactions that never
    // committed (read them all). A checkpoint without offsets (written by an older sluice):
    // no read-back, as before.
    dedupe = !last || last_offsets;
    if (last_offsets) RETURN_IF_ERROR(ParseOffsets(*last_offsets));
    RETURN_IF_ERROR(ReadTails());
  }
  return last;
}

Status KafkaSink::Impl::Claim(const TableSchema& table) {
  RETURN_IF_ERROR(Check());
  RETURN_IF_ERROR(owners.Claim(table.db, table.table));
  if (o.create_topics) {
    RETURN_IF_ERROR(CreateTopic(KafkaTopicFor(o, table.db, table.table), o.partitions, false));
    RETURN_IF_ERROR(CreateTopic(o.topic_prefix, 1, false));
    if (o.records.transaction_metadata) RETURN_IF_ERROR(CreateTopic(o.topic_prefix + ".transaction", 1, false));
  }
  return Status::Ok();
}

Status KafkaSink::Impl::Prepare(const TableSchema& table) {
  RETURN_IF_ERROR(Claim(table));
  return publish::PublishSchemaChange(*this, table);
}

KafkaSink::KafkaSink(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
KafkaSink::~KafkaSink() = default;

Result<std::unique_ptr<KafkaSink>> KafkaSink::Open(KafkaSinkOptions options) {
  if (options.records_defaults) {
    options.records.tombstones = true;
    options.records.split_key_changes = true;
  }
  options.records.schema_name_prefix = options.topic_prefix;
  auto impl = std::make_unique<Impl>(std::move(options));
  RETURN_IF_ERROR(impl->Open());
  return std::unique_ptr<KafkaSink>(new KafkaSink(std::move(impl)));
}

Result<std::optional<std::string>> KafkaSink::LoadCheckpoint() { return impl_->Load(); }

Status KafkaSink::PrepareTable(const TableSchema& table) {
  return impl_->Atomically("", [&] { return impl_->Prepare(table); });
}

Status KafkaSink::Apply(const Transaction& txn) {
  return impl_->Atomically(WholeCheckpoint(txn), [&] { return publish::PublishTransaction(*impl_, txn); });
}

Status KafkaSink::ApplyGroup(const std::vector<Transaction>& group) {
  std::string last;
  for (const Transaction& t : group) {
    std::string c = WholeCheckpoint(t);
    if (!c.empty()) last = std::move(c);
  }
  return impl_->Atomically(last, [&]() -> Status {
    for (const Transaction& t : group) RETURN_IF_ERROR(publish::PublishTransaction(*impl_, t));
    return Status::Ok();
  });
}

Status KafkaSink::ResetTable(const TableSchema& table, const std::string& checkpoint) {
  return impl_->Atomically(checkpoint, [&]() -> Status {
    RETURN_IF_ERROR(impl_->owners.Claim(table.db, table.table));
    return publish::PublishTruncate(*impl_, table, checkpoint);
  });
}

bool KafkaSink::KeepsRecordsPastTheCheckpoint() const { return !impl_->transactional; }

Status KafkaSink::TruncateTable(const TableSchema& table, const SourceInfo& at, const std::string& checkpoint) {
  return impl_->Atomically(checkpoint, [&]() -> Status {
    RETURN_IF_ERROR(impl_->owners.Claim(table.db, table.table));
    return publish::PublishTruncate(*impl_, table, checkpoint, &at);
  });
}

void KafkaSink::KnowTables(const std::vector<std::pair<std::string, std::string>>& tables) {
  for (const auto& [db, table] : tables) impl_->owners.Know(db, table);
}

Status KafkaSink::ApplySchemaChanges(const std::vector<SchemaChange>& changes, const std::string& checkpoint) {
  return impl_->Atomically(checkpoint, [&]() -> Status {
    for (const SchemaChange& c : changes) {
      impl_->owners.Leave(c);
      if (c.after) RETURN_IF_ERROR(impl_->Claim(*c.after));
    }
    RETURN_IF_ERROR(publish::PublishDdl(*impl_, changes));
    return SaveCheckpoint(checkpoint);
  });
}

Status KafkaSink::SaveCheckpoint(const std::string& checkpoint) {
  return impl_->Atomically(checkpoint, [&] { return impl_->Save(checkpoint); });
}

Status KafkaSink::Flush() { return impl_->FlushAll(); }

Status KafkaSink::Idle() {
  if (!impl_->transactional) return impl_->AdvanceState(true);
  if (!impl_->txn_open && !impl_->rebuild) return Status::Ok();
  return impl_->FlushAll();
}

void KafkaSink::FailProducerForTest(int error) {
  (void)rd_kafka_test_fatal_error(impl_->rk, static_cast<rd_kafka_resp_err_t>(error), "injected by a test");
}

}  // namespace sluice
