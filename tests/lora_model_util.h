// LoRA adapters for the shared tiny models in PEFT's layout, with the merged model each stands for
// (lora_test.cc, the engine tests).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace xinfer::testing {

struct LoraSpec {
  int rank = 4;
  double alpha = 8;
  bool rslora = false;
  // PEFT module names; every layer gets each.
  std::vector<std::string> targets = {"q_proj",    "k_proj",  "v_proj",   "o_proj",
                                      "gate_proj", "up_proj", "down_proj"};
  uint32_t seed = 1;
  bool zero_b = false;  // B = 0 (PEFT's initialization): the adapter changes nothing
};

struct LoraFolders {
  std::filesystem::path adapter;  // adapter_config.json + adapter_model.safetensors (BF16)
  std::filesystem::path merged;   // the base folder with W + s B A in F32 (double-precision merge)
};

// For the shared model `base` (e.g. "tiny-qwen3"), under the temp directory.
LoraFolders WriteLoraAdapter(const std::string& base, const LoraSpec& spec,
                             const std::string& name);

}  // namespace xinfer::testing
