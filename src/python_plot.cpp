#include "src/python_plot.h"

#include <array>
#include <cstdio>
#include <sys/wait.h>

namespace gpusim::cli {
namespace {

// Runs `command` through the shell with stderr joined to stdout; returns (exit status, output).
std::pair<int, std::string> run_captured(const std::string& command) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return {-1, "cannot start a shell"};
  std::string output;
  std::array<char, 4096> buffer{};
  while (const std::size_t n = std::fread(buffer.data(), 1, buffer.size(), pipe)) output.append(buffer.data(), n);
  const int status = ::pclose(pipe);
  return {status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

// `text` as one single-quoted shell word.
std::string quoted(const std::string& text) {
  std::string out = "'";
  for (const char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::filesystem::path plot_script(const std::filesystem::path& config_dir, const std::string& name) {
  return (config_dir / ".." / "scripts" / name).lexically_normal();
}

PlotResult draw_plot(const std::filesystem::path& script, const std::vector<std::string>& args,
                     const std::filesystem::path& png, const std::vector<std::string>& pythons) {
  PlotResult result;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(script, ec)) {
    result.reason = "the plotting script " + script.filename().string() + " was not found in " +
                    script.parent_path().string();
    return result;
  }
  // The first interpreter with matplotlib (paths that do not exist are skipped; names are
  // looked up on PATH by the shell).
  std::string py;
  for (const auto& python : pythons) {
    if (python.find('/') != std::string::npos && !std::filesystem::is_regular_file(python, ec)) continue;
    if (run_captured(quoted(python) + " -c 'import matplotlib'").first == 0) {
      py = quoted(python);
      break;
    }
  }
  if (py.empty()) {
    result.reason = "python3 with matplotlib was not found (Debian: apt-get install python3-matplotlib)";
    return result;
  }
  const std::filesystem::path tmp = png.string() + ".tmp.png";
  std::string command = py + " " + quoted(script.string());
  for (const auto& a : args) command += " " + quoted(a);
  command += " --out " + quoted(tmp.string());
  auto [status, output] = run_captured(command);
  result.output = std::move(output);
  if (status != 0 || !std::filesystem::is_regular_file(tmp, ec)) {
    std::filesystem::remove(tmp, ec);
    result.reason = "the plotting script " + script.filename().string() + " failed";
    return result;
  }
  std::filesystem::rename(tmp, png, ec);
  if (ec) {
    result.reason = "the image could not be moved into place";
    return result;
  }
  result.drawn = true;
  return result;
}

}  // namespace gpusim::cli
