// Reads the items of an op-level workload's `ops:` list into models::Op.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "hw/dtype.h"
#include "hw/yaml_document.h"
#include "models/op.h"

namespace gpusim::workloads {

// One item such as `{op: matmul, M: 2048, N: 2048, K: 2048}` at `key_path` ("ops[3]").
// `default_dtype` is the workload's top-level dtype, for items that give none.
models::Op read_op(const hw::YamlDocument& doc, const YAML::Node& item, const std::string& key_path,
                   std::optional<hw::DType> default_dtype);

// A dtype-valued key of `reader` ("fp32", "tf32", "fp16", "bf16", "fp8"), if present.
std::optional<hw::DType> read_optional_dtype(hw::MappingReader& reader, std::string_view key);

}  // namespace gpusim::workloads
