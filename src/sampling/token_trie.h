// The vocabulary's token bytes as a prefix tree laid out in depth-first order, so that a guide
// computes the tokens it allows in one state by walking the tree once: a prefix that no valid
// output can continue rules out every token under it in one step (the subtree is skipped), and a
// prefix shared by many tokens is matched once rather than once per token.
//
// Layout: node 0 is the root (the empty prefix); every other node is one byte past its parent, and
// a node's subtree is the nodes from it up to subtree_end(node), so a walk is a forward scan that
// jumps to subtree_end to skip. Tokens whose bytes end at a node are tokens(node).
//
// Immutable once built; shared read-only by every sequence (any thread).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace xinfer {

class TokenTrie {
 public:
  // `bytes`: each token id's bytes; empty ones (special tokens) are left out.
  explicit TokenTrie(const std::vector<std::string>& bytes);

  uint32_t size() const { return static_cast<uint32_t>(byte_.size()); }
  uint8_t byte(uint32_t node) const { return byte_[node]; }
  uint32_t depth(uint32_t node) const { return depth_[node]; }
  uint32_t subtree_end(uint32_t node) const { return subtree_end_[node]; }
  std::span<const int32_t> tokens(uint32_t node) const {
    return {token_ids_.data() + token_begin_[node], token_begin_[node + 1] - token_begin_[node]};
  }
  uint32_t max_depth() const { return max_depth_; }

  // Calls on_token(id) for every token whose bytes all lead on from `root_state`: step(state,
  // byte, depth) returns whether `byte` can follow the prefix that `state` stands for, and if so
  // writes the state after it to `*next`. `State` must be default-constructible and assignable;
  // `depth` (1 for a token's first byte) lets a step keep per-depth scratch. Returns early, with
  // true, once on_token returns true.
  template <class State, class Step, class OnToken>
  bool Walk(const State& root_state, Step&& step, OnToken&& on_token) const {
    std::vector<State> states(max_depth_ + 1);
    states[0] = root_state;
    for (uint32_t node = 1; node < size();) {
      const uint32_t d = depth_[node];
      if (!step(states[d - 1], byte_[node], d, &states[d])) {
        node = subtree_end_[node];
        continue;
      }
      for (int32_t id : tokens(node))
        if (on_token(id)) return true;
      ++node;
    }
    return false;
  }

 private:
  std::vector<uint8_t> byte_;
  std::vector<uint32_t> depth_;
  std::vector<uint32_t> subtree_end_;
  std::vector<uint32_t> token_begin_;  // tokens(node) = token_ids_[token_begin_[node], [node+1])
  std::vector<int32_t> token_ids_;
  uint32_t max_depth_ = 0;
};

}  // namespace xinfer
