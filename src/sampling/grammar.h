// A context-free grammar over bytes, for guided decoding by grammar (vLLM's guided_grammar /
// structured_outputs.grammar, in the GBNF notation that llama.cpp and xgrammar read; gbnf.h
// parses it). Each rule is a list of alternatives; each alternative a sequence of elements, ended
// by kEnd: a set of bytes (one byte of the output) or a reference to a rule. Characters become
// byte sequences at compile time (utf8_ranges.h), and repetitions become rules (x* is
// `r ::= x r | ""`), so a GrammarMatcher only ever matches one byte against one byte set.
//
// Compile guarantees what the matcher relies on: every referenced rule is defined; every
// alternative can derive some text (alternatives that cannot are dropped, and a grammar whose root
// cannot is refused), so every live state can still finish; no rule can reach itself without
// consuming a byte (left recursion, or a repetition of something that can be empty), so the
// matcher's expansion of a state ends.
//
// Immutable once compiled; shared read-only by every sequence of a request (any thread).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace xinfer {

class Grammar {
 public:
  // kBytes: one byte of a set. kChars: one UTF-8 character of a class, matched byte by byte by
  // a small automaton (CharAutomaton), so that a class is one stack rather than one per encoding
  // length. kRule: a rule's text. kEnd: the end of an alternative.
  enum class Kind : uint8_t { kEnd, kBytes, kChars, kRule };
  struct Element {
    Kind kind = Kind::kEnd;
    uint32_t value = 0;  // kBytes: byte set index; kChars: automaton index; kRule: rule index
  };
  using ByteSet = std::array<uint64_t, 4>;

  // One character of a class as a deterministic automaton over its UTF-8 bytes: from state 0,
  // next[state][byte] is the state after the byte, kCharDone once a whole character of the class
  // is read, or kCharDead.
  static constexpr int16_t kCharDead = -1;
  static constexpr int16_t kCharDone = -2;
  struct CharAutomaton {
    std::vector<std::array<int16_t, 256>> next;
  };

  // Bounds on what a request's grammar may cost (the client writes it): elements after
  // repetitions are expanded, and rules.
  static constexpr size_t kMaxElements = size_t{1} << 18;
  static constexpr size_t kMaxRules = size_t{1} << 16;

  // Position 0 starts the whole grammar: a reference to the root rule, then kEnd.
  static constexpr uint32_t kStart = 0;

  const Element& element(uint32_t pos) const { return elements_[pos]; }
  // The start positions of `rule`'s alternatives (an empty alternative starts at a kEnd).
  std::span<const uint32_t> alternatives(uint32_t rule) const {
    return {alternative_starts_.data() + rule_begin_[rule],
            rule_begin_[rule + 1] - rule_begin_[rule]};
  }
  bool allows(uint32_t byte_set, uint8_t byte) const {
    return (byte_sets_[byte_set][byte >> 6] >> (byte & 63)) & 1;
  }
  // The state after `byte` in a kChars element's automaton `chars`, from `state`.
  int16_t CharNext(uint32_t chars, uint16_t state, uint8_t byte) const {
    return char_automata_[chars].next[state][byte];
  }

 private:
  friend class GrammarBuilder;
  Grammar() = default;

  std::vector<Element> elements_;
  std::vector<uint32_t>
      rule_begin_;  // alternatives(r) = alternative_starts_[rule_begin_[r], [r+1])
  std::vector<uint32_t> alternative_starts_;
  std::vector<ByteSet> byte_sets_;
  std::vector<CharAutomaton> char_automata_;
};

// Builds a Grammar rule by rule (gbnf.cc's parser drives it), then checks and compiles it.
// Single use; not thread-safe.
class GrammarBuilder {
 public:
  using Sequence = std::vector<Grammar::Element>;

  explicit GrammarBuilder(std::string_view what) : what_(what) {}

  // The rule called `name`, created (undefined) on first mention.
  uint32_t RuleNamed(std::string_view name);
  // A new rule with no name of its own (a group, a repetition, a class), shown in errors as
  // `parent`'s part.
  uint32_t NewRule(uint32_t parent);
  // Defines `rule` (InvalidArgument when it already is).
  Status Define(uint32_t rule, std::vector<Sequence> alternatives);
  bool defined(uint32_t rule) const { return defined_[rule] != 0; }
  const std::string& name(uint32_t rule) const { return names_[rule]; }

  // Elements for the output's text: one byte, a literal UTF-8 string, one character of the code
  // point ranges `ranges` (sorted, disjoint, inclusive: kBytes when all are ASCII, else kChars),
  // appended to `out`.
  void AppendByte(uint8_t byte, Sequence* out);
  void AppendLiteral(std::string_view utf8, Sequence* out);
  Status AppendCharacters(const std::vector<std::pair<char32_t, char32_t>>& ranges, Sequence* out);
  // `item` (elements of one sequence) repeated min..max times (max -1: no limit), as the
  // elements that replace it.
  StatusOr<Sequence> Repeat(Sequence item, int32_t min, int32_t max, uint32_t parent);

  // The grammar whose root is the rule named `root`, after the checks in grammar.h's comment.
  StatusOr<std::shared_ptr<const Grammar>> Finish(std::string_view root);

 private:
  uint32_t ByteSetIndex(const Grammar::ByteSet& set);
  static Status TooLarge();
  Status CheckSize() const;
  // Per rule: some alternative has only rule references to rules in the result, and (with
  // `bytes_count`) elements that consume bytes; false: such alternatives never count. The least
  // such set: with bytes_count, the rules that derive some text; without, those that derive "".
  std::vector<uint8_t> RulesWithAnAlternativeOf(bool bytes_count) const;

  std::string what_;
  std::vector<std::string> names_;
  std::vector<uint8_t> defined_;
  std::vector<std::vector<Sequence>> rules_;
  std::vector<Grammar::ByteSet> byte_sets_;
  std::map<std::string, uint32_t, std::less<>> rule_index_;
  std::map<Grammar::ByteSet, uint32_t> byte_set_index_;
  std::vector<Grammar::CharAutomaton> char_automata_;
  std::map<std::vector<std::pair<char32_t, char32_t>>, uint32_t> char_automaton_index_;
  size_t elements_ = 0;
  uint32_t unnamed_ = 0;
};

}  // namespace xinfer
