// NATS JetStream sink on libnats. See nats_sink.h for subjects, ids and the checkpoint rule.
#include "sink/nats_sink.h"

#include <nats/nats.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <unordered_set>
#include <vector>

#include "sink/publish_util.h"
#include "util/redact.h"
#include "util/log.h"

namespace sluice {

namespace {

using publish::Printable;
using publish::SteadyMs;

// A publish refusal that no retry fixes.
bool IsDefinite(natsStatus s, jsErrCode code) {
  // NATS_NO_RESPONDERS is not here: in a cluster it also means "the stream is electing a
  // leader"; it becomes an error once the retries are used up.
  if (s == NATS_NOT_PERMITTED || s == NATS_MAX_PAYLOAD) return true;
  // 10054 message exceeds maximum, 10060 expected stream, 10077 max bytes, 10039 not enabled.
  return code == 10054 || code == 10060 || code == 10039 || code == JSStreamNotFoundErr;
}

// What JetStream's refusal to create the sink's stream means and which setting changes it
// ("" for a code without one), after the server's own words.
std::string StreamRefusal(jsErrCode code, const NatsSinkOptions& o, const std::string& subjects) {
  switch (static_cast<int>(code)) {
    case JSStreamReplicasNotSupportedErr:
      return fmt::format("the server does not run JetStream as a cluster, so a stream cannot have {} replicas: set "
                         "sink.nats.replicas = 1, or point sink.nats.url at a cluster of at least {} servers",
                         o.replicas, o.replicas);
    case JSClusterNoPeersErr:
    case JSInsufficientResourcesErr:
      return fmt::format("the cluster has fewer than {} servers with JetStream room for the stream: lower "
                         "sink.nats.replicas, or add servers (or storage) to the cluster",
                         o.replicas);
    case JSStreamSubjectOverlapErr:
      return fmt::format("another stream already takes subjects that overlap {}: choose a sink.nats.subject_prefix "
                         "no other stream covers, or remove that stream",
                         subjects);
    case JSStreamInvalidConfig:
      return fmt::format("JetStream refused the stream's name or subjects: the name comes from sink.nats.stream (the "
                         "subject prefix in upper case when it is not set), the subjects {} from "
                         "sink.nats.subject_prefix",
                         subjects);
    case JSStorageResourcesExceededErr:
    case JSAccountResourcesExceededErr:
      return "the server or account has no room for another file-storage stream (JetStream max_file_store, or the "
             "account's limits): raise the limit or free space on the server";
    case JSNotEnabledForAccountErr:
    case JSNotEnabledErr:
      return "JetStream is not enabled for this account or server (nats-server -js, or the account's jetstream "
             "setting)";
    default:
      return "";
  }
}

}  // namespace

std::string NatsSubjectFor(const NatsSinkOptions& o, std::string_view db, std::string_view table) {
  return o.subject_prefix + "." + publish::NatsToken(db) + "." + publish::NatsToken(table);
}

class NatsSink::Impl {
 public:
  explicit Impl(NatsSinkOptions options)
      : o(std::move(options)), serializer(o.records), owners(publish::DestinationOwners::ForNats(o)) {}
  ~Impl() {
    if (js != nullptr) {
      jsPubOptions po;
      jsPubOptions_Init(&po);
      po.MaxWait = 2000;
      (void)js_PublishAsyncComplete(js, &po);
    }
    if (kv != nullptr) kvStore_Destroy(kv);
    if (js != nullptr) jsCtx_Destroy(js);
    if (watch != nullptr) watch->closing = true;
    if (nc != nullptr) natsConnection_Destroy(nc);
    if (opts != nullptr) natsOptions_Destroy(opts);
  }

  Status Open();
  Status Publish(const std::string& checkpoint);
  // What the connection's callbacks use. The client calls them on its own thread, possibly
  // after the sink is gone: the closed callback (the connection's last) frees it.
  struct Watch {
    std::string url;  // credentials masked
    std::atomic<bool> closing{false};
  };
  static void OnDisconnected(natsConnection* nc, void* closure);
  static void OnReconnected(natsConnection* nc, void* closure);
  static void OnClosed(natsConnection* nc, void* closure);
  Watch* watch = nullptr;  // owned by the connection's callbacks once connected
  Status Commit();  // waits for acks, resends failures, stores the checkpoint
  Status WaitAcks();
  // (subject, key) of the keyed records published since the last WaitAcks. A record whose
  // key is here waits for those acknowledgements first: a record that failed (a stream
  // electing its leader answers "no responders" for a moment) is sent again later, and
  // must not land after a newer change of its key that went through meanwhile.
  std::unordered_set<std::string> unacked_keys;

  struct Failed {
    std::string subject, id, key, data;
    bool tombstone;
    natsStatus status;
    jsErrCode code;
    std::string text;
  };
  void OnError(jsPubAckErr* pae);

  NatsSinkOptions o;
  RecordSerializer serializer;
  RecordBatch batch;
  publish::DestinationOwners owners;  // which table publishes to each table subject
  natsOptions* opts = nullptr;
  natsConnection* nc = nullptr;
  jsCtx* js = nullptr;
  kvStore* kv = nullptr;
  Status broken;
  std::mutex mu;
  std::vector<Failed> failed;  // guarded by mu
  std::string group_checkpoint;
  std::optional<std::string> stored;
  uint64_t group_records = 0;
  int64_t group_started_ms = 0;
  bool group_open = false;
  int kill_countdown = -1;
  int& kill_countdown_init(const char* n) {
    if (kill_countdown < 0) kill_countdown = std::atoi(n);
    return kill_countdown;
  }

  Status PublishOne(const std::string& subject, const std::string& id, std::string_view key,
                    std::string_view data, bool tombstone, bool sync);
  // A definite refusal of one record: the run stops.
  Status Refused(std::string_view subject, std::string_view key, std::string_view why) {
    broken = Status::FailedPrecondition(fmt::format("nats sink: record to subject {} ({}) refused: {} (stream {})",
                                                    subject, key.empty() ? "no key" : Printable(key, 200), why,
                                                    o.stream));
    return broken;
  }
  Status Err(natsStatus s, std::string_view what) {
    broken = Stop(Status::Unavailable(
        fmt::format("nats sink ({}): {}: {}", RedactUrlCredentials(o.url), what, natsStatus_GetText(s))));
    return broken;
  }
  // Once the sink is open, a transient failure that outlived the re-sends stops the run: the
  // records of the open group that failed are not kept for another call, so a retry of the
  // caller's transaction alone could not deliver them (it used to wait forever). The next run
  // resumes from the stored checkpoint; JetStream drops what it already has (same ids).
  Status Stop(const Status& st) const {
    if (!opened) return st;
    return publish::StopForTheNextRun(st, "JetStream drops the records it already has, by Nats-Msg-Id, within "
                                          "the stream's duplicate window");
  }
  bool opened = false;  // Open succeeded
};

namespace {
void ErrHandler(jsCtx*, jsPubAckErr* pae, void* closure) {
  static_cast<NatsSink::Impl*>(closure)->OnError(pae);
}

}  // namespace

// The connection's state, said when it changes: a server gone is otherwise silent until the
// records of a group wait for their acknowledgements (a new user's probe saw 40 s of nothing).
void NatsSink::Impl::OnDisconnected(natsConnection*, void* closure) {
  const auto* w = static_cast<const Watch*>(closure);
  if (!w->closing) LogWarning("nats sink ({}): disconnected; reconnecting, and publishing waits meanwhile", w->url);
}

void NatsSink::Impl::OnReconnected(natsConnection* nc, void* closure) {
  const auto* w = static_cast<const Watch*>(closure);
  char url[256] = "";
  (void)natsConnection_GetConnectedUrl(nc, url, sizeof url);
  LogInfo("nats sink ({}): reconnected to {}", w->url, RedactUrlCredentials(url));
}

void NatsSink::Impl::OnClosed(natsConnection*, void* closure) { delete static_cast<Watch*>(closure); }

void NatsSink::Impl::OnError(jsPubAckErr* pae) {
  Failed f;
  natsMsg* m = pae->Msg;
  f.subject = natsMsg_GetSubject(m);
  const char* v = nullptr;
  if (natsMsgHeader_Get(m, "Nats-Msg-Id", &v) == NATS_OK && v != nullptr) f.id = v;
  if (natsMsgHeader_Get(m, "Sluice-Key", &v) == NATS_OK && v != nullptr) f.key = v;
  f.tombstone = natsMsgHeader_Get(m, "Sluice-Tombstone", &v) == NATS_OK;
  f.data.assign(natsMsg_GetData(m), static_cast<size_t>(natsMsg_GetDataLength(m)));
  f.status = pae->Err;
  f.code = pae->ErrCode;
  f.text = pae->ErrText != nullptr ? pae->ErrText : natsStatus_GetText(pae->Err);
  std::lock_guard<std::mutex> lock(mu);
  failed.push_back(std::move(f));
}

Status NatsSink::Impl::Open() {
  if (!o.now_ms) o.now_ms = publish::SystemNowMs;
  o.stream = publish::NatsStreamName(o);
  if (o.kv_bucket.empty()) o.kv_bucket = o.stream + "_state";
  natsStatus s = natsOptions_Create(&opts);
  if (s == NATS_OK) s = publish::SetNatsServers(opts, o);
  if (s == NATS_OK) s = natsOptions_SetMaxReconnect(opts, -1);
  if (s == NATS_OK) s = natsOptions_SetReconnectWait(opts, 250);
  if (s == NATS_OK) s = natsOptions_SetRetryOnFailedConnect(opts, false, nullptr, nullptr);
  auto* w = new Watch;
  w->url = RedactUrlCredentials(o.url);
  if (s == NATS_OK) s = natsOptions_SetDisconnectedCB(opts, OnDisconnected, w);
  if (s == NATS_OK) s = natsOptions_SetReconnectedCB(opts, OnReconnected, w);
  if (s == NATS_OK) s = natsOptions_SetClosedCB(opts, OnClosed, w);
  if (s == NATS_OK) s = publish::SetNatsCredentials(opts, o);
  if (s != NATS_OK) return Err(s, "options");
  s = natsConnection_Connect(&nc, opts);
  if (s != NATS_OK) {
    delete w;  // no connection, so no callbacks
    return Err(s, "connect");
  }
  watch = w;
  jsOptions jo;
  jsOptions_Init(&jo);
  jo.Wait = o.ack_timeout_ms;
  jo.PublishAsync.MaxPending = o.max_pending;
  jo.PublishAsync.ErrHandler = ErrHandler;
  jo.PublishAsync.ErrHandlerClosure = this;
  jo.PublishAsync.StallWait = o.ack_timeout_ms;
  s = natsConnection_JetStream(&js, nc, &jo);
  if (s != NATS_OK) return Err(s, "JetStream context");

  // The stream: check it, or create it.
  const std::string wildcard = o.subject_prefix + ".>";
  jsStreamInfo* si = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  // A cluster that is (re)electing its JetStream leaders answers late: retry a while.
  for (int attempt = 0; attempt < 20; ++attempt) {
    code = static_cast<jsErrCode>(0);
    s = js_GetStreamInfo(&si, js, o.stream.c_str(), nullptr, &code);
    if (s != NATS_TIMEOUT && !(s == NATS_NO_RESPONDERS && attempt < 5)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  if (s == NATS_NOT_FOUND || code == JSStreamNotFoundErr) {
    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    sc.Name = o.stream.c_str();
    const char* subjects[] = {wildcard.c_str()};
    sc.Subjects = subjects;
    sc.SubjectsLen = 1;
    sc.Storage = js_FileStorage;
    sc.Replicas = o.replicas;
    sc.Duplicates = int64_t{10} * 60 * 1000 * 1000 * 1000;  // ns
    for (int attempt = 0; attempt < 20; ++attempt) {
      s = js_AddStream(&si, js, &sc, nullptr, &code);
      if (s != NATS_TIMEOUT && s != NATS_NO_RESPONDERS) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    if (s != NATS_OK) {
      // The server's description of the refusal, when libnats kept one.
      natsStatus last = NATS_OK;
      const char* text = nats_GetLastError(&last);
      std::string said = text != nullptr && *text != '\0' ? text : natsStatus_GetText(s);
      if (said.rfind("(", 0) == 0 && said.find("): ") != std::string::npos)
        said.erase(0, said.find("): ") + 3);  // libnats' "(jsm.c:1033): "
      const std::string help = StreamRefusal(code, o, wildcard);
      broken = Status::FailedPrecondition(fmt::format("nats sink: creating stream {} ({} replicas): {} (code {}){}{}",
                                                      o.stream, o.replicas, said, static_cast<int>(code),
                                                      help.empty() ? "" : ": ", help));
      return broken;
    }
    LogInfo("nats sink: created stream {} for {} with {} replica(s)", o.stream, wildcard, o.replicas);
  } else if (s != NATS_OK) {
    if (s == NATS_NO_RESPONDERS) {
      broken = Status::FailedPrecondition(
          fmt::format("nats sink: {}: JetStream is not enabled", RedactUrlCredentials(o.url)));
      return broken;
    }
    return Err(s, fmt::format("stream {} info", o.stream));
  } else {
    bool covered = false;
    for (int i = 0; i < si->Config->SubjectsLen; ++i) {
      const std::string subj = si->Config->Subjects[i];
      if (subj == wildcard || subj == ">") covered = true;
    }
    const int64_t replicas = si->Config->Replicas;
    // A stream made by someone else: what it keeps and for how long it drops repeats are its
    // own. Said once, since neither stops the run.
    if (si->Config->Storage == js_MemoryStorage)
      LogWarning("nats sink: stream {} keeps its messages in memory: a restart of nats-server loses them, and "
                 "sluice's checkpoint will have moved past them",
                 o.stream);
    const int64_t window_s = si->Config->Duplicates / 1000000000;
    if (window_s < 120)
      LogWarning("nats sink: stream {} drops repeated records only within {} s (its duplicate window): a run "
                 "restarted later than that after a crash publishes the records after its checkpoint again",
                 o.stream, window_s);
    jsStreamInfo_Destroy(si);
    si = nullptr;
    if (!covered) {
      broken = Status::FailedPrecondition(fmt::format(
          "nats sink: stream {} exists but does not take subjects {}; fix the stream or sink.nats.stream",
          o.stream, wildcard));
      return broken;
    }
    if (replicas != o.replicas) {
      broken = Status::FailedPrecondition(fmt::format(
          "nats sink: stream {} has {} replica(s), sink.nats.replicas says {}", o.stream, replicas, o.replicas));
      return broken;
    }
  }
  if (si != nullptr) jsStreamInfo_Destroy(si);

  for (int attempt = 0; attempt < 20; ++attempt) {
    s = js_KeyValue(&kv, js, o.kv_bucket.c_str());
    if (s != NATS_TIMEOUT && s != NATS_NO_RESPONDERS) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  if (s == NATS_NOT_FOUND) {
    kvConfig kc;
    kvConfig_Init(&kc);
    kc.Bucket = o.kv_bucket.c_str();
    kc.History = 1;
    kc.Replicas = o.replicas;
    kc.StorageType = js_FileStorage;
    s = js_CreateKeyValue(&kv, js, &kc);
  }
  if (s != NATS_OK) return Err(s, fmt::format("key-value bucket {}", o.kv_bucket));
  opened = true;
  return Status::Ok();
}

Status NatsSink::Impl::PublishOne(const std::string& subject, const std::string& id, std::string_view key,
                                  std::string_view data, bool tombstone, bool sync) {
  natsMsg* m = nullptr;
  natsStatus s = natsMsg_Create(&m, subject.c_str(), nullptr, data.data(), static_cast<int>(data.size()));
  if (s == NATS_OK && !id.empty()) s = natsMsgHeader_Set(m, "Nats-Msg-Id", id.c_str());
  if (s == NATS_OK && !key.empty()) s = natsMsgHeader_Set(m, "Sluice-Key", std::string(key).c_str());
  if (s == NATS_OK && tombstone) s = natsMsgHeader_Set(m, "Sluice-Tombstone", "true");
  if (s != NATS_OK) {
    natsMsg_Destroy(m);
    return Err(s, "building a message");
  }
  const auto definite = [&](natsStatus st, jsErrCode, std::string_view text) {
    return Refused(subject, key, text.empty() ? natsStatus_GetText(st) : text);
  };
  if (!sync) {
    s = js_PublishMsgAsync(js, &m, nullptr);
    if (m != nullptr) natsMsg_Destroy(m);  // not taken on failure
    if (s == NATS_OK) return Status::Ok();
    if (IsDefinite(s, static_cast<jsErrCode>(0))) return definite(s, static_cast<jsErrCode>(0), "");
    return Status::Unavailable(fmt::format("nats sink: publish to {}: {}", subject, natsStatus_GetText(s)));
  }
  jsPubOptions po;
  jsPubOptions_Init(&po);
  po.MaxWait = o.ack_timeout_ms;
  jsPubAck* ack = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  s = js_PublishMsg(&ack, js, m, &po, &code);
  natsMsg_Destroy(m);
  if (ack != nullptr) jsPubAck_Destroy(ack);
  if (s == NATS_OK) return Status::Ok();
  if (IsDefinite(s, code)) return definite(s, code, "");
  return Status::Unavailable(fmt::format("nats sink: publish to {}: {}", subject, natsStatus_GetText(s)));
}

Status NatsSink::Impl::Publish(const std::string& checkpoint) {
  RETURN_IF_ERROR(broken);
  if (!group_open) {
    group_open = true;
    group_started_ms = SteadyMs();
  }
  std::string id;
  const RowChange* last_change = nullptr;
  int n = 0;
  const SourceInfo* last_source = nullptr;  // of the previous schema record
  int schema_n = 0;                         // numbers the schema records of one statement
  for (const Record& r : batch.records) {
    std::string subject;
    switch (r.kind) {
      case RecordKind::kTxnBegin:
      case RecordKind::kTxnEnd:
        subject = o.subject_prefix + "._transaction";
        break;
      case RecordKind::kSchemaChange:
        subject = o.subject_prefix + "._schema";
        break;
      default:
        subject = NatsSubjectFor(o, r.table->db, r.table->table);
    }
    id.clear();
    if (r.change != nullptr) {
      n = r.change == last_change ? n + 1 : 0;
      last_change = r.change;
      // An id names one record only: a copy read again at a later point (a run killed during
      // its snapshot, a re-read after a DDL) is another record, and must not be dropped as a
      // duplicate of the first copy's (a new user's probe: updates made meanwhile were lost).
      // Rows without a binlog position (incremental, full, snapshot_only) have nothing that
      // tells one read from the next, so they carry no id: at-least-once.
      const SourceInfo& src = r.change->source;
      if (src.file.empty()) {
      } else if (!src.snapshot) {
        id = fmt::format("{}:{}:{}:{}", src.file, src.pos, src.row, n);
      } else if (r.has_key) {
        id = fmt::format("r:{}.{}:{}:{}:{}", r.table->db, r.table->table, src.file, src.pos, batch.key(r));
      }
    } else if ((r.kind == RecordKind::kTruncate || r.kind == RecordKind::kSchemaChange) && r.source != nullptr &&
               !r.source->file.empty() && !r.source->snapshot) {
      // A statement the stream read: its position (a truncate without one, a copy starting
      // again, carries no id: sent again after a crash, it comes before the rows sent again).
      schema_n = last_source != nullptr && last_source->file == r.source->file && last_source->pos == r.source->pos
                     ? schema_n + 1
                     : 0;
      last_source = r.source;
      id = r.kind == RecordKind::kTruncate ? fmt::format("{}:{}:t", r.source->file, r.source->pos)
                                           : fmt::format("{}:{}:s{}", r.source->file, r.source->pos, schema_n);
    } else if (r.kind == RecordKind::kTxnBegin || r.kind == RecordKind::kTxnEnd) {
      std::string_view key = batch.key(r);  // {"id":"..."}: unique per transaction
      id = fmt::format("{}:{}", key, r.kind == RecordKind::kTxnBegin ? 'B' : 'E');
    }
    if (r.has_key) {
      std::string k = subject;
      k.push_back('\0');
      k.append(batch.key(r));
      // A tombstone follows its own delete: no wait for that pair.
      if (!unacked_keys.insert(k).second && r.kind != RecordKind::kTombstone) {
        RETURN_IF_ERROR(WaitAcks());
        unacked_keys.insert(std::move(k));
      }
    }
    Status st = PublishOne(subject, id, r.has_key ? batch.key(r) : std::string_view(),
                           r.has_value ? batch.value(r) : std::string_view(), !r.has_value, false);
    for (int attempt = 1; !st.ok() && broken.ok() && attempt <= 5; ++attempt) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100 << attempt));
      st = PublishOne(subject, id, r.has_key ? batch.key(r) : std::string_view(),
                      r.has_value ? batch.value(r) : std::string_view(), !r.has_value, false);
    }
    if (!st.ok()) return broken.ok() ? (broken = Stop(st)) : broken;
    ++group_records;
  }
  if (!checkpoint.empty()) group_checkpoint = checkpoint;
  if (group_records >= o.group_max_records || SteadyMs() - group_started_ms >= o.group_max_ms) {
    return Commit();
  }
  return Status::Ok();
}

// Waits until JetStream acknowledged every record published so far; sends what failed
// again (same Msg-Id) with backoff.
Status NatsSink::Impl::WaitAcks() {
  unacked_keys.clear();
  for (int round = 0;; ++round) {
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = o.ack_timeout_ms * 2;
    natsStatus s = js_PublishAsyncComplete(js, &po);
    std::vector<Failed> retry;
    {
      std::lock_guard<std::mutex> lock(mu);
      retry.swap(failed);
    }
    if (s == NATS_TIMEOUT) {
      // Unacknowledged publishes: take them back and send them again synchronously.
      natsMsgList pending{};
      if (js_PublishAsyncGetPendingList(&pending, js) == NATS_OK) {
        for (int i = 0; i < pending.Count; ++i) {
          jsPubAckErr pae{};
          pae.Msg = pending.Msgs[i];
          pae.Err = NATS_TIMEOUT;
          OnError(&pae);
        }
        natsMsgList_Destroy(&pending);
      }
      std::lock_guard<std::mutex> lock(mu);
      for (auto& f : failed) retry.push_back(std::move(f));
      failed.clear();
    } else if (s != NATS_OK) {
      return Err(s, "waiting for acknowledgements");
    }
    if (retry.empty()) break;
    if (round >= 8) {
      const Failed& f = retry.front();
      if (f.status == NATS_NO_RESPONDERS) {
        broken = Status::FailedPrecondition(fmt::format(
            "nats sink: record to subject {} ({}): no stream answers for the subject (stream {} missing, "
            "misconfigured or without a leader)", f.subject, f.key.empty() ? "no key" : Printable(f.key, 200), o.stream));
        return broken;
      }
      broken = Stop(Status::Unavailable(fmt::format(
          "nats sink: record to subject {} ({}) not acknowledged after {} attempts: {} (stream {})", f.subject,
          f.key.empty() ? "no key" : Printable(f.key, 200), round + 1, f.text, o.stream)));
      return broken;
    }
    LogWarning("nats sink: {} record(s) not acknowledged ({}); sending them again", retry.size(), retry.front().text);
    // Backoff 250 ms doubling to 4 s (shorter with an ack_timeout_ms under 1 s).
    const int64_t base_ms = std::min<int64_t>(250, o.ack_timeout_ms / 4);
    std::this_thread::sleep_for(std::chrono::milliseconds(base_ms << std::min(round, 4)));
    bool unavailable = false;  // a re-send failed: the rest of this round waits for the next
    for (const Failed& f : retry) {
      if (IsDefinite(f.status, f.code)) {
        return Refused(f.subject, f.key, f.text);
      }
      Status st = unavailable ? Status::Unavailable("") : PublishOne(f.subject, f.id, f.key, f.data, f.tombstone, true);
      if (!st.ok() && !broken.ok()) return broken;
      if (!st.ok()) {
        // Each synchronous re-send waits up to ack_timeout_ms: with the server gone, one per
        // round, not one per record (a round of 1,000 records took 1,000 x 10 s).
        unavailable = true;
        std::lock_guard<std::mutex> lock(mu);
        failed.push_back(f);
      }
    }
  }
  return Status::Ok();
}

Status NatsSink::Impl::Commit() {
  RETURN_IF_ERROR(broken);
  if (!group_open) return Status::Ok();
  RETURN_IF_ERROR(WaitAcks());
  if (!group_checkpoint.empty() && (!stored || *stored != group_checkpoint)) {
    // Test hook (tests/integration/publish_test.cc): SIGKILL at the Nth checkpoint, after
    // its records were acknowledged and before it is stored.
    if (const char* n = std::getenv("SLUICE_TEST_KILL_BEFORE_CHECKPOINT"); n != nullptr && --kill_countdown_init(n) == 0) {
      std::raise(SIGKILL);
    }
    uint64_t rev = 0;
    natsStatus s = NATS_OK;
    for (int attempt = 0; attempt < 6; ++attempt) {
      s = kvStore_PutString(&rev, kv, o.state_key.c_str(), group_checkpoint.c_str());
      if (s == NATS_OK) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(250 << attempt));
    }
    if (s != NATS_OK) return Err(s, fmt::format("storing the checkpoint in bucket {}", o.kv_bucket));
    stored = group_checkpoint;
  }
  group_open = false;
  group_records = 0;
  return Status::Ok();
}

NatsSink::NatsSink(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
NatsSink::~NatsSink() = default;

Result<std::unique_ptr<NatsSink>> NatsSink::Open(NatsSinkOptions options) {
  if (options.records_defaults) {
    options.records.tombstones = true;
    options.records.split_key_changes = true;
  }
  options.records.schema_name_prefix = options.subject_prefix;
  auto impl = std::make_unique<Impl>(std::move(options));
  RETURN_IF_ERROR(impl->Open());
  return std::unique_ptr<NatsSink>(new NatsSink(std::move(impl)));
}

Result<std::optional<std::string>> NatsSink::LoadCheckpoint() {
  RETURN_IF_ERROR(impl_->broken);
  if (impl_->stored) return impl_->stored;
  kvEntry* e = nullptr;
  natsStatus s = kvStore_Get(&e, impl_->kv, impl_->o.state_key.c_str());
  if (s == NATS_NOT_FOUND) return std::optional<std::string>();
  if (s != NATS_OK) {
    return Status::Unavailable(fmt::format("nats sink ({}): reading the checkpoint from bucket {}: {}",
                                           RedactUrlCredentials(impl_->o.url), impl_->o.kv_bucket,
                                           natsStatus_GetText(s)));
  }
  std::string v(static_cast<const char*>(kvEntry_Value(e)), static_cast<size_t>(kvEntry_ValueLen(e)));
  kvEntry_Destroy(e);
  impl_->stored = v;
  return std::optional<std::string>(std::move(v));
}

Status NatsSink::PrepareTable(const TableSchema& table) {
  RETURN_IF_ERROR(impl_->broken);
  RETURN_IF_ERROR(impl_->owners.Claim(table.db, table.table));
  return publish::PublishSchemaChange(*impl_, table);
}

void NatsSink::KnowTables(const std::vector<std::pair<std::string, std::string>>& tables) {
  for (const auto& [db, table] : tables) impl_->owners.Know(db, table);
}

Status NatsSink::ApplySchemaChanges(const std::vector<SchemaChange>& changes, const std::string& checkpoint) {
  RETURN_IF_ERROR(impl_->broken);
  for (const SchemaChange& c : changes) {
    impl_->owners.Leave(c);
    if (c.after) RETURN_IF_ERROR(impl_->owners.Claim(c.after->db, c.after->table));
  }
  RETURN_IF_ERROR(publish::PublishDdl(*impl_, changes));
  return SaveCheckpoint(checkpoint);
}

Status NatsSink::Apply(const Transaction& txn) { return publish::PublishTransaction(*impl_, txn); }

Status NatsSink::ResetTable(const TableSchema& table, const std::string& checkpoint) {
  RETURN_IF_ERROR(impl_->owners.Claim(table.db, table.table));
  return publish::PublishTruncate(*impl_, table, checkpoint);
}

Status NatsSink::TruncateTable(const TableSchema& table, const SourceInfo& at, const std::string& checkpoint) {
  RETURN_IF_ERROR(impl_->owners.Claim(table.db, table.table));
  return publish::PublishTruncate(*impl_, table, checkpoint, &at);
}

Status NatsSink::SaveCheckpoint(const std::string& checkpoint) {
  RETURN_IF_ERROR(impl_->broken);
  impl_->batch.clear();
  return impl_->Publish(checkpoint);
}

Status NatsSink::Flush() { return impl_->Commit(); }

Status NatsSink::Idle() { return impl_->Commit(); }

}  // namespace sluice
