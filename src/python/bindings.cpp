// The C++ half of the Python package `gpusim` (src/python/gpusim/): the library calls the CLI
// makes, with the GIL released while they run so threads can simulate side by side. Results come
// back as the JSON documents the CLI writes (docs/results.md), turned into Python objects
// directly; the package wraps them (results.py). Bad input raises gpusim.ConfigError.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <streambuf>
#include <sstream>
#include <string>
#include <vector>

#include "sim/error.h"
#include "sim/time_checks.h"
#include "src/cli.h"
#include "src/output_files.h"
#include "src/progress.h"
#include "src/report_writers.h"
#include "src/run_request.h"
#include "src/serve_request.h"
#include "src/serve_writers.h"
#include "src/study.h"
#include "src/study_plot.h"
#include "src/sweep_runner.h"
#include "src/version.h"

namespace py = pybind11;

namespace gpusim::python {
namespace {

using cli::Environment;

py::object to_python(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::object: {
      py::dict d;
      for (const auto& [key, value] : j.items()) d[py::str(key)] = to_python(value);
      return d;
    }
    case nlohmann::json::value_t::array: {
      py::list l(j.size());
      for (std::size_t i = 0; i < j.size(); ++i) l[i] = to_python(j[i]);
      return l;
    }
    case nlohmann::json::value_t::string:
      return py::str(j.get_ref<const std::string&>());
    case nlohmann::json::value_t::boolean:
      return py::bool_(j.get<bool>());
    case nlohmann::json::value_t::number_integer:
      return py::int_(j.get<std::int64_t>());
    case nlohmann::json::value_t::number_unsigned:
      return py::int_(j.get<std::uint64_t>());
    case nlohmann::json::value_t::number_float:
      return py::float_(j.get<double>());
    default:
      return py::none();
  }
}

Environment environment(const std::string& config_dir) { return Environment{config_dir, false}; }

// Progress lines (src/progress.h) written to Python's sys.stderr, so a notebook shows them: the
// text is kept until the line is flushed, then written with the GIL taken (the simulation runs
// without it, on any thread).
class PythonStderr : public std::streambuf {
 protected:
  int_type overflow(int_type c) override {
    if (c != traits_type::eof()) text_.push_back(static_cast<char>(c));
    return c;
  }
  int sync() override {
    if (text_.empty()) return 0;
    py::gil_scoped_acquire gil;
    const py::object err = py::module_::import("sys").attr("stderr");
    err.attr("write")(text_);
    err.attr("flush")();
    text_.clear();
    return 0;
  }

 private:
  std::string text_;
};

// A progress stream for a call: Python's stderr when asked for, else none.
struct Progress {
  explicit Progress(bool on) : stream(on ? &buffer : nullptr) {}
  std::ostream* out() { return stream.rdbuf() ? &stream : nullptr; }
  PythonStderr buffer;
  std::ostream stream;
};

hw::LaunchMode launch_mode(const std::string& mode) {
  if (mode == "graph") return hw::LaunchMode::kGraph;
  if (mode == "eager") return hw::LaunchMode::kEager;
  throw ConfigError("arguments", 0, "mode", "'" + mode + "' is not one of: graph, eager");
}

// gpusim.run: the JSON document of `gpusim run --format json`, the table, and what went to stderr.
py::tuple run(const std::string& workload_file, const std::optional<std::string>& workload_text, const std::string& hw,
              const std::vector<std::string>& sets, const std::string& mode, bool cache,
              bool kernels, const std::optional<std::string>& out_dir, int top, bool progress,
              const std::string& config_dir) {
  nlohmann::ordered_json json;
  std::string table;
  std::ostringstream err;
  {
    py::gil_scoped_release release;
    cli::RunRequest request;
    request.workload_file = workload_file;
    request.workload_text = workload_text;
    request.hw = hw;
    request.sets = sets;
    request.mode = launch_mode(mode);
    request.simulate.reuse = cache;
    request.simulate.record_timeline = out_dir.has_value();
    Progress p(progress);
    cli::ProgressLine line(p.out(), "simulating steps");
    request.simulate.on_step = [&line](std::size_t done, std::size_t total) { line.update(done, total); };
    if (out_dir) cli::check_out_folder(*out_dir);
    cli::RunReport report = cli::run_request(request, environment(config_dir), err);
    if (out_dir) cli::write_run_folder(report, *out_dir, top);
    std::ostringstream t;
    cli::write_table(report, t, top);
    table = t.str();
    // A run's totals without its kernel list: what a loop over many points wants, several times
    // faster (the list of a model step is thousands of records).
    if (!kernels) report.kernels.clear();
    json = cli::report_json(report);
  }
  return py::make_tuple(to_python(json), table, err.str());
}

// gpusim.serve: the JSON document of `gpusim serve --format json`, the table, stderr.
py::tuple serve(const std::string& serve_file, const std::optional<std::string>& serve_text, const std::string& hw,
                const std::vector<std::string>& sets, const std::optional<std::string>& out_dir, bool progress,
                const std::string& config_dir) {
  nlohmann::ordered_json json;
  std::string table;
  std::ostringstream err;
  {
    py::gil_scoped_release release;
    const Environment env = environment(config_dir);
    cli::ServeRequest request;
    request.serve_file = serve_file;
    request.serve_text = serve_text;
    request.hw = hw;
    request.sets = sets;
    Progress p(progress);
    cli::ProgressLine line(p.out(), "serving requests");
    request.on_request = [&line](std::size_t done, std::size_t total) { line.update(done, total); };
    if (out_dir) cli::check_out_folder(*out_dir);
    const cli::ServeRun run = cli::serve_request(request, env);
    if (out_dir) cli::write_serve_folder(run.output(), *out_dir, env, err);
    json = cli::serve_document(run.output());
    std::ostringstream t;
    cli::write_serve_table(run.output(), t);
    table = t.str();
  }
  return py::make_tuple(to_python(json), table, err.str());
}

// gpusim.sweep: runs a study into `out_dir` (resuming what is there) and draws its plot: (results CSV,
// points, reused, simulated, plot drawn, the plot's path or why not).
py::tuple sweep(const std::string& study_file, const std::optional<std::string>& study_text, const std::string& out_dir,
                int threads, bool cache, bool progress, const std::string& config_dir) {
  cli::SweepSummary summary;
  std::string plot;  // the image's path, or why there is none ("" when the study has no plot)
  bool drawn = false;
  {
    py::gil_scoped_release release;
    const Environment env = environment(config_dir);
    const cli::Study study = study_text ? cli::parse_study(*study_text, study_file) : cli::load_study(study_file);
    cli::check_out_folder(out_dir);
    cli::SweepOptions options;
    options.out_dir = out_dir;
    options.threads = threads;
    options.reuse = cache;
    Progress p(progress);
    options.progress = p.out();
    summary = cli::run_sweep(study, env, options);
    if (study.plot) {
      const auto png = std::filesystem::path(out_dir) / "plot.png";
      const cli::PlotResult result = cli::draw_study_plot(study, summary.csv, png, env);
      drawn = result.drawn;
      plot = drawn ? png.string() : result.reason;
    }
  }
  return py::make_tuple(summary.csv.string(), summary.points, summary.reused, summary.simulated, drawn, plot);
}

// Any other command, as the CLI runs it: (exit status, stdout, stderr); errors raise.
py::tuple command(const std::vector<std::string>& args, const std::string& config_dir) {
  std::ostringstream out, err;
  int status = 0;
  {
    py::gil_scoped_release release;
    status = cli::dispatch_command(args, environment(config_dir), out, err);
  }
  return py::make_tuple(status, out.str(), err.str());
}

}  // namespace
}  // namespace gpusim::python

PYBIND11_MODULE(_gpusim, m) {
  using namespace gpusim::python;
  m.doc() = "gpusim's library calls (use the gpusim package, not this module)";
  m.def("run", &run, py::arg("workload_file"), py::arg("workload_text"), py::arg("hw"), py::arg("sets"), py::arg("mode"),
        py::arg("cache"), py::arg("kernels"), py::arg("out_dir"), py::arg("top"), py::arg("progress"), py::arg("config_dir"));
  m.def("serve", &serve, py::arg("serve_file"), py::arg("serve_text"), py::arg("hw"), py::arg("sets"), py::arg("out_dir"),
        py::arg("progress"), py::arg("config_dir"));
  m.def("sweep", &sweep, py::arg("study_file"), py::arg("study_text"), py::arg("out_dir"), py::arg("threads"),
        py::arg("cache"), py::arg("progress"), py::arg("config_dir"));
  m.def("command", &command, py::arg("args"), py::arg("config_dir"));
  m.attr("version") = GPUSIM_VERSION;
  m.def("version_text", &gpusim::cli::version_text);
  m.attr("source_config_dir") = GPUSIM_SOURCE_CONFIG_DIR;
  // Bad input and a model's limits become the package's exception classes (gpusim/errors.py).
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const gpusim::ConfigError& e) {
      const py::object cls = py::module_::import("gpusim.errors").attr("ConfigError");
      const py::object error = cls(e.what(), e.file(), e.line(), e.key(), e.detail());
      PyErr_SetObject(cls.ptr(), error.ptr());
    } catch (const gpusim::sim::ClockOverflow& e) {  // bad input, as the command line treats it
      const py::object cls = py::module_::import("gpusim.errors").attr("ConfigError");
      PyErr_SetObject(cls.ptr(), cls(e.what(), "", 0, "", e.what()).ptr());
    } catch (const gpusim::ModelError& e) {
      const py::object cls = py::module_::import("gpusim.errors").attr("ModelError");
      PyErr_SetObject(cls.ptr(), cls(e.what()).ptr());
    }
  });
}
