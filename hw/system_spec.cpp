#include "hw/system_spec.h"

#include <charconv>

namespace gpusim::hw {
namespace {

bool parse_int(std::string_view s, int& out) {
  const auto* end = s.data() + s.size();
  const auto [p, ec] = std::from_chars(s.data(), end, out);
  return ec == std::errc() && p == end;
}

}  // namespace

std::vector<std::pair<int, int>> SystemSpec::nvlink_pairs() const {
  std::vector<std::pair<int, int>> out;
  std::string_view rest = interconnect.pairs;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    const auto dash = item.find('-');
    int a = 0, b = 0;
    if (dash == std::string_view::npos || !parse_int(item.substr(0, dash), a) ||
        !parse_int(item.substr(dash + 1), b)) {
      return {};
    }
    out.emplace_back(a, b);
  }
  return out;
}

bool SystemSpec::linked(int a, int b) const {
  if (a == b) return true;
  if (interconnect.kind == "nvswitch" || interconnect.kind == "pcie") return true;
  if (interconnect.kind != "nvlink") return false;
  for (const auto& [x, y] : nvlink_pairs()) {
    if ((x == a && y == b) || (x == b && y == a)) return true;
  }
  return false;
}

double pcie_bandwidth(int generation, int lanes) {
  // Transfer rate per lane (GT/s) with 128b/130b encoding (PCI-SIG base specifications 3.0-5.0);
  // PCIe 6.0's FLIT mode carries 242 of 256 bytes.
  double gbytes_per_lane = 0;
  switch (generation) {
    case 3: gbytes_per_lane = 8.0 * 128 / 130 / 8; break;
    case 4: gbytes_per_lane = 16.0 * 128 / 130 / 8; break;
    case 5: gbytes_per_lane = 32.0 * 128 / 130 / 8; break;
    case 6: gbytes_per_lane = 64.0 * 242 / 256 / 8; break;
    default: return 0;
  }
  return gbytes_per_lane * 1e9 * lanes;
}

}  // namespace gpusim::hw
