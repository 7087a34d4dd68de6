// `gpusim hw list`, `gpusim hw show NAME|FILE` and `gpusim hw keys` (`hw fit-host`: src/fit_host_command.cpp).
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <ostream>

#include "hw/hardware_loader.h"
#include "hw/hardware_schema.h"
#include "sim/error.h"
#include "src/commands.h"
#include "src/options.h"

namespace gpusim::cli {
namespace {

std::string source_of(const hw::ValueOrigin& origin) {
  if (!origin.source.empty()) return origin.source;
  if (origin.line == 0) return origin.file;
  return fmt::format("(no source comment) {}:{}", origin.file, origin.line);
}

struct Derived {
  std::string label;
  std::string value;
};

std::vector<Derived> derived_figures(const hw::HardwareSpec& s) {
  auto tflops = [](double f) { return fmt::format("{:.1f} TFLOP/s", f / 1e12); };
  return {
      {"tensor fp16/bf16 peak (sustained tensor clock)", tflops(s.peak_tensor_flops(hw::DType::kBf16))},
      {"tensor tf32 peak", tflops(s.peak_tensor_flops(hw::DType::kTf32))},
      {"tensor fp8 peak", tflops(s.peak_tensor_flops(hw::DType::kFp8))},
      {"FP32 peak (sustained other clock)", tflops(s.peak_fp32_flops())},
      {"ridge point, bf16 vs achievable DRAM",
       fmt::format("{:.0f} FLOP/byte", s.peak_tensor_flops(hw::DType::kBf16) / s.dram.achievable_bandwidth())},
      {"achievable DRAM bandwidth (bandwidth x efficiency)",
       fmt::format("{:.3f} TB/s", s.dram.achievable_bandwidth() / 1e12)},
      {"resident threads, whole chip", fmt::format("{}", s.sm.max_threads * s.sm_count)},
  };
}

void show_text(const hw::HardwareSpec& s, std::ostream& out) {
  out << s.name << ": " << s.description << "\n\n";
  out << fmt::format("{:<36} {:<16} {}\n", "key", "value", "source");
  for (const auto& f : hw::hardware_fields()) {
    out << fmt::format("{:<36} {:<16} {}\n", f.path, hw::format_field(s, f),
                       source_of(s.origins.at(std::string(f.path))));
  }
  out << "\nderived:\n";
  for (const auto& d : derived_figures(s)) out << fmt::format("  {:<48} {}\n", d.label, d.value);
}

// A hardware file equivalent to the resolved spec (loadable by --hw), sources as comments.
void show_yaml(const hw::HardwareSpec& s, std::ostream& out) {
  out << "# resolved by gpusim hw show\n";
  out << "name: " << s.name << "\n";
  out << "description: \"" << s.description << "\"\n";
  std::vector<std::string_view> open;  // the sections the previous key sat in
  for (const auto& f : hw::hardware_fields()) {
    const std::string value = hw::format_field(s, f);
    if (value.empty()) continue;  // an optional word nobody gave (system.interconnect.pairs)
    std::vector<std::string_view> parts;
    for (std::string_view rest = f.path;;) {
      const auto dot = rest.find('.');
      parts.push_back(rest.substr(0, dot));
      if (dot == std::string_view::npos) break;
      rest.remove_prefix(dot + 1);
    }
    std::size_t same = 0;
    while (same < open.size() && same + 1 < parts.size() && open[same] == parts[same]) ++same;
    for (std::size_t d = same; d + 1 < parts.size(); ++d) out << std::string(2 * d, ' ') << parts[d] << ":\n";
    open.assign(parts.begin(), parts.end() - 1);
    const std::string line = fmt::format("{}{}: {}", std::string(2 * open.size(), ' '), parts.back(), value);
    out << fmt::format("{:<40} # {}\n", line, source_of(s.origins.at(std::string(f.path))));
  }
}

void show_json(const hw::HardwareSpec& s, std::ostream& out) {
  nlohmann::ordered_json j;
  j["name"] = s.name;
  j["description"] = s.description;
  for (const auto& f : hw::hardware_fields()) {
    const auto& origin = s.origins.at(std::string(f.path));
    j["fields"][std::string(f.path)] = {{"value", hw::format_field(s, f)},
                                        {"source", origin.source},
                                        {"file", origin.file},
                                        {"line", origin.line}};
  }
  for (const auto& d : derived_figures(s)) j["derived"][d.label] = d.value;
  out << j.dump(2) << "\n";
}

int hw_list(const Args& args, const Environment& env, std::ostream& out) {
  po::options_description options("hw list options");
  options.add_options()("help,h", "this text");
  const auto vm = parse_options(args, options);
  if (vm.count("help")) {
    print_help(out, "gpusim hw list", "Lists the hardware presets in configs/hw.", options);
    return 0;
  }
  const hw::PresetCatalog catalog = hardware_catalog(env);
  out << fmt::format("{:<18} {:<16} {}\n", "preset", "short names", "description");
  for (const auto& p : catalog.presets()) {
    std::string aliases;
    for (const auto& a : p.aliases) aliases += (aliases.empty() ? "" : ", ") + a;
    out << fmt::format("{:<18} {:<16} {}\n", p.name, aliases, p.description);
  }
  return 0;
}

int hw_show(const Args& args, const Environment& env, std::ostream& out) {
  po::options_description options("hw show options");
  std::string format = "text";
  std::vector<std::string> sets;
  options.add_options()("help,h", "this text")(
      "hw", po::value<std::string>(), "preset name or YAML file (also the positional argument)")(
      "set", po::value(&sets)->composing(), "override one field: --set hw.l2.size=128MiB")(
      "format", po::value(&format)->default_value("text"), "text | yaml | json");
  po::positional_options_description positional;
  positional.add("hw", 1);
  const auto vm = parse_options(args, options, positional);
  if (vm.count("help")) {
    print_help(out, "gpusim hw show NAME|FILE [--set hw.KEY=VALUE]... [--format text|yaml|json]",
               "Prints the resolved hardware spec: every value with its unit and its source.",
               options);
    return 0;
  }
  if (!vm.count("hw")) throw ConfigError("command line", 0, "hw show", "name a preset or a YAML file");
  const auto overrides = parse_overrides(sets);
  for (const auto& o : overrides) {
    if (o.target != "hw") {
      throw ConfigError("command line", 0, "--set " + o.target + "." + o.key,
                        "hw show takes only hw.* overrides");
    }
  }
  const hw::PresetCatalog catalog = hardware_catalog(env);
  const hw::HardwareSpec spec =
      hw::load_hardware(vm["hw"].as<std::string>(), catalog, hardware_overrides(overrides));
  if (format == "text") {
    show_text(spec, out);
  } else if (format == "yaml") {
    show_yaml(spec, out);
  } else if (format == "json") {
    show_json(spec, out);
  } else {
    throw ConfigError("command line", 0, "--format", "'" + format + "' is not one of: text, yaml, json");
  }
  return 0;
}

int hw_keys(const Args& args, std::ostream& out) {
  po::options_description options("hw keys options");
  options.add_options()("help,h", "this text");
  const auto vm = parse_options(args, options);
  if (vm.count("help")) {
    print_help(out, "gpusim hw keys", "Lists every key of a hardware file with its unit and range.",
               options);
    return 0;
  }
  out << fmt::format("{:<36} {:<44} {}\n", "key", "value", "meaning");
  for (const auto& f : hw::hardware_fields()) {
    std::string value = hw::describe(f.quantity);
    if (f.quantity == hw::Quantity::kText && !f.choices.empty()) {
      value = "one of:";
      for (const auto c : f.choices) value += " " + std::string(c);
    } else if (f.quantity != hw::Quantity::kText) {
      const auto bound = [&f](double v) {
        return f.quantity == hw::Quantity::kCount ? fmt::format("{}", static_cast<long long>(v))
                                                  : hw::format_quantity(v, f.quantity);
      };
      value = fmt::format("{} .. {}", bound(f.min), bound(f.max));
    }
    out << fmt::format("{:<36} {:<44} {}\n", f.path, value, f.meaning);
  }
  return 0;
}

}  // namespace

int hw_command(const Args& args, const Environment& env, std::ostream& out) {
  const std::string usage = "gpusim hw list | show NAME|FILE | keys | fit-host SWEEP.json --hw NAME";
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    out << "Usage: " << usage << "\n\n"
        << "  list   the hardware presets, with their short names\n"
        << "  show   a resolved spec with units and sources (gpusim hw show --help)\n"
        << "  keys   every key a hardware file takes, with units and ranges\n"
        << "  fit-host  a hardware file with your host, fitted to its measured sweep (gpusim hw fit-host --help)\n";
    return args.empty() ? 2 : 0;
  }
  const Args rest(args.begin() + 1, args.end());
  if (args[0] == "list") return hw_list(rest, env, out);
  if (args[0] == "show") return hw_show(rest, env, out);
  if (args[0] == "keys") return hw_keys(rest, out);
  if (args[0] == "fit-host") return hw_fit_host(rest, env, out);
  throw ConfigError("command line", 0, "hw " + args[0], "unknown subcommand; expected list, show, keys or fit-host");
}

}  // namespace gpusim::cli
