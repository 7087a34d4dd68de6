// `gpusim occupancy --hw NAME --threads N [--regs R] [--smem BYTES]`: the CUDA occupancy
// calculation for one block shape, with the limit each resource imposes.
#include <fmt/format.h>

#include <climits>
#include <nlohmann/json.hpp>
#include <ostream>

#include "hw/hardware_loader.h"
#include "hw/occupancy.h"
#include "hw/units.h"
#include "sim/error.h"
#include "src/commands.h"
#include "src/options.h"

namespace gpusim::cli {
namespace {

// "--smem 48KiB" or "--smem 49152".
std::int64_t parse_smem(const std::string& text) {
  const bool plain = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
  const auto parsed = hw::parse_quantity(plain ? text + "B" : text, hw::Quantity::kBytes);
  if (!parsed.ok()) throw ConfigError("command line", 0, "--smem", parsed.error);
  return static_cast<std::int64_t>(parsed.value);
}

std::string limit_text(int limit) { return limit >= INT_MAX / 2 ? "-" : std::to_string(limit); }

std::string binding_text(const hw::Occupancy& o) {
  std::string out;
  for (const auto l : o.binding) out += (out.empty() ? "" : ", ") + std::string(hw::name(l));
  return out;
}

void print_text(const hw::HardwareSpec& spec, const hw::BlockResources& b, const hw::Occupancy& o,
                std::ostream& out) {
  const auto& sm = spec.sm;
  out << fmt::format("{} ({} SMs): block of {} threads ({} warps), {} registers/thread, {} B shared memory\n\n",
                     spec.name, spec.sm_count, b.threads, o.warps_per_cta, b.registers_per_thread,
                     b.shared_memory);
  out << fmt::format("{:<15} {:>10}   {}\n", "limit", "CTAs/SM", "rule");
  out << fmt::format("{:<15} {:>10}   {} warps per SM / {} per CTA\n", "warps",
                     limit_text(o.limit_warps), sm.max_warps, o.warps_per_cta);
  out << fmt::format("{:<15} {:>10}   {} registers per warp (rounded to {}); {} per sub-partition x {}\n",
                     "registers", limit_text(o.limit_registers), o.registers_per_warp,
                     sm.register_alloc_unit, sm.registers / sm.sub_partitions, sm.sub_partitions);
  out << fmt::format("{:<15} {:>10}   {} B per CTA ({} reserved, rounded to {}) of {} B per SM\n",
                     "shared memory", limit_text(o.limit_shared_memory), o.shared_memory_per_cta,
                     sm.shared_memory_reserved_per_cta, sm.shared_memory_alloc_unit, sm.shared_memory);
  out << fmt::format("{:<15} {:>10}   at most {} CTAs per SM\n\n", "CTA slots",
                     limit_text(o.limit_cta_slots), sm.max_ctas);
  out << fmt::format("resident CTAs per SM:   {}\n", o.ctas_per_sm);
  out << fmt::format("resident warps per SM:  {} of {}\n", o.warps_per_sm, sm.max_warps);
  out << fmt::format("theoretical occupancy:  {:.2f}%\n", o.theoretical * 100);
  out << fmt::format("limited by:             {}\n", binding_text(o));
  out << fmt::format("one full wave:          {} CTAs on {} SMs\n", o.ctas_per_sm * spec.sm_count,
                     spec.sm_count);
}

void print_json(const hw::HardwareSpec& spec, const hw::BlockResources& b, const hw::Occupancy& o,
                std::ostream& out) {
  nlohmann::ordered_json j;
  j["hw"] = spec.name;
  j["block"] = {{"threads", b.threads}, {"regs", b.registers_per_thread}, {"smem", b.shared_memory}};
  j["warps_per_cta"] = o.warps_per_cta;
  j["limits"] = {{"warps", o.limit_warps},
                 {"registers", o.limit_registers},
                 {"shared_memory", o.limit_shared_memory},
                 {"cta_slots", o.limit_cta_slots}};
  j["ctas_per_sm"] = o.ctas_per_sm;
  j["warps_per_sm"] = o.warps_per_sm;
  j["theoretical_occupancy"] = o.theoretical;
  j["limited_by"] = nlohmann::json::array();
  for (const auto l : o.binding) j["limited_by"].push_back(std::string(hw::name(l)));
  j["ctas_per_wave"] = o.ctas_per_sm * spec.sm_count;
  out << j.dump(2) << "\n";
}

}  // namespace

int occupancy_command(const Args& args, const Environment& env, std::ostream& out) {
  po::options_description options("occupancy options");
  std::string hw_name, smem = "0", format = "text";
  int threads = 0, regs = 0;
  std::vector<std::string> sets;
  options.add_options()("help,h", "this text")(
      "hw", po::value(&hw_name), "preset name or YAML file (required)")(
      "threads", po::value(&threads), "threads per block (required)")(
      "regs", po::value(&regs)->default_value(0), "registers per thread")(
      "smem", po::value(&smem)->default_value("0"), "shared memory per block: bytes, or 48KiB")(
      "set", po::value(&sets)->composing(), "override a hardware field: --set hw.sm.registers=32768")(
      "format", po::value(&format)->default_value("text"), "text | json");
  const auto vm = parse_options(args, options);
  if (vm.count("help")) {
    print_help(out, "gpusim occupancy --hw NAME --threads N [--regs R] [--smem BYTES]",
               "Resident CTAs and warps per SM for one block shape, theoretical occupancy and the\n"
               "limit that binds (warps, registers, shared memory, CTA slots), by CUDA's rules.",
               options);
    return 0;
  }
  if (!vm.count("hw")) throw ConfigError("command line", 0, "--hw", "required: a preset or YAML file");
  if (!vm.count("threads")) throw ConfigError("command line", 0, "--threads", "required: threads per block");
  if (format != "text" && format != "json") {
    throw ConfigError("command line", 0, "--format", "'" + format + "' is not one of: text, json");
  }
  const auto overrides = parse_overrides(sets);
  const hw::PresetCatalog catalog = hardware_catalog(env);
  const hw::HardwareSpec spec = hw::load_hardware(hw_name, catalog, hardware_overrides(overrides));

  const hw::BlockResources block{threads, regs, parse_smem(smem)};
  const hw::Occupancy o = hw::compute_occupancy(spec.sm, block);
  if (!o.does_not_fit.empty()) {
    // Name the option that asks for too much.
    std::string key = "--threads";
    if (threads >= 1 && threads <= spec.sm.max_threads_per_cta) {
      key = o.does_not_fit.find("shared") != std::string::npos ? "--smem" : "--regs";
    }
    throw ConfigError("command line", 0, key, o.does_not_fit + " on " + spec.name);
  }
  if (format == "json") {
    print_json(spec, block, o, out);
  } else {
    print_text(spec, block, o, out);
  }
  return 0;
}

}  // namespace gpusim::cli
