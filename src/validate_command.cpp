// `gpusim validate [--suite NAME]...`: compares simulation with reference data and prints every
// row (reference, simulated, error) with the mean absolute percentage error per op family,
// separately for calibration rows and held-out rows (never used to set a parameter). Writes
// the same as Markdown to docs/validation.md. Fails (exit 1) when a suite's held-out error
// exceeds its recorded threshold (validation/thresholds.yaml).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>
#include <yaml-cpp/yaml.h>

#include "hw/hardware_loader.h"
#include "hw/yaml_document.h"
#include "sim/error.h"
#include "src/commands.h"
#include "src/options.h"
#include "src/run_report.h"
#include "validation/measured_rows_json.h"
#include "validation/measured_suite.h"
#include "src/output_files.h"
#include "validation/error_bands.h"
#include "validation/kernel_class.h"
#include "validation/ranking.h"
#include "validation/grouped_probe_suite.h"
#include "validation/model_suite.h"
#include "validation/ncu_suite.h"
#include "validation/functional/functional_checks.h"
#include "validation/seed_suites.h"
#include "validation/host_suite.h"
#include "validation/cs336_suite.h"
#include "validation/replay_suite.h"
#include "validation/collective_suite.h"
#include "validation/tp_published_suite.h"
#include "validation/tp_steps_suite.h"
#include "validation/serve_requests_suite.h"
#include "validation/serve_steps_suite.h"
#include "validation/train_suite.h"

namespace gpusim::cli {
namespace {

struct SuiteSpec {
  std::string name, hw, csv, description;
  bool models = false;  // a model suite (hf_models_*.json) rather than single ops (ops*.csv)
  int seed = 0;  // 1, 2, 3: a seed suite (validation/seed_suites.h); csv lists its files, ", "-separated
  bool ncu = false;  // Nsight Compute kernel metrics (validation/ncu_suite.h), thresholds per metric
  bool host = false;  // eager wall times against the host section (validation/host_suite.h)
  bool cs336 = false;  // cs336_basics forwards (validation/cs336_suite.h)
  bool train = false;  // Hugging Face training steps (validation/train_suite.h)
  bool cs336_train = false;  // cs336_basics forward+backward steps (validation/cs336_suite.h)
  bool train_wall = false;  // eager wall time of training steps; csv lists the files, ", "-separated
  bool replay = false;  // profiler traces replayed (validation/replay_suite.h); csv: the traces' index
  bool serve_steps = false;  // continuous-batching steps (validation/serve_steps_suite.h)
  bool serve_requests = false;  // served request mixes (validation/serve_requests_suite.h)
  // NCCL collectives on a system preset (validation/collective_suite.h): 1 our measurements (csv
  // lists the files, ", "-separated), 2 published nccl-tests figures (hw: the H100 system; the
  // H200's is hgx-h200), 3 and 4 our CUDA-graph-timed measurements of 1 MiB and more, and below.
  int collectives = 0;
  // Tensor-parallel steps on a system preset: 1 tp_steps.py's layers (validation/tp_steps_suite.h;
  // csv lists the files, ", "-separated), 2 published serving figures (validation/tp_published_suite.h;
  // hw: the H100 system; the H200's is hgx-h200).
  int tensor_parallel = 0;
  // Collective and TP-step files no constant was fitted to: every row held out.
  bool never_fitted = false;
  // The grouped GEMM probes (validation/grouped_probe_suite.h; csv lists the files, ", "-separated).
  bool grouped_probe = false;
};

// Decision fidelity of a suite's rows (validation/ranking.h), calibration and held-out apart;
// nullopt for suites whose errors are not relative times.
std::optional<std::string> ranking_line(const std::vector<validation::Comparison>& rows) {
  std::vector<double> m[2], sim[2];
  for (const auto& r : rows) {
    if (r.error_kind != validation::ErrorKind::kRelative) return std::nullopt;
    const int k = r.reference.held_out ? 1 : 0;
    m[k].push_back(r.reference.measured_us);
    sim[k].push_back(r.simulated_us);
  }
  const auto part = [&](int k) {
    if (m[k].size() < 2) return std::string("-");
    const auto a = validation::rank_agreement(m[k], sim[k]);
    return fmt::format("Kendall tau {:.3f}, pairs ordered {:.1f}%, within 10% {:.0f}%", a.kendall_tau,
                       100.0 * a.pairs_ordered, 100.0 * a.within_10pct);
  };
  return fmt::format("ranking: calibration {}; held-out {}", part(0), part(1));
}

// A kernel's name up to its parameter list, at most 100 characters.
std::string name_without_parameters(const std::string& name) {
  std::string s = name.substr(0, name.find(">("));
  if (s.size() < name.size()) s += ">";
  return s.size() > 100 ? s.substr(0, 97) + "..." : s;
}

bool same_main_kernel(const validation::Comparison& r) {
  return validation::kernel_class(r.reference.primary_kernel) == validation::kernel_class(r.primary_kernel);
}

// Whether gpusim picks the kernel the library ran: the class (validation/kernel_class.h) of each
// op's primary simulated kernel against its primary measured one, over all ops and the GEMMs; and
// for GEMMs whose measured kernel names its tile, whether gpusim's is the same class and tile.
// nullopt where the reference has no per-kernel times.
std::optional<std::string> kernel_choice_line(const std::vector<validation::Comparison>& rows) {
  int compared = 0, agreed = 0, gemms = 0, gemms_agreed = 0, tiled = 0, tiles_agreed = 0;
  for (const auto& r : rows) {
    if (r.reference.primary_kernel.empty() || r.primary_kernel.empty()) continue;
    const bool same = same_main_kernel(r);
    ++compared;
    agreed += same ? 1 : 0;
    if (r.reference.family == "matmul" || r.reference.family == "linear") {
      ++gemms;
      gemms_agreed += same ? 1 : 0;
      const std::string tile = validation::kernel_tile(r.reference.primary_kernel);
      if (!tile.empty()) {
        ++tiled;
        tiles_agreed += same && validation::kernel_tile(r.primary_kernel) == tile ? 1 : 0;
      }
    }
  }
  if (compared == 0) return std::nullopt;
  std::string text = fmt::format("kernel as measured (the primary kernel's class, tiles aside): {} of {} ops ({:.1f}%)",
                                 agreed, compared, 100.0 * agreed / compared);
  if (gemms > 0) {
    text += fmt::format("; GEMMs {} of {} ({:.1f}%)", gemms_agreed, gemms, 100.0 * gemms_agreed / gemms);
  }
  if (tiled > 0) {
    text += fmt::format("; class and tile, of the {} GEMMs whose kernel names a tile: {} ({:.1f}%)", tiled,
                        tiles_agreed, 100.0 * tiles_agreed / tiled);
  }
  return text;
}

const std::vector<SuiteSpec>& suites() {
  static const std::vector<SuiteSpec> kSuites{
      {"functional", "h100", "",
       "functional CPU kernels (validation/functional/, TBB) running the cost models' "
       "decompositions CTA by CTA: numerics against double references, FLOPs and bytes against "
       "what the cost models charge"},
      {"measured-h100", "h100", "ops_h100.csv",
       "kernel times of single ops on an H100 SXM5 (PyTorch profiler, L2 flushed, median of 20)"},
      {"measured-h200", "h200", "ops_h200.csv",
       "the held-out shapes measured again on an H200 SXM (same method)"},
      {"measured2-h100", "h100", "ops2_h100.csv",
       "a second set on the H100: more calibration shapes and fresh held-out shapes"},
      {"measured2-h200", "h200", "ops2_h200.csv",
       "the second set's fresh held-out shapes on the H200"},
      {"measured3-h100", "h100", "ops3_h100.csv",
       "issue 16's random set on the H100: 402 op instances drawn at random (seed 16) from the "
       "space users hit (GEMMs log-uniform over 1..16384 in every dtype, aligned or not, norms and "
       "softmax, attention of real model configurations, elementwise), half held out at random; both "
       "halves used for the third round of changes"},
      {"measured3-h200", "h200", "ops3_h200.csv",
       "the same 402 instances on an H200 SXM"},
      {"measured4-h100", "h100", "ops4_h100.csv.gz",
       "issue 16's fresh random set on the H100: 402 instances drawn the same way with a new seed "
       "(17), every one held out; measured after set 3's held-out half had been seen, compared "
       "once after the second round of model changes, then used for the third"},
      {"measured4-h200", "h200", "ops4_h200.csv.gz",
       "the fresh set's 402 instances on an H200 SXM (all held out)"},
      {"measured5-h100", "h100", "ops5_h100.csv.gz",
       "issue 16's second fresh random set on the H100: 401 instances drawn the same way (seed "
       "18), all held out, measured after set 4 had been looked at and compared once after the "
       "second round's last change, then used for the third round"},
      {"measured5-h200", "h200", "ops5_h200.csv.gz",
       "the second fresh set on an H200 SXM (all held out)"},
      {"measured6-h100", "h100", "ops6_h100.csv.gz",
       "issue 16's third fresh random set on the H100: 401 instances drawn the same way (seed "
       "19), all held out, measured before the third round of model changes (which looked at sets "
       "3-5) and compared once after it"},
      {"measured6-h200", "h200", "ops6_h200.csv.gz",
       "the third fresh set on an H200 SXM (all held out)"},
      {"measured7-h100", "h100", "ops7_h100.csv.gz",
       "issue 16's fourth fresh random set on the H100: 400 instances drawn the same way (seed "
       "20), all held out, measured after the changes that followed set 6's comparison and "
       "compared once after the last of them"},
      {"measured7-h200", "h200", "ops7_h200.csv.gz",
       "the fourth fresh set on an H200 SXM (all held out)"},
      {"measured8-h100", "h100", "ops8_h100.csv.gz",
       "issue 16's fifth fresh random set on the H100: 403 instances drawn the same way (seed "
       "21), all held out, measured after the shallow align1 GEMM rules were written from sets "
       "3-7 and compared once after them"},
      {"measured8-h200", "h200", "ops8_h200.csv.gz",
       "the fifth fresh set on an H200 SXM (all held out)"},
      {"measured9-h100", "h100", "ops9_h100.csv.gz",
       "issue 16's sixth fresh random set on the H100: 403 instances drawn the same way (seed "
       "22), all held out, measured before the fifth round's changes (the L2 as a write-back "
       "cache, the cp.async shares) and compared once after them"},
      {"measured9-h200", "h200", "ops9_h200.csv.gz",
       "the sixth fresh set on an H200 SXM (all held out), measured at the end of issue 16's sixth "
       "round, after every change of the fifth and sixth, and compared once"},
      {"measured10-h100", "h100", "ops10_h100.csv.gz",
       "issue 16's seventh fresh random set on the H100: 401 instances drawn the same way (seed "
       "23), all held out, measured before the sixth round's changes (nvjet's K-step chain and "
       "split rule, the split-K reduce, the wmma kernel) and compared once after them"},
      {"measured10-h200", "h200", "ops10_h200.csv.gz",
       "the seventh fresh set on an H200 SXM (all held out), measured at the end of issue 16's "
       "sixth round, after its last change, and compared once"},
      {"measured11-h100", "h100", "ops11_h100.csv.gz",
       "issue 16's eighth fresh random set on the H100: 402 instances drawn the same way (seed "
       "24), all held out, measured before the seventh round's changes (the sm75 wmma kernel of "
       "fp16 align1 products, deep fp32 products off gemmSN, the bias split rule) and compared once "
       "after them"},
      {"measured11-h200", "h200", "ops11_h200.csv.gz",
       "the eighth fresh set on an H200 SXM (all held out), measured with the H100's and compared "
       "once after the seventh round"},
      {"measured12-h100", "h100", "ops12_h100.csv.gz",
       "issue 16's ninth fresh random set on the H100: 404 instances drawn the same way (seed "
       "25), all held out, measured after the seventh round's changes and before the cuDNN decode "
       "refit, and compared once after it"},
      {"measured12-h200", "h200", "ops12_h200.csv.gz",
       "the ninth fresh set on an H200 SXM (all held out), compared once with the H100's"},
      {"measured13-h100", "h100", "ops13_h100.csv.gz",
       "issue 16's tenth fresh random set on the H100: 403 instances drawn the same way (seed "
       "26), all held out, measured after the session's last change of issue 16's seventh and "
       "eighth rounds and compared once with that model"},
      {"measured13-h200", "h200", "ops13_h200.csv.gz",
       "the tenth fresh set on an H200 SXM (all held out), compared once with the same model"},
      {"measured14-h100", "h100", "ops14_h100.csv.gz",
       "issue 16's eleventh fresh random set on the H100: 403 instances drawn the same way (seed "
       "27), all held out, measured at the start of the ninth round and compared once with the "
       "round's final model"},
      {"measured15-h100", "h100", "ops15_h100.csv.gz",
       "issue 16's twelfth fresh random set on the H100: 399 instances drawn the same way (seed "
       "28), all held out, measured at the start of the ninth round, stored unread, and compared "
       "once in the tenth round (its later changes were made without looking at it again)"},
      {"measured16-h100", "h100", "ops16_h100.csv.gz",
       "issue 16's thirteenth fresh random set on the H100: 402 instances drawn the same way "
       "(seed 29), all held out, measured at the start of the tenth round, stored unread, and "
       "compared once with the round's final model"},
      {"measured15-h200", "h200", "ops15_h200.csv.gz",
       "the twelfth fresh set on an H200 SXM (all held out), measured at the end of the tenth "
       "round and compared once with its final model"},
      {"measured16-h200", "h200", "ops16_h200.csv.gz",
       "the thirteenth fresh set on an H200 SXM (all held out), measured at the end of the tenth "
       "round and compared once with its final model"},
      {"measured17-h100", "h100", "ops17_h100.csv.gz",
       "issue 16's fourteenth fresh random set on the H100: 402 instances drawn the same way "
       "(seed 30), all held out, measured at the tenth round's start, stored unread, and "
       "compared once with the eleventh round's final model"},
      {"measured17-h200", "h200", "ops17_h200.csv.gz",
       "the fourteenth fresh set on an H200 SXM (all held out), measured at the eleventh "
       "round's start, stored unread, and compared once with its final model"},
      {"measured18-h100", "h100", "ops18_h100.csv.gz",
       "issue 16's fifteenth fresh random set on the H100: 403 instances drawn the same way "
       "(seed 31), all held out, measured at the eleventh round's start, stored unread, and "
       "compared once with the twelfth round's final model"},
      {"measured18-h200", "h200", "ops18_h200.csv.gz",
       "the fifteenth fresh set on an H200 SXM (all held out), measured with the H100's, stored "
       "unread, and compared once with the twelfth round's final model"},
      {"measured19-h100", "h100", "ops19_h100.csv.gz",
       "issue 16's sixteenth fresh random set on the H100: 402 instances drawn the same way "
       "(seed 32), all held out, measured at the eleventh round's end, stored unread, and "
       "compared once with the twelfth round's final model (one change made after set 18's "
       "comparison)"},
      {"measured19-h200", "h200", "ops19_h200.csv.gz",
       "the sixteenth fresh set on an H200 SXM (all held out), measured with the H100's, stored "
       "unread, and compared once with the twelfth round's final model"},
      {"measured20-h100", "h100", "ops20_h100.csv.gz",
       "issue 16's seventeenth fresh random set on the H100: 401 instances drawn the same way "
       "(seed 33), all held out, measured at the twelfth round's end, stored unread, and "
       "compared once with the thirteenth round's final model"},
      {"measured20-h200", "h200", "ops20_h200.csv.gz",
       "the seventeenth fresh set on an H200 SXM (all held out), measured with the H100's, stored "
       "unread, and compared once with the thirteenth round's final model"},
      {"measured21-h100", "h100", "ops21_h100.csv.gz",
       "issue 16's eighteenth fresh random set on the H100: 403 instances drawn the same way "
       "(seed 34), all held out, measured in the thirteenth round after set 20's comparison, "
       "stored unread, and compared once with the round's final model"},
      {"measured21-h200", "h200", "ops21_h200.csv.gz",
       "the eighteenth fresh set on an H200 SXM (all held out), measured with the H100's, stored "
       "unread, and compared once with the thirteenth round's final model"},
      {"measured22-h100", "h100", "ops22_h100.csv.gz",
       "issue 16's nineteenth fresh random set on the H100: 400 instances drawn the same way "
       "(seed 35), all held out, measured at the thirteenth round's end, stored unread, and "
       "compared once after the fourteenth round's GEMV changes"},
      {"measured22-h200", "h200", "ops22_h200.csv.gz",
       "the nineteenth fresh set on an H200 SXM (all held out), measured with the H100's, stored "
       "unread, and compared once after the fourteenth round's GEMV changes"},
      {"measured23-h100", "h100", "ops23_h100.csv.gz",
       "issue 16's twentieth fresh random set on the H100: 400 instances drawn the same way "
       "(seed 36), all held out, measured in the fourteenth round before set 22's comparison, "
       "stored unread, and compared once after the round's GEMV and fp32 changes"},
      {"measured23-h200", "h200", "ops23_h200.csv.gz",
       "the twentieth fresh set on an H200 SXM (all held out), measured with the H100's, stored "
       "unread, and compared once after the fourteenth round's GEMV and fp32 changes"},
      {"measured24-h100", "h100", "ops24_h100.csv.gz",
       "issue 16's twenty-first fresh random set on the H100: 401 instances drawn the same way "
       "(seed 37), all held out, measured at the fourteenth round's end, stored unread, and "
       "compared once after the fifteenth round's changes"},
      {"measured24-h200", "h200", "ops24_h200.csv.gz",
       "the twenty-first fresh set on an H200 SXM (all held out), measured with the H100's, stored "
       "unread, and compared once after the fifteenth round's changes"},
      {"measured25-h100", "h100", "ops25_h100.csv.gz",
       "issue 16's twenty-second fresh random set on the H100: 402 instances drawn the same way "
       "(seed 38), all held out, measured in the fifteenth round, stored unread, and compared "
       "once after the sixteenth round's changes"},
      {"measured25-h200", "h200", "ops25_h200.csv.gz",
       "the twenty-second fresh set on an H200 SXM (all held out), measured with the H100's, "
       "stored unread, and compared once after the sixteenth round's changes"},
      {"measured26-h100", "h100", "ops26_h100.csv.gz",
       "issue 16's twenty-third fresh random set on the H100: 402 instances drawn the same way "
       "(seed 39), all held out, measured at the sixteenth round's start, stored unread, and "
       "compared once after the round's later changes (the deep-K slices, the reduce's groups)"},
      {"measured26-h200", "h200", "ops26_h200.csv.gz",
       "the twenty-third fresh set on an H200 SXM (all held out), measured with the H100's, "
       "stored unread, and compared once after the sixteenth round's later changes"},
      {"measured27-h100", "h100", "ops27_h100.csv.gz",
       "issue 16's twenty-fourth fresh random set on the H100: 403 instances drawn the same way "
       "(seed 40), all held out, measured in the sixteenth round after set 26's comparison, "
       "stored unread, and compared once after the round's last change (the first-miss queue)"},
      {"measured27-h200", "h200", "ops27_h200.csv.gz",
       "the twenty-fourth fresh set on an H200 SXM (all held out), measured with the H100's, "
       "stored unread, and compared once after the sixteenth round's last change"},
      {"measured28-h100", "h100", "ops28_h100.csv.gz",
       "issue 16's twenty-fifth fresh random set on the H100: 403 instances drawn the same way "
       "(seed 41), all held out, measured at the sixteenth round's end, stored unread, and "
       "compared once after the seventeenth round's first two changes (the wide K 2-3 variant, "
       "tf32's FFMA kernel)"},
      {"measured28-h200", "h200", "ops28_h200.csv.gz",
       "the twenty-fifth fresh set on an H200 SXM (all held out), measured at the seventeenth "
       "round's start, stored unread, and compared once after its first two changes"},
      {"measured29-h100", "h100", "ops29_h100.csv.gz",
       "issue 16's twenty-sixth fresh random set on the H100: 403 instances drawn the same way "
       "(seed 42), all held out, measured in the seventeenth round after set 28's comparison, "
       "stored unread, and compared once before the round's last change (the fp32 32x32 rule)"},
      {"measured29-h200", "h200", "ops29_h200.csv.gz",
       "the twenty-sixth fresh set on an H200 SXM (all held out), measured at the seventeenth "
       "round's start, stored unread, and compared once with the H100's"},
      {"measured30-h100", "h100", "ops30_h100.csv.gz",
       "issue 16's twenty-seventh fresh random set on the H100: 402 instances drawn the same way "
       "(seed 43), all held out, measured at the seventeenth round's end, stored unread, and "
       "compared once at the eighteenth round's start with the seventeenth round's final model"},
      {"measured30-h200", "h200", "ops30_h200.csv.gz",
       "the twenty-seventh fresh set on an H200 SXM (all held out), measured with the H100's, "
       "stored unread, and compared once at the eighteenth round's start"},
      {"measured31-h100", "h100", "ops31_h100.csv.gz",
       "issue 16's twenty-eighth fresh random set on the H100: 403 instances drawn the same way "
       "(seed 44), all held out, measured at the eighteenth round's start, stored unread, and "
       "compared once after the round's first change (softmax's tails and shifted rows)"},
      {"measured32-h100", "h100", "ops32_h100.csv.gz",
       "issue 16's twenty-ninth fresh random set on the H100: 404 instances drawn the same way "
       "(seed 45), all held out, measured in the eighteenth round after its softmax change, "
       "stored unread, and compared once after the round's third change (the CUTLASS SIMT "
       "prologue; the tf32 column split came after)"},
      {"measured31-h200", "h200", "ops31_h200.csv.gz",
       "the twenty-eighth fresh set on an H200 SXM (all held out), measured at the eighteenth "
       "round's end after all its changes, stored unread, and compared once with its final model"},
      {"measured32-h200", "h200", "ops32_h200.csv.gz",
       "the twenty-ninth fresh set on an H200 SXM (all held out), measured at the eighteenth "
       "round's end after all its changes, stored unread, and compared once with its final model"},
      {"measured33-h100", "h100", "ops33_h100.csv.gz",
       "issue 16's thirtieth fresh random set on the H100: drawn the same way (seed 46), all "
       "held out, measured in the eighteenth round after set 32's comparison, stored unread, and "
       "compared once at the nineteenth round's start with the eighteenth round's final model"},
      {"measured33-h200", "h200", "ops33_h200.csv.gz",
       "the thirtieth fresh set on an H200 SXM (all held out), measured at the eighteenth round's "
       "end, stored unread, and compared once at the nineteenth round's start"},
      {"measured34-h100", "h100", "ops34_h100.csv.gz",
       "issue 16's thirty-first fresh random set on the H100: drawn the same way (seed 47), all "
       "held out, measured at the nineteenth round's start, stored unread, and compared once "
       "after the round's changes (the LayerNorm turns, the shallow fp32 slices and 128x64 "
       "variant, cuDNN decode's tile turns, the align1 slices to K = 264)"},
      {"measured34-h200", "h200", "ops34_h200.csv.gz",
       "the thirty-first fresh set on an H200 SXM (all held out), measured with the H100's at the "
       "nineteenth round's start, stored unread, and compared once after the round's changes"},
      {"measured35-h100", "h100", "ops35_h100.csv.gz",
       "issue 16's thirty-second fresh random set on the H100: drawn the same way (seed 48), all "
       "held out, measured in the nineteenth round after set 34's comparison, stored unread, and "
       "compared once at the twentieth round's start with the nineteenth round's final model"},
      {"measured35-h200", "h200", "ops35_h200.csv.gz",
       "the thirty-second fresh set on an H200 SXM (all held out), measured with the H100's in the "
       "nineteenth round, stored unread, and compared once at the twentieth round's start"},
      {"measured36-h100", "h100", "ops36_h100.csv.gz",
       "issue 16's thirty-third fresh random set on the H100: drawn the same way (seed 49), all "
       "held out, measured at the twentieth round's start, stored unread, and compared once after "
       "the round's changes (the L2 reuse curve, the measured block-scheduler pace, the row "
       "reduce's chain)"},
      {"measured36-h200", "h200", "ops36_h200.csv.gz",
       "the thirty-third fresh set on an H200 SXM (all held out), measured with the H100's at the "
       "twentieth round's start, stored unread, and compared once after the round's changes"},
      {"measured37-h100", "h100", "ops37_h100.csv.gz",
       "issue 16's thirty-fourth fresh random set on the H100: drawn the same way (seed 50), all "
       "held out, measured in the twentieth round after set 36's comparison, stored unread, and "
       "compared once at the twenty-first round's start with the twentieth round's final model"},
      {"measured37-h200", "h200", "ops37_h200.csv.gz",
       "the thirty-fourth fresh set on an H200 SXM (all held out), measured with the H100's in the "
       "twentieth round, stored unread, and compared once at the twenty-first round's start"},
      {"measured38-h200", "h200", "ops38_h200.csv.gz",
       "issue 16's thirty-fifth fresh random set, on an H200 SXM: drawn the same way (seed 51), "
       "all held out, measured at the twenty-first round's start (no H100 was lent that round), "
       "stored unread, and compared once after the round's changes (the L2 dirty lines without "
       "cancellation, MoE routing as random top-k routing hits)"},
      {"measured39-h200", "h200", "ops39_h200.csv.gz",
       "issue 16's thirty-sixth fresh random set, on an H200 SXM: drawn the same way (seed 52), "
       "all held out, measured in the twenty-first round after set 38's comparison, stored "
       "unread, and compared once at the twenty-second round's start with the twenty-first "
       "round's final model"},
      {"measured40-h200", "h200", "ops40_h200.csv.gz",
       "issue 16's thirty-seventh fresh random set, on an H200 SXM: drawn the same way (seed 53), "
       "all held out, measured at the twenty-second round's start (no H100 was lent), stored "
       "unread, and compared once at the twenty-third round's start with the twenty-second "
       "round's final model"},
      {"measured41-h200", "h200", "ops41_h200.csv.gz",
       "issue 16's thirty-eighth fresh random set, on an H200 SXM: drawn the same way (seed 54), "
       "all held out, measured at the twenty-third round's start before any change (no H100 was "
       "lent), stored unread, and compared once after the round's changes"},
      {"measured42-h200", "h200", "ops42_h200.csv.gz",
       "issue 16's thirty-ninth fresh random set, on an H200 SXM: drawn the same way (seed 55), "
       "all held out, measured in the twenty-third round after set 41's comparison, stored "
       "unread, and compared once at the twenty-fourth round's start with the twenty-third "
       "round's final model"},
      {"measured43-h200", "h200", "ops43_h200.csv.gz",
       "issue 16's fortieth fresh random set, on an H200 SXM: drawn the same way (seed 56), all "
       "held out, measured at the twenty-fourth round's start before any change (no H100 was "
       "lent), stored unread, and compared once after the round's changes"},
      {"measured44-h200", "h200", "ops44_h200.csv.gz",
       "issue 16's forty-first fresh random set, on an H200 SXM: drawn the same way (seed 57), "
       "all held out, measured after the twenty-fourth round's last change, stored unread, and "
       "compared once at the twenty-fifth round's start with the twenty-fourth round's final "
       "model"},
      {"measured45-h200", "h200", "ops45_h200.csv.gz",
       "issue 16's forty-second fresh random set, on an H200 SXM: drawn the same way (seed 58), "
       "all held out, measured at the twenty-fifth round's start before any change, stored "
       "unread, and compared once at the round's end (its op models unchanged since the "
       "twenty-fourth round)"},
      {"probe-small-gemm-h200", "h200", "small_gemm_h200.csv.gz",
       "a probe of cuBLAS's few-row products on an H200 SXM (calibration data, a fixed grid): 16-bit "
       "matmuls of 2-6 rows with 2- or 4-element rows, fp32 and 16-bit one-row matmuls "
       "(validation/measure/small_gemm_probe.py)"},
      {"probe-shallow-gemm-h200", "h200", "shallow_gemm_h200.csv.gz",
       "a probe of cuBLAS's shallow and mid-depth unaligned products on an H200 SXM (calibration "
       "data, a fixed grid): bf16 single-element rows of K = 2-7, fp16 single-element rows of K = "
       "362-926, bf16 4-byte rows of K = 2-14 (validation/measure/shallow_gemm_probe.py)"},
      {"probe-align1-split-h200", "h200", "align1_split_h200.csv.gz",
       "a probe of cuBLAS's K splits for bf16 products of single-element rows on an H200 SXM "
       "(calibration data, a fixed grid: rows 8-3000, columns 17-5001, K 33-8101; "
       "validation/measure/align1_split_probe.py)"},
      {"measured-models-h100", "h100", "hf_models_h100.json.gz",
       "Hugging Face transformers 5.17 models (eager, sdpa, bf16) on an H100 SXM5: prefill, decode "
       "and generate, kernel time summed over the case (PyTorch profiler, L2 flushed once); "
       "held-out 8.9% at the first look, one fix made after it (grouped GEMM kernel choice, "
       "docs/workloads.md)",
       true},
      {"measured-models2-h100", "h100", "hf_models2_h100.json.gz",
       "a fresh set of 15 HF model cases (Llama-3.2 1B/3B, Qwen2-7B, GPT-2 XL, more Mistral, "
       "Llama-3-8B and Mixtral shapes), measured after the hf-eager lowering was final and "
       "evaluated once",
       true},
      {"measured-models2-h200", "h200", "hf_models2_h200.json.gz",
       "the fresh set on an H200, evaluated once",
       true},
      {"measured-models-h200", "h200", "hf_models_h200.json.gz",
       "the same 24 cases measured on an H200 SXM (nothing on the H200 was used to fit anything; "
       "the split column repeats the H100's)",
       true},
      {"measured-models3-h100", "h100", "hf_models3_h100.json.gz",
       "issue 13's families on an H100 SXM5: Qwen3, Qwen3-MoE, Gemma 2 and 3, Phi-3 and Phi-4-mini, "
       "DeepSeek-V2-Lite, DeepSeek-V3 and Moonlight (MLA), Mistral with a sliding window; 18 "
       "calibration and 18 held-out cases (validation/data/README-hf-models.md)",
       true},
      {"measured-models3-h200", "h200", "hf_models3_h200.json.gz",
       "the same 36 cases on an H200 SXM (nothing on the H200 was used to fit anything)",
       true},
      {"measured-models4-h100", "h100", "hf_models4_h100.json.gz",
       "issue 13's families, second set on an H100 SXM5: new sizes (Qwen3-4B, Gemma-2-9B, "
       "Gemma-3-4B, Phi-3-medium) and shapes; 4 calibration and 19 held-out cases, measured "
       "before the second round of changes and compared once after it",
       true},
      {"measured-models4-h200", "h200", "hf_models4_h200.json.gz",
       "the second set on an H200 SXM (nothing on the H200 was used to fit anything)",
       true},
      {"measured-models5-h100", "h100", "hf_models5_h100.json.gz",
       "issue 16's sixteenth round: 6 small-batch MoE decode cases on an H100 SXM5 (Mixtral, "
       "Qwen3-MoE and DeepSeek-V2-Lite shapes at 2 and 8 tokens, where routing leaves experts "
       "idle), measured to test a routing default (not kept) and compared once",
       true},
      {"measured-models5-h200", "h200", "hf_models5_h200.json.gz",
       "the same 6 cases on an H200 SXM", true},
      {"measured-models6-h200", "h200", "hf_models6_h200.json.gz",
       "issue 16's twenty-second round: 10 fresh MoE cases on an H200 SXM (Mixtral-4L and "
       "Qwen3-MoE-4L decodes at 1, 4 and 16 tokens and 128-token prefills, DeepSeek-V2-Lite-4L "
       "decodes at 4 and 16), measured before the grouped GEMM's decode stream was compared with "
       "them, all held out, compared once after it",
       true},
      {"measured-models7-h200", "h200", "hf_models7_h200.json.gz",
       "the same round: 8 fresh MoE cases on an H200 SXM (Qwen3-MoE-4L prefills of 64 and 2 x 128 "
       "tokens and a 64-token decode, Mixtral-4L's 64-token prefill and 32-token decode, "
       "DeepSeek-V2-Lite-4L's 128-token prefill and decodes at 1 and 32), measured after set 6's "
       "comparison, all held out, compared once with the same model",
       true},
      {"measured-models8-h200", "h200", "hf_models8_h200.json.gz",
       "issue 16's twenty-fifth round: 10 fresh MoE cases on an H200 SXM with their routing "
       "recorded and given to the simulation (Qwen3-MoE-4L prefills of 96, 256 and 4 x 128 "
       "tokens and decodes of 8 and 32, Mixtral-4L's 256-token prefill and 8-token decode, "
       "DeepSeek-V2-Lite-4L's prefills of 256 and 2 x 128 and 16-token decode), all held out, "
       "compared once",
       true},
      {"measured-models9-h200", "h200", "hf_models9_h200.json.gz",
       "the same round: 8 fresh MoE cases on an H200 SXM with their routing recorded and given "
       "(Qwen3-MoE-4L prefills of 1,024 and 2 x 384 tokens and a 128-token decode, Mixtral-4L's "
       "prefills of 512 and 2 x 160 and 64-token decode, DeepSeek-V2-Lite-4L's prefills of 1,024 "
       "and 4 x 192), measured after set 8's comparison, all held out, compared once after the "
       "grouped GEMM's multi-tile streams",
       true},
      {.name = "probe-grouped-mm-h200",
       .hw = "h200",
       .csv = "grouped_mm_h200.json.gz, grouped_mm2_h200.json.gz, grouped_mm3_h200.json.gz, "
              "grouped_mm4_h200.json.gz",
       .description =
           "probes of torch._grouped_mm's grouped kernel alone on an H200 SXM (calibration data): "
           "the expert shapes of Qwen3-MoE, DeepSeek-V2-Lite and Mixtral with 1-128 experts hit "
           "and 1-192 rows an expert, evenly or skewed (validation/measure/grouped_mm_probe.py, "
           "sets 1-4)",
       .grouped_probe = true},
      {"seed001", "h100", "seed001_sdpa_h100.csv, ops_h100.csv",
       "seed 001's H100 SDPA baseline (PyTorch 2.4.1, B=16 S=512 D=64 fp16, H=8..128): per-head "
       "kernel time against the reported figures and against our own H100 measurement of the "
       "same shapes",
       false, 1},
      {"seed002", "rtx5090", "seed002_forward_rtx5090.csv, seed002_attention_a800.csv, seed002_gemm_share_rtx5090.csv",
       "seed 002 (CS336): fp32 forward and forward+backward steps of the CS336 models on an RTX 5090 "
       "(eager, Python wall time), their out-of-memory status and GEMM share of kernel time; naive "
       "fp32 attention forward and backward measured on an 80 GB A800, simulated on the a100 preset",
       false, 2},
      {"seed003", "rtx5090", "seed003_deepseek_ocr_rtx5090.csv",
       "seed 003: DeepSeek-OCR decode on an RTX 5090, kernel-time shares by category, bound "
       "classes of the 20 costliest kernels by the seed's own rule (gpusim's four classes beside "
       "them) and their mean achieved occupancy",
       false, 3},
      {"cs336-h100", "h100", "cs336_forward_h100.json",
       "fp32 forward passes of the cs336_basics model structure (seed 002's model; small, medium, "
       "large at batch 4) on an H100 SXM5, 2026-11-25, against the cs336-basics lowering: kernel "
       "time of a forward; the lowering was written from the source before this measurement, "
       "nothing fitted to it",
       false, 0, false, false, true},
      {"cs336-h200", "h200", "cs336_forward_h200.json",
       "the same forwards on an H200 SXM, measured after the H100 comparison (the lowering unchanged since, "
       "nothing fitted)",
       false, 0, false, false, true},
      {"cs336-train-h100", "h100", "cs336_train_h100.json.gz",
       "fp32 forward+backward steps of the cs336_basics model structure (small, medium, large at batch 4; "
       "no optimizer step) on an H100 SXM5, 2026-11-25 (validation/measure/cs336_train.py): kernel time of "
       "the forward with the loss, the backward and the step, memory above the weights at the peak and "
       "before the backward; the cs336-basics training lowering was written from the source and autograd's "
       "formulas, with the calibration cases' kernel lists looked at for the loss's and amax's kernels",
       false, 0, false, false, false, false, true},
      {"cs336-train-h200", "h200", "cs336_train_h200.json.gz",
       "the same training steps on an H200 SXM",
       false, 0, false, false, false, false, true},
      {"train-h100", "h100", "hf_train_h100.json.gz",
       "Hugging Face training steps (transformers 5.17, PyTorch 2.11, bf16, sdpa; AdamW foreach, fused "
       "AdamW, SGD) on an H100 SXM5, 2026-11-25: kernel time of the forward with the loss, the backward, "
       "the optimizer and the whole step, and the step's memory peak above weights and optimizer state; "
       "the train lowering was written from the calibration cases' kernel lists, the held-out cases "
       "compared once",
       false, 0, false, false, false, true},
      {"train-h200", "h200", "hf_train_h200.json.gz",
       "the same training steps on an H200 SXM (nothing on the H200 used to write the lowering)",
       false, 0, false, false, false, true},
      {"train2-h100", "h100", "hf_train2_h100.json.gz",
       "training steps, set 2, on an H100 SXM5, 2026-11-25 05:47 UTC: activation checkpointing, gradient "
       "accumulation, forward and backward only, fresh plain shapes (and autocast and GPT-2 cases, not "
       "modeled); measured after checkpointing and accumulation were lowered, compared once",
       false, 0, false, false, false, true},
      {"train2-h200", "h200", "hf_train2_h200.json.gz", "the same set 2 on an H200 SXM",
       false, 0, false, false, false, true},
      {"train3-h100", "h100", "hf_train3_h100.json.gz",
       "training steps, set 3, on an H100 SXM5, 2026-11-25 20:31 UTC: mixture of experts (Qwen3-MoE, "
       "Mixtral, DeepSeek-V2-Lite with MLA), Phi-3-mini and Gemma 3, bf16, AdamW; measured before these "
       "families were lowered for training, each family's held-out cases compared once",
       false, 0, false, false, false, true},
      {"train4-h100", "h100", "hf_train4_h100.json.gz",
       "training steps, set 4, on an H100 SXM5, 2026-11-25 22:54 UTC: a tuned trainer's step (the model "
       "compiled by TorchInductor, fused AdamW) against the fused lowering's training step, and fp32 eager "
       "steps (no autocast, no TF32) against hf-eager; Llama, Qwen2 and Qwen3 shapes; measured before either "
       "was lowered, each kind's held-out cases compared once",
       false, 0, false, false, false, true},
      {"train3-h200", "h200", "hf_train3_h200.json.gz",
       "training steps, set 3, on an H200 SXM, 2026-11-25 23:45 UTC (nothing on the H200 used to write the "
       "lowering: each case compared once)",
       false, 0, false, false, false, true},
      {"train4-h200", "h200", "hf_train4_h200.json.gz",
       "training steps, set 4, on an H200 SXM, 2026-11-25 23:42 UTC: the tuned trainer's compiled steps and the "
       "fp32 eager steps (nothing on the H200 used to write the lowerings: each case compared once)",
       false, 0, false, false, false, true},
      {"replay-h100", "h100", "traces/index.json",
       "PyTorch profiler traces (record_shapes) of 36 programs in six sets recorded on an H100 and an H200, "
       "2026-11-25/26 (validation/measure/replay_traces.py), replayed with gpusim replay on the H100 preset: the "
       "H100 trace (same-chip) and the H200 trace --from h200 (cross-chip), against the H100's recorded kernel "
       "time; the replay rules were written from set 1's H100 traces and changed after sets 2-4 were compared "
       "(index.json says how); set 6, recorded after the last change, held out and compared once",
       false, 0, false, false, false, false, false, false, true},
      {"replay-h200", "h200", "traces/index.json",
       "the same traces replayed on the H200 preset: the H200 trace (same-chip) and the H100 trace --from h100 "
       "(cross-chip), against the H200's recorded kernel time",
       false, 0, false, false, false, false, false, false, true},
      {"serve-steps-h100", "h100", "serve_steps_h100.json.gz",
       "continuous-batching steps (ragged batches of prefill chunks and decodes) of Llama-3.2-1B- and Llama-3-8B-"
       "shaped models on an H100, 2026-11-26 02:44 UTC (validation/measure/serve_steps.py: a PyTorch stand-in "
       "engine with Inductor-fused norms, RoPE and activation, cuBLAS GEMMs, FlashAttention-2's varlen forward), "
       "against gpusim serve's ragged steps with that engine's kernels (configs/engines/pytorch-fa2-varlen.yaml); "
       "set 1: its held-out half was compared once (23.9%), then the lowering changed: all calibration",
       false, 0, false, false, false, false, false, false, false, true},
      {"serve-steps2-h100", "h100", "serve_steps2_h100.json.gz",
       "set 2: 24 fresh steps (seed 15) on the H100, 2026-11-26 03:25 UTC, measured after the last change, all "
       "held out, compared once",
       false, 0, false, false, false, false, false, false, false, true},
      {"serve-steps2-h200", "h200", "serve_steps2_h200.json.gz",
       "set 2 on an H200 SXM, 2026-11-26 03:27 UTC (nothing measured on the H200 was used to fit anything), "
       "compared once",
       false, 0, false, false, false, false, false, false, false, true},
      {"serve-requests-h100", "h100", "serve_requests_h100.json",
       "request mixes served by Hugging Face transformers 5.17's continuous batching (paged|sdpa, CUDA graphs, "
       "generate_batch's configuration) on an H100, 2026-11-26 05:24-06:27 UTC (validation/measure/"
       "serve_requests.py: Llama-3.2-1B- and Llama-3-8B-shaped models, bursts and Poisson arrivals), against "
       "gpusim serve with configs/engines/hf-paged-sdpa-graphs.yaml: sets 1 and 2 (each mix served once before "
       "the recorded run; the simulation does the same), 3 (fresh engines) and 4 calibration, set 5 (a fresh "
       "machine, each mix a fresh process, 06:25 UTC, measured after the last change) held out",
       false, 0, false, false, false, false, false, false, false, false, true},
      {"nccl-h100", "dgx-h100", "nccl_h100x2.json, nccl_h100x4.json",
       "NCCL all-reduce, all-gather, reduce-scatter and all-to-all (bf16, torch.distributed, NVLS off) on 2 and 4 "
       "H100 SXM of one NVSwitch machine, 2026-11-26 10:23 UTC (validation/measure/nccl_collectives.py), against "
       "the collective model on dgx-h100: messages of 16 MiB and more (smaller calls are host-bound through "
       "PyTorch); 64 MiB and 1 GiB calibrated the link efficiency, 16 and 256 MiB held out",
       false, 0, false, false, false, false, false, false, false, false, false, 1},
      {"nccl-h200", "hgx-h200", "nccl_h200x2.json, nccl_h200x4.json",
       "the same on 2 and 4 H200 SXM, 2026-11-26 00:47 UTC, against hgx-h200 (its efficiency copied from the H100's "
       "calibration: nothing fitted to these files)",
       false, 0, false, false, false, false, false, false, false, false, false, 1},
      {"nccl-graph-h100", "dgx-h100",
       "nccl_h100x2_graph.json, nccl_h100x4_graph.json, nccl_h100x2_graph_half.json, nccl_h100x4_graph_half.json, "
       "nccl_h100x2_graph_third.json, nccl_h100x4_graph_third.json",
       "the same collectives timed as calls replayed from a CUDA graph (nccl_collectives.py --graph: the GPU's time "
       "a call, without Python's launch of each) on 2 and 4 H100 SXM of one NVSwitch machine, against dgx-h100, "
       "messages of 1 MiB and more: the 13:39 UTC files (4^k KiB) are calibration (their rows below 1 MiB "
       "calibrated the per-call latency), the half-step sizes (2 x 4^k KiB, 13:54 UTC, measured after) and a "
       "third grid (3 x 4^k KiB, 14:32 UTC) held out",
       false, 0, false, false, false, false, false, false, false, false, false, 3},
      {"nccl-graph-small-h100", "dgx-h100",
       "nccl_h100x2_graph.json, nccl_h100x4_graph.json, nccl_h100x2_graph_half.json, nccl_h100x4_graph_half.json, "
       "nccl_h100x2_graph_third.json, nccl_h100x4_graph_third.json",
       "the same CUDA-graph-timed calls below 1 MiB (4-512 KiB: latency-bound, NCCL's LL protocol): 4, 16, 64 and "
       "256 KiB calibrated system.interconnect.call_latency (5-8 us tried, 7 us best); 8, 32, 128 and 512 KiB "
       "(13:54 UTC) and 12, 48, 192 and 768 KiB (14:32 UTC) held out",
       false, 0, false, false, false, false, false, false, false, false, false, 4},
      {"nccl-graph-h200", "hgx-h200",
       "nccl_h200x2_graph.json, nccl_h200x4_graph.json, nccl_h200x2_graph_half.json, nccl_h200x4_graph_half.json, "
       "nccl_h200x2_graph_third.json, nccl_h200x4_graph_third.json",
       "the same three size grids timed from CUDA graphs on 2 and 4 H200 SXM of one NVSwitch machine "
       "(2026-11-26 21:29-21:32 UTC), against hgx-h200, messages of 1 MiB and more; its link efficiency and "
       "per-call latency are the H100's: nothing fitted to these files, every row held out",
       false, 0, false, false, false, false, false, false, false, false, false, 3, 0, true},
      {"nccl-graph-small-h200", "hgx-h200",
       "nccl_h200x2_graph.json, nccl_h200x4_graph.json, nccl_h200x2_graph_half.json, nccl_h200x4_graph_half.json, "
       "nccl_h200x2_graph_third.json, nccl_h200x4_graph_third.json",
       "the same H200 calls below 1 MiB; every row held out",
       false, 0, false, false, false, false, false, false, false, false, false, 4, 0, true},
      {"nccl-published", "dgx-h100", "published_multi_gpu.json",
       "published nccl-tests bus bandwidths of 8-GPU HGX H100 and H200 machines (Azure ND H100/H200 v5 tables, "
       "NCCL 2.18-2.20, NVLS on; Bekman's ml-engineering H200 figures with NVLS on and off), 16 MiB and more, "
       "against dgx-h100 and hgx-h200 with NVLS as the source ran it; never fitted to",
       false, 0, false, false, false, false, false, false, false, false, false, 2},
      {"tp-steps-h100", "dgx-h100",
       "tp_steps_h100_tp1.json, tp_steps_h100_tp2.json, tp_steps_h100_tp4.json, tp_steps_h100_repeat_tp1.json, "
       "tp_steps_h100_repeat_tp2.json, tp_steps_h100_repeat_tp4.json",
       "Megatron tensor-parallel layers (validation/measure/tp_steps.py: 4 Llama-3-8B- or 70B-shaped bf16 layers, "
       "prefill of 1024 tokens at batch 1 and 8, decode against 2048 cached tokens at batch 1 and 32) on 1, 2 and 4 "
       "H100 SXM of one NVSwitch machine (2026-11-26 10:27 UTC), against the script's own layer as an op workload "
       "(rms_norm, fused QKV linear, rope on q and k, sdpa or the cache write and sdpa_decode, o linear, allreduce, "
       "add, rms_norm, gate_up linear, silu and mul on its chunks, down linear, allreduce, add) on dgx-h100 with the "
       "measured TP degree: the CUDA-graph step, and rank 0's compute kernels (NCCL's profiled time includes waiting "
       "for the other ranks' eager launches, so it is left out). Split fixed before any comparison: TP 1 and 2 "
       "calibration, TP 4 held out; a repeat run on a fresh 4-H100 machine (13:10 UTC) held out whole; nothing was "
       "fitted to these files",
       false, 0, false, false, false, false, false, false, false, false, false, 0, 1},
      {"tp-steps-h200", "hgx-h200", "tp_steps_h200_tp1.json, tp_steps_h200_tp2.json, tp_steps_h200_tp4.json",
       "the same layers and cases on 1, 2 and 4 H200 SXM of one NVSwitch machine (2026-11-26 21:28 UTC), against "
       "hgx-h200: nothing fitted to these files, every row held out",
       false, 0, false, false, false, false, false, false, false, false, false, 0, 1, true},
      {"tp-published", "dgx-h100", "published_multi_gpu.json",
       "published tensor-parallel serving figures of 70B Llama models (the file's tp_decode entries: vLLM on Lambda's "
       "H100s, NVIDIA NIM, TensorRT-LLM's docs, Azure ND H100/H200 v5, vLLM CI; each row names its source) against "
       "the fused lowering with the entry's model, batch, lengths, precision and TP degree, CUDA graphs, on dgx-h100 "
       "(hgx-h200 for H200 entries); never fitted to. Rows marked approx reproduce the entry's setup only in part",
       false, 0, false, false, false, false, false, false, false, false, false, 0, 2},
      {"host-h100", "h100", "host_walls_h100.json",
       "eager wall time of Hugging Face forwards (transformers 5.17, PyTorch 2.11, bf16) on the lent "
       "H100 machine's host, one session (2026-11-24 23:41 UTC): the layer sweep the preset's host "
       "section was fitted on (`gpusim hw fit-host`), then 35 full-size cases of 12 families "
       "(prefill, decode, generate) held out",
       false, 0, false, true},
      {"host-h200", "h200", "host_walls_h200.json",
       "the same on the lent H200 machine's host (its own session and fit)",
       false, 0, false, true},
      {"train-host-h100", "h100", "hf_train_h100.json.gz, hf_train2_h100.json.gz, hf_train3_h100.json.gz",
       "eager wall time of the Hugging Face training steps of sets 1-3 on the lent H100 machine (CUDA events "
       "around an unprofiled step, host included; sessions of 2026-11-25 02:37, 05:47 and 20:31 UTC) "
       "against --mode eager: host.backward_kernel_issue fitted on sets 1 and 2's calibration cases "
       "(validation/measure/fit_train_host.py), the forward's host costs from the forwards' own sweep",
       false, 0, false, false, false, false, false, true},
      {"train-host-h200", "h200", "hf_train_h200.json.gz, hf_train2_h200.json.gz",
       "the same on the lent H200 machine (sets 1 and 2; its own fit)",
       false, 0, false, false, false, false, false, true},
      {"ncu-h100", "h100", "ncu_h100.csv",
       "Nsight Compute 2025.3.1 metrics of the kernels of 28 single ops on an H100 SXM5 (cache "
       "flushed before each kernel, clocks as found) against gpusim's kernel metrics: achieved "
       "and theoretical occupancy, DRAM throughput, L2 hit rate and SM throughput (errors in "
       "percentage points), duration (relative error); one constant was fitted to these data, on "
       "the calibration rows' SM throughput (issued instructions per L2 byte, "
       "hw/kernel_metrics.cpp)",
       false, 0, true},
  };
  return kSuites;
}

struct SuiteOutcome {
  std::string name;
  double held_out_mape = 0, calibration_mape = 0;
  double threshold = 0;  // 0: none recorded
  bool failed = false;
};

std::string split_name(const validation::Comparison& c) {
  return c.reference.held_out ? "held-out" : "calibration";
}

// Per family: MAPE over calibration rows, held-out rows, all rows.
std::string family_table(const std::vector<validation::Comparison>& rows, bool markdown) {
  std::map<std::string, int> families;
  std::map<std::string, validation::ErrorKind> kind;  // a family's rows share one kind
  for (const auto& r : rows) {
    families[r.reference.family]++;
    kind[r.reference.family] = r.error_kind;
  }
  std::ostringstream out;
  const char* fmt_row = markdown ? "| {} | {} | {} | {} | {} |\n" : "  {:<18} {:>6} {:>14} {:>12} {:>10}\n";
  out << fmt::format(fmt::runtime(fmt_row), "family", "ops", "calibration", "held-out", "all");
  if (markdown) out << "|---|---:|---:|---:|---:|\n";
  auto cell = [&](const std::string& fam, int which) {
    int n = 0;
    for (const auto& r : rows) {
      if (r.reference.family == fam && (which == 2 || r.reference.held_out == (which == 1))) ++n;
    }
    if (n == 0) return std::string("-");
    return fmt::format("{:.1f}{}", validation::mape(rows, [&](const validation::Comparison& r) {
                         return r.reference.family == fam &&
                                (which == 2 || r.reference.held_out == (which == 1));
                       }), validation::error_unit(kind[fam]));
  };
  for (const auto& [fam, n] : families) {
    out << fmt::format(fmt::runtime(fmt_row), fam, n, cell(fam, 0), cell(fam, 1), cell(fam, 2));
  }
  return out.str();
}

// Held-out mean absolute error of an ncu suite's metric family (points or percent).
double held_out_error(const std::vector<validation::Comparison>& rows, const std::string& family) {
  return validation::mape(rows, [&](const validation::Comparison& r) {
    return r.reference.family == family && r.reference.held_out;
  });
}

int count_rows(const std::vector<validation::Comparison>& rows, const std::string& family, bool held_out) {
  return static_cast<int>(std::count_if(rows.begin(), rows.end(), [&](const validation::Comparison& r) {
    return r.reference.family == family && r.reference.held_out == held_out;
  }));
}

// An ncu suite fails when a metric family's held-out error passes its threshold, or a family
// with a threshold has no held-out rows.
bool ncu_failed(const std::string& suite, const std::vector<validation::Comparison>& rows,
                const std::map<std::string, double>& thresholds) {
  for (const auto& fam : validation::ncu_metric_families()) {
    const auto t = thresholds.find(suite + "/" + fam);
    if (t == thresholds.end()) continue;
    if (count_rows(rows, fam, true) == 0 || held_out_error(rows, fam) > t->second) return true;
  }
  return false;
}

// An ncu suite's summary: error by metric, the ops not compared, thresholds per metric.
void ncu_section(const SuiteSpec& s, const std::vector<validation::Comparison>& rows,
                 const std::vector<std::string>& skipped, const std::map<std::string, double>& thresholds,
                 std::ostream& out, std::ostream& md) {
  out << "\n  mean absolute error by metric (pt: percentage points; %: relative):\n" << family_table(rows, false);
  md << "\nMean absolute error by metric (pt: percentage points; %: relative error):\n\n"
     << family_table(rows, true);
  std::string held_out;
  for (const auto& fam : validation::ncu_metric_families()) {
    if (count_rows(rows, fam, true) == 0) continue;
    const auto kind = std::find_if(rows.begin(), rows.end(), [&](const auto& r) { return r.reference.family == fam; })->error_kind;
    held_out += fmt::format("{}{} {:.1f}{}", held_out.empty() ? "" : ", ", fam, held_out_error(rows, fam),
                            validation::error_unit(kind));
  }
  std::set<std::string> kernels;
  for (const auto& r : rows) kernels.insert(r.reference.label.substr(0, r.reference.label.find(": ")));
  out << fmt::format("  {}: held-out {} ({} kernels; {} ops not compared)\n", s.name, held_out,
                     kernels.size(), skipped.size());
  md << fmt::format("\n**{}: held-out {}** ({} kernels; {} ops not compared).\n", s.name, held_out,
                    kernels.size(), skipped.size());
  for (const auto& k : skipped) {
    out << "  not compared: " << k << "\n";
    md << "\n- not compared: " << k;
  }
  if (!skipped.empty()) md << "\n";
  for (const auto& fam : validation::ncu_metric_families()) {
    const auto t = thresholds.find(s.name + "/" + fam);
    if (t == thresholds.end()) continue;
    const bool failed = count_rows(rows, fam, true) == 0 || held_out_error(rows, fam) > t->second;
    out << fmt::format("  threshold (held-out {}): {:.1f}{} -> {}\n", fam, t->second,
                       fam == "duration" ? "%" : " pt", failed ? "FAILED" : "ok");
  }
}

// The functional suite: every check's numerics and counts; fails when a check fails.
bool functional_section(const hw::HardwareSpec& spec, const std::string& description,
                        std::ostream& out, std::ostream& md) {
  const auto checks = functional::run_functional_checks(spec);
  out << fmt::format("== functional on {}: {}\n", spec.name, description);
  out << fmt::format("  {:<66} {:>10} {:>9} {:>14} {:>14} {:>14} {:>14} {}\n", "check", "rel error",
                     "bound", "FLOPs run", "FLOPs charged", "bytes run", "bytes charged", "result");
  md << fmt::format("\n## functional ({})\n\n{}.\n\n", spec.name, description);
  md << "| check | relative error | bound | FLOPs run | FLOPs charged | bytes run | bytes charged | "
        "result | note |\n|---|---:|---:|---:|---:|---:|---:|---|---|\n";
  int passed = 0;
  for (const auto& c : checks) {
    passed += c.passed ? 1 : 0;
    out << fmt::format("  {:<66} {:>10.2e} {:>9.0e} {:>14.0f} {:>14.0f} {:>14.0f} {:>14.0f} {}\n",
                       c.name, c.relative_error, c.error_bound, c.flops_functional, c.flops_model,
                       c.bytes_functional, c.bytes_model, c.passed ? "ok" : "FAILED");
    md << fmt::format("| {} | {:.2e} | {:.0e} | {:.0f} | {:.0f} | {:.0f} | {:.0f} | {} | {} |\n", c.name,
                      c.relative_error, c.error_bound, c.flops_functional, c.flops_model,
                      c.bytes_functional, c.bytes_model, c.passed ? "ok" : "FAILED", c.note);
  }
  out << fmt::format("  functional: {} of {} checks pass\n\n", passed, checks.size());
  md << fmt::format("\n**functional: {} of {} checks pass.**\n", passed, checks.size());
  return passed == static_cast<int>(checks.size());
}

// The comparisons of a seed suite, and how many of its reference rows it cannot simulate.
std::vector<validation::Comparison> run_seed_suite(const SuiteSpec& s, const std::filesystem::path& data,
                                                   const std::filesystem::path& config_dir,
                                                   const hw::PresetCatalog& catalog,
                                                   const hw::HardwareSpec& spec,
                                                   const models::KernelModelRegistry& models,
                                                   int& not_compared) {
  switch (s.seed) {
    case 1:
      not_compared = validation::seed_rows_not_compared(data / "seed001_sdpa_h100.csv");
      return validation::compare_seed001(data, spec, models);
    case 2: {
      // The attention table ran on an 80 GB A800: the A100 80 GB preset stands in for it.
      const hw::HardwareSpec a100 = hw::load_hardware("a100", catalog);
      not_compared = validation::seed_rows_not_compared(data / "seed002_forward_rtx5090.csv") +
                     validation::seed_rows_not_compared(data / "seed002_attention_a800.csv") +
                     validation::seed_rows_not_compared(data / "seed002_gemm_share_rtx5090.csv");
      auto rows = validation::compare_seed002_forward(data / "seed002_forward_rtx5090.csv",
                                                      config_dir / "models", spec, models);
      auto attention = validation::compare_seed002_attention(data / "seed002_attention_a800.csv", a100, models);
      rows.insert(rows.end(), std::make_move_iterator(attention.begin()), std::make_move_iterator(attention.end()));
      auto shares = validation::compare_seed002_gemm_share(data / "seed002_gemm_share_rtx5090.csv",
                                                           config_dir / "models", spec, models);
      rows.insert(rows.end(), std::make_move_iterator(shares.begin()), std::make_move_iterator(shares.end()));
      return rows;
    }
    case 3: {
      not_compared = validation::seed_rows_not_compared(data / "seed003_deepseek_ocr_rtx5090.csv");
      return validation::compare_seed003(data / "seed003_deepseek_ocr_rtx5090.csv",
                                         config_dir / "workloads" / "deepseek-ocr-decode.yaml",
                                         config_dir / "models", spec, models);
    }
  }
  throw ConfigError("validate", 0, "suite", "unknown seed suite " + s.name);
}

// The files of a ", "-separated list, in `data`.
std::vector<std::filesystem::path> listed_files(const std::filesystem::path& data, const std::string& csv) {
  std::vector<std::filesystem::path> files;
  for (std::size_t at = 0; at < csv.size();) {
    const std::size_t comma = csv.find(", ", at);
    files.push_back(data / csv.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    at = comma == std::string::npos ? csv.size() : comma + 2;
  }
  return files;
}

// "`validation/data/a.csv`, `validation/data/b.csv`" for a ", "-separated list of files.
std::string data_files(const std::string& csv) {
  std::string out;
  std::size_t from = 0;
  while (true) {
    const std::size_t comma = csv.find(", ", from);
    out += fmt::format("`validation/data/{}`", csv.substr(from, comma - from));
    if (comma == std::string::npos) break;
    out += ", ";
    from = comma + 2;
  }
  return out;
}

std::map<std::string, double> read_thresholds(const std::filesystem::path& file) {
  std::map<std::string, double> out;
  if (!std::filesystem::exists(file)) return out;
  const hw::YamlDocument doc = hw::YamlDocument::from_file(file);
  hw::MappingReader root(doc, doc.root(), "");
  for (const auto& s : suites()) {
    const auto v = root.optional_node(s.name);
    if (!v) continue;
    if (!s.ncu) {
      out[s.name] = hw::to_number(doc, *v, s.name, 0, 1000);
      continue;
    }
    // An ncu suite: one threshold per metric family, keyed "<suite>/<family>".
    hw::MappingReader families(doc, *v, s.name);
    for (const auto& fam : validation::ncu_metric_families()) {
      if (auto t = families.optional_node(fam)) out[s.name + "/" + fam] = hw::to_number(doc, *t, s.name + "." + fam, 0, 1000);
    }
    families.reject_unknown();
  }
  root.reject_unknown();
  return out;
}

// validation/discrepancies.yaml: a paragraph per suite on its large discrepancies.
std::map<std::string, std::string> read_discrepancies(const std::filesystem::path& file) {
  std::map<std::string, std::string> out;
  if (!std::filesystem::exists(file)) return out;
  const hw::YamlDocument doc = hw::YamlDocument::from_file(file);
  hw::MappingReader root(doc, doc.root(), "");
  for (const auto& s : suites()) {
    if (auto text = root.optional_text(s.name)) out[s.name] = *text;
  }
  root.reject_unknown();
  return out;
}

}  // namespace

int validate_command(const Args& args, const Environment& env, std::ostream& out) {
  po::options_description options("validate options");
  std::vector<std::string> chosen;
  std::string doc_path, bands_path, rows_json_path;
  bool show_kernels = false;
  options.add_options()("help,h", "this text")(
      "suite", po::value(&chosen)->composing(), "a suite to run (default: all)")(
      "doc", po::value(&doc_path),
      "Markdown report to write (default: docs/validation.md, when every suite runs)")(
      "write-bands", po::value(&bands_path),
      "write the prediction bands (configs/error_bands.yaml, validation/error_bands.h) and exit")(
      "kernels", po::bool_switch(&show_kernels),
      "under each op whose primary simulated kernel is not of the measured one's class, print both")(
      "rows-json", po::value(&rows_json_path),
      "also write the measured op suites' rows to this JSON file: every op's measured and simulated "
      "kernels with their grids, blocks and durations");
  const auto vm = parse_options(args, options);
  if (vm.count("help")) {
    std::string list;
    for (const auto& s : suites()) list += "\n  " + s.name + ": " + s.description;
    print_help(out, "gpusim validate [--suite NAME]... [--doc FILE] [--write-bands FILE] [--kernels] "
               "[--rows-json FILE]",
               "Compares simulation with reference data, per row and per op family. Suites:" + list,
               options);
    return 0;
  }
  for (const auto& c : chosen) {
    if (std::none_of(suites().begin(), suites().end(), [&](const SuiteSpec& s) { return s.name == c; })) {
      throw ConfigError("command line", 0, "--suite", "unknown suite '" + c + "'");
    }
  }
  const std::filesystem::path root = env.config_dir.parent_path();
  const std::filesystem::path data = root / "validation" / "data";
  const auto thresholds = read_thresholds(root / "validation" / "thresholds.yaml");
  const auto discrepancies = read_discrepancies(root / "validation" / "discrepancies.yaml");
  const auto notes = [&](const std::string& suite) {
    const auto it = discrepancies.find(suite);
    return it == discrepancies.end() ? std::string() : "\n**Large discrepancies.** " + it->second + "\n";
  };
  const hw::PresetCatalog catalog = hardware_catalog(env);
  const auto models = models::default_kernel_models();
  if (!bands_path.empty()) {
    std::ostringstream text;
    validation::write_error_bands(validation::compute_error_bands(data, catalog, models), text);
    write_file(bands_path, text.str());
    out << "prediction bands written to " << bands_path << "\n";
    return 0;
  }

  std::ostringstream md;
  md << "# Validation\n\nWritten by `gpusim validate`; do not edit by hand. Errors are "
        "(simulated - measured) / measured. *Calibration* rows were used to choose parameters "
        "and launch shapes; *held-out* rows never were.\n";
  std::vector<SuiteOutcome> outcomes;
  nlohmann::json rows_json = nlohmann::json::array();
  bool functional_failed = false;
  for (const auto& s : suites()) {
    if (!chosen.empty() && std::find(chosen.begin(), chosen.end(), s.name) == chosen.end()) continue;
    const hw::HardwareSpec spec = hw::load_hardware(s.hw, catalog);
    if (s.name == "functional") {
      functional_failed = !functional_section(spec, s.description, out, md);
      md << notes(s.name);
      continue;
    }
    std::vector<validation::MeasuredOp> measured;
    std::vector<validation::Comparison> rows;
    int not_compared = 0;
    std::vector<std::string> ncu_skipped;  // an ncu suite's ops not compared, with the reason
    std::vector<std::string> not_simulated;  // reference figures left out, each with the reason
    if (s.seed != 0) {
      rows = run_seed_suite(s, data, env.config_dir, catalog, spec, models, not_compared);
    } else if (s.models) {
      rows = validation::compare_measured_models(data / s.csv, spec, models);
    } else if (s.grouped_probe) {
      rows = validation::compare_grouped_probes(listed_files(data, s.csv), spec);
    } else if (s.replay) {
      rows = validation::compare_replays(data / s.csv, s.hw, catalog, models);
    } else if (s.collectives == 1) {
      rows = validation::compare_measured_collectives(listed_files(data, s.csv), spec);
    } else if (s.collectives == 3 || s.collectives == 4) {
      // 3: 1 MiB and more (issue 20's target); 4: the latency-bound calls below 1 MiB.
      const double mib = 1024.0 * 1024.0;
      rows = validation::compare_graph_collectives(listed_files(data, s.csv), spec, s.collectives == 3 ? mib : 0.0,
                                                   s.collectives == 3 ? 1e300 : mib, s.never_fitted);
    } else if (s.collectives == 2) {
      rows = validation::compare_published_collectives(data / s.csv, spec, hw::load_hardware("hgx-h200", catalog));
    } else if (s.tensor_parallel == 1) {
      rows = validation::compare_tp_steps(listed_files(data, s.csv), spec, models, s.never_fitted);
    } else if (s.tensor_parallel == 2) {
      auto result = validation::compare_published_tp(data / s.csv, env.config_dir / "models", spec,
                                                     hw::load_hardware("hgx-h200", catalog), models);
      rows = std::move(result.rows);
      not_simulated = std::move(result.not_simulated);
      not_compared = static_cast<int>(not_simulated.size());
    } else if (s.serve_requests) {
      rows = validation::compare_serve_requests(data / s.csv, env.config_dir, spec, models);
    } else if (s.serve_steps) {
      rows = validation::compare_serve_steps(data / s.csv, spec, models);
    } else if (s.train) {
      rows = validation::compare_train_steps(data / s.csv, spec, models, not_compared);
    } else if (s.train_wall) {
      rows = validation::compare_train_walls(listed_files(data, s.csv), spec, models, not_compared);
    } else if (s.cs336_train) {
      rows = validation::compare_cs336_train_steps(data / s.csv, env.config_dir / "models", spec, models);
    } else if (s.cs336) {
      rows = validation::compare_cs336_forwards(data / s.csv, env.config_dir / "models", spec, models);
    } else if (s.host) {
      rows = validation::compare_host_walls(data / s.csv, spec, models);
    } else if (s.ncu) {
      auto result = validation::compare_ncu(validation::read_ncu_ops(data / s.csv, spec.sm.max_warps), spec, models);
      rows = std::move(result.rows);
      ncu_skipped = std::move(result.skipped);
    } else {
      measured = validation::read_measured_ops(data / s.csv);
      rows = validation::compare_measured(measured, spec, models);
      if (!rows_json_path.empty()) rows_json.push_back(validation::measured_rows_json(s.name, spec.name, rows));
    }

    out << fmt::format("== {} on {}: {}\n", s.name, spec.name, s.description);
    out << fmt::format("  {:<58} {:<11} {:>11} {:>11} {:>8}\n", s.ncu ? "op #kernel: metric" : "op",
                       "split", s.ncu ? "measured" : "measured us", "simulated", "error");
    md << fmt::format("\n## {} ({})\n\n{}. Data: {}.\n\n", s.name, spec.name, s.description,
                      data_files(s.csv));
    md << (s.ncu ? "| op #kernel: metric | split | measured | simulated | error | simulated kernel |\n"
                 : "| op | split | measured (us) | simulated (us) | error | kernels measured / simulated |\n")
       << "|---|---|---:|---:|---:|---|\n";
    for (const auto& r : rows) {
      const std::string error = r.error_kind == validation::ErrorKind::kPoints
                                    ? fmt::format("{:>5.1f} pt", r.error_pct)
                                    : fmt::format("{:>7.1f}%", r.error_pct);
      out << fmt::format("  {:<58} {:<11} {:>11.2f} {:>11.2f} {:>8}\n", r.reference.label,
                         split_name(r), r.reference.measured_us, r.simulated_us, error);
      if (show_kernels && !r.reference.primary_kernel.empty() && !same_main_kernel(r)) {
        out << fmt::format("      kernel measured {}: {}\n      kernel simulated {}: {}\n",
                           validation::kernel_class(r.reference.primary_kernel), name_without_parameters(r.reference.primary_kernel),
                           validation::kernel_class(r.primary_kernel), name_without_parameters(r.primary_kernel));
      }
      const std::string kernels =
          s.ncu ? fmt::format("{}", fmt::join(r.simulated_kernels, ", "))
                : fmt::format("{} / {}", r.reference.measured_kernels.size(), r.simulated_kernels.size());
      md << fmt::format("| {} | {} | {:.2f} | {:.2f} | {:+.1f}{} | {} |\n", r.reference.label,
                        split_name(r), r.reference.measured_us, r.simulated_us, r.error_pct,
                        validation::error_unit(r.error_kind), kernels);
    }
    if (s.ncu) {
      ncu_section(s, rows, ncu_skipped, thresholds, out, md);
      md << notes(s.name);
      out << "\n";
      outcomes.push_back({s.name, 0, 0, 0, ncu_failed(s.name, rows, thresholds)});
      continue;
    }
    if (!not_simulated.empty()) {
      out << "  not simulated:\n";
      md << "\nNot simulated:\n\n";
      for (const auto& n : not_simulated) {
        out << "    " << n << "\n";
        md << "- " << n << "\n";
      }
    }
    int skipped = not_compared;
    for (const auto& m : measured) skipped += m.op ? 0 : 1;
    const std::string skipped_text =
        s.seed != 0 || !not_simulated.empty() ? fmt::format("{} reported figures not simulated", skipped)
                    : fmt::format("{} measured variants not modeled", skipped);
    const std::string skipped_md =
        !not_simulated.empty() ? fmt::format("{} reported figures not simulated: listed above", skipped)
        : s.seed != 0 ? fmt::format("{} reported figures not simulated: validation/data/README-seeds.md says why", skipped)
                    : fmt::format("{} measured variants, such as forced SDPA backends, not modeled", skipped);
    SuiteOutcome o;
    o.name = s.name;
    o.calibration_mape = validation::mape(rows, [](const auto& r) { return !r.reference.held_out; });
    o.held_out_mape = validation::mape(rows, [](const auto& r) { return r.reference.held_out; });
    const double all = validation::mape(rows, [](const auto&) { return true; });
    out << "\n  MAPE by op family:\n" << family_table(rows, false);
    out << fmt::format("  {}: MAPE calibration {:.1f}%, held-out {:.1f}%, all {:.1f}% ({} ops; {})\n",
                       s.name, o.calibration_mape, o.held_out_mape, all, rows.size(), skipped_text);
    md << "\n" << family_table(rows, true);
    md << fmt::format("\n**{}: MAPE calibration {:.1f}%, held-out {:.1f}%, all {:.1f}%** ({} ops; {}).\n",
                      s.name, o.calibration_mape, o.held_out_mape, all, rows.size(), skipped_md);
    if (const auto ranking = ranking_line(rows)) {
      out << "  " << *ranking << "\n";
      md << "\n" << *ranking << "\n";
    }
    if (const auto choice = kernel_choice_line(rows)) {
      out << "  " << *choice << "\n";
      md << "\n" << *choice << "\n";
    }
    md << notes(s.name);
    if (const auto t = thresholds.find(s.name); t != thresholds.end()) {
      o.threshold = t->second;
      o.failed = o.held_out_mape > t->second;
      out << fmt::format("  threshold (held-out MAPE): {:.1f}% -> {}\n", t->second,
                         o.failed ? "FAILED" : "ok");
    }
    out << "\n";
    outcomes.push_back(o);
  }
  const bool failed = functional_failed ||
                      std::any_of(outcomes.begin(), outcomes.end(), [](const auto& o) { return o.failed; });
  if (!rows_json_path.empty()) {
    write_file(rows_json_path, rows_json.dump(1) + "\n");
    out << "wrote " << rows_json_path << "\n";
  }
  // docs/validation.md holds every suite: a run of some suites leaves it alone unless asked.
  if (doc_path.empty() && !chosen.empty()) {
    out << "docs/validation.md left as it is (only some suites ran; --doc FILE writes their report)\n";
    return failed ? 1 : 0;
  }
  const std::filesystem::path doc =
      doc_path.empty() ? root / "docs" / "validation.md" : std::filesystem::path(doc_path);
  {
    std::ofstream f(doc.string() + ".tmp");
    f << md.str();
    if (!f) throw ConfigError(doc.string(), 0, "", "cannot write this file");
  }
  std::filesystem::rename(doc.string() + ".tmp", doc);
  out << "wrote " << doc.string() << "\n";
  return failed ? 1 : 0;
}

}  // namespace gpusim::cli
