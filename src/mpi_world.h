// The processes of one MPI job (`mpirun -np N gpusim sweep ...`): which one this is, and
// collecting text at rank 0. A build without MPI, or a process not started by mpirun, is a
// world of one, so callers need no special case.
#pragma once

#include <string>
#include <vector>

namespace gpusim::cli {

class MpiWorld {
 public:
  // Joins the job when mpirun started this process (and MPI was found at build time).
  MpiWorld();
  ~MpiWorld();
  MpiWorld(const MpiWorld&) = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool root() const { return rank_ == 0; }

  // Every process's `text`, in rank order, at rank 0; an empty list elsewhere.
  std::vector<std::string> gather(const std::string& text) const;
  void barrier() const;

 private:
  int rank_ = 0, size_ = 1;
  bool joined_ = false;
};

// True when built with MPI (whether or not this process runs under mpirun).
bool built_with_mpi();

}  // namespace gpusim::cli
