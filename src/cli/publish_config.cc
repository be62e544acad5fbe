#include "cli/publish_config.h"

#include <cctype>
#include <cstdlib>
#include <tuple>
#include <set>

#include "util/redact.h"

namespace sluice::cli {
namespace {

// `s` for a message: control characters as \xNN.
std::string Shown(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    else out.push_back(c);
  }
  return out;
}

// Reads the keys of one table, each with its own setter; errors name "<section>.<key>".
class Reader {
 public:
  Reader(const toml::table& t, std::string section, std::string_view origin)
      : t_(t), section_(std::move(section)), origin_(origin) {}

  Status Error(std::string_view key, std::string_view msg) const {
    return Status::InvalidArgument(fmt::format("{}: {}.{}: {}", origin_, section_, key, msg));
  }
  Status String(const char* key, std::string* out) {
    known_.insert(key);
    const toml::node* n = t_.get(key);
    if (!n) return Status::Ok();
    if (!n->is_string()) return Error(key, "expected a string");
    *out = n->as_string()->get();
    return Status::Ok();
  }
  Status Bool(const char* key, bool* out) {
    known_.insert(key);
    const toml::node* n = t_.get(key);
    if (!n) return Status::Ok();
    if (!n->is_boolean()) return Error(key, "expected true or false");
    *out = n->as_boolean()->get();
    return Status::Ok();
  }
  template <typename T>
  Status Int(const char* key, T* out, int64_t lo, int64_t hi) {
    known_.insert(key);
    const toml::node* n = t_.get(key);
    if (!n) return Status::Ok();
    if (!n->is_integer() || n->as_integer()->get() < lo || n->as_integer()->get() > hi) {
      return Error(key, fmt::format("expected an integer in {}..{}", lo, hi));
    }
    *out = static_cast<T>(n->as_integer()->get());
    return Status::Ok();
  }
  Status Records(RecordOptions* r, bool* defaults) {
    bool tombstones = true;
    RETURN_IF_ERROR(Bool("tombstones", &tombstones));
    RETURN_IF_ERROR(Bool("schemas", &r->schemas));
    RETURN_IF_ERROR(Bool("transaction_metadata", &r->transaction_metadata));
    *defaults = false;
    r->tombstones = tombstones;
    r->split_key_changes = true;
    return Status::Ok();
  }
  // Call last: rejects keys no setter asked for.
  Status Finish(std::initializer_list<const char*> tables = {}) {
    for (const char* t : tables) known_.insert(t);
    for (const auto& [k, v] : t_) {
      (void)v;
      if (!known_.count(std::string(k.str()))) {
        std::string list;
        for (const auto& a : known_) list += (list.empty() ? "" : ", ") + a;
        return Error(k.str(), fmt::format("unknown key (known: {})", list));
      }
    }
    return Status::Ok();
  }

 private:
  const toml::table& t_;
  std::string section_;
  std::string_view origin_;
  std::set<std::string> known_;
};

}  // namespace

Status ParseKafkaConfig(const toml::table& t, std::string_view origin, KafkaSinkOptions* o) {
  Reader r(t, "sink.kafka", origin);
  RETURN_IF_ERROR(r.String("bootstrap_servers", &o->bootstrap_servers));
  RETURN_IF_ERROR(r.String("topic_prefix", &o->topic_prefix));
  RETURN_IF_ERROR(r.String("topic", &o->topic_template));
  RETURN_IF_ERROR(r.String("transactional_id", &o->transactional_id));
  RETURN_IF_ERROR(r.String("state_topic", &o->state_topic));
  RETURN_IF_ERROR(r.String("state_key", &o->state_key));
  RETURN_IF_ERROR(r.Records(&o->records, &o->records_defaults));
  RETURN_IF_ERROR(r.Bool("create_topics", &o->create_topics));
  RETURN_IF_ERROR(r.Int("partitions", &o->partitions, 1, 100000));
  RETURN_IF_ERROR(r.Int("replication_factor", &o->replication_factor, -1, 1000));
  RETURN_IF_ERROR(r.Int("group_max_records", &o->group_max_records, 1, 10000000));
  RETURN_IF_ERROR(r.Int("group_max_ms", &o->group_max_ms, 0, 3600000));
  RETURN_IF_ERROR(r.Int("delivery_timeout_ms", &o->delivery_timeout_ms, 1000, 86400000));
  RETURN_IF_ERROR(r.Int("queue_max_kbytes", &o->queue_max_kbytes, 1024, 2097151));
  if (const toml::node* n = t.get("properties")) {
    const toml::table* props = n->as_table();
    if (!props) return r.Error("properties", "expected a table of librdkafka properties");
    for (const auto& [k, v] : *props) {
      if (!v.is_string()) return r.Error(fmt::format("properties.{}", k.str()), "expected a string");
      if (KafkaPropertyIsSecret(k.str()))
        return r.Error(fmt::format("properties.{}", k.str()),
                       fmt::format("a secret never sits in the file: name the environment variable that holds "
                                   "it in [sink.kafka.properties_env] (\"{}\" = \"VARIABLE\")",
                                   k.str()));
      o->properties.emplace_back(std::string(k.str()), v.as_string()->get());
    }
  }
  // property = "ENVIRONMENT_VARIABLE": its value read from the environment (secrets).
  if (const toml::node* n = t.get("properties_env")) {
    const toml::table* props = n->as_table();
    if (!props) return r.Error("properties_env", "expected a table of librdkafka property = \"ENVIRONMENT_VARIABLE\"");
    for (const auto& [k, v] : *props) {
      const std::string key = fmt::format("properties_env.{}", k.str());
      if (!v.is_string()) return r.Error(key, "expected a string: the name of an environment variable");
      const std::string& env = v.as_string()->get();
      if (env.empty()) return r.Error(key, "must not be empty: the name of the environment variable holding it");
      for (const auto& [name, value] : o->properties)
        if (name == k.str()) return r.Error(key, "also set in [sink.kafka.properties]: keep one");
      const char* value = std::getenv(env.c_str());
      if (value == nullptr) return r.Error(key, fmt::format("environment variable {} is not set", env));
      o->properties.emplace_back(std::string(k.str()), value);
    }
  }
  RETURN_IF_ERROR(r.Finish({"properties", "properties_env"}));
  if (o->bootstrap_servers.empty()) return r.Error("bootstrap_servers", "required");
  if (o->topic_template.find("{table}") == std::string::npos) {
    return r.Error("topic", "must contain {table} (one topic per table)");
  }
  return Status::Ok();
}

Status ParseNatsConfig(const toml::table& t, std::string_view origin, NatsSinkOptions* o) {
  Reader r(t, "sink.nats", origin);
  RETURN_IF_ERROR(r.String("url", &o->url));
  RETURN_IF_ERROR(r.String("subject_prefix", &o->subject_prefix));
  RETURN_IF_ERROR(r.String("stream", &o->stream));
  RETURN_IF_ERROR(r.Int("replicas", &o->replicas, 1, 5));
  RETURN_IF_ERROR(r.String("kv_bucket", &o->kv_bucket));
  RETURN_IF_ERROR(r.String("state_key", &o->state_key));
  RETURN_IF_ERROR(r.Records(&o->records, &o->records_defaults));
  RETURN_IF_ERROR(r.Int("max_pending", &o->max_pending, 1, 1000000));
  RETURN_IF_ERROR(r.Int("ack_timeout_ms", &o->ack_timeout_ms, 100, 3600000));
  RETURN_IF_ERROR(r.Int("group_max_records", &o->group_max_records, 1, 10000000));
  RETURN_IF_ERROR(r.Int("group_max_ms", &o->group_max_ms, 0, 3600000));
  std::string password_env, token_env;
  RETURN_IF_ERROR(r.String("user", &o->user));
  RETURN_IF_ERROR(r.String("password_env", &password_env));
  RETURN_IF_ERROR(r.String("token_env", &token_env));
  const bool stream_set = t.get("stream") != nullptr;
  RETURN_IF_ERROR(r.Finish());
  if (o->url.empty()) return r.Error("url", "required");
  // libnats takes credentials from the url ("nats://user:password@host", "nats://token@host"),
  // but the url is printed (check lines, every sink warning): they come from the environment.
  if (UrlHasCredentials(o->url))
    return r.Error("url", "holds credentials (user:password@ or token@): a password never sits in the file; set "
                          "sink.nats.user and sink.nats.password_env (the environment variable holding the "
                          "password), or sink.nats.token_env, and write the url without them");
  if (!password_env.empty() && o->user.empty()) return r.Error("user", "required with password_env");
  if (!o->user.empty() && password_env.empty())
    return r.Error("password_env", "required with user: the environment variable holding the password");
  if (!token_env.empty() && !o->user.empty())
    return r.Error("token_env", "set together with user/password_env: NATS takes one or the other");
  for (const auto& [key, env, out] : {std::tuple<const char*, const std::string&, std::string*>{
                                          "password_env", password_env, &o->password},
                                      {"token_env", token_env, &o->token}}) {
    if (env.empty()) continue;
    const char* value = std::getenv(env.c_str());
    if (value == nullptr) return r.Error(key, fmt::format("environment variable {} is not set", env));
    *out = value;
  }
  // Each server of the list: nats://host:port, tls://host:port (TLS only) or host:port. A
  // server of another scheme (http://) can never be connected to; libnats would try anyway,
  // and the run wait for it as for a server that is down.
  for (size_t at = 0; at <= o->url.size();) {
    size_t comma = o->url.find(',', at);
    if (comma == std::string::npos) comma = o->url.size();
    const std::string one = o->url.substr(at, comma - at);
    at = comma + 1;
    const size_t sep = one.find("://");
    if (sep == std::string::npos) continue;
    std::string scheme = one.substr(0, sep);
    for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (scheme != "nats" && scheme != "tls")
      return r.Error("url", fmt::format("\"{}\" is not a NATS server URL: the scheme is {}://, NATS takes "
                                        "nats://host:port (tls://host:port to insist on TLS)",
                                        Shown(one), Shown(scheme)));
  }
  // The prefix starts every subject ("<prefix>.<db>.<table>") and the stream's "<prefix>.>":
  // it must be tokens a subject can hold, with no wildcard, so that a subscriber can name
  // each table's subject exactly.
  const std::string& p = o->subject_prefix;
  if (p.empty()) return r.Error("subject_prefix", "must not be empty (subjects are <prefix>.<db>.<table>)");
  for (char c : p) {
    if (c == '*' || c == '>')
      return r.Error("subject_prefix", fmt::format("\"{}\" holds the wildcard '{}': subjects under it could not be "
                                                   "addressed exactly (use tokens of letters, digits, '_' and '-', "
                                                   "separated by '.')",
                                                   p, c));
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f)
      return r.Error("subject_prefix", fmt::format("\"{}\" holds whitespace or a control character, which a NATS "
                                                   "subject cannot",
                                                   Shown(p)));
  }
  if (p.front() == '.' || p.back() == '.' || p.find("..") != std::string::npos)
    return r.Error("subject_prefix", fmt::format("\"{}\" has an empty token (a leading or trailing '.', or '..'), "
                                                 "which a NATS subject cannot",
                                                 p));
  // A stream name NATS refuses ("Error (code 10052)" at creation otherwise).
  if (stream_set) {
    if (o->stream.empty()) return r.Error("stream", "must not be empty (leave it out for the prefix in upper case)");
    for (char c : o->stream)
      if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f || c == '.' || c == '*' || c == '>' || c == '/' ||
          c == '\\')
        return r.Error("stream", fmt::format("\"{}\" holds '{}', which a JetStream stream name cannot (no whitespace, "
                                             "'.', '*', '>', '/' or '\\')",
                                             Shown(o->stream), Shown(std::string(1, c))));
  }
  // The checkpoint's key-value bucket (JetStream: letters, digits, '_' and '-'); refused at
  // the first checkpoint otherwise, after the snapshot's first chunk was published.
  auto bucket_name = [](const std::string& b) {
    if (b.empty()) return false;
    for (char c : b)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
    return true;
  };
  if (t.get("kv_bucket") != nullptr && !bucket_name(o->kv_bucket))
    return r.Error("kv_bucket", fmt::format("\"{}\" is not a JetStream key-value bucket name (letters, digits, '_' "
                                            "and '-' only)",
                                            Shown(o->kv_bucket)));
  if (t.get("kv_bucket") == nullptr && stream_set && !bucket_name(o->stream + "_state"))
    return r.Error("stream", fmt::format("\"{}\" makes the default kv_bucket \"{}_state\", which is not a JetStream "
                                         "key-value bucket name (letters, digits, '_' and '-' only): set "
                                         "sink.nats.kv_bucket",
                                         Shown(o->stream), Shown(o->stream)));
  return Status::Ok();
}

}  // namespace sluice::cli
