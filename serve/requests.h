// The requests a serving run receives: read from a file (JSONL or CSV) or drawn by a seeded
// generator, in arrival order.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace gpusim::serve {

struct Request {
  std::string id;
  double arrival_s = 0;  // seconds from the start of the run
  std::int64_t prompt_tokens = 0, output_tokens = 0;
};

// Prompt or output lengths: one value, or uniform over [min, max] (integers).
struct LengthSpec {
  enum class Kind { kFixed, kUniform } kind = Kind::kFixed;
  std::int64_t value = 0, min = 0, max = 0;
};

// A named empirical distribution of request lengths (configs/distributions/NAME.csv): rows of
// (prompt tokens, output tokens) drawn whole, so each prompt keeps its own reply's length.
struct LengthPairs {
  std::string name;
  std::vector<std::pair<std::int64_t, std::int64_t>> rows;
};
// Reads one: '#' comment lines, the header "prompt_tokens,output_tokens", then a row a line.
// Errors name the file and line (ConfigError).
LengthPairs read_length_pairs(const std::filesystem::path& file);

// When requests arrive: Poisson at `rate` a second, one every 1 / `rate` seconds, or all at t = 0.
struct ArrivalSpec {
  enum class Kind { kPoisson, kFixedRate, kAllAtOnce } kind = Kind::kAllAtOnce;
  double rate = 0;
};

struct GeneratorSpec {
  std::int64_t count = 0;
  ArrivalSpec arrival;
  LengthSpec prompt, output;
  std::optional<LengthPairs> lengths;  // instead of prompt and output: whole rows of a distribution
  std::uint64_t seed = 0;
};

// Reads a request file: JSONL (one object a line: "arrival" or "arrival_s" seconds,
// "prompt_tokens", "output_tokens", optional "id") or CSV (a header naming those columns).
// Errors name the file and line (ConfigError, exit 2). Sorted by arrival, ties in file order.
std::vector<Request> read_requests(const std::filesystem::path& file);

// Draws `spec.count` requests. The same spec gives the same requests on every machine: the
// draws use mt19937_64 and gpusim's own inverse-CDF transforms, not std's distributions (whose
// algorithms the standard leaves to each library).
std::vector<Request> generate_requests(const GeneratorSpec& spec);

}  // namespace gpusim::serve
