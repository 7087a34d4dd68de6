// `gpusim serve`'s outputs: the summary table, JSON, per-request and per-step CSV, and a Chrome
// trace with a scheduler track (one span per step), one track per request and counters.
#pragma once

#include <iosfwd>
#include <string>

#include "serve/serve_run.h"
#include "serve/serve_spec.h"

namespace gpusim::cli {

struct ServeOutput {
  const serve::ServeSpec& spec;
  const serve::ServeResult& result;
  const serve::ServeSummary& summary;
  std::string hw;  // the chip's name
};

void write_serve_table(const ServeOutput& o, std::ostream& out);
std::string serve_json(const ServeOutput& o);
void write_serve_requests_csv(const ServeOutput& o, std::ostream& out);
void write_serve_steps_csv(const ServeOutput& o, std::ostream& out);
void write_serve_trace(const ServeOutput& o, std::ostream& out);

}  // namespace gpusim::cli
