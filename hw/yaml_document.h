// A YAML file held with what error messages and `hw show` need: the label to name it by,
// 1-based line numbers of nodes, and the trailing comment of each line (a value's source).
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace gpusim::hw {

class YamlDocument {
 public:
  // Reads and parses a file; unreadable files and syntax errors are ConfigErrors.
  static YamlDocument from_file(const std::filesystem::path& path);
  // Parses text; `label` names it in messages (a file name or "command line").
  static YamlDocument from_string(std::string text, std::string label);

  const YAML::Node& root() const { return root_; }
  const std::string& label() const { return label_; }
  const std::filesystem::path& path() const { return path_; }

  // The text after '#' on a 1-based line, trimmed; empty when the line has no comment.
  std::string trailing_comment(int line) const;

  // 1-based line of a node; 0 when yaml-cpp has no position for it.
  static int line_of(const YAML::Node& node);

  [[noreturn]] void fail(const YAML::Node& at, const std::string& key_path,
                         const std::string& detail) const;

 private:
  YamlDocument(std::string text, std::string label, std::filesystem::path path);

  std::string label_;
  std::filesystem::path path_;
  std::vector<std::string> lines_;
  YAML::Node root_;
};

// The text of a scalar node as written (yaml-cpp keeps "1.98GHz" etc. verbatim).
// Non-scalars are a ConfigError naming key_path.
std::string scalar_text(const YamlDocument& doc, const YAML::Node& node,
                        const std::string& key_path);

// Reads one YAML mapping strictly: every key the caller asks about is recorded, duplicate keys
// are errors, and reject_unknown() reports any key nobody asked about, listing the known ones.
class MappingReader {
 public:
  // `node` must be a mapping; `prefix` is its key path ("" for the root, "ops[2]" for an item).
  MappingReader(const YamlDocument& doc, const YAML::Node& node, std::string prefix);

  const YamlDocument& doc() const { return doc_; }
  const YAML::Node& mapping() const { return node_; }
  std::string path(std::string_view key) const;  // "prefix.key"

  bool has(std::string_view key);
  // Required keys: a missing one is a ConfigError at the mapping's line.
  YAML::Node node(std::string_view key);
  std::optional<YAML::Node> optional_node(std::string_view key);

  std::string text(std::string_view key);
  std::optional<std::string> optional_text(std::string_view key);
  std::int64_t integer(std::string_view key, std::int64_t min, std::int64_t max);
  std::optional<std::int64_t> optional_integer(std::string_view key, std::int64_t min,
                                               std::int64_t max);
  double number(std::string_view key, double min, double max);
  bool boolean(std::string_view key);
  std::optional<bool> optional_boolean(std::string_view key);
  // One of `allowed`, compared exactly.
  std::string choice(std::string_view key, const std::vector<std::string_view>& allowed);

  // Throws for the first key that was never asked about.
  void reject_unknown() const;

  [[noreturn]] void fail(std::string_view key, const std::string& detail) const;

 private:
  const YamlDocument& doc_;
  YAML::Node node_;
  std::string prefix_;
  std::set<std::string, std::less<>> asked_;
};

// Converts a scalar's text, reporting errors at that node.
std::int64_t to_integer(const YamlDocument& doc, const YAML::Node& node,
                        const std::string& key_path, std::int64_t min, std::int64_t max);
double to_number(const YamlDocument& doc, const YAML::Node& node, const std::string& key_path,
                 double min, double max);
bool to_boolean(const YamlDocument& doc, const YAML::Node& node, const std::string& key_path);

}  // namespace gpusim::hw
