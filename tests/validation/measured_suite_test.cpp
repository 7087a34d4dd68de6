// The validation runner: reading reference CSVs and comparing simulation with them.
#include "validation/measured_suite.h"

#include <gtest/gtest.h>

#include "hw/hardware_loader.h"
#include "sim/error.h"
#include "tests/support/gzip.h"
#include "tests/support/temp_files.h"
#include "validation/csv.h"
#include "validation/measured_rows_json.h"

namespace gpusim::validation {
namespace {

using gpusim::testing::TempDir;

TEST(CsvTable, ReadsQuotedFieldsCommentsAndReportsRaggedRows) {
  TempDir dir;
  const auto ok = dir.write("ok.csv",
                            "# a comment before the header\n"
                            "name,params,value\n"
                            "a,\"{\"\"x\"\":1,\"\"y\"\":2}\",1.5\n"
                            "b,\"two\nlines\",2\n");
  const CsvTable t = CsvTable::read(ok);
  ASSERT_EQ(t.rows(), 2u);
  EXPECT_EQ(t.at(0, "params"), "{\"x\":1,\"y\":2}");
  EXPECT_EQ(t.at(1, "params"), "two\nlines");
  EXPECT_DOUBLE_EQ(t.number(0, "value"), 1.5);
  EXPECT_EQ(t.line_of(1), 4);
  EXPECT_THROW(t.at(0, "nope"), ConfigError);
  const auto ragged = dir.write("bad.csv", "a,b\n1,2\n3\n");
  try {
    CsvTable::read(ragged);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.line(), 3);
  }
}

// The measurement tables kept gzip'd read as their plain text does; corrupt bytes name the file.
TEST(CsvTable, ReadsGzippedTablesAsPlainOnes) {
  TempDir dir;
  const std::string text = "# comment\nname,value\na,1.5\n\"b,c\",2\n";
  const CsvTable plain = CsvTable::read(dir.write("t.csv", text));
  const CsvTable packed = CsvTable::read(dir.write("t.csv.gz", gpusim::testing::gzipped(text)));
  ASSERT_EQ(packed.rows(), plain.rows());
  for (std::size_t r = 0; r < plain.rows(); ++r) {
    EXPECT_EQ(packed.at(r, "name"), plain.at(r, "name"));
    EXPECT_EQ(packed.line_of(r), plain.line_of(r));
  }
  std::string broken = gpusim::testing::gzipped(text);
  broken.resize(broken.size() / 2);
  try {
    CsvTable::read(dir.write("broken.csv.gz", broken));
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("broken.csv.gz"), std::string::npos);
  }
}

TEST(MeasuredSuite, GroupsKernelsIntoOpsAndSkipsUnmodeledVariants) {
  TempDir dir;
  const auto csv = dir.write(
      "ops.csv",
      "op,family,dtype,shape,params_json,held_out,kernel_name,op_kernel_time_us_median\n"
      "naive_attention,naive_attention,fp32,s,\"{\"\"B\"\":1,\"\"H\"\":2,\"\"S\"\":64,\"\"D\"\":32,\"\"causal\"\":0}\",1,k1,10\n"
      "naive_attention,naive_attention,fp32,s,\"{\"\"B\"\":1,\"\"H\"\":2,\"\"S\"\":64,\"\"D\"\":32,\"\"causal\"\":0}\",1,k2,10\n"
      "sdpa_flash,sdpa,fp16,t,\"{\"\"B\"\":1,\"\"H\"\":2,\"\"S\"\":64,\"\"D\"\":64,\"\"causal\"\":0,\"\"backend\"\":\"\"FLASH\"\"}\",0,k3,5\n"
      "cast_to_fp32,cast,bf16->fp32,u,\"{\"\"n\"\":4096}\",0,k4,2\n");
  const auto ops = read_measured_ops(csv);
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(ops[0].measured_kernels.size(), 2u);
  EXPECT_TRUE(ops[0].held_out);
  EXPECT_TRUE(ops[0].op.has_value());
  EXPECT_FALSE(ops[1].op.has_value());  // a forced backend is not the default lowering
  ASSERT_TRUE(ops[2].op.has_value());
  EXPECT_EQ(ops[2].op->as<models::CastShape>().to, hw::DType::kFp32);

  const hw::HardwareSpec h100 =
      hw::load_hardware("h100", hw::PresetCatalog(gpusim::testing::config_dir() / "hw"));
  const auto rows = compare_measured(ops, h100, models::default_kernel_models());
  ASSERT_EQ(rows.size(), 2u);  // the unmodeled variant is not compared
  for (const auto& r : rows) {
    EXPECT_GT(r.simulated_us, 0);
    EXPECT_NEAR(r.error_pct, 100 * (r.simulated_us - r.reference.measured_us) / r.reference.measured_us, 1e-9);
  }
  EXPECT_NEAR(mape(rows, [](const Comparison&) { return true; }),
              (std::abs(rows[0].error_pct) + std::abs(rows[1].error_pct)) / 2, 1e-9);
}

TEST(MeasuredSuite, RowsJsonCarriesEachKernelsLaunchAndDuration) {
  TempDir dir;
  const auto csv = dir.write(
      "ops.csv",
      "op,family,dtype,shape,params_json,held_out,kernel_name,grid,block,duration_us_median,"
      "op_kernel_time_us_median\n"
      "matmul,matmul,bf16,M=3 N=5000 "
      "K=700,\"{\"\"M\"\":3,\"\"N\"\":5000,\"\"K\"\":700}\",1,gemm,40x1x4,"
      "128x1x1,6.5,8\n"
      "matmul,matmul,bf16,M=3 N=5000 K=700,\"{\"\"M\"\":3,\"\"N\"\":5000,\"\"K\"\":700}\",1,reduce,"
      "20x1x1,256x1x1,1.5,8\n");
  const auto ops = read_measured_ops(csv);
  ASSERT_EQ(ops.size(), 1u);
  ASSERT_EQ(ops[0].measured_launches.size(), 2u);
  EXPECT_EQ(ops[0].measured_launches[0].grid, "40x1x4");
  EXPECT_EQ(ops[0].measured_launches[1].block, "256x1x1");
  EXPECT_DOUBLE_EQ(ops[0].measured_launches[1].us, 1.5);

  const hw::HardwareSpec h100 =
      hw::load_hardware("h100", hw::PresetCatalog(gpusim::testing::config_dir() / "hw"));
  const auto rows = compare_measured(ops, h100, models::default_kernel_models());
  ASSERT_EQ(rows.size(), 1u);
  const auto j = measured_rows_json("suite-x", "h100-sxm5", rows);
  EXPECT_EQ(j["suite"], "suite-x");
  ASSERT_EQ(j["rows"].size(), 1u);
  const auto& row = j["rows"][0];
  EXPECT_EQ(row["split"], "held-out");
  EXPECT_EQ(row["measured"].size(), 2u);
  // The simulated kernels' durations add up to the op's simulated time, each with its launch.
  double sum = 0;
  ASSERT_EQ(row["simulated"].size(), rows[0].simulated_kernels.size());
  for (const auto& k : row["simulated"]) {
    sum += k["us"].get<double>();
    EXPECT_NE(k["grid"].get<std::string>().find('x'), std::string::npos);
  }
  EXPECT_NEAR(sum, row["simulated_us"].get<double>(), 1e-9);
  EXPECT_EQ(row["simulated"][0]["name"], rows[0].simulated_kernels[0]);
}

TEST(MeasuredSuite, TheShippedH100DataReadsAndMostOpsAreModeled) {
  const auto ops = read_measured_ops(gpusim::testing::repo_dir() / "validation" / "data" / "ops_h100.csv");
  int modeled = 0, held_out = 0;
  for (const auto& m : ops) {
    modeled += m.op ? 1 : 0;
    held_out += m.held_out ? 1 : 0;
  }
  EXPECT_EQ(ops.size(), 189u);
  EXPECT_EQ(modeled, 128);
  EXPECT_GT(held_out, 80);
}

}  // namespace
}  // namespace gpusim::validation
