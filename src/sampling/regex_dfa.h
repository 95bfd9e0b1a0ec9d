// A regular expression (regex_syntax.h) compiled to a deterministic automaton over UTF-8 bytes,
// for guided decoding by regex or by choice (vLLM's guided_regex, guided_choice): a token may come
// next when its bytes walk the automaton from the current state to a state that is not dead, and
// the output may end in an accepting state. Dead states (from which no accepting state can be
// reached) are pruned at compile time, so every live walk can still finish a match.
//
// Immutable once compiled; shared read-only by every sequence of a request (any thread).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "sampling/regex_syntax.h"

namespace xinfer {

class RegexDfa {
 public:
  static constexpr int32_t kDead = -1;
  // Bounds on what a request's expression may cost (the client controls it): NFA states while
  // compiling, DFA states kept (".{0,1000}" needs ~8000: a count times the partial characters),
  // transition-table entries (states x byte classes, 4 bytes each), and NFA states visited by
  // the subset construction (its time: ~1 s at the bound).
  static constexpr int32_t kMaxNfaStates = 100000;
  static constexpr int32_t kMaxStates = 20000;
  static constexpr int64_t kMaxTransitions = int64_t{1} << 22;
  static constexpr int64_t kMaxConstructionSteps = int64_t{1} << 27;

  // InvalidArgument (message starting with `what`) when the expression matches no string or its
  // automaton would pass the bounds above.
  static StatusOr<std::shared_ptr<const RegexDfa>> Compile(const RegexNode& regex,
                                                           std::string_view what);
  // vLLM's guided_regex: ParseRegex, then Compile.
  static StatusOr<std::shared_ptr<const RegexDfa>> FromPattern(std::string_view pattern,
                                                               std::string_view what);
  // vLLM's guided_choice: exactly one of `choices` (non-empty list of UTF-8 strings).
  static StatusOr<std::shared_ptr<const RegexDfa>> FromChoices(
      const std::vector<std::string>& choices, std::string_view what);
  // The texts both match (the product automaton), under the same bounds.
  static StatusOr<std::shared_ptr<const RegexDfa>> Intersect(const RegexDfa& a, const RegexDfa& b,
                                                             std::string_view what);

  int32_t start() const { return 0; }
  int32_t size() const { return static_cast<int32_t>(accepting_.size()); }
  // The state after `byte` from live `state`, or kDead.
  int32_t Next(int32_t state, uint8_t byte) const {
    return next_[static_cast<size_t>(state) * classes_ + class_of_[byte]];
  }
  // The state after all of `bytes`, or kDead as soon as one byte leads nowhere.
  int32_t Walk(int32_t state, std::string_view bytes) const;
  bool accepting(int32_t state) const { return accepting_[static_cast<size_t>(state)] != 0; }
  // Some byte leads on from `state` (false: the match is over; only the end may come).
  bool can_continue(int32_t state) const { return can_continue_[static_cast<size_t>(state)] != 0; }

 private:
  RegexDfa() = default;  // built by Compile and Intersect only

  // Sends every transition into a state that cannot reach an accepting one to kDead and fills
  // can_continue_; InvalidArgument when the start is such a state (nothing matches).
  Status PruneDeadStates(std::string_view what);

  std::array<uint8_t, 256> class_of_{};  // bytes that every transition treats alike share a class
  size_t classes_ = 0;
  std::vector<int32_t> next_;  // state x class -> state or kDead
  std::vector<uint8_t> accepting_;
  std::vector<uint8_t> can_continue_;
};

}  // namespace xinfer
