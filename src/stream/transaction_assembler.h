// TransactionAssembler: turns a stream of decoded binlog events into whole source
// transactions of row changes, and tracks the position a resume must start from.
//
// Grammar of a transaction in a ROW binlog (MySQL sql/binlog.cc, MariaDB sql/log_event.cc):
//   MariaDB:  GTID(162) [QUERY "BEGIN"] (TABLE_MAP+ ROWS+)* (XID | QUERY "COMMIT")
//             GTID(162, FL_STANDALONE) QUERY <ddl>            -- no XID, ends after the QUERY
//   MySQL:    (GTID | ANONYMOUS_GTID) QUERY "BEGIN" (TABLE_MAP+ ROWS+)* (XID | QUERY "COMMIT")
//             (GTID | ANONYMOUS_GTID) QUERY <ddl>
//   Either:   QUERY "ROLLBACK" ends a group that must be discarded.
//   XA:       MariaDB GTID(FL_PREPARED_XA) rows... QUERY "XA PREPARE <xid>"
//             MySQL   GTID QUERY "XA START <xid>" rows... QUERY "XA END <xid>" XA_PREPARE(38)
//             later, in a group of its own: QUERY "XA COMMIT <xid>" | "XA ROLLBACK <xid>"
//   A prepared XA transaction is held until its XA COMMIT (then handed on, as one
//   transaction) or XA ROLLBACK (then dropped). While one is held, the resume point stays at
//   the start of its PREPARE group, so a restart reads it again: transactions committed in
//   between are then delivered again (idempotent for the SQLite sink, at-least-once for JSON
//   lines). "XA COMMIT <xid> ONE PHASE" commits like an ordinary transaction.
// A transaction is handed on only when its XID or COMMIT arrives, so a crash or reconnect
// in the middle never yields half a transaction. Events between transactions (ROTATE,
// FORMAT_DESCRIPTION, GTID_LIST, heartbeats, ...) only move the resume position.
//
// Rows are decoded only for tables the SchemaResolver selects (it returns a null schema for
// the others), so excluded tables cost only the header decode.
// Thread safety: single-threaded; owns its state.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <string>
#include <unordered_map>
#include <vector>

#include "binlog/events.h"
#include "binlog/rows_event.h"
#include "core/position.h"
#include "gtid/gtid_set.h"
#include "pipeline/change.h"
#include "sink/sink.h"
#include "util/status.h"

namespace sluice {

// Position and GTID state at a transaction boundary.
struct StreamPoint {
  BinlogPosition position;  // first byte of the next event to read
  std::string gtid;         // GTID position after the last applied transaction
};

// A completed source transaction. `changes` and `counted` are empty when every row was
// filtered out, for DDL, and for position-only advances.
struct CommittedTransaction {
  std::vector<RowChange> changes;
  StreamPoint end;        // where to resume after this transaction
  std::string gtid;       // this transaction's GTID ("" when none)
  bool is_ddl = false;
  std::string ddl_schema;  // for DDL: default schema of the statement
  std::string ddl_query;
  // MariaDB's CREATE TABLE ... SELECT in ROW format: a CREATE TABLE statement (the columns, not
  // the query) and the new table's rows in one transaction. The rows are left out (not
  // decoded: the table has no recorded definition yet); the table is copied from the source.
  bool create_select = false;
  std::string unknown_xa;  // XA COMMIT of a transaction prepared before the start point
  // The rows were held from an XA PREPARE and committed by this XA COMMIT: a snapshot read
  // between the two did not see them, so they are judged against copy points at this
  // event's position, not at their own (stream/streamer.cc).
  bool xa_commit = false;
  // Earlier changes of this transaction were handed on by TakePart (they come first).
  bool has_parts = false;
  // The transaction ended in ROLLBACK: nothing of it may be applied (parts included).
  bool rolled_back = false;
  size_t bytes = 0;  // ApproxBytes of `changes` (pipeline/change.h), summed, plus text's size
  // With a direct formatter (set_direct_formatter): the sink's text of every change, in
  // order (Transaction::preformatted); the changes are then counted in `counted` (table, op,
  // last source timestamp), not kept in `changes`.
  std::optional<std::string> text;
  ChangeCounts counted;  // with `text`: its changes, counted instead of kept
};

class TransactionAssembler {
 public:
  // Returns the table definition to decode `map` with, or a null pointer when the table is
  // not selected. May fail (definition does not match the row layout).
  using SchemaResolver = std::function<Result<TableSchemaPtr>(const binlog::TableMap& map)>;

  // `start` is the point streaming begins from; `flavor` decides the GTID form.
  TransactionAssembler(Flavor flavor, SchemaResolver resolver, StreamPoint start);

  // Feeds one decoded event. Returns a CommittedTransaction when the event ends one (or
  // when it moves the resume position between transactions, with no changes), else
  // nullopt. Errors name the event position.
  Result<std::optional<CommittedTransaction>> Feed(const binlog::Event& event);

  // Judges a statement-logged data change (a QUERY event holding INSERT, UPDATE, DELETE,
  // REPLACE or LOAD DATA: binlog_format=STATEMENT or MIXED in some session) that starts at
  // `at`: OK lets the stream pass it (it changes no table whose rows the stream applies
  // there), an error is Feed's (the change cannot be read as rows).
  // `ansi_quotes`: the statement's sql_mode has ANSI_QUOTES ("x" names a table).
  using StatementFilter = std::function<Status(std::string_view schema, std::string_view query,
                                               const BinlogPosition& at, bool ansi_quotes)>;
  void set_statement_filter(StatementFilter f) { statement_filter_ = std::move(f); }

  // The resume point as of the last transaction boundary (see XA above).
  StreamPoint boundary() const { return ResumePoint(); }
  // How far the stream has been read, at a group boundary (ignores held XA transactions).
  const BinlogPosition& read_position() const { return boundary_.position; }
  // Prepared XA transactions waiting for their XA COMMIT or XA ROLLBACK.
  size_t held_xa_count() const { return held_xa_.size(); }
  bool in_transaction() const { return in_txn_; }
  // Whether the group being read is an XA transaction's (its rows are held until XA COMMIT).
  bool in_xa() const { return xa_ || !xa_xid_.empty(); }

  // Bounded memory for large transactions (issue 8): ApproxBytes of the changes of the open
  // transaction held now, and TakePart, which hands them on before the transaction ends
  // (the committed transaction then has has_parts, and only the changes after the last part).
  // An XA transaction is held whole until its XA COMMIT (nullopt: it cannot be split), as
  // is a transaction with nothing held.
  size_t buffered_bytes() const { return buffered_bytes_; }
  // `text` and `counted` (may be null only without a direct formatter): the part's text and
  // its counted changes, as CommittedTransaction::text and ::counted (the returned vector is
  // then empty).
  std::optional<std::vector<RowChange>> TakePart(std::optional<std::string>* text = nullptr,
                                                 ChangeCounts* counted = nullptr);

  // Rows formatted as they are decoded (issue 8: the JSON lines sink's text made straight
  // from the row image, with no Values): a transaction whose first rows event `f` takes
  // (Preformatter::FormatRowsEvent) keeps its text instead of values; its later rows events
  // that `f` does not take are decoded to Values and formatted at once (FormatChanges; its
  // error fails Feed). Only for plans built once per TABLE_MAP, not for XA transactions
  // (held until XA COMMIT). Null (the default): Values only. `f` is used from Feed's thread
  // only and must outlive the assembler's use of it.
  void set_direct_formatter(Preformatter* f) { direct_ = f; }

 private:
  Result<std::optional<CommittedTransaction>> Commit(const binlog::Event& event);
  Status AddRows(const binlog::Event& event, const binlog::RowsEvent& rows);
  void Reset();
  void NoteGtid(const std::string& gtid_text);
  void MoveBoundary(const binlog::Event& event);
  // The resume point: the boundary, or the start of the oldest held XA transaction.
  StreamPoint ResumePoint() const;
  // Whether file:pos is before the boundary in the boundary's own file.
  void SkipTo(const binlog::Event& gtid_event);  // transaction_assembler.cc
  bool Behind(const std::string& file, uint64_t pos) const;
  Result<std::optional<CommittedTransaction>> Prepare(const binlog::Event& event, std::string xid);
  Result<std::optional<CommittedTransaction>> FinishXa(const binlog::Event& event, const std::string& xid,
                                                       bool commit);

  Flavor flavor_;
  SchemaResolver resolver_;
  StatementFilter statement_filter_;
  StreamPoint boundary_;
  std::string current_file_;

  // Current transaction.
  bool in_txn_ = false;
  bool standalone_ = false;  // MariaDB FL_STANDALONE: ends after its statement
  std::string gtid_;         // this transaction's GTID text
  std::optional<gtid::MariadbGtid> mariadb_gtid_;
  std::optional<binlog::GtidEvent> mysql_gtid_;
  std::vector<RowChange> changes_;
  std::optional<std::string> text_;  // with direct_: the text of the changes (see CommittedTransaction::text)
  ChangeCounts counted_;             // with text_: its changes (changes_ is then empty)
  Preformatter* direct_ = nullptr;
  SourceInfo source_;  // AddRows' source of the current rows event (its strings' storage reused)
  size_t text_hint_ = 0;  // capacity to start a transaction's text with: the last one's size and a quarter
  size_t buffered_bytes_ = 0;  // ApproxBytes of changes_, plus text_'s size
  bool parts_taken_ = false;   // TakePart handed on changes of the current transaction
  bool xa_ = false;            // the current transaction is an XA one (MariaDB GTID flag)
  // A CREATE TABLE inside the current transaction (CREATE TABLE ... SELECT): its statement.
  std::optional<std::pair<std::string, std::string>> create_select_;  // schema, query
  StreamPoint group_start_;  // boundary when the current group began
  std::string xa_xid_;       // MySQL: xid of the "XA START" group being read

  struct HeldXa {
    std::vector<RowChange> changes;
    std::optional<std::string> text;
    ChangeCounts counted;
    StreamPoint start;
    std::string gtid;
  };
  std::map<std::string, HeldXa> held_xa_;  // by xid text as the server writes it

  std::unordered_map<uint64_t, std::shared_ptr<const binlog::TableMap>> table_maps_;
  // Column plans per table id, for the TABLE_MAP and definition they were built from (held
  // here: the plans point into both). Every rows event of a transaction repeats its
  // TABLE_MAP, and building the plans per rows event cost a tenth of decoding the rows.
  struct PlanMemo {
    std::shared_ptr<const binlog::TableMap> map;
    TableSchemaPtr schema;
    std::shared_ptr<const binlog::RowPlans> plans;
  };
  std::unordered_map<uint64_t, PlanMemo> plans_;
  std::vector<binlog::DecodedRow> decoded_;  // AddRows' rows, reused (capacity only)
  gtid::MariadbGtidList mariadb_pos_;
  gtid::MysqlGtidSet mysql_pos_;
  // MySQL: mysql_pos_ is the whole executed set at the boundary, not only the GTIDs streamed
  // since the start. False when the stream started with no set (a watermark snapshot's point
  // is a file/position alone): the boundary then carries no GTID set, so that a resume goes
  // by file/position, until a PREVIOUS_GTIDS event (every file's head, sent after a
  // rotation) gives the whole set. A set of only the streamed GTIDs, resumed from by GTID,
  // would have the server send every older transaction it still holds again.
  bool mysql_set_known_ = false;
};

}  // namespace sluice
