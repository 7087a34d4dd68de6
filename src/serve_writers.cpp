#include "src/serve_writers.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

#include "src/output_files.h"
#include "src/python_plot.h"

#include "src/number_format.h"

namespace gpusim::cli {
namespace {

using nlohmann::ordered_json;

std::string ms(double s) { return fmt::format("{:.2f}", s * 1e3); }

ordered_json pct_json(const serve::Percentiles& p) {
  return {{"p50", p.p50}, {"p90", p.p90}, {"p99", p.p99}, {"mean", p.mean}, {"n", p.n}};
}

}  // namespace

void write_serve_table(const ServeOutput& o, std::ostream& out) {
  const auto& s = o.summary;
  const auto& r = o.result;
  const auto& e = o.spec.engine;
  out << fmt::format("gpusim serve: {} on {} ({}, {} engine)\n", o.spec.name, o.hw, o.spec.model.model.name, e.name);
  out << fmt::format("requests: {} ({})\n", s.requests, o.spec.requests_source);
  out << fmt::format("scheduler: max_num_batched_tokens {}, max_num_seqs {}, block_size {}, chunked prefill {}, {}; "
                     "CUDA graphs up to {} tokens; host {:.0f} us a step\n",
                     e.scheduler.max_num_batched_tokens, e.scheduler.max_num_seqs, e.scheduler.block_size,
                     e.scheduler.chunked_prefill ? "on" : "off",
                     e.scheduler.policy == serve::SchedulerConfig::Policy::kPrefillFirst ? "prefill-first" : "decode-first",
                     e.cuda_graph_max_tokens, e.step_overhead.us());
  const auto& par = o.spec.model.parallel;
  if (r.gpus > 1) {
    out << fmt::format("GPUs: {} (tensor_parallel {}, expert_parallel {}); memory figures are per GPU\n", r.gpus,
                       par.tensor, par.expert);
  }
  out << fmt::format("KV cache{}: {} blocks of {} tokens ({:.1f} GB: {:.1f} GB usable - weights {:.1f} GB - activations {:.1f} GB)\n",
                     r.gpus > 1 ? " per GPU" : "", r.num_blocks, r.block_size,
                     static_cast<double>(r.num_blocks * r.block_size) * r.kv_bytes_per_token / 1e9, r.capacity_bytes / 1e9,
                     r.weights_bytes / 1e9, r.activation_bytes / 1e9);
  out << fmt::format("\ncompleted {} of {} ({} rejected), {} steps over {:.3f} s, {} preemptions\n", s.completed,
                     s.requests, s.rejected, r.steps.size(), s.duration_s, s.preemptions);
  out << fmt::format("throughput: {:.2f} requests/s, {:.1f} output tokens/s, {:.1f} tokens/s in all\n", s.requests_per_s,
                     s.output_tokens_per_s, s.total_tokens_per_s);
  if (o.spec.slo.ttft_s || o.spec.slo.tpot_s || o.spec.slo.e2e_s) {
    out << fmt::format("goodput: {:.2f} requests/s ({} of {} within the SLOs)\n", s.goodput_requests_per_s, s.good,
                       s.completed);
  }
  out << fmt::format("batch: {:.1f} sequences on average; KV cache {:.0f}% used on average, {:.0f}% at most\n",
                     s.mean_batch, 100 * s.mean_kv_share, 100 * s.peak_kv_share);
  out << fmt::format("steps: {:.0f}% GPU work, {:.0f}% engine host time\n\n", 100 * (1 - s.host_share),
                     100 * s.host_share);
  out << fmt::format("  {:<10s} {:>10s} {:>10s} {:>10s} {:>10s}\n", "latency", "p50 ms", "p90 ms", "p99 ms", "mean ms");
  const auto row = [&](const char* name, const serve::Percentiles& p) {
    if (p.n == 0) return;
    out << fmt::format("  {:<10s} {:>10s} {:>10s} {:>10s} {:>10s}\n", name, ms(p.p50), ms(p.p90), ms(p.p99), ms(p.mean));
  };
  row("TTFT", s.ttft_s);
  row("TPOT", s.tpot_s);
  row("ITL", s.itl_s);
  row("E2E", s.e2e_s);
  row("queueing", s.queueing_s);
  std::size_t shown = 0;
  for (std::size_t i = 0; i < r.requests.size(); ++i) {
    if (!r.requests[i].rejected) continue;
    if (shown++ == 0) out << "\nrejected requests (they could never be admitted):\n";
    if (shown > 10) {
      out << fmt::format("  ... and {} more (--format json lists them all)\n", s.rejected - 10);
      break;
    }
    out << fmt::format("  {}: {}\n", o.spec.requests[i].id, r.requests[i].why);
  }
  out << fmt::format("\nsimulated {} distinct step shapes; {} steps reused one\n", r.shapes_simulated, r.shapes_reused);
}

nlohmann::ordered_json serve_document(const ServeOutput& o) {
  const auto& s = o.summary;
  const auto& r = o.result;
  const auto& e = o.spec.engine;
  ordered_json j;
  j["hw"] = o.hw;
  j["serve"] = o.spec.name;
  j["model"] = o.spec.model.model.name;
  j["requests_source"] = o.spec.requests_source;
  j["engine"] = {{"name", e.name},
                 {"max_num_batched_tokens", e.scheduler.max_num_batched_tokens},
                 {"max_num_seqs", e.scheduler.max_num_seqs},
                 {"block_size", e.scheduler.block_size},
                 {"chunked_prefill", e.scheduler.chunked_prefill},
                 {"policy", e.scheduler.policy == serve::SchedulerConfig::Policy::kPrefillFirst ? "prefill-first" : "decode-first"},
                 {"gpu_memory_utilization", e.gpu_memory_utilization},
                 {"cuda_graph_max_tokens", e.cuda_graph_max_tokens},
                 {"step_overhead_us", e.step_overhead.us()},
                 {"tensor_parallel", o.spec.model.parallel.tensor},
                 {"expert_parallel", o.spec.model.parallel.expert}};
  j["kv_cache"] = {{"blocks", r.num_blocks},           {"block_size", r.block_size},
                   {"bytes_per_token", r.kv_bytes_per_token}, {"capacity_bytes", r.capacity_bytes},
                   {"weights_bytes", r.weights_bytes},   {"activation_bytes", r.activation_bytes},
                   {"gpus", r.gpus}};  // every byte figure is one GPU's, as run's memory.gpus
  j["summary"] = {{"requests", s.requests},
                  {"completed", s.completed},
                  {"rejected", s.rejected},
                  {"duration_s", s.duration_s},
                  {"steps", r.steps.size()},
                  {"requests_per_s", s.requests_per_s},
                  {"output_tokens_per_s", s.output_tokens_per_s},
                  {"total_tokens_per_s", s.total_tokens_per_s},
                  {"goodput_requests_per_s", s.goodput_requests_per_s},
                  {"within_slo", s.good},
                  {"preemptions", s.preemptions},
                  {"mean_batch", s.mean_batch},
                  {"mean_kv_share", s.mean_kv_share},
                  {"peak_kv_share", s.peak_kv_share},
                  {"host_share", s.host_share},
                  {"ttft_s", pct_json(s.ttft_s)},
                  {"tpot_s", pct_json(s.tpot_s)},
                  {"itl_s", pct_json(s.itl_s)},
                  {"e2e_s", pct_json(s.e2e_s)},
                  {"queueing_s", pct_json(s.queueing_s)}};
  j["requests"] = ordered_json::array();
  for (std::size_t i = 0; i < r.requests.size(); ++i) {
    const auto& q = o.spec.requests[i];
    const auto& rr = r.requests[i];
    const auto f = serve::request_figures(q, rr);
    ordered_json x = {{"id", q.id}, {"arrival_s", q.arrival_s}, {"prompt_tokens", q.prompt_tokens},
                      {"output_tokens", q.output_tokens}};
    if (rr.rejected) {
      x["rejected"] = rr.why;
    } else {
      x["ttft_s"] = f.ttft_s;
      x["tpot_s"] = f.tpot_s;
      x["e2e_s"] = f.e2e_s;
      x["queueing_s"] = f.queueing_s;
      x["preemptions"] = rr.preemptions;
      x["token_times_s"] = rr.token_s;
    }
    j["requests"].push_back(std::move(x));
  }
  j["steps"] = ordered_json::array();
  for (const auto& st : r.steps) {
    j["steps"].push_back({{"start_s", st.start_s}, {"duration_s", st.duration_s}, {"gpu_us", st.gpu_us},
                          {"host_us", st.host_s * 1e6}, {"seqs", st.seqs}, {"tokens", st.tokens}, {"prefills", st.prefills}, {"decodes", st.decodes},
                          {"kv_blocks", st.kv_blocks}, {"waiting", st.waiting}, {"preempted", st.preempted},
                          {"graph", st.graph}, {"captured", st.captured}});
  }
  round_numbers(j);
  return j;
}

std::string serve_json(const ServeOutput& o) { return dump_json(serve_document(o), 2) + "\n"; }

void write_serve_requests_csv(const ServeOutput& o, std::ostream& out) {
  out << "id,arrival_s,prompt_tokens,output_tokens,ttft_s,tpot_s,e2e_s,queueing_s,preemptions,rejected\n";
  for (std::size_t i = 0; i < o.result.requests.size(); ++i) {
    const auto& q = o.spec.requests[i];
    const auto& rr = o.result.requests[i];
    const auto f = serve::request_figures(q, rr);
    out << fmt::format("{},{},{},{},{},{},{},{},{},{}\n", q.id, number(q.arrival_s), q.prompt_tokens, q.output_tokens,
                       number(f.ttft_s), number(f.tpot_s), number(f.e2e_s), number(f.queueing_s), rr.preemptions,
                       rr.rejected ? 1 : 0);
  }
}

void write_serve_steps_csv(const ServeOutput& o, std::ostream& out) {
  out << "start_s,duration_s,gpu_us,host_us,seqs,tokens,prefills,decodes,kv_blocks,kv_share,waiting,preempted,graph\n";
  const double blocks = static_cast<double>(std::max<std::int64_t>(1, o.result.num_blocks));
  for (const auto& st : o.result.steps) {
    out << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{}\n", number(st.start_s), number(st.duration_s),
                       number(st.gpu_us), number(st.host_s * 1e6), st.seqs, st.tokens, st.prefills, st.decodes,
                       st.kv_blocks, number(static_cast<double>(st.kv_blocks) / blocks), st.waiting, st.preempted,
                       st.graph ? 1 : 0);
  }
}

void write_serve_trace(const ServeOutput& o, std::ostream& out) {
  ordered_json events = ordered_json::array();
  const auto us = [](double s) { return s * 1e6; };
  events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", 1}, {"args", {{"name", "scheduler"}}}});
  events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", 2}, {"args", {{"name", "requests"}}}});
  for (std::size_t i = 0; i < o.result.steps.size(); ++i) {
    const auto& st = o.result.steps[i];
    events.push_back({{"ph", "X"}, {"name", fmt::format("step {}: {} seqs, {} tokens", i, st.seqs, st.tokens)},
                      {"pid", 1}, {"tid", 1}, {"ts", us(st.start_s)}, {"dur", us(st.duration_s)},
                      {"args", {{"prefills", st.prefills}, {"decodes", st.decodes}, {"gpu_us", st.gpu_us},
                                {"graph", st.graph}, {"preempted", st.preempted}}}});
    const double end = us(st.start_s + st.duration_s);
    events.push_back({{"ph", "C"}, {"name", "batch"}, {"pid", 1}, {"ts", end}, {"args", {{"seqs", st.seqs}}}});
    events.push_back({{"ph", "C"}, {"name", "kv_blocks"}, {"pid", 1}, {"ts", end}, {"args", {{"used", st.kv_blocks}}}});
    events.push_back({{"ph", "C"}, {"name", "waiting"}, {"pid", 1}, {"ts", end}, {"args", {{"requests", st.waiting}}}});
  }
  for (std::size_t i = 0; i < o.result.requests.size(); ++i) {
    const auto& q = o.spec.requests[i];
    const auto& rr = o.result.requests[i];
    const int tid = static_cast<int>(i) + 1;
    events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", 2}, {"tid", tid}, {"args", {{"name", "request " + q.id}}}});
    if (rr.rejected) {
      events.push_back({{"ph", "i"}, {"name", "rejected"}, {"pid", 2}, {"tid", tid}, {"ts", us(q.arrival_s)}, {"s", "t"},
                        {"args", {{"why", rr.why}}}});
      continue;
    }
    const auto span = [&](const char* name, double a, double b) {
      events.push_back({{"ph", "X"}, {"name", name}, {"pid", 2}, {"tid", tid}, {"ts", us(a)}, {"dur", us(b - a)}});
    };
    span("queued", q.arrival_s, rr.first_scheduled_s);
    span("prefill", rr.first_scheduled_s, rr.token_s.front());
    if (rr.token_s.size() > 1) span("decode", rr.token_s.front(), rr.token_s.back());
  }
  out << ordered_json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump() << "\n";
}

void write_serve_folder(const ServeOutput& o, const std::filesystem::path& dir, const Environment& env, std::ostream& err) {
  std::filesystem::create_directories(dir);
  std::ostringstream table, reqs, steps, trace;
  write_serve_table(o, table);
  write_file(dir / "summary.txt", table.str());
  write_file(dir / "result.json", serve_json(o));
  write_serve_requests_csv(o, reqs);
  write_file(dir / "requests.csv", reqs.str());
  write_serve_steps_csv(o, steps);
  write_file(dir / "steps.csv", steps.str());
  write_serve_trace(o, trace);
  write_file(dir / "trace.json", trace.str());
  const PlotResult plot = draw_plot(plot_script(env.config_dir, "plot_serve.py"),
                                    {"--requests", (dir / "requests.csv").string(), "--steps", (dir / "steps.csv").string(),
                                     "--title", fmt::format("{} on {}", o.spec.name, o.hw)},
                                    dir / "serve.png");
  if (!plot.drawn) err << "gpusim: no plot: " << plot.reason << "\n" << plot.output;
}

}  // namespace gpusim::cli
