// Helpers shared by the integration tests.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace xinfer::testing {

// Absolute path of ../shared (CI and developer machines have it beside the checkout).
inline std::string SharedDir() { return XINFER_SHARED_DIR; }

inline bool HaveShared(const std::string& rel) {
  return std::filesystem::exists(SharedDir() + "/" + rel);
}

}  // namespace xinfer::testing

// Skips the current test, with the reason, when a file under ../shared is missing.
#define XI_REQUIRE_SHARED(rel)                                                        \
  do {                                                                                \
    if (!::xinfer::testing::HaveShared(rel))                                          \
      GTEST_SKIP() << "../shared/" << (rel) << " not found (tests need the shared "   \
                   << "models and golden files beside the checkout)";                 \
  } while (0)
