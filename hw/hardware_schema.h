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
  // Optional keys (the `system:` section) keep the struct's default when no file gives them.
  bool optional = false;
};

// Every key a hardware file may give, in display order: all must be given (directly or through
// `base:`) but the optional ones.
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
// Values that follow from others when not given: a PCIe fabric's bandwidth from its generation
// and lanes. Run after every field is assigned, before check_consistency.
void complete_system(HardwareSpec& spec);

}  // namespace gpusim::hw
