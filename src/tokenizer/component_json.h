// tokenizer.json sections → pipeline components. The functions may throw nlohmann::json
// exceptions on ill-typed fields; FromJsonText (tokenizer_json.cc) catches them at the edge.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/decoder.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pretokenizer.h"

namespace xinfer::tok {

// Each returns nullptr for a JSON null (no such stage), Unimplemented for unknown types.
StatusOr<std::unique_ptr<Normalizer>> NormalizerFromJson(const nlohmann::json& j);
StatusOr<std::unique_ptr<PreTokenizer>> PreTokenizerFromJson(const nlohmann::json& j);
// Never null: a JSON null yields the "join with spaces" decoder.
StatusOr<std::unique_ptr<Decoder>> DecoderFromJson(const nlohmann::json& j);
StatusOr<std::unique_ptr<BpeModel>> ModelFromJson(const nlohmann::json& j);

// Small typed accessors: a missing key or a null yields the default.
std::string JsonString(const nlohmann::json& j, const char* key, const std::string& def = "");
bool JsonBool(const nlohmann::json& j, const char* key, bool def);
std::string JsonType(const nlohmann::json& j);

}  // namespace xinfer::tok
