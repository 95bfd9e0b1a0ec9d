// Where an output stands in a Grammar (grammar.h), byte by byte: the set of parse stacks that the
// bytes so far leave open (as llama.cpp's grammar sampler keeps them). A stack is the list of
// grammar positions still to match, innermost first; its top is always a byte set. A byte keeps
// the stacks whose top allows it, each moved past that byte and expanded again (a rule reference
// becomes one stack per alternative; the end of an alternative returns to the stack below), and
// the output may end when some stack is empty.
//
// Stacks share their tails: each is a chain of nodes in one arena, a node (position, the node
// below), and equal stacks are merged by a structural hash. A token's allowed set comes from one
// walk of the vocabulary's trie (token_trie.h) that advances the stacks a byte per trie edge and
// drops, on the way back up, the nodes that edge made — so a walk allocates nothing it keeps.
//
// Bounds (a client writes the grammar): at most kMaxStacks stacks and kMaxDepth nodes in one, and
// kMaxExpansionSteps of expansion per byte; a byte past them is refused (the output cannot take
// it) rather than grown without limit. A token walk stops after kMaxWalkSteps of expansion (and
// merging) in all: the tokens found by then are the allowed set (each one valid; a grammar that
// costs that much per step leaves the model fewer choices rather than stalling the engine).
//
// A matcher belongs to one sequence and is not thread-safe; the Grammar is borrowed, shared
// read-only, and must outlive it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sampling/grammar.h"
#include "sampling/token_trie.h"

namespace xinfer {

class GrammarMatcher {
 public:
  static constexpr size_t kMaxStacks = 1024;
  static constexpr uint32_t kMaxDepth = 10000;  // < 2^16 (Node::depth)
  static constexpr size_t kMaxExpansionSteps = 1 << 16;
  // ~1-3 s of one Zen 4 core for a grammar that costs the most per step; a JSON grammar's walk
  // inside a string uses a small fraction of it.
  static constexpr size_t kMaxWalkSteps = 1 << 24;

  // `walk_budget`: kMaxWalkSteps, or less in tests of the bound.
  explicit GrammarMatcher(const Grammar* grammar, size_t walk_budget = kMaxWalkSteps);

  // Feeds `bytes`; false (and the state as it was) when they cannot continue the output.
  bool Advance(std::string_view bytes);
  // The output so far is a whole match.
  bool complete() const;
  // The last WalkTokens stopped at its budget (the tokens it found are fewer than allowed).
  bool last_walk_cut() const { return walk_steps_ > walk_budget_; }
  // Appends bytes that differ between any two states whose allowed tokens may differ.
  void AppendStateKey(std::string* key) const;

  // Calls on_token(id) for every token of `trie` whose bytes can all come next; stops early,
  // returning true, once on_token does. Const: the nodes it makes are dropped before it returns.
  //
  // A byte that leaves the stacks as they were (a character inside a string, a digit of a
  // number: a loop of the grammar) is found once per state and then skipped: the child shares
  // its parent's stacks, and most of the trie's nodes cost a table lookup instead of a step.
  // States are told apart by a 64-bit hash of their stacks for that (and only within one walk).
  template <class OnToken>
  bool WalkTokens(const TokenTrie& trie, OnToken&& on_token) const {
    BeginWalk(trie.max_depth() + 1);
    const bool stopped = trie.Walk(
        uint32_t{0},
        [&](uint32_t from, uint8_t byte, uint32_t depth, uint32_t* next) {
          return WalkStep(from, byte, depth, next);
        },
        on_token);
    arena_.resize(walk_marks_[0]);
    return stopped;
  }

 private:
  static constexpr int32_t kEmpty = -1;  // the empty stack: the whole grammar matched

  struct Node {
    uint32_t pos;    // the grammar position still to match
    int32_t below;   // the node below, or kEmpty
    uint16_t depth;  // nodes in the chain
    uint16_t sub;    // at a kChars element: its automaton's state (bytes of a character read)
    uint64_t hash;   // of the positions (and sub-states) down the chain
  };

  // The stacks after `byte` from the stacks `from` into `*to`; false when none is left (or a
  // bound is passed).
  bool Step(const std::vector<int32_t>& from, uint8_t byte, std::vector<int32_t>* to) const;
  // Expands "continue at `pos` above `below`" into stacks whose tops are byte sets (or kEmpty),
  // appended to `*to`; false past a bound.
  bool Expand(uint32_t pos, int32_t below, std::vector<int32_t>* to) const;
  // Appends the node (pos, below, sub) and returns its index; past kMaxDepth sets overflow_
  // instead.
  int32_t NewNode(uint32_t pos, int32_t below, uint16_t sub = 0) const;
  // Drops stacks equal to another; false when more than kMaxStacks stay.
  bool Merge(std::vector<int32_t>* tops) const;
  bool SameStack(int32_t a, int32_t b) const;
  // Copies the nodes the current stacks use into a fresh arena (CatchUp leaves the rest behind).
  void Compact();

  // WalkTokens' state: slot d holds the stacks made at trie depth d; a child whose byte loops
  // shares its parent's slot. BeginWalk puts the current stacks in slot 0; WalkStep is the trie
  // walk's step from slot `from` to the node at `depth` (its slot written to *next).
  void BeginWalk(size_t depth) const;
  bool WalkStep(uint32_t from, uint8_t byte, uint32_t depth, uint32_t* next) const;
  uint64_t StateHash(const std::vector<int32_t>& tops) const;
  bool SameState(const std::vector<int32_t>& a, const std::vector<int32_t>& b) const;

  // Per walk, by state hash: the bytes known to loop and those known to leave no stack.
  struct ByteMemo {
    uint64_t state = 0;
    Grammar::ByteSet loops{};
    Grammar::ByteSet dead{};
  };
  static constexpr size_t kMemoSlots = 256;

  const Grammar* grammar_;
  size_t walk_budget_;
  // Nodes of the current stacks and of walks in progress. Mutable: a walk (const) appends and
  // then drops nodes; nothing it leaves changes what the matcher means.
  mutable std::vector<Node> arena_;
  std::vector<int32_t> tops_;
  size_t compact_at_ = 1 << 16;
  mutable bool overflow_ = false;
  mutable size_t steps_ = 0;       // expansion steps of the current byte (Step)
  mutable size_t walk_steps_ = 0;  // expansion steps of the current walk (WalkTokens)
  mutable std::vector<std::pair<uint32_t, int32_t>> work_;  // Expand's pending (pos, below)
  mutable std::vector<std::vector<int32_t>> walk_tops_;     // WalkTokens' stacks per depth
  mutable std::vector<size_t> walk_marks_;                  // arena size per slot
  mutable std::vector<uint64_t> walk_hashes_;               // StateHash per slot
  mutable std::vector<ByteMemo> memo_;                      // kMemoSlots, by state hash
  mutable std::vector<int32_t> step_scratch_;
  mutable std::vector<uint64_t> merge_hashes_;  // Merge's hashes of the stacks kept
  mutable std::vector<std::pair<uint64_t, int32_t>> merge_sorted_;  // Merge's (hash, stack)
};

}  // namespace xinfer
