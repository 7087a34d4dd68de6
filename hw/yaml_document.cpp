#include "hw/yaml_document.h"

#include <charconv>
#include <cmath>
#include <fmt/format.h>

#include "sim/error.h"
#include "sim/input_file.h"

namespace gpusim::hw {
namespace {

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t\r");
  return std::string(s.substr(b, e - b + 1));
}

std::string join_keys(const std::set<std::string, std::less<>>& keys) {
  std::string out;
  for (const auto& k : keys) out += (out.empty() ? "" : ", ") + k;
  return out;
}

}  // namespace

YamlDocument::YamlDocument(std::string text, std::string label, std::filesystem::path path)
    : label_(std::move(label)), path_(std::move(path)), lines_(split_lines(text)) {
  try {
    root_ = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    const int line = e.mark.is_null() ? 0 : e.mark.line + 1;
    throw ConfigError(label_, line, "", "malformed YAML: " + e.msg);
  }
}

YamlDocument YamlDocument::from_file(const std::filesystem::path& path) {
  return YamlDocument(read_input_file(path), path.string(), path);
}

YamlDocument YamlDocument::from_string(std::string text, std::string label) {
  return YamlDocument(std::move(text), std::move(label), {});
}

std::string YamlDocument::trailing_comment(int line) const {
  if (line < 1 || line > static_cast<int>(lines_.size())) return {};
  const std::string& s = lines_[line - 1];
  // A YAML comment starts at '#' outside quotes, at the line start or after a blank.
  char quote = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '#' && (i == 0 || s[i - 1] == ' ' || s[i - 1] == '\t')) {
      return trim(std::string_view(s).substr(i + 1));
    }
  }
  return {};
}

int YamlDocument::line_of(const YAML::Node& node) {
  if (!node.IsDefined()) return 0;
  const YAML::Mark mark = node.Mark();
  return mark.is_null() ? 0 : mark.line + 1;
}

void YamlDocument::fail(const YAML::Node& at, const std::string& key_path,
                        const std::string& detail) const {
  throw ConfigError(label_, line_of(at), key_path, detail);
}

std::string scalar_text(const YamlDocument& doc, const YAML::Node& node,
                        const std::string& key_path) {
  if (!node.IsScalar()) {
    doc.fail(node, key_path, node.IsNull() ? "has no value" : "expected a single value here");
  }
  return node.Scalar();
}

std::int64_t to_integer(const YamlDocument& doc, const YAML::Node& node,
                        const std::string& key_path, std::int64_t min, std::int64_t max) {
  const std::string text = trim(scalar_text(doc, node, key_path));
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    doc.fail(node, key_path, fmt::format("'{}' is not a whole number", text));
  }
  if (value < min || value > max) {
    doc.fail(node, key_path, fmt::format("{} is out of range [{}, {}]", value, min, max));
  }
  return value;
}

double to_number(const YamlDocument& doc, const YAML::Node& node, const std::string& key_path,
                 double min, double max) {
  const std::string text = trim(scalar_text(doc, node, key_path));
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
    doc.fail(node, key_path, fmt::format("'{}' is not a number", text));
  }
  if (value < min || value > max) {
    doc.fail(node, key_path, fmt::format("{} is out of range [{}, {}]", value, min, max));
  }
  return value;
}

bool to_boolean(const YamlDocument& doc, const YAML::Node& node, const std::string& key_path) {
  const std::string text = trim(scalar_text(doc, node, key_path));
  if (text == "true") return true;
  if (text == "false") return false;
  doc.fail(node, key_path, fmt::format("'{}' is not true or false", text));
}

MappingReader::MappingReader(const YamlDocument& doc, const YAML::Node& node, std::string prefix)
    : doc_(doc), node_(node), prefix_(std::move(prefix)) {
  if (!node_.IsMap()) {
    doc_.fail(node_, prefix_.empty() ? "(document)" : prefix_,
              node_.IsNull() ? "is empty; expected a mapping of keys to values"
                             : "expected a mapping of keys to values");
  }
  std::set<std::string, std::less<>> seen;
  for (const auto& kv : node_) {
    if (!kv.first.IsScalar()) doc_.fail(kv.first, prefix_, "keys must be plain words");
    const std::string key = kv.first.Scalar();
    if (!seen.insert(key).second) doc_.fail(kv.first, path(key), "duplicate key");
  }
}

std::string MappingReader::path(std::string_view key) const {
  return prefix_.empty() ? std::string(key) : prefix_ + "." + std::string(key);
}

bool MappingReader::has(std::string_view key) {
  asked_.emplace(key);
  // Iterate rather than use operator[], which would add the key to a non-const node.
  for (const auto& kv : node_) {
    if (kv.first.Scalar() == key) return true;
  }
  return false;
}

YAML::Node MappingReader::node(std::string_view key) {
  auto value = optional_node(key);
  if (!value) fail(key, "missing required key");
  return *value;
}

std::optional<YAML::Node> MappingReader::optional_node(std::string_view key) {
  asked_.emplace(key);
  for (const auto& kv : node_) {
    if (kv.first.Scalar() != key) continue;
    if (kv.second.IsNull()) doc_.fail(kv.first, path(key), "has no value");
    return kv.second;
  }
  return std::nullopt;
}

std::string MappingReader::text(std::string_view key) {
  return scalar_text(doc_, node(key), path(key));
}

std::optional<std::string> MappingReader::optional_text(std::string_view key) {
  auto n = optional_node(key);
  if (!n) return std::nullopt;
  return scalar_text(doc_, *n, path(key));
}

std::int64_t MappingReader::integer(std::string_view key, std::int64_t min, std::int64_t max) {
  return to_integer(doc_, node(key), path(key), min, max);
}

std::optional<std::int64_t> MappingReader::optional_integer(std::string_view key,
                                                            std::int64_t min, std::int64_t max) {
  auto n = optional_node(key);
  if (!n) return std::nullopt;
  return to_integer(doc_, *n, path(key), min, max);
}

double MappingReader::number(std::string_view key, double min, double max) {
  return to_number(doc_, node(key), path(key), min, max);
}

bool MappingReader::boolean(std::string_view key) {
  return to_boolean(doc_, node(key), path(key));
}

std::optional<bool> MappingReader::optional_boolean(std::string_view key) {
  auto n = optional_node(key);
  if (!n) return std::nullopt;
  return to_boolean(doc_, *n, path(key));
}

std::string MappingReader::choice(std::string_view key,
                                  const std::vector<std::string_view>& allowed) {
  const YAML::Node n = node(key);
  const std::string value = scalar_text(doc_, n, path(key));
  for (const auto a : allowed) {
    if (a == value) return value;
  }
  std::string list;
  for (const auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
  doc_.fail(n, path(key), fmt::format("'{}' is not one of: {}", value, list));
}

void MappingReader::reject_unknown() const {
  for (const auto& kv : node_) {
    const std::string key = kv.first.Scalar();
    if (asked_.count(key) == 0) {
      doc_.fail(kv.first, path(key), "unknown key (known keys here: " + join_keys(asked_) + ")");
    }
  }
}

void MappingReader::fail(std::string_view key, const std::string& detail) const {
  for (const auto& kv : node_) {
    if (kv.first.Scalar() == key) {
      const YAML::Node& at = kv.second.IsDefined() && YamlDocument::line_of(kv.second) > 0
                                 ? kv.second
                                 : kv.first;
      doc_.fail(at, path(key), detail);
    }
  }
  doc_.fail(node_, path(key), detail);
}

}  // namespace gpusim::hw
