#include "serve/requests.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "sim/error.h"
#include "sim/input_file.h"

namespace gpusim::serve {
namespace {

constexpr std::int64_t kMaxTokens = std::int64_t{1} << 24;

std::string trim(std::string s) {
  const auto not_space = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

// A uniform double in [0, 1) from 53 random bits.
double unit(std::mt19937_64& g) { return static_cast<double>(g() >> 11) * 0x1.0p-53; }

std::int64_t draw_length(const LengthSpec& s, std::mt19937_64& g) {
  switch (s.kind) {
    case LengthSpec::Kind::kFixed: return s.value;
    case LengthSpec::Kind::kUniform:
      return s.min + static_cast<std::int64_t>(unit(g) * static_cast<double>(s.max - s.min + 1));
  }
  return s.value;
}

void check_request(const Request& r, const std::string& file, int line) {
  if (!(r.arrival_s >= 0) || !std::isfinite(r.arrival_s)) {
    throw ConfigError(file, line, "arrival", "must be a time in seconds, 0 or more");
  }
  if (r.prompt_tokens < 1 || r.prompt_tokens > kMaxTokens) {
    throw ConfigError(file, line, "prompt_tokens", fmt::format("must be 1 to {}", kMaxTokens));
  }
  if (r.output_tokens < 1 || r.output_tokens > kMaxTokens) {
    throw ConfigError(file, line, "output_tokens", fmt::format("must be 1 to {}", kMaxTokens));
  }
}

std::vector<Request> read_jsonl(std::istream& in, const std::string& file) {
  std::vector<Request> out;
  std::string text;
  for (int line = 1; std::getline(in, text); ++line) {
    if (trim(text).empty()) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      throw ConfigError(file, line, "", fmt::format("not a JSON object: {}", e.what()));
    }
    if (!j.is_object()) throw ConfigError(file, line, "", "expected one JSON object a line");
    Request r;
    for (const auto& item : j.items()) {
      // Named copies: Clang 14 lets no lambda capture a structured binding.
      const std::string key = item.key();
      const nlohmann::json& value = item.value();
      const auto number = [&]() {
        if (!value.is_number()) throw ConfigError(file, line, key, "expected a number");
        return value.get<double>();
      };
      const auto integer = [&]() {
        if (!value.is_number_integer()) throw ConfigError(file, line, key, "expected an integer");
        return value.get<std::int64_t>();
      };
      if (key == "arrival" || key == "arrival_s") r.arrival_s = number();
      else if (key == "prompt_tokens") r.prompt_tokens = integer();
      else if (key == "output_tokens") r.output_tokens = integer();
      else if (key == "id") r.id = value.is_string() ? value.get<std::string>() : value.dump();
      else throw ConfigError(file, line, key, "unknown key (known: id, arrival, prompt_tokens, output_tokens)");
    }
    if (!j.contains("prompt_tokens")) throw ConfigError(file, line, "prompt_tokens", "missing");
    if (!j.contains("output_tokens")) throw ConfigError(file, line, "output_tokens", "missing");
    check_request(r, file, line);
    if (r.id.empty()) r.id = std::to_string(out.size());
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream ss(line);
  std::string cell;
  while (std::getline(ss, cell, ',')) cells.push_back(trim(cell));
  if (!line.empty() && line.back() == ',') cells.emplace_back();
  return cells;
}

std::vector<Request> read_csv(std::istream& in, const std::string& file) {
  std::string text;
  int line = 0;
  while (std::getline(in, text)) {
    ++line;
    if (!trim(text).empty()) break;
  }
  const auto header = split_csv(text);
  int arrival = -1, prompt = -1, output = -1, id = -1;
  for (int i = 0; i < static_cast<int>(header.size()); ++i) {
    const std::string& h = header[static_cast<std::size_t>(i)];
    if (h == "arrival" || h == "arrival_s") arrival = i;
    else if (h == "prompt_tokens") prompt = i;
    else if (h == "output_tokens") output = i;
    else if (h == "id") id = i;
    else throw ConfigError(file, line, h, "unknown column (known: id, arrival, prompt_tokens, output_tokens)");
  }
  if (prompt < 0) throw ConfigError(file, line, "prompt_tokens", "the header names no prompt_tokens column");
  if (output < 0) throw ConfigError(file, line, "output_tokens", "the header names no output_tokens column");
  std::vector<Request> out;
  while (std::getline(in, text)) {
    ++line;
    if (trim(text).empty()) continue;
    const auto cells = split_csv(text);
    if (cells.size() != header.size()) {
      throw ConfigError(file, line, "", fmt::format("{} cells where the header has {}", cells.size(), header.size()));
    }
    Request r;
    const auto read = [&](int col, const char* key, auto& into) {
      const std::string& c = cells[static_cast<std::size_t>(col)];
      std::size_t used = 0;
      try {
        if constexpr (std::is_same_v<std::decay_t<decltype(into)>, double>) into = std::stod(c, &used);
        else into = std::stoll(c, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != c.size()) throw ConfigError(file, line, key, fmt::format("'{}' is not a number", c));
    };
    if (arrival >= 0) read(arrival, "arrival", r.arrival_s);
    read(prompt, "prompt_tokens", r.prompt_tokens);
    read(output, "output_tokens", r.output_tokens);
    if (id >= 0) r.id = cells[static_cast<std::size_t>(id)];
    check_request(r, file, line);
    if (r.id.empty()) r.id = std::to_string(out.size());
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

std::vector<Request> read_requests(const std::filesystem::path& path) {
  const std::string file = path.string();
  check_input_file(path);
  std::ifstream in(path);
  std::vector<Request> out = path.extension() == ".csv" ? read_csv(in, file) : read_jsonl(in, file);
  if (out.empty()) throw ConfigError(file, 0, "", "the request file holds no requests");
  std::stable_sort(out.begin(), out.end(), [](const Request& a, const Request& b) { return a.arrival_s < b.arrival_s; });
  return out;
}

LengthPairs read_length_pairs(const std::filesystem::path& path) {
  const std::string file = path.string();
  check_input_file(path);
  std::ifstream in(path);
  LengthPairs out;
  out.name = path.stem().string();
  std::string text;
  bool header = false;
  for (int line = 1; std::getline(in, text); ++line) {
    const std::string t = trim(text);
    if (t.empty() || t.front() == '#') continue;
    const auto cells = split_csv(t);
    if (!header) {
      if (cells != std::vector<std::string>{"prompt_tokens", "output_tokens"}) {
        throw ConfigError(file, line, "", "expected the header prompt_tokens,output_tokens");
      }
      header = true;
      continue;
    }
    if (cells.size() != 2) throw ConfigError(file, line, "", "expected two integers: prompt_tokens,output_tokens");
    std::int64_t v[2];
    for (int c = 0; c < 2; ++c) {
      const char* key = c == 0 ? "prompt_tokens" : "output_tokens";
      const std::string& s = cells[static_cast<std::size_t>(c)];
      const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v[c]);
      if (ec != std::errc() || end != s.data() + s.size() || v[c] < 1) {
        throw ConfigError(file, line, key, fmt::format("expected a token count of 1 or more, got '{}'", s));
      }
    }
    out.rows.emplace_back(v[0], v[1]);
  }
  if (out.rows.empty()) throw ConfigError(file, 0, "", "the length distribution holds no rows");
  return out;
}

std::vector<Request> generate_requests(const GeneratorSpec& spec) {
  std::mt19937_64 arrivals(spec.seed), lengths(spec.seed ^ 0x9e3779b97f4a7c15ULL);
  std::vector<Request> out;
  double t = 0;
  for (std::int64_t i = 0; i < spec.count; ++i) {
    Request r;
    r.id = std::to_string(i);
    switch (spec.arrival.kind) {
      case ArrivalSpec::Kind::kAllAtOnce: t = 0; break;
      case ArrivalSpec::Kind::kFixedRate: t = static_cast<double>(i) / spec.arrival.rate; break;
      case ArrivalSpec::Kind::kPoisson:
        // Exponential gaps by the inverse CDF; 1 - u lies in (0, 1].
        if (i > 0) t += -std::log(1.0 - unit(arrivals)) / spec.arrival.rate;
        break;
    }
    r.arrival_s = t;
    if (spec.lengths) {
      const auto& rows = spec.lengths->rows;
      const auto k = std::min(rows.size() - 1, static_cast<std::size_t>(unit(lengths) * static_cast<double>(rows.size())));
      r.prompt_tokens = rows[k].first;
      r.output_tokens = rows[k].second;
    } else {
      r.prompt_tokens = draw_length(spec.prompt, lengths);
      r.output_tokens = draw_length(spec.output, lengths);
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace gpusim::serve
