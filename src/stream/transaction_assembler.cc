#include "stream/transaction_assembler.h"

#include <algorithm>
#include <cctype>

namespace sluice {
namespace {

// Case-insensitive comparison of a statement against a keyword, ignoring surrounding
// whitespace and a trailing semicolon ("BEGIN", "COMMIT", "ROLLBACK").
bool StatementIs(std::string_view q, std::string_view keyword) {
  while (!q.empty() && std::isspace(static_cast<unsigned char>(q.front()))) q.remove_prefix(1);
  while (!q.empty() && (std::isspace(static_cast<unsigned char>(q.back())) || q.back() == ';'))
    q.remove_suffix(1);
  if (q.size() != keyword.size()) return false;
  for (size_t i = 0; i < q.size(); ++i)
    if (std::toupper(static_cast<unsigned char>(q[i])) != keyword[i]) return false;
  return true;
}

bool StartsWithCi(std::string_view q, std::string_view prefix) {
  while (!q.empty() && std::isspace(static_cast<unsigned char>(q.front()))) q.remove_prefix(1);
  if (q.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i)
    if (std::toupper(static_cast<unsigned char>(q[i])) != prefix[i]) return false;
  return true;
}

// `q` after its leading white space and comments (`/* ... */`, `-- ...`, `# ...`), as the server
// skips them: applications and ORMs prefix statements with comments ("/* app:checkout */
// UPDATE ..."), and such a statement-logged change passed the DML check unseen. An
// executable comment (`/*!...*/`, `/*M!...*/`) holds SQL and is kept.
std::string_view AfterLeadingComments(std::string_view q) {
  while (true) {
    while (!q.empty() && std::isspace(static_cast<unsigned char>(q.front()))) q.remove_prefix(1);
    if (q.starts_with("/*") && !q.starts_with("/*!") && !q.starts_with("/*M!")) {
      const size_t end = q.find("*/", 2);
      if (end == std::string_view::npos) return q;
      q.remove_prefix(end + 2);
    } else if (q.starts_with("#") || (q.starts_with("--") && (q.size() == 2 || std::isspace(static_cast<unsigned char>(q[2]))))) {
      const size_t end = q.find('\n');
      if (end == std::string_view::npos) return std::string_view();
      q.remove_prefix(end + 1);
    } else {
      return q;
    }
  }
}

// For "XA <verb> <xid>[ ONE PHASE]" returns the xid text; nullopt when `q` is not that verb.
std::optional<std::string> XaArgument(std::string_view q, std::string_view verb) {
  while (!q.empty() && std::isspace(static_cast<unsigned char>(q.front()))) q.remove_prefix(1);
  std::string prefix = "XA " + std::string(verb) + " ";
  if (!StartsWithCi(q, prefix)) return std::nullopt;
  q.remove_prefix(prefix.size());
  while (!q.empty() && (std::isspace(static_cast<unsigned char>(q.back())) || q.back() == ';'))
    q.remove_suffix(1);
  while (!q.empty() && std::isspace(static_cast<unsigned char>(q.front()))) q.remove_prefix(1);
  return std::string(q);
}

// The xid as the server writes it in "XA COMMIT <xid>" queries (MySQL XID::serialize,
// MariaDB the same): X'<gtrid hex>',X'<bqual hex>',<formatID>.
std::string XidText(const binlog::XaPrepareEvent& xa) {
  auto hex = [](const std::string& s) {
    std::string out;
    for (unsigned char c : s) out += fmt::format("{:02x}", c);
    return out;
  };
  return fmt::format("X'{}',X'{}',{}", hex(xa.gtrid), hex(xa.bqual), xa.format_id);
}

bool EndsWithOnePhase(std::string_view xid) {
  constexpr std::string_view kOnePhase = "ONE PHASE";
  if (xid.size() < kOnePhase.size()) return false;
  std::string_view tail = xid.substr(xid.size() - kOnePhase.size());
  for (size_t i = 0; i < tail.size(); ++i)
    if (std::toupper(static_cast<unsigned char>(tail[i])) != kOnePhase[i]) return false;
  return true;
}

}  // namespace

TransactionAssembler::TransactionAssembler(Flavor flavor, SchemaResolver resolver,
                                           StreamPoint start)
    : flavor_(flavor), resolver_(std::move(resolver)), boundary_(std::move(start)) {
  current_file_ = boundary_.position.file;
  if (flavor_ == Flavor::kMariaDB) {
    auto list = gtid::MariadbGtidList::Parse(boundary_.gtid);
    if (list.ok()) mariadb_pos_ = *list;
  } else if (flavor_ == Flavor::kMySQL) {
    auto set = gtid::MysqlGtidSet::Parse(boundary_.gtid);
    if (set.ok()) mysql_pos_ = *set;
    // An empty set is taken as unknown: a server whose gtid_executed really is empty has
    // its set back at the next PREVIOUS_GTIDS event, and until then resumes by position.
    mysql_set_known_ = set.ok() && !boundary_.gtid.empty();
  }
}

StreamPoint TransactionAssembler::ResumePoint() const {
  StreamPoint p = boundary_;
  for (const auto& [xid, held] : held_xa_) {
    (void)xid;
    if (ComparePositions(held.start.position, p.position) < 0) p = held.start;
  }
  return p;
}

void TransactionAssembler::Reset() {
  xa_xid_.clear();
  in_txn_ = false;
  standalone_ = false;
  gtid_.clear();
  mariadb_gtid_.reset();
  mysql_gtid_.reset();
  changes_.clear();
  text_.reset();
  counted_ = ChangeCounts();
  buffered_bytes_ = 0;
  parts_taken_ = false;
  xa_ = false;
  create_select_.reset();
}

std::optional<std::vector<RowChange>> TransactionAssembler::TakePart(std::optional<std::string>* text,
                                                                   ChangeCounts* counted) {
  if (!in_txn_ || (changes_.empty() && counted_.empty()) || xa_ || !xa_xid_.empty()) return std::nullopt;
  if (text_ && (text == nullptr || counted == nullptr)) return std::nullopt;  // the caller could not carry them
  std::vector<RowChange> part = std::move(changes_);
  changes_.clear();
  if (text != nullptr) *text = std::move(text_);
  text_.reset();
  if (counted != nullptr) *counted = std::move(counted_);
  counted_ = ChangeCounts();
  buffered_bytes_ = 0;
  parts_taken_ = true;
  return part;
}

void TransactionAssembler::MoveBoundary(const binlog::Event& event) {
  // Artificial events (the fake ROTATE and the FORMAT_DESCRIPTION a dump starts with) and
  // inner events of a TRANSACTION_PAYLOAD do not move the position.
  if (event.in_payload || event.end_pos == 0 || (event.header.flags & binlog::kFlagArtificial))
    return;
  if (current_file_.empty()) return;
  if (Behind(current_file_, event.end_pos)) return;
  // In place: it runs for every event, and a new string each time was an allocation each.
  boundary_.position.file.assign(current_file_);
  boundary_.position.pos = event.end_pos;
}

// A dump by GTID starts at the beginning of the binlog file that holds the start GTID: the
// server sends that file's FORMAT_DESCRIPTION, GTID_LIST and BINLOG_CHECKPOINT events, then
// skips the transactions the GTID state already has. Those header events are real events
// with real positions, earlier in the same file than the point the stream resumes from;
// following them moved the resume position back (a checkpoint at file:344 after an idle
// stop, while the GTID state was at file:10070), and `--until-caught-up` then waited for the
// position to come back up to the server's end. So the position never goes back within a
// file. (Another file is another matter: a new server's files, or a rotation, move it.)
// A group starts at its GTID event. A dump by GTID skips the transactions its start position
// holds without sending them, so that event may start past the boundary: everything before it
// was sent or skipped, and the group starts there. Without this a group's start (the resume
// point of an XA transaction held until its XA COMMIT) was the end of the file's header events,
// a place whose GTID position is not the checkpoint's, and the next run refused it as a reset
// history (a new user's probe).
void TransactionAssembler::SkipTo(const binlog::Event& gtid_event) {
  if (gtid_event.in_payload || current_file_.empty() || gtid_event.file != current_file_) return;
  if (boundary_.position.file != current_file_ || gtid_event.pos <= boundary_.position.pos) return;
  boundary_.position.pos = gtid_event.pos;
}

bool TransactionAssembler::Behind(const std::string& file, uint64_t pos) const {
  return file == boundary_.position.file && pos < boundary_.position.pos;
}

Result<std::optional<CommittedTransaction>> TransactionAssembler::Feed(const binlog::Event& ev) {
  using namespace binlog;  // NOLINT: event type names
  // Compared before copied: the file changes once per rotation, and every event names it.
  if (!ev.file.empty() && ev.file != current_file_) current_file_ = ev.file;

  if (auto* rot = std::get_if<RotateEvent>(&ev.body)) {
    current_file_ = rot->next_file;
    if (!in_txn_) {
      // The fake ROTATE of a dump by GTID names the start file at position 4 (see Behind).
      if (!Behind(rot->next_file, rot->position)) boundary_.position = {rot->next_file, rot->position};
      return std::optional<CommittedTransaction>(CommittedTransaction{{}, ResumePoint(), "", false, "", ""});
    }
    return std::optional<CommittedTransaction>();
  }
  if (auto* tm = std::get_if<TableMapEvent>(&ev.body)) {
    table_maps_[tm->map->table_id] = tm->map;
    if (!in_txn_) in_txn_ = true;  // a group without BEGIN (e.g. non-GTID MySQL 5.x)
    return std::optional<CommittedTransaction>();
  }
  if (auto* rows = std::get_if<RowsEvent>(&ev.body)) {
    if (!in_txn_) in_txn_ = true;
    RETURN_IF_ERROR(AddRows(ev, *rows));
    return std::optional<CommittedTransaction>();
  }
  if (auto* g = std::get_if<MariadbGtidEvent>(&ev.body)) {
    if (in_txn_ && (!changes_.empty() || !counted_.empty())) {
      return Status::Corruption(fmt::format(
          "binlog {} at offset {}: GTID {} starts a new transaction before {} committed",
          current_file_, ev.pos, g->GtidText(), gtid_));
    }
    Reset();
    SkipTo(ev);
    group_start_ = boundary_;
    in_txn_ = true;
    standalone_ = g->standalone();
    xa_ = (g->flags & MariadbGtidEvent::kFlPreparedXa) != 0;
    mariadb_gtid_ = gtid::MariadbGtid{g->domain_id, g->server_id ? g->server_id : ev.header.server_id,
                                      g->seq_no};
    gtid_.clear();
    mariadb_gtid_->AppendTo(&gtid_);
    return std::optional<CommittedTransaction>();
  }
  if (auto* prev = std::get_if<PreviousGtidsEvent>(&ev.body)) {
    // Every GTID of the earlier files: the whole executed set at this file's head, which
    // the first one after a start without a set (mysql_set_known_) becomes.
    if (flavor_ == Flavor::kMySQL && !mysql_set_known_ && !in_txn_) {
      auto set = gtid::MysqlGtidSet::Parse(prev->gtid_set);
      if (set.ok()) {
        mysql_pos_ = *set;
        mysql_set_known_ = true;
        boundary_.gtid = mysql_pos_.ToString();
      }
    }
    // The position moves on as for the other events between groups (below).
  }
  if (auto* g = std::get_if<GtidEvent>(&ev.body)) {
    Reset();
    SkipTo(ev);
    group_start_ = boundary_;
    in_txn_ = true;
    standalone_ = true;  // until a BEGIN says otherwise: a DDL follows with no XID
    if (!g->anonymous) {
      mysql_gtid_ = *g;
      gtid_ = g->GtidText();
    }
    return std::optional<CommittedTransaction>();
  }
  if (std::get_if<XidEvent>(&ev.body)) return Commit(ev);
  if (auto* xa = std::get_if<XaPrepareEvent>(&ev.body)) {
    if (xa->one_phase) return Commit(ev);
    return Prepare(ev, xa_xid_.empty() ? XidText(*xa) : xa_xid_);
  }
  if (auto* q = std::get_if<QueryEvent>(&ev.body)) {
    if (StatementIs(q->query, "BEGIN")) {
      in_txn_ = true;
      standalone_ = false;
      return std::optional<CommittedTransaction>();
    }
    if (StatementIs(q->query, "COMMIT")) return Commit(ev);
    if (StatementIs(q->query, "ROLLBACK")) {
      // A group that must not be applied (e.g. a non-transactional mix rolled back).
      std::string gtid = gtid_;
      const bool had_parts = parts_taken_;
      Reset();
      NoteGtid(gtid);
      MoveBoundary(ev);
      CommittedTransaction rolled_back{{}, ResumePoint(), gtid, false, "", ""};
      rolled_back.has_parts = had_parts;
      rolled_back.rolled_back = true;
      return std::optional<CommittedTransaction>(std::move(rolled_back));
    }
    // WITH: MySQL 8's common table expressions before UPDATE or DELETE (the filter cannot
    // tell their tables, and stops where that matters).
    for (std::string_view dml : {"INSERT", "UPDATE", "DELETE", "REPLACE", "LOAD DATA", "WITH"}) {
      if (StartsWithCi(AfterLeadingComments(q->query), dml) && statement_filter_) {
        RETURN_IF_ERROR(statement_filter_(q->schema, q->query, BinlogPosition{current_file_, ev.pos},
                                          binlog::AnsiQuotes(binlog::QuerySqlMode(*q).value_or(0))));
        break;
      }
    }
    if (auto xid = XaArgument(q->query, "START")) {
      in_txn_ = true;
      standalone_ = false;
      xa_xid_ = *xid;
      return std::optional<CommittedTransaction>();
    }
    if (XaArgument(q->query, "END")) return std::optional<CommittedTransaction>();
    if (auto xid = XaArgument(q->query, "PREPARE")) return Prepare(ev, *xid);
    if (auto xid = XaArgument(q->query, "COMMIT")) {
      if (EndsWithOnePhase(*xid)) return Commit(ev);
      return FinishXa(ev, *xid, /*commit=*/true);
    }
    if (auto xid = XaArgument(q->query, "ROLLBACK")) return FinishXa(ev, *xid, /*commit=*/false);
    if (StartsWithCi(q->query, "SAVEPOINT") ||
        StartsWithCi(q->query, "ROLLBACK TO")) {
      if (in_txn_ && !standalone_) return std::optional<CommittedTransaction>();
    }
    if (in_txn_ && !standalone_) {
      // CREATE TABLE ... SELECT (MariaDB, ROW format): the CREATE TABLE of the new table's
      // columns, then its rows, in one transaction (DDL cannot be inside an explicit one). The
      // transaction becomes that DDL, marked create_select, without its rows.
      if (StartsWithCi(q->query, "CREATE") && changes_.empty() && counted_.empty() && !parts_taken_ &&
          xa_xid_.empty() && !xa_) {
        create_select_.emplace(q->schema, q->query);
        return std::optional<CommittedTransaction>();
      }
      // A statement inside a transaction (statement-logged); nothing to apply in ROW mode.
      return std::optional<CommittedTransaction>();
    }
    // A self-contained statement, normally DDL: ends its group.
    ASSIGN_OR_RETURN(auto committed, Commit(ev));
    if (committed) {
      committed->is_ddl = true;
      committed->ddl_schema = q->schema;
      committed->ddl_query = q->query;
    }
    return committed;
  }
  if (std::get_if<TransactionPayloadEvent>(&ev.body)) {
    return std::optional<CommittedTransaction>();  // inner events follow
  }
  // FORMAT_DESCRIPTION, GTID_LIST, BINLOG_CHECKPOINT, PREVIOUS_GTIDS, HEARTBEAT, ANNOTATE,
  // INTVAR/RAND/USER_VAR, STOP, opaque events: only the position moves, between groups.
  if (auto* hb = std::get_if<HeartbeatEvent>(&ev.body)) {
    // The server sends a heartbeat when its dump waits at the end of the binlog: everything
    // before the position it names was sent, or skipped by a dump by GTID as already applied.
    // Between groups the read position moves there, in the same file only. Without it, a dump
    // by GTID on a server whose every transaction the position held (a failover onto a
    // caught-up replica) stayed at the file's header events, and `--until-caught-up` never
    // ended (a new user's probe).
    const uint64_t pos = hb->log_position.value_or(ev.header.log_pos);
    if (!in_txn_ && pos > 0 && !current_file_.empty() && hb->log_file == current_file_ &&
        boundary_.position.file == current_file_ && pos > boundary_.position.pos) {
      boundary_.position.pos = pos;
      return std::optional<CommittedTransaction>(CommittedTransaction{{}, ResumePoint(), "", false, "", ""});
    }
    return std::optional<CommittedTransaction>();
  }
  if (!in_txn_) {
    StreamPoint before = boundary_;
    MoveBoundary(ev);
    if (!(before.position == boundary_.position))
      return std::optional<CommittedTransaction>(CommittedTransaction{{}, ResumePoint(), "", false, "", ""});
  }
  return std::optional<CommittedTransaction>();
}

void TransactionAssembler::NoteGtid(const std::string&) {
  if (mariadb_gtid_) mariadb_pos_.Add(*mariadb_gtid_);
  if (mysql_gtid_) {
    auto uuid = gtid::Uuid::Parse(mysql_gtid_->uuid);
    if (uuid.ok())
      mysql_pos_.Add(*uuid, mysql_gtid_->tag, static_cast<uint64_t>(mysql_gtid_->gno));
  }
  if (flavor_ == Flavor::kMariaDB) {
    boundary_.gtid.clear();  // in place: once per transaction
    mariadb_pos_.AppendTo(&boundary_.gtid);
  }
  if (flavor_ == Flavor::kMySQL && mysql_set_known_) boundary_.gtid = mysql_pos_.ToString();
}

Result<std::optional<CommittedTransaction>> TransactionAssembler::Prepare(const binlog::Event& ev,
                                                                         std::string xid) {
  for (char& c : xid) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  HeldXa held{std::move(changes_), std::move(text_), std::move(counted_), group_start_, gtid_};
  if (held_xa_.count(xid)) {
    return Status::Corruption(fmt::format("binlog {} at offset {}: XA transaction {} prepared twice",
                                          current_file_, ev.pos, xid));
  }
  held_xa_.emplace(std::move(xid), std::move(held));
  NoteGtid(gtid_);
  std::string gtid = gtid_;
  Reset();
  MoveBoundary(ev);
  return std::optional<CommittedTransaction>(CommittedTransaction{{}, ResumePoint(), gtid, false, "", ""});
}

Result<std::optional<CommittedTransaction>> TransactionAssembler::FinishXa(const binlog::Event& ev,
                                                                          const std::string& xid,
                                                                          bool commit) {
  std::string key = xid;
  for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto it = held_xa_.find(key);
  const bool found = it != held_xa_.end();
  std::vector<RowChange> changes;
  std::optional<std::string> text;
  ChangeCounts counted;
  if (found) {
    if (commit) {
      changes = std::move(it->second.changes);
      text = std::move(it->second.text);
      counted = std::move(it->second.counted);
    }
    held_xa_.erase(it);
  }
  // An XA COMMIT whose PREPARE came before the start point: its rows were prepared, not
  // committed, when the snapshot was taken, and the PREPARE group is not read again.
  // Nothing can be delivered for it; the caller logs it.
  ASSIGN_OR_RETURN(auto committed, Commit(ev));
  if (committed) {
    committed->changes = std::move(changes);
    committed->text = std::move(text);
    committed->counted = std::move(counted);
    committed->bytes = (committed->text ? committed->text->size() : 0) + committed->counted.HeapBytes();
    for (const RowChange& c : committed->changes) committed->bytes += ApproxBytes(c);
    if (commit && !found) committed->unknown_xa = xid;
    committed->xa_commit = commit && found;
  }
  return committed;
}

Result<std::optional<CommittedTransaction>> TransactionAssembler::Commit(const binlog::Event& ev) {
  CommittedTransaction out;
  out.changes = std::move(changes_);
  out.text = std::move(text_);
  out.counted = std::move(counted_);
  if (out.changes.empty() && out.counted.empty()) out.text.reset();
  if (out.text) text_hint_ = std::min<size_t>(out.text->size() + out.text->size() / 4, 1u << 20);
  out.bytes = buffered_bytes_;
  out.has_parts = parts_taken_;
  out.gtid = gtid_;
  if (create_select_) {
    out.is_ddl = true;
    out.create_select = true;
    out.ddl_schema = std::move(create_select_->first);
    out.ddl_query = std::move(create_select_->second);
  }
  NoteGtid(gtid_);
  Reset();
  MoveBoundary(ev);
  out.end = ResumePoint();
  return std::optional<CommittedTransaction>(std::move(out));
}

Status TransactionAssembler::AddRows(const binlog::Event& ev, const binlog::RowsEvent& rows) {
  if (create_select_) return Status::Ok();  // the new table is copied instead (see Commit)
  auto it = table_maps_.find(rows.table_id);
  if (it == table_maps_.end()) {
    return Status::Corruption(fmt::format(
        "binlog {} at offset {}: rows event for table id {} without a preceding TABLE_MAP",
        current_file_, ev.pos, rows.table_id));
  }
  const std::shared_ptr<const binlog::TableMap>& map_ptr = it->second;
  const binlog::TableMap& map = *map_ptr;
  ASSIGN_OR_RETURN(TableSchemaPtr schema, resolver_(map));
  if (!schema) return Status::Ok();  // table not selected

  // Columns added at the end of the table since this event (the resolver allows that): decode
  // with the definition's first columns, and mark the others "not given".
  const TableSchema* decode_schema = schema.get();
  TableSchema prefix;
  if (map.column_count() < schema->columns.size()) {
    prefix = *schema;
    prefix.columns.resize(map.column_count());
    std::erase_if(prefix.primary_key, [&](size_t k) { return k >= map.column_count(); });
    decode_schema = &prefix;
  }
  std::vector<binlog::DecodedRow>& decoded = decoded_;
  decoded.clear();
  Status st;
  const PlanMemo* memo = nullptr;
  if (decode_schema == schema.get()) {
    auto m = plans_.find(rows.table_id);
    if (m != plans_.end() && m->second.map == map_ptr && m->second.schema == schema) {
      memo = &m->second;
    } else {
      // Plans that cannot be built are left to DecodeRows below, for its error.
      auto plans = binlog::BuildRowPlans(map, decode_schema, binlog::DecodeOptions{});
      if (plans.ok()) {
        if (plans_.size() >= 4096) plans_.clear();  // table ids grow with every table opened
        memo = &(plans_[rows.table_id] = PlanMemo{map_ptr, schema, std::move(*plans)});
      }
    }
  }
  Op op = Op::kCreate;
  switch (rows.kind) {
    case binlog::RowsKind::kWrite: op = Op::kCreate; break;
    case binlog::RowsKind::kUpdate:
    case binlog::RowsKind::kPartialUpdate: op = Op::kUpdate; break;
    case binlog::RowsKind::kDelete: op = Op::kDelete; break;
  }
  // Assigned in place: the file name alone was an allocation per rows event.
  SourceInfo& src = source_;
  src.flavor = flavor_;
  src.server_id = ev.header.server_id;
  // Compared before copied: the file changes once per rotation, the GTID once per transaction
  // (several rows events).
  if (src.file != current_file_) src.file.assign(current_file_);
  src.pos = ev.pos;
  if (src.gtid != gtid_) src.gtid.assign(gtid_);
  src.timestamp = ev.header.timestamp;
  src.snapshot = false;
  src.row = 0;
  // What the sink writer still reads of formatted changes (its counters, the tables it
  // prepares, lag) is counted: a RowChange per change, made here and freed on the writer's
  // thread, cost more than the counting.
  const auto count = [&](size_t n) {
    if (n == 0) return;
    const size_t heap = counted_.HeapBytes();
    counted_.Add(schema, op, n, src.timestamp);
    buffered_bytes_ += counted_.HeapBytes() - heap;
  };
  // Text straight from the row image: in a transaction that has it (or has nothing yet).
  const bool direct = direct_ != nullptr && !xa_ && xa_xid_.empty() && (text_ || changes_.empty());
  if (direct && memo != nullptr) {
    if (!text_) text_.emplace().reserve(text_hint_);  // growing it moved each transaction's text twice
    std::string& text = *text_;
    const size_t before = text.size();
    if (auto n = direct_->FormatRowsEvent(rows, map, *memo->plans, schema, src, &text)) {
      count(*n);
      buffered_bytes_ += text.size() - before;
      return Status::Ok();
    }
    if (counted_.empty()) text_.reset();  // the first rows event: this transaction keeps Values
  }
  if (memo != nullptr) {
    st = binlog::DecodeRows(rows, map, *memo->plans, binlog::DecodeOptions{}, &decoded);
  } else {
    st = binlog::DecodeRows(rows, map, decode_schema, binlog::DecodeOptions{}, &decoded);
  }
  if (!st.ok()) return st.WithContext(fmt::format("binlog {} event at offset {}", current_file_, ev.pos));

  // Transactions mostly hold a few row events of a row or two each: start at 4 and double, not
  // grow 1, 2, 4 (each growth moves every RowChange).
  if (changes_.capacity() < changes_.size() + decoded.size())
    changes_.reserve(std::max({changes_.capacity() * 2, changes_.size() + decoded.size(), size_t{4}}));
  if (text_) {
    // A transaction with text: these changes are formatted now, and kept like the others.
    std::vector<RowChange> fresh(decoded.size());
    for (size_t i = 0; i < decoded.size(); ++i)
      FillStreamChange(fresh[i], op, schema, std::move(decoded[i].before), std::move(decoded[i].after), src,
                       static_cast<uint32_t>(i));
    const size_t before = text_->size();
    Status fst = direct_->FormatChanges(std::move(fresh), &*text_);
    if (!fst.ok()) return fst.WithContext(fmt::format("binlog {} event at offset {}", current_file_, ev.pos));
    count(decoded.size());
    buffered_bytes_ += text_->size() - before;
    return Status::Ok();
  }
  for (size_t i = 0; i < decoded.size(); ++i) {
    RowChange& c = changes_.emplace_back();
    FillStreamChange(c, op, schema, std::move(decoded[i].before), std::move(decoded[i].after), src,
                     static_cast<uint32_t>(i));
    buffered_bytes_ += ApproxBytes(c);
  }
  return Status::Ok();
}

}  // namespace sluice
