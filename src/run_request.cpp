#include "src/run_request.h"

#include "hw/hardware_loader.h"
#include "models/kernel_model.h"
#include "src/options.h"
#include "src/run_bands.h"
#include "src/simulate_workload.h"
#include "workloads/workload.h"

namespace gpusim::cli {

RunReport run_request(const RunRequest& request, const Environment& env, std::ostream& err) {
  const auto overrides = parse_overrides(request.sets);
  const hw::PresetCatalog catalog = hardware_catalog(env);
  const hw::HardwareSpec spec = hw::load_hardware(request.hw, catalog, hardware_overrides(overrides));
  const auto models_dir = env.config_dir / "models";
  const workloads::Workload workload =
      request.workload_text
          ? workloads::parse_workload(*request.workload_text, request.workload_file, workload_overrides(overrides), models_dir)
          : workloads::load_workload(request.workload_file, workload_overrides(overrides), models_dir);
  const auto models = models::default_kernel_models();
  RunReport report = simulate_workload(spec, workload, request.workload_file, request.mode, models, request.simulate);
  // Kernels outside their family's calibrated range are counted in the results (the table's
  // band line, JSON bands.kernels_outside_calibration, band_calibrated per kernel).
  attach_shipped_bands(report, spec.name, env.config_dir, err);
  return report;
}

}  // namespace gpusim::cli
