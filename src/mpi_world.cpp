#include "src/mpi_world.h"

#include <cstdlib>
#include <limits>
#include <stdexcept>

#if defined(GPUSIM_HAVE_MPI)
#include <mpi.h>
#endif

namespace gpusim::cli {
namespace {

// mpirun (Open MPI, MPICH/Hydra, PMIx launchers) tells its processes so in the environment; a
// process started by hand is not joined to anything, so it stays a world of one.
bool started_by_mpirun() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    if (std::getenv(v)) return true;
  }
  return false;
}

}  // namespace

bool built_with_mpi() {
#if defined(GPUSIM_HAVE_MPI)
  return true;
#else
  return false;
#endif
}

MpiWorld::MpiWorld() {
#if defined(GPUSIM_HAVE_MPI)
  if (!started_by_mpirun()) return;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;  // only the main thread talks to MPI; TBB's workers simulate
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    joined_ = true;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
#endif
}

MpiWorld::~MpiWorld() {
#if defined(GPUSIM_HAVE_MPI)
  if (joined_) MPI_Finalize();
#endif
}

void MpiWorld::barrier() const {
#if defined(GPUSIM_HAVE_MPI)
  if (size_ > 1) MPI_Barrier(MPI_COMM_WORLD);
#endif
}

std::vector<std::string> MpiWorld::gather(const std::string& text) const {
  if (size_ == 1) return {text};
#if defined(GPUSIM_HAVE_MPI)
  if (text.size() > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    throw std::length_error("MPI gather: more than 2 GiB from one process");
  }
  const int length = static_cast<int>(text.size());
  std::vector<int> lengths(rank_ == 0 ? static_cast<std::size_t>(size_) : 0);
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::vector<int> offsets(lengths.size(), 0);
  std::string all;
  if (rank_ == 0) {
    long long total = 0;
    for (std::size_t r = 0; r < lengths.size(); ++r) {
      offsets[r] = static_cast<int>(total);
      total += lengths[r];
    }
    if (total > std::numeric_limits<int>::max()) throw std::length_error("MPI gather: more than 2 GiB in all");
    all.resize(static_cast<std::size_t>(total));
  }
  MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, 0,
              MPI_COMM_WORLD);
  std::vector<std::string> out;
  for (std::size_t r = 0; r < lengths.size(); ++r) {
    out.push_back(all.substr(static_cast<std::size_t>(offsets[r]), static_cast<std::size_t>(lengths[r])));
  }
  return out;
#else
  throw std::logic_error("MpiWorld: more than one process without MPI");
#endif
}

}  // namespace gpusim::cli
