#include "util/metrics.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>

#include <fmt/format.h>

#include "util/utf8.h"

namespace sluice::metrics {
namespace {

// A label value as the exposition format writes it. It escapes only \\, \" and newline, so
// every other control character (a table name's ESC) and the newline too become the text \xNN
// first (EscapeControls): the endpoint's text holds no control byte but its line ends.
std::string EscapeLabel(const std::string& raw) {
  const std::string s = EscapeControls(raw);
  std::string out;
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else out += c;
  }
  return out;
}

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{}", static_cast<int64_t>(v));
  return fmt::format("{}", v);
}

}  // namespace

Registry& Registry::Global() {
  static Registry* r = new Registry();  // never destroyed: used by threads until exit
  return *r;
}

Value& Registry::Get(const std::string& name, const std::string& help, const char* type, const Labels& labels) {
  std::lock_guard lock(mu_);
  Family& f = families_[name];
  if (f.help.empty()) {
    f.help = help;
    f.type = type;
  }
  auto& slot = f.series[labels];
  if (!slot) slot = std::make_unique<Value>();
  return *slot;
}

Value& Registry::Counter(const std::string& name, const std::string& help, const Labels& labels) {
  return Get(name, help, "counter", labels);
}

Value& Registry::Gauge(const std::string& name, const std::string& help, const Labels& labels) {
  return Get(name, help, "gauge", labels);
}

void Registry::SetCallback(const std::string& name, const std::string& help, std::function<bool(double*)> fn) {
  std::lock_guard lock(mu_);
  Family& f = families_[name];
  f.help = help;
  f.type = "gauge";
  f.callback = std::move(fn);
}

void Registry::SetText(const std::string& key, std::string value) {
  std::lock_guard lock(mu_);
  text_[key] = std::move(value);
}

std::string Registry::Text(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = text_.find(key);
  return it == text_.end() ? "" : it->second;
}

std::vector<std::pair<Labels, double>> Registry::Series(const std::string& name) const {
  std::lock_guard lock(mu_);
  std::vector<std::pair<Labels, double>> out;
  auto it = families_.find(name);
  if (it == families_.end()) return out;
  for (const auto& [labels, v] : it->second.series) out.emplace_back(labels, v->Get());
  return out;
}

double Registry::Get(const std::string& name, const Labels& labels) const {
  std::lock_guard lock(mu_);
  auto it = families_.find(name);
  if (it == families_.end()) return 0;
  auto s = it->second.series.find(labels);
  return s == it->second.series.end() ? 0 : s->second->Get();
}

std::string Registry::RenderPrometheus() const {
  // Callbacks may be slow (a query): copy them out and run them without the lock.
  std::vector<std::pair<std::string, std::function<bool(double*)>>> callbacks;
  std::string out;
  {
    std::lock_guard lock(mu_);
    for (const auto& [name, f] : families_) {
      if (f.callback) {
        callbacks.emplace_back(name, f.callback);
        continue;
      }
      out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, f.help, name, f.type);
      for (const auto& [labels, v] : f.series) {
        out += name;
        if (!labels.empty()) {
          out += '{';
          for (size_t i = 0; i < labels.size(); ++i)
            out += fmt::format("{}{}=\"{}\"", i ? "," : "", labels[i].first, EscapeLabel(labels[i].second));
          out += '}';
        }
        out += ' ' + FormatValue(v->Get()) + '\n';
      }
    }
  }
  for (const auto& [name, fn] : callbacks) {
    double v = 0;
    if (!fn(&v)) continue;
    std::string help;
    {
      std::lock_guard lock(mu_);
      help = families_.at(name).help;
    }
    out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n{} {}\n", name, help, name, name, FormatValue(v));
  }
  return out;
}

void Registry::Reset() {
  std::lock_guard lock(mu_);
  families_.clear();
  text_.clear();
}

uint64_t ResidentBytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long size = 0, resident = 0;
  int n = std::fscanf(f, "%lu %lu", &size, &resident);
  std::fclose(f);
  if (n != 2) return 0;
  return static_cast<uint64_t>(resident) * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

}  // namespace sluice::metrics
