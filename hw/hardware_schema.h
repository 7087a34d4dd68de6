// The hardware file's keys, in one table: key path, quantity (unit), allowed range and meaning.
// Loading, `--set hw.KEY=VALUE`, `hw show` and the docs all go through this table, so a new
// parameter is one struct field plus one row here.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "hw/hardware_spec.h"
#include "hw/units.h"

namespace gpusim::hw {

using FieldRef = std::variant<int*, std::int64_t*, double*, sim::Time*, std::string*>;

struct FieldDef {
  std::string_view path;  // "l2.size"
  Quantity quantity;
  double min;  // in base units (bytes, Hz, seconds, ...); unused for text
  double max;
  std::span<const std::string_view> choices;  // text fields: allowed words (empty: any)
  std::string_view meaning;
  FieldRef (*ref)(HardwareSpec&);
};

// Every key a hardware file must provide (directly or through `base:`), in display order.
std::span<const FieldDef> hardware_fields();
const FieldDef* find_field(std::string_view path);

// Sets a field from its text; returns an error message (without location) or "".
std::string assign_field(HardwareSpec& spec, const FieldDef& field, std::string_view text);
// The field's value with its unit, in a form assign_field accepts back.
std::string format_field(const HardwareSpec& spec, const FieldDef& field);

// Relations between fields that single-field ranges cannot express.
struct Violation {
  std::string key;  // the field to blame
  std::string message;
};
std::vector<Violation> check_consistency(const HardwareSpec& spec);

}  // namespace gpusim::hw
