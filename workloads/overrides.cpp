#include "workloads/overrides.h"

#include <fmt/format.h>

namespace gpusim::workloads {
namespace {

constexpr const char* kCommandLine = "command line";

std::vector<std::string> split_key(const std::string& key) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const auto dot = key.find('.', start);
    parts.push_back(key.substr(start, dot - start));
    if (dot == std::string::npos) return parts;
    start = dot + 1;
  }
}

// The value under `key` in mapping `node`, or an invalid node when there is none.
std::optional<YAML::Node> child(const YAML::Node& node, const std::string& key) {
  for (const auto& kv : node) {
    if (kv.first.IsScalar() && kv.first.Scalar() == key) return kv.second;
  }
  return std::nullopt;
}

void apply_one(YAML::Node root, const WorkloadOverride& o) {
  const std::string full_key = "workload." + o.key;
  const auto parts = split_key(o.key);
  for (const auto& part : parts) {
    if (part.empty()) {
      throw ConfigError(kCommandLine, 0, full_key, "is not a key path such as workload.batch");
    }
  }
  // Walk with reset(): assigning one YAML::Node to another would overwrite the tree.
  YAML::Node mapping;
  mapping.reset(root);
  std::string walked = "workload";
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    walked += "." + parts[i];
    // "ops[2]": an item of a list written in the file.
    const auto bracket = parts[i].find('[');
    const std::string name = parts[i].substr(0, bracket);
    auto next = child(mapping, name);
    if (next && bracket != std::string::npos) {
      const std::string digits = parts[i].substr(bracket + 1, parts[i].size() - bracket - 2);
      const bool index_ok = parts[i].back() == ']' && !digits.empty() &&
                            digits.find_first_not_of("0123456789") == std::string::npos;
      if (!index_ok || !next->IsSequence() || std::stoul(digits) >= next->size()) {
        throw ConfigError(kCommandLine, 0, full_key,
                          fmt::format("the workload file has no list item {}", walked));
      }
      // Copy-construct the item's handle: assigning one YAML::Node to another would overwrite
      // the tree (hence reset + emplace, never operator=).
      const YAML::Node list = *next;
      const YAML::Node item = list[std::stoul(digits)];
      next.reset();
      next.emplace(item);
    }
    if (!next) {
      throw ConfigError(kCommandLine, 0, full_key,
                        fmt::format("the workload file has no {} to set a key in", walked));
    }
    if (!next->IsMap()) {
      const std::string what = next->IsScalar() ? "'" + next->Scalar() + "'" : "a list";
      throw ConfigError(kCommandLine, 0, full_key,
                        fmt::format("{} is {} in the workload file, not a mapping; only "
                                    "top-level keys and keys of mappings written in the file "
                                    "(such as the fields of an inline model) can be set",
                                    walked, what));
    }
    mapping.reset(*next);
  }
  mapping[parts.back()] = YAML::Node(o.value);
}

}  // namespace

void apply_overrides(const hw::YamlDocument& doc, const std::vector<WorkloadOverride>& overrides) {
  // A document that is not a mapping is reported by the reader, against the file.
  if (!doc.root().IsMap()) return;
  for (const auto& o : overrides) apply_one(doc.root(), o);
}

std::optional<ConfigError> blame_override(const ConfigError& error, const hw::YamlDocument& doc,
                                          const std::vector<WorkloadOverride>& overrides) {
  if (error.file() != doc.label()) return std::nullopt;  // e.g. an error in a model preset
  for (const auto& o : overrides) {
    if (error.key() == o.key || error.key().rfind(o.key + ".", 0) == 0) {
      return ConfigError(kCommandLine, 0, "workload." + error.key(), error.detail());
    }
  }
  return std::nullopt;
}

}  // namespace gpusim::workloads
