#include "sampling/token_trie.h"

#include <algorithm>
#include <numeric>

#include "base/check.h"

namespace xinfer {

TokenTrie::TokenTrie(const std::vector<std::string>& bytes) {
  // Sorted bytes give the depth-first order: each token adds the nodes past its common prefix
  // with the one before it.
  std::vector<int32_t> order;
  for (size_t id = 0; id < bytes.size(); ++id)
    if (!bytes[id].empty()) order.push_back(static_cast<int32_t>(id));
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return bytes[static_cast<size_t>(a)] < bytes[static_cast<size_t>(b)];
  });

  byte_.push_back(0);
  depth_.push_back(0);
  subtree_end_.push_back(0);
  std::vector<uint32_t> token_node;  // per entry of `order`: the node its bytes end at
  token_node.reserve(order.size());
  std::vector<uint32_t> path = {0};  // the nodes of the previous token's bytes, root first
  const std::string* previous = nullptr;
  for (int32_t id : order) {
    const std::string& b = bytes[static_cast<size_t>(id)];
    size_t common = 0;
    if (previous != nullptr)
      while (common < b.size() && common < previous->size() && b[common] == (*previous)[common])
        ++common;
    // Close the subtrees the previous token opened past the common prefix.
    while (path.size() > common + 1) {
      subtree_end_[path.back()] = size();
      path.pop_back();
    }
    for (size_t i = common; i < b.size(); ++i) {
      path.push_back(size());
      byte_.push_back(static_cast<uint8_t>(b[i]));
      depth_.push_back(static_cast<uint32_t>(i + 1));
      subtree_end_.push_back(0);
    }
    max_depth_ = std::max(max_depth_, static_cast<uint32_t>(b.size()));
    token_node.push_back(path.back());
    previous = &b;
  }
  while (!path.empty()) {
    subtree_end_[path.back()] = size();
    path.pop_back();
  }

  // Token ids grouped by node: in sorted order they already are.
  token_begin_.assign(size() + 1, 0);
  for (uint32_t node : token_node) ++token_begin_[node + 1];
  std::partial_sum(token_begin_.begin(), token_begin_.end(), token_begin_.begin());
  token_ids_.assign(order.begin(), order.end());
  for (size_t i = 0; i < order.size(); ++i)
    XI_CHECK(token_begin_[token_node[i]] <= i && i < token_begin_[token_node[i] + 1]);
}

}  // namespace xinfer
