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

}  // namespace gpusim::cli
