// Offline batch mode of `xinfer generate`: JSONL in, JSONL out in input order, progress on stderr.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/llm_engine.h"

namespace xinfer {

// Every line is validated (prompt and sampling parameters) before anything runs; a bad line is
// reported as "line N: ..." with exit code 1 and no output file written.
// `lora`: the LoRA adapter (a --lora-modules name) every request runs with; "" for none.
int RunOfflineBatch(const std::string& input_path, const std::string& output_path,
                    LLMEngine& engine, const std::string& chat_template_arg,
                    const std::string& lora = "");

// The prompt ids of one request object (prompt / prompt_ids / messages).
StatusOr<std::vector<int32_t>> BuildPromptIds(const nlohmann::ordered_json& request,
                                              LLMEngine& engine,
                                              const std::string& chat_template_arg);

}  // namespace xinfer
