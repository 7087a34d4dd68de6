#include "src/serve_request.h"

#include "hw/hardware_loader.h"
#include "models/kernel_model.h"
#include "src/options.h"

namespace gpusim::cli {

ServeRun serve_request(const ServeRequest& request, const Environment& env) {
  const auto overrides = parse_overrides(request.sets);
  const hw::PresetCatalog catalog = hardware_catalog(env);
  const hw::HardwareSpec chip = hw::load_hardware(request.hw, catalog, hardware_overrides(overrides));
  const auto engines_dir = env.config_dir / "engines", models_dir = env.config_dir / "models";
  ServeRun run{request.serve_text ? serve::parse_serve_spec(*request.serve_text, request.serve_file,
                                                            workload_overrides(overrides), engines_dir, models_dir)
                                  : serve::load_serve_spec(request.serve_file, workload_overrides(overrides), engines_dir,
                                                           models_dir),
               {}, {}, chip.name};
  const auto models = models::default_kernel_models();
  run.result = serve::run_serve(run.spec, chip, models, request.on_request);
  run.summary = serve::summarize(run.spec, run.result);
  return run;
}

}  // namespace gpusim::cli
