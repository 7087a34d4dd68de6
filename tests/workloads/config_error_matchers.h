// Runs a callable that must throw a ConfigError, and returns the error for inspection.
#pragma once

#include <gtest/gtest.h>

#include "sim/error.h"

namespace gpusim::testing {

template <class F>
ConfigError expect_config_error(F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e;
  }
  ADD_FAILURE() << "expected a ConfigError";
  return ConfigError("", -1, "", "");
}

}  // namespace gpusim::testing
