// Byte-pair-encoding model: vocabulary + ranked merges. Built from plain arrays so that both
// tokenizer.json and GGUF metadata can feed it. Immutable after Create; Tokenize is const and
// thread-safe (the word cache is internally synchronized).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/status.h"

namespace xinfer::tok {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
};
using TokenMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

// The largest token id a tokenizer file may use (vocabularies hold ~10^5 tokens). Ids size
// vectors (id + 1 entries): INT32_MAX overflowed that count, and ids near it asked for tens of GB.
inline constexpr int32_t kMaxTokenId = (1 << 24) - 1;

struct BpeOptions {
  // (token, id) pairs; ids need not be dense, but must be in [0, kMaxTokenId].
  std::vector<std::pair<std::string, int32_t>> vocab;
  // Merges in priority order (index = rank): the pair (left, right) becomes left+right.
  std::vector<std::pair<std::string, std::string>> merges;
  std::optional<std::string> unk_token;
  bool byte_fallback = false;  // unknown characters become <0xNN> tokens when those exist
  bool fuse_unk = false;       // consecutive unknowns collapse into one unk
  bool ignore_merges = false;  // a word found whole in the vocabulary is one token
  std::string continuing_subword_prefix;
  std::string end_of_word_suffix;
};

class BpeModel {
 public:
  static StatusOr<std::unique_ptr<BpeModel>> Create(BpeOptions options);
  BpeModel(const BpeModel&) = delete;
  BpeModel& operator=(const BpeModel&) = delete;

  // Appends the ids of one pre-tokenized word.
  void Tokenize(std::string_view word, std::vector<int32_t>* ids) const;

  std::optional<int32_t> TokenToId(std::string_view token) const;
  // "" for ids without a token.
  std::string_view IdToToken(int32_t id) const;
  int32_t vocab_size() const { return static_cast<int32_t>(id_to_token_.size()); }
  size_t num_merges() const { return merges_.size(); }

 private:
  struct MergeInfo {
    int32_t rank;
    int32_t new_id;
  };
  struct PairHash {
    size_t operator()(uint64_t k) const {
      k ^= k >> 33;
      k *= 0xff51afd7ed558ccdULL;
      k ^= k >> 33;
      return static_cast<size_t>(k);
    }
  };
  static uint64_t PairKey(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }

  BpeModel() = default;
  void TokenizeUncached(std::string_view word, std::vector<int32_t>* ids) const;

  BpeOptions options_;  // vocab/merges cleared after Create
  TokenMap token_to_id_;
  std::vector<std::string> id_to_token_;
  std::unordered_map<uint64_t, MergeInfo, PairHash> merges_;
  std::array<int32_t, 256> byte_ids_{};  // <0xNN> token ids, -1 if absent
  std::optional<int32_t> unk_id_;

  // Bounded word → ids cache, sharded to keep lock contention low across request threads.
  static constexpr size_t kCacheShards = 16;
  static constexpr size_t kCacheShardCapacity = 4096;
  static constexpr size_t kMaxCachedWordBytes = 128;
  struct CacheShard {
    std::mutex mu;
    std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> map;
  };
  mutable std::array<CacheShard, kCacheShards> cache_;
};

}  // namespace xinfer::tok
