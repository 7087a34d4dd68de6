// The seed suites: figures the source documents report (/work/shared/seeds, transcribed with
// their provenance into validation/data/seed*.csv, described in validation/data/README-seeds.md)
// against gpusim's simulation of the same setup. Every row is held out: nothing was fitted to
// these figures. A row's `compare` column says how it is compared (time, fits, share, count,
// occupancy); `none` marks a figure gpusim cannot simulate yet (backward passes, memory of single
// ops, duplicates), kept in the file and skipped here.
//
// Comparisons reuse the measured suites' row: `reference.measured_us` holds the reported value
// and `simulated_us` gpusim's, in the unit the label names (us, %, kernels, 1 = out of memory).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "hw/gpu_engine.h"
#include "hw/hardware_spec.h"
#include "models/kernel_model.h"
#include "validation/measured_suite.h"

namespace gpusim::validation {

// Seed 001 (PyTorch SDPA on an H100, B=16 S=512 D=64 fp16, H = 8..128): the sdpa op simulated
// alone (graph mode, cold L2, summed kernel time) on `h100`, compared per head (kernel time / H)
// with seed001_sdpa_h100.csv (family "seed001-reported"; the H=96 total as is), then the same
// shapes with the project's own measurement in ops_h100.csv (family "seed001-own-measurement").
std::vector<Comparison> compare_seed001(const std::filesystem::path& data_dir,
                                        const hw::HardwareSpec& h100,
                                        const models::KernelModelRegistry& models);

// Seed 002, RTX 5090 benchmark (seed002_forward_rtx5090.csv): each CS336 preset
// (`models_dir`/cs336-*.yaml) with lowering cs336-basics in fp32, batch and seq_len from the
// row: forward rows as a prefill workload, forward+backward rows as a training step without an
// optimizer step (phase train, optimizer none). `time` rows compare the steady-state step with
// the eager total_us (the seed's times are Python wall times; families "seed002-forward",
// "seed002-train"); `fits` rows the reported OOM with the simulated peak against the device's
// memory (family "seed002-oom": error 0 when they agree, 100 when not): the training step's
// peak, or for a forward the weights and the training step's forward-phase peak (autograd on).
std::vector<Comparison> compare_seed002_forward(const std::filesystem::path& csv,
                                                const std::filesystem::path& models_dir,
                                                const hw::HardwareSpec& rtx5090,
                                                const models::KernelModelRegistry& models);

// Seed 002, naive-attention benchmark on an 80 GB A800 (seed002_attention_a800.csv), simulated
// on `a100`: `time` rows as the naive_attention op with the softmax written out, forward or
// backward (`pass`), in eager mode (first launch to last kernel end; families
// "seed002-attention", "seed002-attention-backward"), `fits` rows with the seed's own memory
// accounting (family "seed002-oom").
std::vector<Comparison> compare_seed002_attention(const std::filesystem::path& csv,
                                                  const hw::HardwareSpec& a100,
                                                  const models::KernelModelRegistry& models);

// Seed 002, Nsight Systems' GEMM fraction (seed002_gemm_share_rtx5090.csv): the GEMMs' share of
// kernel time (cuBLAS GEMMs, their split-K reductions and GEMVs) of a cs336-basics forward
// (`inference`) or training step without an optimizer step (`training`) in graph mode on the
// RTX 5090 (family "seed002-gemm-share", percent).
std::vector<Comparison> compare_seed002_gemm_share(const std::filesystem::path& csv,
                                                   const std::filesystem::path& models_dir,
                                                   const hw::HardwareSpec& rtx5090,
                                                   const models::KernelModelRegistry& models);

// Seed 003 (DeepSeek-OCR decode on an RTX 5090, seed003_deepseek_ocr_rtx5090.csv): `workload`
// (configs/workloads/deepseek-ocr-decode.yaml) simulated in graph mode; shares of the decode
// step's kernel time by category (family "seed003-shares", percent), the bound classes of its 20
// costliest kernel names by the seed's own rule (hw::classify_seed003; family "seed003-classes",
// counts; the label also gives gpusim's four-class counts, outside the error) and their mean
// achieved occupancy
// (family "seed003-occupancy", percent, plain mean over the 20 as the seed averages).
std::vector<Comparison> compare_seed003(const std::filesystem::path& csv,
                                        const std::filesystem::path& workload,
                                        const std::filesystem::path& models_dir,
                                        const hw::HardwareSpec& rtx5090,
                                        const models::KernelModelRegistry& models);

// Seed 003's kernel categories, from a simulated kernel name: "gemv" (GEMV and GEMM kernels),
// "flash_attention" (any attention kernel), "memory_ops" (copy and cast kernels, memcpy),
// "cat", "elementwise" (other pointwise ATen kernels) or "other" (reductions, sort, top-k, ...).
std::string seed003_category(const std::string& kernel_name);

// How many rows of a seed CSV are not compared (`compare` = none).
int seed_rows_not_compared(const std::filesystem::path& csv);

}  // namespace gpusim::validation
