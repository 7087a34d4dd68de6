#include "src/number_format.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

namespace gpusim::cli {

double rounded(double v) {
  if (!std::isfinite(v) || v == 0) return v == 0 ? 0.0 : v;  // also turns -0 into 0
  return std::strtod(fmt::format("{:.9g}", v).c_str(), nullptr);
}

std::string number(double v) { return fmt::format("{}", rounded(v)); }

void round_numbers(nlohmann::ordered_json& j) {
  if (j.is_number_float()) {
    j = rounded(j.get<double>());
  } else if (j.is_structured()) {
    for (auto& item : j) round_numbers(item);
  }
}

namespace {

void dump_to(const nlohmann::ordered_json& j, int indent, int level, std::string& out) {
  const bool pretty = indent >= 0;
  const std::string inner = pretty ? "\n" + std::string(static_cast<std::size_t>(indent * (level + 1)), ' ') : "";
  const std::string outer = pretty ? "\n" + std::string(static_cast<std::size_t>(indent * level), ' ') : "";
  if (j.is_object() && !j.empty()) {
    out += '{';
    bool first = true;
    for (const auto& [key, value] : j.items()) {
      out += (first ? "" : ",") + inner + nlohmann::ordered_json(key).dump() + (pretty ? ": " : ":");
      dump_to(value, indent, level + 1, out);
      first = false;
    }
    out += outer + '}';
  } else if (j.is_array() && !j.empty()) {
    out += '[';
    bool first = true;
    for (const auto& value : j) {
      out += (first ? "" : ",") + inner;
      dump_to(value, indent, level + 1, out);
      first = false;
    }
    out += outer + ']';
  } else if (j.is_number_float() && std::isfinite(j.get<double>())) {
    std::string text = fmt::format("{}", j.get<double>());  // shortest round trip
    if (text.find_first_of(".e") == std::string::npos) text += ".0";
    out += text;
  } else {
    out += j.dump();  // strings (escaped), integers, booleans, null, NaN as null, {} and []
  }
}

}  // namespace

std::string dump_json(const nlohmann::ordered_json& j, int indent) {
  std::string out;
  dump_to(j, indent, 0, out);
  return out;
}

}  // namespace gpusim::cli
