// Running a study: every point is an independent simulation (its own hardware spec, workload
// and engine), run side by side with TBB. Each finished point is appended at once to a journal
// in the output folder, so an interrupted sweep resumes without redoing or losing points; the
// results CSV is then written from the journal in point order, so it is byte-identical
// whatever the thread count or the order points finished in. Under mpirun the processes share
// the pending points (each with its own journal, so an interrupted run still resumes), and
// rank 0 gathers the rows and writes the same files a single process writes.
#pragma once

#include <cstddef>
#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

#include "src/cli.h"
#include "src/study.h"

namespace gpusim::cli {

struct SweepOptions {
  std::filesystem::path out_dir;
  int threads = 0;                  // 0: TBB's default (all cores)
  std::ostream* progress = nullptr;  // a progress line when set
  bool reuse = true;                 // kernel outcome caches (off: every point from scratch)
};

struct SweepSummary {
  bool root = true;  // false in MPI processes other than rank 0, which write and print nothing
  std::size_t points = 0, reused = 0, simulated = 0;
  std::filesystem::path csv;
};

// Throws ConfigError (naming the study file, line and key) for a point whose hardware or
// workload does not load, before anything is simulated.
SweepSummary run_sweep(const Study& study, const Environment& env, const SweepOptions& options);

// The results CSV's header: point, name, the study's columns, its metrics.
std::vector<std::string> sweep_header(const Study& study);

}  // namespace gpusim::cli
