#include "hw/hardware_loader.h"

#include <fmt/format.h>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "hw/hardware_schema.h"
#include "hw/yaml_document.h"
#include "sim/error.h"
#include "sim/parsed_file_cache.h"

namespace gpusim::hw {
namespace {

constexpr std::string_view kCommandLine = "command line";

// A value as written, before it is parsed, with where it came from.
struct RawValue {
  std::string text;
  ValueOrigin origin;
  std::string key_label;  // the key as the user wrote it ("l2.size" or "hw.l2.size")
};

// The merged contents of a file and its bases.
struct Layers {
  std::map<std::string, RawValue> values;        // by key path
  std::map<std::string, int> section_lines;      // "l2" -> line of "l2:" in the top file
  std::string name;
  std::string description;
};

bool is_section(std::string_view path) {
  for (const auto& f : hardware_fields()) {
    if (f.path.size() > path.size() && f.path.substr(0, path.size()) == path &&
        f.path[path.size()] == '.') {
      return true;
    }
  }
  return false;
}

// Keys a user might have meant: the fields of the same section, else the sections.
std::string known_keys_near(std::string_view path) {
  const auto dot = path.rfind('.');
  const std::string_view section = dot == std::string_view::npos ? "" : path.substr(0, dot + 1);
  std::string out;
  std::vector<std::string> seen;
  for (const auto& f : hardware_fields()) {
    std::string_view candidate = f.path;
    if (section.empty()) {
      candidate = candidate.substr(0, candidate.find('.'));
    } else if (candidate.substr(0, section.size()) != section) {
      continue;
    }
    if (std::find(seen.begin(), seen.end(), candidate) != seen.end()) continue;
    seen.emplace_back(candidate);
    out += (out.empty() ? "" : ", ") + std::string(candidate);
  }
  return out;
}

bool looks_like_path(std::string_view s) {
  return s.find('/') != std::string_view::npos || s.ends_with(".yaml") || s.ends_with(".yml");
}

void flatten(const YamlDocument& doc, const YAML::Node& node, const std::string& prefix,
             Layers& out) {
  std::vector<std::string> seen;
  for (const auto& kv : node) {
    const std::string key = kv.first.Scalar();
    const std::string path = prefix.empty() ? key : prefix + "." + key;
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      doc.fail(kv.first, path, "duplicate key");
    }
    seen.push_back(key);
    if (prefix.empty() && (key == "base" || key == "name" || key == "description" ||
                           key == "aliases")) {
      continue;  // read by the caller
    }
    if (kv.second.IsNull()) doc.fail(kv.first, path, "has no value");
    if (kv.second.IsMap()) {
      if (!is_section(path)) {
        doc.fail(kv.first, path, "unknown section (known keys here: " + known_keys_near(path) + ")");
      }
      out.section_lines.emplace(path, YamlDocument::line_of(kv.first));
      flatten(doc, kv.second, path, out);
      continue;
    }
    if (find_field(path) == nullptr) {
      doc.fail(kv.first, path,
               is_section(path) ? "is a section; expected a mapping of its keys"
                                : "unknown key (known keys here: " + known_keys_near(path) + ")");
    }
    const int line = YamlDocument::line_of(kv.first);
    out.values[path] = RawValue{scalar_text(doc, kv.second, path),
                                ValueOrigin{doc.label(), line, doc.trailing_comment(line)}, path};
  }
}

// What one hardware file says by itself: its own keys flattened, the base it names (resolved by
// the caller, against the catalog of the moment), its name and description.
struct FileLayer {
  Layers own;
  std::optional<std::string> base;
  int base_line = 0;
  bool has_description = false;
};

FileLayer parse_file_layer(const std::filesystem::path& file, const std::string& text) {
  const YamlDocument doc = YamlDocument::from_string(text, file.string());
  if (!doc.root().IsMap()) {
    doc.fail(doc.root(), "(document)", "expected a mapping of hardware keys");
  }
  const YAML::Node& root = doc.root();
  FileLayer layer;
  if (const YAML::Node base = root["base"]; base.IsDefined()) {
    layer.base = scalar_text(doc, base, "base");
    layer.base_line = YamlDocument::line_of(base);
  }
  layer.own.name = file.stem().string();
  if (const YAML::Node n = root["name"]; n.IsDefined()) {
    layer.own.name = scalar_text(doc, n, "name");
  }
  if (const YAML::Node d = root["description"]; d.IsDefined()) {
    layer.own.description = scalar_text(doc, d, "description");
    layer.has_description = true;
  }
  if (const YAML::Node a = root["aliases"]; a.IsDefined() && !a.IsSequence()) {
    doc.fail(a, "aliases", "expected a list of short names");
  }
  flatten(doc, root, "", layer.own);
  return layer;
}

// Each call loads its chip's files; their parse is kept while their text is unchanged (parsing
// was most of a short call's time), and bases are resolved afresh every time.
std::shared_ptr<const FileLayer> file_layer(const std::filesystem::path& file) {
  static ParsedFileCache<FileLayer> cache;
  return cache.get(file, [&file](const std::string& text) { return parse_file_layer(file, text); });
}

Layers load_layers(const std::filesystem::path& file, const PresetCatalog& catalog,
                   std::vector<std::filesystem::path>& chain) {
  const std::filesystem::path canonical = std::filesystem::weakly_canonical(file);
  if (std::find(chain.begin(), chain.end(), canonical) != chain.end()) {
    throw ConfigError(file.string(), 0, "base", "inheritance cycle: this file is its own base");
  }
  chain.push_back(canonical);

  const auto layer = file_layer(file);
  Layers layers;
  if (layer->base) {
    const std::string& target = *layer->base;
    std::filesystem::path base_file;
    if (const PresetInfo* preset = catalog.find(target); preset && !looks_like_path(target)) {
      base_file = preset->file;
    } else if (looks_like_path(target)) {
      base_file = file.parent_path() / target;
    } else {
      throw ConfigError(file.string(), layer->base_line, "base",
                        fmt::format("unknown preset '{}' (presets: {})", target, catalog.summary()));
    }
    layers = load_layers(base_file, catalog, chain);
    layers.section_lines.clear();  // lines refer to the top file only
    layers.description = "based on " + layers.name + ": " + layers.description;
  }
  layers.name = layer->own.name;
  if (layer->has_description) layers.description = layer->own.description;
  for (const auto& [key, value] : layer->own.values) layers.values[key] = value;
  for (const auto& [section, line] : layer->own.section_lines) layers.section_lines.emplace(section, line);
  chain.pop_back();
  return layers;
}

}  // namespace

HardwareSpec load_hardware(std::string_view name_or_path, const PresetCatalog& catalog,
                           std::span<const HardwareOverride> overrides) {
  std::filesystem::path file;
  if (const PresetInfo* preset = catalog.find(name_or_path); preset && !looks_like_path(name_or_path)) {
    file = preset->file;
  } else if (looks_like_path(name_or_path)) {
    file = std::filesystem::path(name_or_path);
  } else {
    throw ConfigError(std::string(kCommandLine), 0, "--hw",
                      fmt::format("unknown hardware '{}' (presets: {}; or give a YAML file path)",
                                  name_or_path, catalog.summary()));
  }
  std::vector<std::filesystem::path> chain;
  Layers layers = load_layers(file, catalog, chain);

  for (const auto& o : overrides) {
    if (find_field(o.key) == nullptr) {
      throw ConfigError(std::string(kCommandLine), 0, "hw." + o.key,
                        "unknown hardware key (known keys here: " + known_keys_near(o.key) + ")");
    }
    layers.values[o.key] =
        RawValue{o.value,
                 ValueOrigin{std::string(kCommandLine), 0, "--set hw." + o.key + "=" + o.value},
                 "hw." + o.key};
  }

  HardwareSpec spec;
  spec.name = layers.name;
  spec.description = layers.description;
  for (const auto& field : hardware_fields()) {
    const auto it = layers.values.find(std::string(field.path));
    if (it == layers.values.end()) {
      if (field.optional) {  // the struct's default: a chip alone
        spec.origins[std::string(field.path)] = ValueOrigin{"(default)", 0, "default: one GPU, no interconnect"};
        continue;
      }
      const std::string section(field.path.substr(0, field.path.rfind('.')));
      const auto sl = layers.section_lines.find(section);
      throw ConfigError(file.string(), sl == layers.section_lines.end() ? 1 : sl->second,
                        std::string(field.path),
                        "missing required key (" + std::string(field.meaning) +
                            "); give it here or inherit it with `base: <preset>`");
    }
    const RawValue& raw = it->second;
    if (const std::string error = assign_field(spec, field, raw.text); !error.empty()) {
      throw ConfigError(raw.origin.file, raw.origin.line, raw.key_label, error);
    }
    spec.origins[std::string(field.path)] = raw.origin;
  }
  complete_system(spec);
  for (const auto& v : check_consistency(spec)) {
    const auto found = layers.values.find(v.key);
    if (found == layers.values.end()) {  // an optional key nobody gave: blame the system section
      const auto sl = layers.section_lines.find(v.key.substr(0, v.key.rfind('.')));
      throw ConfigError(file.string(), sl == layers.section_lines.end() ? 1 : sl->second, v.key, v.message);
    }
    const RawValue& raw = found->second;
    throw ConfigError(raw.origin.file, raw.origin.line, raw.key_label, v.message);
  }
  return spec;
}

}  // namespace gpusim::hw
