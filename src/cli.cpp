#include "src/cli.h"

#include <exception>
#include <ostream>

#include "src/commands.h"
#include "src/version.h"
#include "sim/error.h"
#include "sim/time_checks.h"

namespace gpusim::cli {
namespace {

constexpr const char* kUsage = R"(gpusim: a discrete-event performance simulator for GPUs running transformer inference

Usage: gpusim COMMAND [OPTIONS]   (gpusim COMMAND --help for a command's options)

Commands:
  run WORKLOAD.yaml --hw NAME|FILE   simulate a workload on a GPU
  hw list                            list the hardware presets
  hw show NAME|FILE                  print a resolved hardware spec with units and sources
  hw keys                            every key of a hardware file, with units and ranges
  occupancy --hw NAME --threads N    CTAs and warps per SM for a block, and what limits them
  validate [--suite NAME]...         compare simulation with measurements; writes docs/validation.md
  report WORKLOAD.yaml --hw NAME|FILE  a profiling report (Markdown): memory, TTFT, decode, kernels,
                                     roofline, bottlenecks; writes report-WORKLOAD-HW/ or --out DIR
  sweep STUDY.yaml [--out DIR]       a design study: every point in parallel (resumable) into a CSV
                                     and a plot (configs/studies/)
  replay TRACE.json --hw NAME|FILE   re-simulate a PyTorch profiler trace (record_shapes=True) on a
                                     chip; --from NAME names the chip it was recorded on
  serve SERVE.yaml --hw NAME|FILE    requests through a continuous-batching engine (vLLM V1's
                                     scheduler) on the chip: TTFT, TPOT, throughput, KV-cache use

Global options:
  -h, --help       this text
  --version        the version
)";

}  // namespace

int dispatch_command(const std::vector<std::string>& args, const Environment& env, std::ostream& out,
                     std::ostream& err) {
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    if (args.size() >= 2 && args[0] == "help") {
      return dispatch_command({args[1], "--help"}, env, out, err);
    }
    out << kUsage;
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "--version") {
    out << version_text() << "\n";
    return 0;
  }
  const std::string& command = args[0];
  const Args rest(args.begin() + 1, args.end());
  if (command == "run") return run_command(rest, env, out, err);
  if (command == "hw") return hw_command(rest, env, out);
  if (command == "occupancy") return occupancy_command(rest, env, out);
  if (command == "validate") return validate_command(rest, env, out);
  if (command == "report") return report_command(rest, env, out, err);
  if (command == "sweep") return sweep_command(rest, env, out, err);
  if (command == "replay") return replay_command(rest, env, out, err);
  if (command == "serve") return serve_command(rest, env, out, err);
  throw ConfigError("command line", 0, "", "unknown command '" + command + "' (see gpusim --help)");
}

int run_cli(const std::vector<std::string>& args, const Environment& env, std::ostream& out,
            std::ostream& err) {
  try {
    return dispatch_command(args, env, out, err);
  } catch (const ConfigError& e) {
    err << "gpusim: error: " << e.what() << "\n";
    return 2;
  } catch (const sim::ClockOverflow& e) {  // a run too long to simulate (run names the file itself)
    err << "gpusim: error: " << e.what() << "\n";
    return 2;
  } catch (const ModelError& e) {
    err << "gpusim: model error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    err << "gpusim: internal error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace gpusim::cli
