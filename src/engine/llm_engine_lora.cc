// LLMEngine's LoRA adapters: loaded onto the runner under a new scheduler lora_id each.
#include <algorithm>

#include "base/logging.h"
#include "engine/llm_engine.h"
#include "model/lora.h"

namespace xinfer {

Status LLMEngine::AddLoraAdapter(const LoraModule& module) {
  if (!config_.enable_lora)
    return InvalidArgument("LoRA adapter '{}': LoRA is not enabled (--enable-lora)", module.name);
  if (module.name.empty()) return InvalidArgument("a LoRA adapter needs a name");
  if (std::any_of(lora_adapters_.begin(), lora_adapters_.end(),
                  [&](const LoraAdapterInfo& a) { return a.name == module.name; }))
    return InvalidArgument("a LoRA adapter named '{}' is already loaded", module.name);
  auto adapter = model_->LoadLora(module.path, config_.max_lora_rank);
  if (!adapter.ok())
    return adapter.status().WithContext(fmt::format("LoRA adapter '{}'", module.name));
  const int32_t id = next_lora_id_++;
  runner_->AddLoraAdapter(id, *adapter);
  lora_adapters_.push_back(
      {module.name, module.path, module.base_model_name, id, (*adapter)->rank});
  XI_LOG_INFO("LoRA adapter '{}' from {}: rank {}, {:.1f} MiB", module.name, module.path,
              (*adapter)->rank, (*adapter)->bytes / 1048576.0);
  return Status::Ok();
}

Status LLMEngine::RemoveLoraAdapter(const std::string& name) {
  auto it = std::find_if(lora_adapters_.begin(), lora_adapters_.end(),
                         [&](const LoraAdapterInfo& a) { return a.name == name; });
  if (it == lora_adapters_.end()) return NotFound("LoRA adapter '{}' is not loaded", name);
  retired_lora_ids_.push_back(it->id);
  lora_adapters_.erase(it);
  DropRetiredLoraAdapters();
  XI_LOG_INFO("LoRA adapter '{}' removed", name);
  return Status::Ok();
}

void LLMEngine::DropRetiredLoraAdapters() {
  const SchedulerStats s = scheduler_->stats();
  std::erase_if(retired_lora_ids_, [&](int32_t id) {
    if (std::find(s.running_loras.begin(), s.running_loras.end(), id) != s.running_loras.end() ||
        std::find(s.waiting_loras.begin(), s.waiting_loras.end(), id) != s.waiting_loras.end())
      return false;
    runner_->RemoveLoraAdapter(id);
    return true;
  });
}

}  // namespace xinfer
