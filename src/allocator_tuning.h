// Keeps freed memory in the process: a simulation allocates and frees many small objects per
// step, and glibc's default of returning memory to the system at once turns that into page
// faults (a quarter of a decode step's time on a VM). Call once at the start of main.
#pragma once

namespace gpusim::cli {

void tune_allocator();

}  // namespace gpusim::cli
