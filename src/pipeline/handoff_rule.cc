#include "pipeline/handoff_rule.h"

namespace sluice {

HandoffRule::HandoffRule(const std::map<std::string, std::vector<KeyPointPiece>>& by_table,
                         Locate locate)
    : locate_(std::move(locate)) {
  for (const auto& [name, pieces] : by_table) {
    if (pieces.size() < 2) continue;  // one point: the table-level rule (copied_at) suffices
    Table t;
    t.pieces = pieces;
    t.earliest = pieces[0].point;
    t.latest = pieces[0].point;
    for (const KeyPointPiece& p : pieces) {
      t.ends.push_back(p.end);
      if (ComparePositions(p.point, t.earliest) < 0) t.earliest = p.point;
      if (ComparePositions(p.point, t.latest) > 0) t.latest = p.point;
    }
    if (t.earliest == t.latest) continue;
    tables_.emplace(name, std::move(t));
  }
}

HandoffRule::Verdict HandoffRule::Quick(const std::string& table,
                                        const BinlogPosition& event) const {
  auto it = tables_.find(table);
  if (it == tables_.end()) return Verdict::kApply;
  if (ComparePositions(event, it->second.latest) >= 0) return Verdict::kApply;
  if (ComparePositions(event, it->second.earliest) < 0) return Verdict::kDrop;
  return Verdict::kAskServer;
}

Result<bool> HandoffRule::Applies(const Table& t, const TableSchema& schema, const Row& row,
                                  const BinlogPosition& event) {
  std::vector<std::string> key;
  key.reserve(schema.primary_key.size());
  for (size_t k : schema.primary_key) {
    if (k >= row.size() || row[k].is_absent() || row[k].is_null())
      return Status::FailedPrecondition(fmt::format(
          "{}: a row event at {} lacks primary-key column {}, needed to hand over from the "
          "snapshot (use binlog_row_image=FULL)",
          schema.QualifiedName(), event.ToString(),
          k < schema.columns.size() ? schema.columns[k].name : std::to_string(k)));
    key.push_back(row[k].ToText());
  }
  ASSIGN_OR_RETURN(size_t piece, locate_(schema, key, t.ends));
  if (piece >= t.pieces.size())
    return Status::Internal(fmt::format("{}: key located in piece {} of {}", schema.QualifiedName(),
                                        piece, t.pieces.size()));
  return ComparePositions(event, t.pieces[piece].point) >= 0;
}

Status HandoffRule::Filter(std::vector<RowChange>* changes, const BinlogPosition* at) {
  if (tables_.empty()) return Status::Ok();
  if (changes->empty()) return Status::Ok();
  const BinlogPosition last_event{changes->back().source.file, changes->back().source.pos};
  std::vector<RowChange> kept;
  kept.reserve(changes->size());
  for (RowChange& c : *changes) {
    if (!c.table) {
      kept.push_back(std::move(c));
      continue;
    }
    const std::string name = c.table->QualifiedName();
    const BinlogPosition event = at ? *at : BinlogPosition{c.source.file, c.source.pos};
    switch (Quick(name, event)) {
      case Verdict::kApply:
        kept.push_back(std::move(c));
        continue;
      case Verdict::kDrop:
        continue;
      case Verdict::kAskServer:
        break;
    }
    const Table& t = tables_.at(name);
    const TableSchema& schema = *c.table;
    bool before_applies = false, after_applies = false;
    if (!c.before.empty()) {
      ASSIGN_OR_RETURN(before_applies, Applies(t, schema, c.before, event));
    }
    if (!c.after.empty()) {
      ASSIGN_OR_RETURN(after_applies, Applies(t, schema, c.after, event));
    }
    if (c.op == Op::kUpdate) {
      if (before_applies && after_applies) {
        kept.push_back(std::move(c));
      } else if (after_applies) {  // both copies were read without either row
        c.op = Op::kCreate;
        c.before.clear();
        kept.push_back(std::move(c));
      } else if (before_applies) {  // the new key's copy has the new row
        c.op = Op::kDelete;
        c.after.clear();
        kept.push_back(std::move(c));
      }
      continue;
    }
    if ((c.op == Op::kDelete && before_applies) || (c.op != Op::kDelete && after_applies))
      kept.push_back(std::move(c));
  }
  // Tables the stream has passed for good need no more checks.
  for (auto it = tables_.begin(); it != tables_.end();) {
    if (!last_event.file.empty() && ComparePositions(last_event, it->second.latest) >= 0)
      it = tables_.erase(it);
    else
      ++it;
  }
  changes->swap(kept);
  return Status::Ok();
}

}  // namespace sluice
