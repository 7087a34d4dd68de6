// How gpusim prints numbers in the CSV and JSON files it writes (docs/results.md, "Numbers"):
// doubles rounded to 9 significant digits, then in their shortest form. The simulator's own
// arithmetic is far less accurate than a double's 17 digits, so the last ones are only noise
// (9412.278038999999), and 9 digits still resolve a nanosecond in a time of 0.1 s given in us.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

namespace gpusim::cli {

// `v` rounded to 9 significant digits (the double nearest that decimal); NaN and infinities
// as they are.
double rounded(double v);

// rounded(v) in its shortest form: 9412.27804, 42 (an integral value prints without ".0"),
// 1.5e-07 (an exponent only below 1e-4 or from 1e16 on).
std::string number(double v);

// Rounds every floating-point value in `j`, recursively (a JSON document just before it is
// written).
void round_numbers(nlohmann::ordered_json& j);

// j.dump(indent) (indent -1: compact), except that floating-point values print in their shortest
// form: nlohmann's Grisu2 sometimes prints a rounded value long (1012.6367299999999 for
// 1012.63673). Integral ones keep their ".0", as nlohmann writes them.
std::string dump_json(const nlohmann::ordered_json& j, int indent = -1);

}  // namespace gpusim::cli
