#include "schema/sql_tokenizer.h"

#include <fmt/format.h>

namespace sluice::sql {
namespace {

bool IsWordByte(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '$' || c >= 0x80;
}
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

char Unescape(char e) {
  switch (e) {
    case 'n': return '\n';
    case 't': return '\t';
    case 'r': return '\r';
    case '0': return '\0';
    case 'Z': return '\032';
    case 'b': return '\b';
    default: return e;
  }
}

class Lexer {
 public:
  Lexer(std::string_view s, uint32_t version, bool ansi_quotes) : s_(s), version_(version), ansi_quotes_(ansi_quotes) {}

  Result<std::vector<Token>> Run() {
    while (i_ < s_.size()) {
      char c = s_[i_];
      if (IsSpace(c)) {
        ++i_;
        continue;
      }
      if (c == '#' || (c == '-' && At(1) == '-' && (i_ + 2 >= s_.size() || IsSpace(At(2)) || At(2) < ' '))) {
        while (i_ < s_.size() && s_[i_] != '\n') ++i_;
        continue;
      }
      if (c == '/' && At(1) == '*') {
        RETURN_IF_ERROR(Comment());
        continue;
      }
      if (c == '*' && At(1) == '/' && in_version_comment_ > 0) {
        --in_version_comment_;
        i_ += 2;
        continue;
      }
      if (c == '`' || (c == '"' && ansi_quotes_)) {
        RETURN_IF_ERROR(Quoted(c, TokenKind::kQuotedIdent));
        continue;
      }
      if (c == '\'' || c == '"') {
        RETURN_IF_ERROR(Quoted(c, TokenKind::kString));
        continue;
      }
      // X'..' / B'..' literals, N'..' and _charset'..' introducers.
      if ((c == 'x' || c == 'X' || c == 'b' || c == 'B') && At(1) == '\'') {
        size_t start = i_;
        size_t end = s_.find('\'', i_ + 2);
        if (end == std::string_view::npos) return Unterminated("literal", start);
        out_.push_back({TokenKind::kNumber, std::string(s_.substr(i_, end + 1 - i_)), start});
        i_ = end + 1;
        continue;
      }
      if ((c == 'n' || c == 'N') && At(1) == '\'') {
        ++i_;
        RETURN_IF_ERROR(Quoted('\'', TokenKind::kString));
        continue;
      }
      if (IsDigit(c) || (c == '.' && IsDigit(At(1)) && !PrevIsName())) {
        Number();
        continue;
      }
      if (IsWordByte(static_cast<unsigned char>(c))) {
        size_t start = i_;
        while (i_ < s_.size() && IsWordByte(static_cast<unsigned char>(s_[i_]))) ++i_;
        std::string word(s_.substr(start, i_ - start));
        if (word.size() > 1 && word[0] == '_' && i_ < s_.size() && (s_[i_] == '\'' || (s_[i_] == '"' && !ansi_quotes_))) {
          RETURN_IF_ERROR(Quoted(s_[i_], TokenKind::kString));  // _utf8mb4'...'
          continue;
        }
        out_.push_back({TokenKind::kWord, std::move(word), start});
        continue;
      }
      if ((c == '@' && At(1) == '@') || (c == ':' && At(1) == '=') || (c == '<' && At(1) == '=') ||
          (c == '>' && At(1) == '=') || (c == '!' && At(1) == '=') || (c == '<' && At(1) == '>') ||
          (c == '|' && At(1) == '|') || (c == '&' && At(1) == '&')) {
        out_.push_back({TokenKind::kPunct, std::string(s_.substr(i_, 2)), i_});
        i_ += 2;
        continue;
      }
      out_.push_back({TokenKind::kPunct, std::string(1, c), i_});
      ++i_;
    }
    if (in_version_comment_ > 0) return Unterminated("comment", s_.size());
    return std::move(out_);
  }

 private:
  char At(size_t k) const { return i_ + k < s_.size() ? s_[i_ + k] : '\0'; }
  bool PrevIsName() const { return !out_.empty() && out_.back().IsName(); }

  Status Unterminated(std::string_view what, size_t at) {
    return Status::InvalidArgument(fmt::format("SQL: unterminated {} starting at byte {}", what, at));
  }

  Status Comment() {
    size_t start = i_;
    i_ += 2;
    bool mariadb = false;
    if (At(0) == 'M' && At(1) == '!') {
      mariadb = true;
      ++i_;
    }
    if (At(0) == '!') {
      ++i_;
      size_t d = i_;
      while (i_ < s_.size() && IsDigit(s_[i_]) && i_ - d < 6) ++i_;
      uint32_t need = 0;
      for (size_t k = d; k < i_; ++k) need = need * 10 + static_cast<uint32_t>(s_[k] - '0');
      // A MySQL 5-digit version is compared as is; MariaDB's /*M! always has 6 digits.
      (void)mariadb;
      if (i_ == d || need <= version_) {
        ++in_version_comment_;  // tokenize the content; "*/" closes it
        return Status::Ok();
      }
    }
    size_t end = s_.find("*/", i_);
    if (end == std::string_view::npos) return Unterminated("comment", start);
    i_ = end + 2;
    return Status::Ok();
  }

  Status Quoted(char q, TokenKind kind) {
    size_t start = i_;
    ++i_;
    std::string text;
    while (i_ < s_.size()) {
      char c = s_[i_];
      if (c == q) {
        if (At(1) == q) {
          text.push_back(q);
          i_ += 2;
          continue;
        }
        ++i_;
        out_.push_back({kind, std::move(text), start});
        return Status::Ok();
      }
      if (c == '\\' && kind == TokenKind::kString && i_ + 1 < s_.size()) {
        text.push_back(Unescape(s_[i_ + 1]));
        i_ += 2;
        continue;
      }
      text.push_back(c);
      ++i_;
    }
    return Unterminated(kind == TokenKind::kString ? "string" : "quoted identifier", start);
  }

  void Number() {
    size_t start = i_;
    if (At(0) == '0' && (At(1) == 'x' || At(1) == 'b')) i_ += 2;
    while (i_ < s_.size() && (IsWordByte(static_cast<unsigned char>(s_[i_])) || s_[i_] == '.')) {
      // 1e-3 / 1E+3: the sign belongs to the exponent.
      if ((s_[i_] == 'e' || s_[i_] == 'E') && (At(1) == '-' || At(1) == '+') && IsDigit(At(2))) i_ += 2;
      ++i_;
    }
    std::string text(s_.substr(start, i_ - start));
    // 1st, 2abc: an identifier that starts with digits.
    bool all_numeric = true;
    for (char ch : text)
      if (!(IsDigit(ch) || ch == '.' || ch == 'e' || ch == 'E' || ch == '-' || ch == '+')) all_numeric = false;
    bool hex = text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'b');
    out_.push_back({all_numeric || hex ? TokenKind::kNumber : TokenKind::kWord, std::move(text), start});
  }

  std::string_view s_;
  uint32_t version_;
  bool ansi_quotes_;
  size_t i_ = 0;
  int in_version_comment_ = 0;
  std::vector<Token> out_;
};

}  // namespace

std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

bool EqualsIgnoreAsciiCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i];
    char y = b[i];
    if (x >= 'a' && x <= 'z') x = static_cast<char>(x - 'a' + 'A');
    if (y >= 'a' && y <= 'z') y = static_cast<char>(y - 'a' + 'A');
    if (x != y) return false;
  }
  return true;
}

bool Token::Is(std::string_view keyword) const {
  return kind == TokenKind::kWord && EqualsIgnoreAsciiCase(text, keyword);
}

Result<std::vector<Token>> Tokenize(std::string_view sql, uint32_t server_version, bool ansi_quotes) {
  return Lexer(sql, server_version, ansi_quotes).Run();
}

}  // namespace sluice::sql
