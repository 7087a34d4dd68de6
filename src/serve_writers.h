// `gpusim serve`'s outputs: the summary table, JSON, per-request and per-step CSV, and a Chrome
// trace with a scheduler track (one span per step), one track per request and counters.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>

#include "serve/serve_run.h"
#include "serve/serve_spec.h"
#include "src/cli.h"

namespace gpusim::cli {

struct ServeOutput {
  const serve::ServeSpec& spec;
  const serve::ServeResult& result;
  const serve::ServeSummary& summary;
  std::string hw;  // the chip's name
};

void write_serve_table(const ServeOutput& o, std::ostream& out);
// The JSON document (numbers rounded as the files print them), and its text.
nlohmann::ordered_json serve_document(const ServeOutput& o);
std::string serve_json(const ServeOutput& o);
void write_serve_requests_csv(const ServeOutput& o, std::ostream& out);
void write_serve_steps_csv(const ServeOutput& o, std::ostream& out);
void write_serve_trace(const ServeOutput& o, std::ostream& out);

// Everything into `dir` (made when missing): summary.txt, result.json, requests.csv, steps.csv,
// trace.json and serve.png (a note on `err` when it cannot be drawn).
void write_serve_folder(const ServeOutput& o, const std::filesystem::path& dir, const Environment& env, std::ostream& err);

}  // namespace gpusim::cli
