#include "hw/units.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <optional>

namespace gpusim::hw {
namespace {

struct UnitDef {
  std::string_view symbol;
  Quantity quantity;
  double scale;  // value in base units of 1 <symbol>
};

constexpr double kKi = 1024.0;
constexpr std::array kUnits{
    UnitDef{"B", Quantity::kBytes, 1},
    UnitDef{"KB", Quantity::kBytes, 1e3},
    UnitDef{"MB", Quantity::kBytes, 1e6},
    UnitDef{"GB", Quantity::kBytes, 1e9},
    UnitDef{"TB", Quantity::kBytes, 1e12},
    UnitDef{"KiB", Quantity::kBytes, kKi},
    UnitDef{"MiB", Quantity::kBytes, kKi * kKi},
    UnitDef{"GiB", Quantity::kBytes, kKi * kKi * kKi},
    UnitDef{"TiB", Quantity::kBytes, kKi * kKi * kKi * kKi},
    UnitDef{"B/s", Quantity::kBandwidth, 1},
    UnitDef{"KB/s", Quantity::kBandwidth, 1e3},
    UnitDef{"MB/s", Quantity::kBandwidth, 1e6},
    UnitDef{"GB/s", Quantity::kBandwidth, 1e9},
    UnitDef{"TB/s", Quantity::kBandwidth, 1e12},
    UnitDef{"KiB/s", Quantity::kBandwidth, kKi},
    UnitDef{"MiB/s", Quantity::kBandwidth, kKi * kKi},
    UnitDef{"GiB/s", Quantity::kBandwidth, kKi * kKi * kKi},
    UnitDef{"TiB/s", Quantity::kBandwidth, kKi * kKi * kKi * kKi},
    UnitDef{"Hz", Quantity::kFrequency, 1},
    UnitDef{"kHz", Quantity::kFrequency, 1e3},
    UnitDef{"MHz", Quantity::kFrequency, 1e6},
    UnitDef{"GHz", Quantity::kFrequency, 1e9},
    UnitDef{"ps", Quantity::kDuration, 1e-12},
    UnitDef{"ns", Quantity::kDuration, 1e-9},
    UnitDef{"us", Quantity::kDuration, 1e-6},
    UnitDef{"\u00b5s", Quantity::kDuration, 1e-6},
    UnitDef{"ms", Quantity::kDuration, 1e-3},
    UnitDef{"s", Quantity::kDuration, 1},
    UnitDef{"flop/clk", Quantity::kFlopsPerCycle, 1},
    UnitDef{"flop/cycle", Quantity::kFlopsPerCycle, 1},
    UnitDef{"op/clk", Quantity::kOpsPerCycle, 1},
    UnitDef{"op/cycle", Quantity::kOpsPerCycle, 1},
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::optional<UnitDef> find_unit(std::string_view symbol) {
  for (const auto& u : kUnits) {
    if (u.symbol == symbol) return u;
  }
  return std::nullopt;
}

std::string units_of(Quantity q) {
  std::string out;
  for (const auto& u : kUnits) {
    if (u.quantity != q) continue;
    if (!out.empty()) out += ", ";
    out += u.symbol;
  }
  return out;
}

ParsedQuantity failure(std::string message) { return ParsedQuantity{0, std::move(message)}; }

}  // namespace

std::string describe(Quantity q) {
  switch (q) {
    case Quantity::kCount: return "a whole number such as 132";
    case Quantity::kBytes: return "a size such as 50MiB";
    case Quantity::kBandwidth: return "a bandwidth such as 3.35TB/s";
    case Quantity::kFrequency: return "a frequency such as 1.98GHz";
    case Quantity::kDuration: return "a duration such as 2us";
    case Quantity::kFlopsPerCycle: return "a per-SM rate such as 4096 flop/clk";
    case Quantity::kOpsPerCycle: return "a per-SM rate such as 16 op/clk";
    case Quantity::kFraction: return "a fraction such as 0.9 or 90%";
    case Quantity::kNumber: return "a plain number such as 6.5";
    case Quantity::kText: return "a word";
  }
  return "a value";
}

ParsedQuantity parse_quantity(std::string_view raw, Quantity q) {
  const std::string_view text = trim(raw);
  if (text.empty()) return failure("empty value; expected " + describe(q));
  if (q == Quantity::kText) return ParsedQuantity{0, {}};

  double number = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (ec != std::errc() || end == text.data()) {
    return failure(fmt::format("'{}' is not {}", text, describe(q)));
  }
  if (!std::isfinite(number)) return failure(fmt::format("'{}' is not a finite number", text));
  const std::string_view symbol = trim(std::string_view(end, text.data() + text.size() - end));

  if (q == Quantity::kCount) {
    if (!symbol.empty()) {
      return failure(fmt::format("'{}' should be a plain whole number, without a unit", text));
    }
    if (number != std::floor(number)) {
      return failure(fmt::format("'{}' is not a whole number", text));
    }
    return ParsedQuantity{number, {}};
  }

  if (q == Quantity::kNumber) {
    if (!symbol.empty()) return failure(fmt::format("'{}' should be a plain number, without a unit", text));
    return ParsedQuantity{number, {}};
  }
  if (q == Quantity::kFraction) {
    if (symbol.empty()) return ParsedQuantity{number, {}};
    if (symbol == "%") return ParsedQuantity{number / 100, {}};
    return failure(fmt::format("'{}' is not {}", text, describe(q)));
  }
  if (symbol.empty()) {
    return failure(fmt::format("'{}' has no unit; expected {} (units: {})", text, describe(q),
                               units_of(q)));
  }
  const auto unit = find_unit(symbol);
  if (!unit) {
    // Bits are a common slip for bandwidths ("Gb/s"); say so rather than "unknown unit".
    if (symbol.size() >= 2 && symbol.find("b/s") != std::string_view::npos) {
      return failure(fmt::format("'{}' is in bits; write bytes (for example GB/s)", text));
    }
    for (const auto& u : kUnits) {
      if (iequals(u.symbol, symbol) && u.quantity == q) {
        return failure(fmt::format("unknown unit '{}' in '{}'; did you mean '{}'?", symbol, text,
                                   u.symbol));
      }
    }
    return failure(fmt::format("unknown unit '{}' in '{}'; expected {} (units: {})", symbol, text,
                               describe(q), units_of(q)));
  }
  if (unit->quantity != q) {
    const std::string found = describe(unit->quantity);
    return failure(fmt::format("'{}' is {}, but this key needs {}", text,
                               found.substr(0, found.find(" such")), describe(q)));
  }
  double value = number * unit->scale;
  if (q == Quantity::kBytes) {
    // "3.35GB" is 3350000000 bytes, though 3.35 x 1e9 is not exactly that in binary floating point.
    const double whole = std::round(value);
    if (std::fabs(value - whole) > 1e-9 * std::max(1.0, whole)) {
      return failure(fmt::format("'{}' is not a whole number of bytes", text));
    }
    value = whole;
  }
  return ParsedQuantity{value, {}};
}

std::string format_quantity(double value, Quantity q) {
  switch (q) {
    case Quantity::kCount: return fmt::format("{}", static_cast<long long>(value));
    case Quantity::kText: return {};
    case Quantity::kBytes: {
      // Exact binary units for hardware sizes (50MiB), exact decimal ones for datasheet
      // capacities (80GB), else plain bytes: the text must parse back to the same count.
      const auto bytes = static_cast<long long>(value);
      for (const auto& u : {kUnits[7], kUnits[6], kUnits[3], kUnits[2], kUnits[5]}) {
        const auto unit = static_cast<long long>(u.scale);
        const bool readable = u.symbol != "KiB" || bytes < 1024 * 1024;  // not "146591680KiB"
        if (readable && bytes >= unit && bytes % unit == 0) {
          return fmt::format("{}{}", bytes / unit, u.symbol);
        }
      }
      return fmt::format("{}B", bytes);
    }
    case Quantity::kBandwidth:
      if (value >= 1e12) return fmt::format("{}TB/s", value / 1e12);
      if (value >= 1e9) return fmt::format("{}GB/s", value / 1e9);
      return fmt::format("{}MB/s", value / 1e6);
    case Quantity::kFrequency:
      if (value >= 1e9) return fmt::format("{}GHz", value / 1e9);
      return fmt::format("{}MHz", value / 1e6);
    case Quantity::kDuration: {
      // From whole picoseconds (as sim::Time holds them), so 41.2us prints as 41.2us, not as
      // the product 41.199999999999996 of a scaled double.
      const double ps = std::round(value * 1e12);
      if (value >= 1e-3) return fmt::format("{}ms", ps / 1e9);
      if (value >= 1e-6) return fmt::format("{}us", ps / 1e6);
      return fmt::format("{}ns", ps / 1e3);
    }
    case Quantity::kFlopsPerCycle: return fmt::format("{} flop/clk", value);
    case Quantity::kOpsPerCycle: return fmt::format("{} op/clk", value);
    case Quantity::kFraction:
    case Quantity::kNumber: return fmt::format("{}", value);
  }
  return fmt::format("{}", value);
}

}  // namespace gpusim::hw
