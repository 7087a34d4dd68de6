#include "serve/serve_spec.h"

#include <fmt/format.h>

#include "hw/units.h"
#include "hw/yaml_document.h"
#include "serve/serve_parallelism.h"
#include "sim/error.h"
#include "sim/input_file.h"
#include "workloads/op_reader.h"

namespace gpusim::serve {
namespace {

constexpr std::int64_t kMaxTokens = std::int64_t{1} << 24;

sim::Time duration(hw::MappingReader& r, std::string_view key) {
  const std::string text = r.text(key);
  const auto q = hw::parse_quantity(text, hw::Quantity::kDuration);
  if (!q.ok() || q.value < 0) r.fail(key, q.ok() ? "must not be negative" : q.error);
  return sim::Time::from_seconds(q.value);
}

// The scheduler keys, on top of what `e` holds (a preset's values, then the file's).
void read_scheduler(const hw::YamlDocument& doc, const YAML::Node& node, const std::string& path, EngineSpec& e) {
  hw::MappingReader r(doc, node, path);
  auto& s = e.scheduler;
  if (r.has("max_num_batched_tokens")) s.max_num_batched_tokens = r.integer("max_num_batched_tokens", 1, kMaxTokens);
  if (r.has("max_num_seqs")) s.max_num_seqs = r.integer("max_num_seqs", 1, 1 << 20);
  if (r.has("block_size")) s.block_size = r.integer("block_size", 1, 1 << 16);
  if (r.has("num_blocks")) s.num_blocks = r.integer("num_blocks", 1, std::int64_t{1} << 40);
  if (r.has("gpu_memory_utilization")) e.gpu_memory_utilization = r.number("gpu_memory_utilization", 0.01, 1.0);
  if (r.has("chunked_prefill")) s.chunked_prefill = r.boolean("chunked_prefill");
  if (r.has("policy")) {
    s.policy = r.choice("policy", {"decode-first", "prefill-first"}) == "prefill-first"
                   ? SchedulerConfig::Policy::kPrefillFirst
                   : SchedulerConfig::Policy::kDecodeFirst;
  }
  r.reject_unknown();
}

// The engine-level keys of a preset or of the serve file itself.
void read_engine_keys(const hw::YamlDocument& doc, hw::MappingReader& r, EngineSpec& e) {
  if (const auto n = r.optional_node("scheduler")) {
    if (!n->IsMap()) r.fail("scheduler", "expected a mapping of scheduler settings");
    read_scheduler(doc, *n, r.path("scheduler"), e);
  }
  if (r.has("cuda_graph_max_tokens")) e.cuda_graph_max_tokens = r.integer("cuda_graph_max_tokens", 0, kMaxTokens);
  using K = workloads::ModelWorkload::ServingKernels;
  if (r.has("attention")) {
    const std::string a = r.choice("attention", {"split-decode", "unified-varlen", "paged-sdpa"});
    e.kernels.attention = a == "unified-varlen" ? K::Attention::kUnifiedVarlen
                          : a == "paged-sdpa"   ? K::Attention::kPagedSdpa
                                                : K::Attention::kSplitDecode;
  }
  if (const auto n = r.optional_node("padding")) {
    if (!n->IsMap()) r.fail("padding", "expected {queries: TOKENS, keys: TOKENS}");
    hw::MappingReader p(doc, *n, r.path("padding"));
    if (p.has("queries")) e.padding.queries = p.integer("queries", 0, kMaxTokens);
    if (p.has("keys")) e.padding.keys = p.integer("keys", 0, std::int64_t{1} << 40);
    p.reject_unknown();
  }
  if (r.has("graph_capture")) {
    e.graph_capture = r.choice("graph_capture", {"startup", "lazy"}) == "lazy" ? EngineSpec::GraphCapture::kLazy
                                                                              : EngineSpec::GraphCapture::kStartup;
  }
  if (r.has("request_overhead")) e.request_overhead = duration(r, "request_overhead");
  if (r.has("key_overhead")) e.key_overhead = duration(r, "key_overhead");
  if (r.has("attention_first_use")) e.attention_first_use = duration(r, "attention_first_use");
  if (r.has("fused_kernels")) {
    e.kernels.elementwise = r.choice("fused_kernels", {"cuda", "inductor"}) == "inductor" ? K::Elementwise::kInductor
                                                                                         : K::Elementwise::kCuda;
  }
  if (r.has("step_overhead")) e.step_overhead = duration(r, "step_overhead");
}

// The file of preset `name` (NAME + ext) in `dir`; a missing one fails `key` of `r`, listing what
// `dir` offers (`what`: "engine preset", "length distribution").
std::filesystem::path preset_file(hw::MappingReader& r, std::string_view key, const std::string& name,
                                  const std::filesystem::path& dir, const std::string& ext, std::string_view what) {
  const auto file = dir / (name + ext);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) {
    std::vector<std::string> names;
    for (const auto& f : std::filesystem::directory_iterator(dir, ec)) {
      if (f.path().extension() == ext) names.push_back(f.path().stem().string());
    }
    std::sort(names.begin(), names.end());
    r.fail(key, fmt::format("no {} '{}' in {} (there are: {})", what, name, dir.string(), fmt::join(names, ", ")));
  }
  return file;
}

EngineSpec load_engine(const std::string& name, const std::filesystem::path& engines_dir, hw::MappingReader& root) {
  const auto file = preset_file(root, "engine", name, engines_dir, ".yaml", "engine preset");
  const auto doc = hw::YamlDocument::from_file(file);
  hw::MappingReader r(doc, doc.root(), "");
  EngineSpec e;
  e.name = name;
  e.description = r.optional_text("description").value_or("");
  read_engine_keys(doc, r, e);
  r.reject_unknown();
  return e;
}

LengthSpec read_length(const hw::YamlDocument& doc, hw::MappingReader& r, std::string_view key) {
  const YAML::Node n = r.node(key);
  LengthSpec s;
  if (n.IsScalar()) {
    s.value = hw::to_integer(doc, n, r.path(key), 1, kMaxTokens);
    return s;
  }
  if (!n.IsMap()) r.fail(key, "expected a token count, {uniform: [MIN, MAX]}");
  hw::MappingReader m(doc, n, r.path(key));
  if (m.has("uniform")) {
    const YAML::Node u = m.node("uniform");
    if (!u.IsSequence() || u.size() != 2) m.fail("uniform", "expected [MIN, MAX]");
    s.kind = LengthSpec::Kind::kUniform;
    s.min = hw::to_integer(doc, u[0], m.path("uniform") + "[0]", 1, kMaxTokens);
    s.max = hw::to_integer(doc, u[1], m.path("uniform") + "[1]", s.min, kMaxTokens);
  } else {
    m.fail("uniform", "missing: a length spec is a token count or {uniform: [MIN, MAX]}");
  }
  m.reject_unknown();
  return s;
}

// A named length distribution of `dir` (configs/distributions), or an error listing them.
LengthPairs load_lengths(hw::MappingReader& r, const std::filesystem::path& dir) {
  return read_length_pairs(preset_file(r, "lengths", r.text("lengths"), dir, ".csv", "length distribution"));
}

void read_requests_keys(const hw::YamlDocument& doc, hw::MappingReader& root, ServeSpec& spec,
                        const std::filesystem::path& distributions_dir) {
  const YAML::Node node = root.node("requests");
  if (!node.IsMap()) root.fail("requests", "expected a mapping: file: PATH, or a generator (count, arrival, ...)");
  hw::MappingReader r(doc, node, "requests");
  if (r.has("file")) {
    const std::filesystem::path named = r.text("file");
    const auto file = named.is_absolute() ? named : doc.path().parent_path() / named;
    if (const std::string problem = input_file_problem(file); !problem.empty()) {
      r.fail("file", fmt::format("{}: {}", problem, file.string()));
    }
    spec.requests = read_requests(file);
    spec.requests_source = "file " + named.string();
    r.reject_unknown();
    return;
  }
  GeneratorSpec g;
  g.count = r.integer("count", 1, 10'000'000);
  const std::string arrival = r.choice("arrival", {"poisson", "fixed-rate", "all-at-once"});
  g.arrival.kind = arrival == "poisson"      ? ArrivalSpec::Kind::kPoisson
                   : arrival == "fixed-rate" ? ArrivalSpec::Kind::kFixedRate
                                             : ArrivalSpec::Kind::kAllAtOnce;
  if (g.arrival.kind != ArrivalSpec::Kind::kAllAtOnce) {
    g.arrival.rate = r.number("rate", 0, 1e9);
    if (!(g.arrival.rate > 0)) r.fail("rate", "must be more than 0 requests a second");
  } else if (r.has("rate")) {
    r.fail("rate", "all-at-once arrivals take no rate");
  }
  if (r.has("lengths")) {
    if (r.has("prompt_tokens") || r.has("output_tokens")) {
      r.fail("lengths", "lengths: draws prompt and output together; give it or prompt_tokens and output_tokens");
    }
    g.lengths = load_lengths(r, distributions_dir);
  } else {
    g.prompt = read_length(doc, r, "prompt_tokens");
    g.output = read_length(doc, r, "output_tokens");
  }
  g.seed = static_cast<std::uint64_t>(r.has("seed") ? r.integer("seed", 0, std::int64_t{1} << 62) : 0);
  r.reject_unknown();
  spec.requests = generate_requests(g);
  spec.requests_source = fmt::format("{} requests, {}{}{}, seed {}", g.count, arrival,
                                     g.arrival.rate > 0 ? fmt::format(" at {}/s", g.arrival.rate) : "",
                                     g.lengths ? ", lengths " + g.lengths->name : "", g.seed);
}

// A serve file's document (from a file or from text), read with `overrides` applied.
ServeSpec read_serve_spec(const hw::YamlDocument& doc, const std::vector<workloads::WorkloadOverride>& overrides,
                          const std::filesystem::path& engines_dir, const std::filesystem::path& models_dir) {
  workloads::apply_overrides(doc, overrides);
  try {
    hw::MappingReader root(doc, doc.root(), "");
    ServeSpec spec;
    spec.file = doc.label();
    spec.name = root.optional_text("name").value_or(std::filesystem::path(doc.label()).stem().string());
    spec.model.name = spec.name;
    spec.model.model = workloads::read_model_keys(doc, root, models_dir);
    spec.model.phase = workloads::Phase::kDecode;
    spec.model.lowering = workloads::Lowering::kFused;
    const auto dtype = workloads::read_optional_dtype(root, "dtype");
    spec.model.dtype = dtype.value_or(hw::DType::kBf16);
    if (spec.model.dtype == hw::DType::kFp32 || spec.model.dtype == hw::DType::kTf32) {
      root.fail("dtype", "serving engines run 16-bit or fp8 models: bf16, fp16 or fp8");
    }
    if (spec.model.model.mla) root.fail("model", "serving multi-head latent attention models is not modeled yet");
    spec.engine = load_engine(root.optional_text("engine").value_or("vllm-v1"), engines_dir, root);
    read_engine_keys(doc, root, spec.engine);
    spec.model.serving = spec.engine.kernels;
    // transformers' continuous batching runs the model's own (eager) code over the packed batch.
    if (spec.engine.kernels.attention == workloads::ModelWorkload::ServingKernels::Attention::kPagedSdpa) {
      spec.model.lowering = workloads::Lowering::kHfEager;
      if (spec.model.model.moe || spec.model.model.sliding_window) {
        root.fail("engine", "the paged-sdpa engine is modeled for dense models with full attention only");
      }
    }
    // After the lowering: the checks depend on it (tensor_parallel, expert_parallel).
    read_serve_parallelism(root, spec.model);
    // The length distributions sit beside the engine presets (configs/distributions).
    read_requests_keys(doc, root, spec, engines_dir.parent_path() / "distributions");
    if (const auto n = root.optional_node("slo")) {
      hw::MappingReader s(doc, *n, "slo");
      if (s.has("ttft")) spec.slo.ttft_s = duration(s, "ttft").seconds();
      if (s.has("tpot")) spec.slo.tpot_s = duration(s, "tpot").seconds();
      if (s.has("e2e")) spec.slo.e2e_s = duration(s, "e2e").seconds();
      s.reject_unknown();
    }
    root.reject_unknown();
    return spec;
  } catch (const ConfigError& e) {
    if (auto blamed = workloads::blame_override(e, doc, overrides)) throw *blamed;
    throw;
  }
}

}  // namespace

ServeSpec load_serve_spec(const std::filesystem::path& file, const std::vector<workloads::WorkloadOverride>& overrides,
                          const std::filesystem::path& engines_dir, const std::filesystem::path& models_dir) {
  return read_serve_spec(hw::YamlDocument::from_file(file), overrides, engines_dir, models_dir);
}

ServeSpec parse_serve_spec(std::string text, const std::string& label, const std::vector<workloads::WorkloadOverride>& overrides,
                           const std::filesystem::path& engines_dir, const std::filesystem::path& models_dir) {
  return read_serve_spec(hw::YamlDocument::from_string(std::move(text), label), overrides, engines_dir, models_dir);
}

}  // namespace gpusim::serve
