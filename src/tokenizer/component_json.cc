#include "tokenizer/component_json.h"

namespace xinfer::tok {

using nlohmann::json;

std::string JsonString(const json& j, const char* key, const std::string& def) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return def;
  return it->get<std::string>();
}

bool JsonBool(const json& j, const char* key, bool def) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return def;
  return it->get<bool>();
}

std::string JsonType(const json& j) { return j.is_object() ? JsonString(j, "type") : ""; }

namespace {

// {"String": "..."} or {"Regex": "..."}; exactly one of literal / regex ends up set.
Status ParsePattern(const json& j, const char* where, std::string* literal,
                    std::unique_ptr<Regex>* regex) {
  if (!j.is_object()) return InvalidArgument("{}: pattern must be an object", where);
  if (j.contains("String")) {
    *literal = j.at("String").get<std::string>();
    return Status::Ok();
  }
  if (j.contains("Regex")) {
    auto re = Regex::Compile(j.at("Regex").get<std::string>());
    if (!re.ok()) return re.status().WithContext(where);
    *regex = std::move(*re);
    return Status::Ok();
  }
  return InvalidArgument("{}: pattern needs 'String' or 'Regex'", where);
}

StatusOr<SplitBehavior> ParseBehavior(const std::string& s) {
  if (s == "Removed") return SplitBehavior::kRemoved;
  if (s == "Isolated") return SplitBehavior::kIsolated;
  if (s == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (s == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (s == "Contiguous") return SplitBehavior::kContiguous;
  return InvalidArgument("pre_tokenizer Split: unknown behavior '{}'", s);
}

PrependScheme ParsePrependScheme(const json& j) {
  if (j.contains("prepend_scheme") && !j.at("prepend_scheme").is_null()) {
    std::string s = j.at("prepend_scheme").get<std::string>();
    if (s == "first") return PrependScheme::kFirst;
    if (s == "never") return PrependScheme::kNever;
    return PrependScheme::kAlways;
  }
  // Older files only carry add_prefix_space.
  return JsonBool(j, "add_prefix_space", true) ? PrependScheme::kAlways : PrependScheme::kNever;
}

}  // namespace

StatusOr<std::unique_ptr<Normalizer>> NormalizerFromJson(const json& j) {
  if (j.is_null()) return std::unique_ptr<Normalizer>();
  const std::string type = JsonType(j);
  if (type == "NFC") return std::unique_ptr<Normalizer>(new UnicodeNormalizer(UnicodeForm::kNfc));
  if (type == "NFD") return std::unique_ptr<Normalizer>(new UnicodeNormalizer(UnicodeForm::kNfd));
  if (type == "NFKC") {
    return std::unique_ptr<Normalizer>(new UnicodeNormalizer(UnicodeForm::kNfkc));
  }
  if (type == "NFKD") {
    return std::unique_ptr<Normalizer>(new UnicodeNormalizer(UnicodeForm::kNfkd));
  }
  if (type == "Lowercase") return std::unique_ptr<Normalizer>(new LowercaseNormalizer());
  if (type == "StripAccents") return std::unique_ptr<Normalizer>(new StripAccentsNormalizer());
  if (type == "Strip") {
    return std::unique_ptr<Normalizer>(
        new StripNormalizer(JsonBool(j, "strip_left", true), JsonBool(j, "strip_right", true)));
  }
  if (type == "Prepend") {
    return std::unique_ptr<Normalizer>(new PrependNormalizer(JsonString(j, "prepend")));
  }
  if (type == "Replace") {
    std::string literal;
    std::unique_ptr<Regex> regex;
    XI_RETURN_IF_ERROR(ParsePattern(j.at("pattern"), "normalizer Replace", &literal, &regex));
    return std::unique_ptr<Normalizer>(
        new ReplaceNormalizer(std::move(literal), std::move(regex), JsonString(j, "content")));
  }
  if (type == "Sequence") {
    std::vector<std::unique_ptr<Normalizer>> steps;
    for (const json& step : j.at("normalizers")) {
      XI_ASSIGN_OR_RETURN(auto n, NormalizerFromJson(step));
      if (n != nullptr) steps.push_back(std::move(n));
    }
    return std::unique_ptr<Normalizer>(new SequenceNormalizer(std::move(steps)));
  }
  return Unimplemented("tokenizer.json: unsupported normalizer type '{}'", type);
}

StatusOr<std::unique_ptr<PreTokenizer>> PreTokenizerFromJson(const json& j) {
  if (j.is_null()) return std::unique_ptr<PreTokenizer>();
  const std::string type = JsonType(j);
  if (type == "Split") {
    std::string literal;
    std::unique_ptr<Regex> regex;
    XI_RETURN_IF_ERROR(ParsePattern(j.at("pattern"), "pre_tokenizer Split", &literal, &regex));
    XI_ASSIGN_OR_RETURN(SplitBehavior behavior,
                        ParseBehavior(JsonString(j, "behavior", "Isolated")));
    return std::unique_ptr<PreTokenizer>(new SplitPreTokenizer(
        std::move(literal), std::move(regex), behavior, JsonBool(j, "invert", false)));
  }
  if (type == "ByteLevel") {
    XI_ASSIGN_OR_RETURN(auto p, ByteLevelPreTokenizer::Create(JsonBool(j, "add_prefix_space", true),
                                                              JsonBool(j, "use_regex", true)));
    return std::unique_ptr<PreTokenizer>(std::move(p));
  }
  if (type == "Metaspace") {
    return std::unique_ptr<PreTokenizer>(
        new MetaspacePreTokenizer(JsonString(j, "replacement", "\xE2\x96\x81"),
                                  ParsePrependScheme(j), JsonBool(j, "split", true)));
  }
  if (type == "Whitespace") {
    XI_ASSIGN_OR_RETURN(auto re, Regex::Compile(R"(\w+|[^\w\s]+)"));
    return std::unique_ptr<PreTokenizer>(
        new SplitPreTokenizer("", std::move(re), SplitBehavior::kRemoved, /*invert=*/true));
  }
  if (type == "WhitespaceSplit") {
    return std::unique_ptr<PreTokenizer>(new WhitespaceSplitPreTokenizer());
  }
  if (type == "Digits") {
    return std::unique_ptr<PreTokenizer>(
        new DigitsPreTokenizer(JsonBool(j, "individual_digits", false)));
  }
  if (type == "Sequence") {
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    for (const json& step : j.at("pretokenizers")) {
      XI_ASSIGN_OR_RETURN(auto p, PreTokenizerFromJson(step));
      if (p != nullptr) steps.push_back(std::move(p));
    }
    return std::unique_ptr<PreTokenizer>(new SequencePreTokenizer(std::move(steps)));
  }
  return Unimplemented("tokenizer.json: unsupported pre_tokenizer type '{}'", type);
}

namespace {

Status AppendDecodeStages(const json& j, std::vector<std::unique_ptr<DecodeStage>>* stages) {
  const std::string type = JsonType(j);
  if (type == "ByteLevel") {
    stages->push_back(std::make_unique<ByteLevelStage>());
  } else if (type == "ByteFallback") {
    stages->push_back(std::make_unique<ByteFallbackStage>());
  } else if (type == "Fuse") {
    stages->push_back(std::make_unique<FuseStage>());
  } else if (type == "Replace") {
    std::string literal;
    std::unique_ptr<Regex> regex;
    XI_RETURN_IF_ERROR(ParsePattern(j.at("pattern"), "decoder Replace", &literal, &regex));
    if (regex != nullptr) return Unimplemented("tokenizer.json: decoder Replace with a Regex");
    stages->push_back(std::make_unique<ReplaceStage>(std::move(literal), JsonString(j, "content")));
  } else if (type == "Strip") {
    std::string content = JsonString(j, "content", " ");
    int start = j.value("start", 0), stop = j.value("stop", 0);
    if (start < 0 || stop < 0) return InvalidArgument("decoder Strip: negative start/stop");
    stages->push_back(std::make_unique<StripStage>(std::move(content), start, stop));
  } else if (type == "Metaspace") {
    stages->push_back(
        std::make_unique<MetaspaceStage>(JsonString(j, "replacement", "\xE2\x96\x81"),
                                         ParsePrependScheme(j) != PrependScheme::kNever));
  } else if (type == "Sequence") {
    for (const json& d : j.at("decoders")) XI_RETURN_IF_ERROR(AppendDecodeStages(d, stages));
  } else {
    return Unimplemented("tokenizer.json: unsupported decoder type '{}'", type);
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<Decoder>> DecoderFromJson(const json& j) {
  std::vector<std::unique_ptr<DecodeStage>> stages;
  if (!j.is_null()) XI_RETURN_IF_ERROR(AppendDecodeStages(j, &stages));
  return std::make_unique<Decoder>(std::move(stages));
}

StatusOr<std::unique_ptr<BpeModel>> ModelFromJson(const json& j) {
  if (!j.is_object()) return InvalidArgument("tokenizer.json: 'model' must be an object");
  std::string type = JsonType(j);
  if (type.empty() && j.contains("merges")) type = "BPE";  // some writers omit the tag
  if (type != "BPE") {
    return Unimplemented("tokenizer.json: unsupported model type '{}' (only BPE is implemented)",
                         type);
  }
  BpeOptions opt;
  const json& vocab = j.at("vocab");
  if (!vocab.is_object()) return InvalidArgument("tokenizer.json: model.vocab must be an object");
  opt.vocab.reserve(vocab.size());
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    opt.vocab.emplace_back(it.key(), it.value().get<int32_t>());
  }
  if (j.contains("merges") && !j.at("merges").is_null()) {
    const json& merges = j.at("merges");
    opt.merges.reserve(merges.size());
    for (const json& m : merges) {
      if (m.is_array()) {
        if (m.size() != 2)
          return InvalidArgument("tokenizer.json: merge {} is not a pair", m.dump());
        opt.merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
        continue;
      }
      const std::string& s = m.get_ref<const std::string&>();
      size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos) {
        return InvalidArgument("tokenizer.json: merge '{}' is not 'left right'", s);
      }
      opt.merges.emplace_back(s.substr(0, space), s.substr(space + 1));
    }
  }
  if (j.contains("unk_token") && !j.at("unk_token").is_null()) {
    opt.unk_token = j.at("unk_token").get<std::string>();
  }
  opt.byte_fallback = JsonBool(j, "byte_fallback", false);
  opt.fuse_unk = JsonBool(j, "fuse_unk", false);
  opt.ignore_merges = JsonBool(j, "ignore_merges", false);
  opt.continuing_subword_prefix = JsonString(j, "continuing_subword_prefix");
  opt.end_of_word_suffix = JsonString(j, "end_of_word_suffix");
  return BpeModel::Create(std::move(opt));
}

}  // namespace xinfer::tok
