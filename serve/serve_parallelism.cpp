#include "serve/serve_parallelism.h"

#include "workloads/parallelism.h"

namespace gpusim::serve {
namespace {

// A degree as read_parallelism reads it (1 when absent), looked at before it reads them all.
std::int64_t degree(hw::MappingReader& root, std::string_view key) {
  return root.optional_integer(key, 1, 1024).value_or(1);
}

}  // namespace

void read_serve_parallelism(hw::MappingReader& root, workloads::ModelWorkload& w) {
  // Refused before read_parallelism, whose messages are about model workloads (a batch to split,
  // phase: train): serving has neither.
  if (degree(root, "data_parallel") > 1) {
    root.fail("data_parallel",
              "data-parallel serving runs independent engines, each with its own scheduler and KV cache: serve one "
              "replica (tensor_parallel for its GPUs) at the request rate one replica receives (the rate / "
              "data_parallel)");
  }
  if (degree(root, "pipeline_parallel") > 1) {
    root.fail("pipeline_parallel", "pipeline stages are not modeled for serving (nor for model workloads yet); "
                                   "split the model with tensor_parallel");
  }
  if (degree(root, "micro_batches") > 1) root.fail("micro_batches", "is for pipeline_parallel, which serving does not model");
  // Experts over a data-parallel group (tensor_parallel 1) run attention data-parallel: each GPU
  // schedules its own requests (vLLM's data_parallel_size with enable_expert_parallel), and the
  // all-to-alls wait for the slowest. One engine's steps cannot stand for that.
  if (w.model.moe && degree(root, "expert_parallel") > 1 && degree(root, "tensor_parallel") == 1) {
    root.fail("expert_parallel", "expert parallelism with tensor_parallel 1 runs attention data-parallel, one "
                                 "scheduler per GPU, which serving does not model: give tensor_parallel equal to "
                                 "expert_parallel (the experts split over the tensor-parallel group)");
  }
  workloads::read_parallelism(root, w);
}

}  // namespace gpusim::serve
