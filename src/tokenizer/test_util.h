// Helpers shared by the tokenizer tests (not part of the library).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "base/mapped_file.h"
#include "tokenizer/tokenizer.h"

namespace xinfer::testing {

inline std::string SharedDir() { return XINFER_SHARED_DIR; }
inline bool HaveShared() { return std::filesystem::is_directory(SharedDir()); }

#define XI_REQUIRE_SHARED()                                                      \
  do {                                                                           \
    if (!::xinfer::testing::HaveShared()) {                                      \
      GTEST_SKIP() << "../shared not found: " << ::xinfer::testing::SharedDir(); \
    }                                                                            \
  } while (0)

// Loads ../shared/models/<name> once per process (tokenizers are immutable and thread-safe).
inline const Tokenizer& SharedTokenizer(const std::string& name) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = cache[name];
  if (slot == nullptr) {
    auto t = Tokenizer::FromDir(SharedDir() + "/models/" + name);
    if (!t.ok()) {
      ADD_FAILURE() << t.status().ToString();
      std::abort();
    }
    slot = std::move(*t);
  }
  return *slot;
}

inline std::string ReadOrDie(const std::string& path) {
  auto s = ReadFileToString(path);
  if (!s.ok()) {
    ADD_FAILURE() << s.status().ToString();
    return "";
  }
  return *s;
}

}  // namespace xinfer::testing
