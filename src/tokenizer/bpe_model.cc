#include "tokenizer/bpe_model.h"

#include <fmt/format.h>

#include <queue>

#include "base/utf8.h"

namespace xinfer::tok {

StatusOr<std::unique_ptr<BpeModel>> BpeModel::Create(BpeOptions options) {
  std::unique_ptr<BpeModel> m(new BpeModel());
  int32_t max_id = -1;
  for (const auto& [token, id] : options.vocab) {
    if (id < 0 || id > kMaxTokenId)
      return InvalidArgument("BPE vocabulary: token '{}' has id {} outside [0, {}]", token, id,
                             kMaxTokenId);
    max_id = std::max(max_id, id);
  }
  m->id_to_token_.resize(static_cast<size_t>(max_id + 1));
  m->token_to_id_.reserve(options.vocab.size());
  for (auto& [token, id] : options.vocab) {
    m->token_to_id_.emplace(token, id);  // a duplicate token keeps its first id
    m->id_to_token_[id] = std::move(token);
  }
  options.vocab.clear();
  options.vocab.shrink_to_fit();

  const std::string& prefix = options.continuing_subword_prefix;
  m->merges_.reserve(options.merges.size());
  std::string merged;
  for (size_t rank = 0; rank < options.merges.size(); ++rank) {
    const auto& [a, b] = options.merges[rank];
    auto ia = m->token_to_id_.find(a);
    auto ib = m->token_to_id_.find(b);
    if (ia == m->token_to_id_.end() || ib == m->token_to_id_.end()) {
      return InvalidArgument("BPE merge #{} '{} {}': token '{}' is not in the vocabulary", rank, a,
                             b, ia == m->token_to_id_.end() ? a : b);
    }
    merged.assign(a);
    std::string_view tail = b;
    if (!prefix.empty() && tail.substr(0, prefix.size()) == prefix)
      tail.remove_prefix(prefix.size());
    merged.append(tail);
    auto im = m->token_to_id_.find(merged);
    if (im == m->token_to_id_.end()) {
      return InvalidArgument("BPE merge #{} '{} {}': result '{}' is not in the vocabulary", rank, a,
                             b, merged);
    }
    // Like Hugging Face, a repeated pair takes the rank of its last occurrence.
    m->merges_.insert_or_assign(PairKey(ia->second, ib->second),
                                MergeInfo{static_cast<int32_t>(rank), im->second});
  }
  options.merges.clear();
  options.merges.shrink_to_fit();

  for (int b = 0; b < 256; ++b) {
    auto it = m->token_to_id_.find(fmt::format("<0x{:02X}>", b));
    m->byte_ids_[b] = it == m->token_to_id_.end() ? -1 : it->second;
  }
  if (options.unk_token.has_value()) {
    // A dangling unk_token is treated as "no unk": unknown characters are dropped.
    auto it = m->token_to_id_.find(*options.unk_token);
    if (it != m->token_to_id_.end()) m->unk_id_ = it->second;
  }
  m->options_ = std::move(options);
  return m;
}

std::optional<int32_t> BpeModel::TokenToId(std::string_view token) const {
  auto it = token_to_id_.find(token);
  if (it == token_to_id_.end()) return std::nullopt;
  return it->second;
}

std::string_view BpeModel::IdToToken(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= id_to_token_.size()) return {};
  return id_to_token_[id];
}

void BpeModel::Tokenize(std::string_view word, std::vector<int32_t>* ids) const {
  if (word.empty()) return;
  if (word.size() > kMaxCachedWordBytes) {
    TokenizeUncached(word, ids);
    return;
  }
  const size_t h = StringHash()(word);
  CacheShard& shard = cache_[h % kCacheShards];
  {
    std::lock_guard<std::mutex> lock(shard.mu);
    auto it = shard.map.find(word);
    if (it != shard.map.end()) {
      ids->insert(ids->end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t start = ids->size();
  TokenizeUncached(word, ids);
  std::vector<int32_t> result(ids->begin() + static_cast<std::ptrdiff_t>(start), ids->end());
  std::lock_guard<std::mutex> lock(shard.mu);
  // Crude but bounded: a full shard starts over rather than tracking recency.
  if (shard.map.size() >= kCacheShardCapacity) shard.map.clear();
  shard.map.emplace(std::string(word), std::move(result));
}

void BpeModel::TokenizeUncached(std::string_view word, std::vector<int32_t>* ids) const {
  if (options_.ignore_merges) {
    if (auto id = TokenToId(word)) {
      ids->push_back(*id);
      return;
    }
  }
  // Symbols form a doubly linked list over the word; merged-away symbols get id -1.
  struct Symbol {
    int32_t id;
    int32_t prev;
    int32_t next;
  };
  std::vector<Symbol> syms;
  syms.reserve(word.size());
  auto add = [&syms](int32_t id) {
    int32_t n = static_cast<int32_t>(syms.size());
    syms.push_back({id, n - 1, -1});
    if (n > 0) syms[n - 1].next = n;
  };

  const std::string& prefix = options_.continuing_subword_prefix;
  const std::string& suffix = options_.end_of_word_suffix;
  std::optional<int32_t> pending_unk;
  std::string piece;
  size_t pos = 0;
  while (pos < word.size()) {
    const size_t begin = pos;
    NextCodepoint(word, &pos);
    std::string_view ch = word.substr(begin, pos - begin);
    std::optional<int32_t> id;
    if (prefix.empty() && suffix.empty()) {
      id = TokenToId(ch);
    } else {
      piece.clear();
      if (begin > 0) piece.append(prefix);
      piece.append(ch);
      if (pos == word.size()) piece.append(suffix);
      id = TokenToId(piece);
    }
    if (id.has_value()) {
      if (pending_unk) add(*std::exchange(pending_unk, std::nullopt));
      add(*id);
      continue;
    }
    if (options_.byte_fallback) {
      bool all = true;
      for (char c : ch) all = all && byte_ids_[static_cast<uint8_t>(c)] >= 0;
      if (all) {
        if (pending_unk) add(*std::exchange(pending_unk, std::nullopt));
        for (char c : ch) add(byte_ids_[static_cast<uint8_t>(c)]);
        continue;
      }
    }
    if (unk_id_.has_value()) {
      if (pending_unk && !options_.fuse_unk) add(*pending_unk);
      pending_unk = unk_id_;
    }
  }
  if (pending_unk) add(*pending_unk);

  struct Candidate {
    int32_t rank;
    int32_t pos;
    int32_t new_id;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  auto consider = [&](int32_t left) {
    int32_t right = syms[left].next;
    if (right < 0) return;
    auto it = merges_.find(PairKey(syms[left].id, syms[right].id));
    if (it != merges_.end()) queue.push({it->second.rank, left, it->second.new_id});
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(syms.size()); ++i) consider(i);

  while (!queue.empty()) {
    Candidate top = queue.top();
    queue.pop();
    Symbol& left = syms[top.pos];
    if (left.id < 0 || left.next < 0) continue;
    Symbol& right = syms[left.next];
    auto it = merges_.find(PairKey(left.id, right.id));
    // Stale entry: one side was merged into something else since it was queued.
    if (it == merges_.end() || it->second.new_id != top.new_id) continue;
    left.id = top.new_id;
    right.id = -1;
    left.next = right.next;
    if (left.next >= 0) syms[left.next].prev = top.pos;
    if (left.prev >= 0) consider(left.prev);
    consider(top.pos);
  }
  for (int32_t i = syms.empty() ? -1 : 0; i >= 0; i = syms[i].next) ids->push_back(syms[i].id);
}

}  // namespace xinfer::tok
