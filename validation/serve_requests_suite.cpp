#include "validation/serve_requests_suite.h"

#include <fmt/format.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <nlohmann/json.hpp>

#include "serve/serve_run.h"
#include "serve/serve_spec.h"
#include "sim/error.h"
#include "validation/case_json.h"

namespace gpusim::validation {
namespace {

// A serve file and its request file for one measured run, in a scratch folder of this process.
std::filesystem::path write_run(const nlohmann::json& run, const std::filesystem::path& dir) {
  std::ofstream reqs(dir / "requests.jsonl");
  int i = 0;
  for (const auto& r : run.at("requests")) {
    reqs << fmt::format("{{\"id\": \"r{}\", \"arrival\": {}, \"prompt_tokens\": {}, \"output_tokens\": {}}}\n", i++,
                        r.at(0).get<double>(), r.at(1).get<std::int64_t>(), r.at(2).get<std::int64_t>());
  }
  const auto serve = dir / "serve.yaml";
  std::ofstream y(serve);
  // generate_batch's engine: max_requests_per_batch from its workload hints, the block count the
  // engine solved for at start-up (both recorded).
  y << fmt::format("model: {}\nengine: hf-paged-sdpa-graphs\nscheduler: {{max_num_seqs: {}, num_blocks: {}}}\n"
                   "requests: {{file: requests.jsonl}}\n",
                   run.at("model").get<std::string>(), run.at("max_requests_per_batch").get<std::int64_t>(),
                   run.at("num_blocks").get<std::int64_t>());
  return serve;
}

}  // namespace

std::vector<Comparison> compare_serve_requests(const std::filesystem::path& file,
                                               const std::filesystem::path& config_dir, const hw::HardwareSpec& hw,
                                               const models::KernelModelRegistry& models) {
  const nlohmann::json doc = read_json_file(file);
  std::vector<Comparison> out;
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("gpusim-serve-requests-{}", ::getpid());
  std::filesystem::create_directories(dir);
  try {
    // The runs of one set ran on one machine in file order. cuDNN keeps the attention kernels it
    // compiled, in the process and in its cache on disk: the first run of a model on the machine
    // builds them, later runs (other processes too) find them (set 4's step logs: a second
    // process's first steps cost a fraction of the first one's).
    std::set<std::pair<int, std::string>> machine_has;
    for (const auto& run : doc.at("runs")) {
      const auto model_in_set = std::make_pair(run.at("set").get<int>(), run.at("model").get<std::string>());
      const bool kernels_built = !machine_has.insert(model_in_set).second;
      // The eager engine is host-bound (its forward's Python per kernel is the host preset's):
      // compared in docs/serving.md, not here.
      if (run.at("config").get<std::string>() != "graphs") continue;
      const auto spec = serve::load_serve_spec(write_run(run, dir), {}, config_dir / "engines", config_dir / "models");
      // The warm-pass protocol served the mix once before the recorded run: its graphs and
      // kernels are there.
      serve::EngineState engine;
      if (kernels_built) engine.attention_kernels = {0, 1};
      if (run.value("protocol", "warm-pass") == "warm-pass") engine = serve::run_serve(spec, hw, models, {}, true, engine).engine;
      const serve::ServeResult r = serve::run_serve(spec, hw, models, {}, true, engine);
      const serve::ServeSummary s = serve::summarize(spec, r);
      const std::string id = run.at("id").get<std::string>();
      const bool held_out = run.at("split").get<std::string>() == "holdout";
      const auto row = [&](const char* what, const char* key, double simulated_s) {
        out.push_back(figure_row(fmt::format("{}: {}", id, what), "serve-requests", held_out,
                                 run.at(key).get<double>() * 1e6, simulated_s * 1e6));
      };
      row("TTFT p50", "ttft_p50_s", s.ttft_s.p50);
      row("TTFT p90", "ttft_p90_s", s.ttft_s.p90);
      row("TPOT p50", "tpot_p50_s", s.tpot_s.p50);
      row("TPOT p90", "tpot_p90_s", s.tpot_s.p90);
    }
  } catch (const nlohmann::json::exception& e) {
    std::filesystem::remove_all(dir);
    throw ConfigError(file.string(), 0, "runs", std::string("malformed: ") + e.what());
  }
  std::filesystem::remove_all(dir);
  return out;
}

}  // namespace gpusim::validation
