// A serve file's parallel keys (issue 19): tensor_parallel and expert_parallel, read and checked
// as model workloads read them (workloads/parallelism.h), and the keys serving refuses, with why.
//
// Every GPU of a tensor-parallel group runs the same step at the same time on its share of the
// model (ranks are symmetric), and vLLM's engine schedules the group as one: so a served step is
// lowered as one GPU's shard (build_step adds the TP all-reduces) and the KV cache is sized from
// one GPU's memory (serve_run.cpp).
#pragma once

#include "hw/yaml_document.h"
#include "workloads/workload.h"

namespace gpusim::serve {

// Reads tensor_parallel and expert_parallel into `w.parallel` (its model, phase and lowering
// already read) with the model workloads' checks. Refuses data_parallel, pipeline_parallel and
// micro_batches above 1, and expert_parallel without an equal tensor_parallel: ConfigErrors naming
// file, line and key.
void read_serve_parallelism(hw::MappingReader& root, workloads::ModelWorkload& w);

}  // namespace gpusim::serve
