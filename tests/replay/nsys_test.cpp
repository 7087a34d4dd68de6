// Nsight Systems' SQLite exports in gpusim replay (replay/nsys_trace.cpp): the committed export
// (tests/replay/make_nsys_fixture.py wrote it from the H100 profiler trace of the same program)
// replayed against that trace, and each bad-input class on small databases made here.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "models/kernel_model.h"
#include "replay/nsys_trace.h"
#include "replay/replay_run.h"
#include "sim/error.h"
#include "tests/support/cli_runner.h"
#include "tests/support/model_workloads.h"
#include "tests/support/temp_files.h"

namespace gpusim::replay {
namespace {

const std::string kRepo = GPUSIM_REPO_DIR;
const std::string kExport = kRepo + "/tests/replay/data/llama3.2-1b-4l_prefill_b2_s512_h100.sqlite";
const std::string kKineto = kRepo + "/validation/data/traces/replay_h100_llama3.2-1b-4l_prefill_b2_s512.json.gz";

TEST(ReplayNsys, ReadsTheKernelsTheirLaunchingOpsAndShapes) {
  ASSERT_TRUE(is_sqlite_file(kExport));
  EXPECT_FALSE(is_sqlite_file(kKineto));
  const RecordedTrace n = read_trace(kExport);
  const RecordedTrace k = read_trace(kKineto);
  EXPECT_FALSE(n.scalars_recorded);
  EXPECT_EQ(n.device_name, "NVIDIA H100 80GB HBM3");
  ASSERT_EQ(n.activities.size(), k.activities.size());
  EXPECT_NEAR(recorded_kernel_time_us(n), recorded_kernel_time_us(k), 0.01 * recorded_kernel_time_us(k));
  std::size_t same_op = 0, gemms = 0;
  for (std::size_t i = 0; i < n.activities.size(); ++i) {
    const auto& a = n.activities[i];
    const auto& b = k.activities[i];
    ASSERT_EQ(a.kind, b.kind) << i;
    if (a.kind == ActivityKind::kKernel) {
      ASSERT_EQ(a.name, b.name) << i;
    }
    EXPECT_EQ(a.grid.x, b.grid.x);
    EXPECT_EQ(a.block.x, b.block.x);
    EXPECT_EQ(a.stream, b.stream);
    ASSERT_EQ(a.op.has_value(), b.op.has_value()) << a.name;
    if (!a.op || n.ops[*a.op].name == k.ops[*b.op].name) {
      ++same_op;
      // Shapes as NVTX records them; the GEMMs' operands exactly.
      if (k.ops[*b.op].name == "aten::mm") {
        ++gemms;
        EXPECT_EQ(n.ops[*a.op].dims, k.ops[*b.op].dims);
        // cuBLAS's kernel names name no type: the type most kernels name.
        EXPECT_EQ(n.ops[*a.op].types[0], "c10::BFloat16");
      }
    }
  }
  EXPECT_EQ(same_op, n.activities.size());  // every kernel under the op the profiler named
  EXPECT_GT(gemms, 80u);
}

TEST(ReplayNsys, ReplaysAsItsProfilerTraceDoes) {
  const auto n = gpusim::testing::run_gpusim({"replay", kExport, "--hw", "h100", "--from", "h100", "--format", "json"});
  ASSERT_EQ(n.status, 0) << n.err;
  const auto k = gpusim::testing::run_gpusim({"replay", kKineto, "--hw", "h100", "--from", "h100", "--format", "json"});
  ASSERT_EQ(k.status, 0) << k.err;
  const auto jn = nlohmann::json::parse(n.out), jk = nlohmann::json::parse(k.out);
  // Lost with NVTX: scalar arguments (the mean's dims), so less is mapped; the rest replays alike.
  EXPECT_GT(jn["replay"]["coverage_pct"].get<double>(), 95.0);
  EXPECT_LT(jn["replay"]["coverage_pct"].get<double>(), jk["replay"]["coverage_pct"].get<double>());
  EXPECT_NEAR(jn["kernel_time_us"].get<double>() / jk["kernel_time_us"].get<double>(), 1.0, 0.03);
  const auto fp32 = gpusim::testing::run_gpusim({"replay", kExport, "--hw", "h100", "--dtype", "fp32", "--format", "json"});
  ASSERT_EQ(fp32.status, 0) << fp32.err;
  // --dtype types only the ops whose kernels name no type (the GEMMs here): fp32 GEMMs are slower.
  EXPECT_GT(nlohmann::json::parse(fp32.out)["kernel_time_us"].get<double>(), 1.2 * jn["kernel_time_us"].get<double>());
}

// Stream waits come from CUPTI's synchronization table: the same cross-stream order as the
// profiler trace of the same program gives.
TEST(ReplayNsys, StreamWaitsOrderStreamsAsInTheProfilerTrace) {
  const std::string dir = kRepo + "/tests/replay/data/";
  const auto n = read_trace(dir + "streams_gemm_elementwise_h200.sqlite", "c10::BFloat16");
  const auto k = read_trace(dir + "replay_h200_streams_gemm_elementwise.json.gz");
  ASSERT_EQ(n.syncs.size(), k.syncs.size());
  const auto models = models::default_kernel_models();
  const auto h200 = gpusim::testing::preset("h200");
  const auto rn = run_replay(n, h200, nullptr, models), rk = run_replay(k, h200, nullptr, models);
  ASSERT_EQ(rn.nodes.size(), rk.nodes.size());
  std::size_t waiting = 0;
  for (std::size_t i = 0; i < rn.nodes.size(); ++i) {
    EXPECT_EQ(rn.nodes[i].deps, rk.nodes[i].deps) << i;
    waiting += !rn.nodes[i].deps.empty();
  }
  EXPECT_GE(waiting, 9u);  // per iteration: both side streams, and the join
  EXPECT_NEAR(rn.result.end.us() / rk.result.end.us(), 1.0, 0.05);
}

// A database with `sql` run in it.
std::string database(const std::string& name, const std::string& sql) {
  const auto path = gpusim::testing::test_temp_path(name + ".sqlite").string();
  std::filesystem::remove(path);
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
  return path;
}

const std::string kKernelTables =
    "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);"
    "INSERT INTO StringIds VALUES (1, 'void at::native::vectorized_elementwise_kernel<4, c10::BFloat16>');"
    "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER,"
    " correlationId INTEGER, demangledName INTEGER, gridX INTEGER, gridY INTEGER, gridZ INTEGER, blockX INTEGER,"
    " blockY INTEGER, blockZ INTEGER, registersPerThread INTEGER, staticSharedMemory INTEGER,"
    " dynamicSharedMemory INTEGER);"
    "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1000, 3000, 0, 7, 5, 1, 64, 1, 1, 128, 1, 1, 16, 0, 0);";

std::string error_key(const std::string& file) {
  try {
    read_trace(file);
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(file), std::string::npos) << e.what();
    return e.key() + ": " + e.what();
  }
  return "accepted";
}

TEST(ReplayNsys, BadExportsAreClearErrors) {
  // Not an nsys export at all.
  EXPECT_NE(error_key(database("other", "CREATE TABLE t (x INTEGER);")).find("no CUDA kernel activity"), std::string::npos);
  // Kernels, but no NVTX ranges: recorded without emit_nvtx(record_shapes=True).
  EXPECT_NE(error_key(database("no_nvtx", kKernelTables)).find("emit_nvtx(record_shapes=True)"), std::string::npos);
  // NVTX ranges without shapes.
  const std::string nvtx =
      "CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER, text TEXT, globalTid INTEGER,"
      " textId INTEGER);";
  EXPECT_NE(error_key(database("no_sizes", kKernelTables + nvtx +
                                               "INSERT INTO NVTX_EVENTS VALUES (0, 5000, 59, 'aten::add, seq = 3', 1, NULL);"))
                .find("NVTX_EVENTS"),
            std::string::npos);
  // Kernels of two GPUs.
  EXPECT_NE(error_key(database("two_gpus", kKernelTables +
                                               "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1000, 3000, 1, 7, 6, 1, 64, 1,"
                                               " 1, 128, 1, 1, 16, 0, 0);"))
                .find("2 GPUs"),
            std::string::npos);
  // A table of an unexpected shape (a column missing) is named, not a crash.
  EXPECT_NE(error_key(database("old_schema", "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);"
                                             "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER);"))
                .find("not an Nsight Systems export gpusim reads"),
            std::string::npos);
  // A file that starts like SQLite but is damaged.
  const auto damaged = gpusim::testing::test_temp_path("damaged.sqlite").string();
  {
    std::ofstream out(damaged, std::ios::binary);
    out << std::string("SQLite format 3\0", 16) << std::string(4000, 'x');
  }
  EXPECT_THROW(read_trace(damaged), ConfigError);
  // --dtype is for exports only, and takes known names.
  EXPECT_EQ(gpusim::testing::run_gpusim({"replay", kExport, "--hw", "h100", "--dtype", "int8"}).status, 2);
  EXPECT_EQ(gpusim::testing::run_gpusim({"replay", kKineto, "--hw", "h100", "--dtype", "bf16"}).status, 2);
}

TEST(ReplayNsys, KernelNamesNameTheirTypes) {
  EXPECT_EQ(type_in_kernel_name("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>>"),
            "c10::BFloat16");
  EXPECT_EQ(type_in_kernel_name("void cunn_SoftMaxForward<8, c10::Half, float, c10::Half>"), "c10::Half");
  EXPECT_EQ(type_in_kernel_name("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, MeanOps<float>>>"), "float");
  EXPECT_EQ(type_in_kernel_name("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n"), "c10::BFloat16");
  EXPECT_EQ(type_in_kernel_name("nvjet_sm90_tst_128x128_64x6_1x2_h_bz_coopA_NNT"), "");
}

}  // namespace
}  // namespace gpusim::replay
