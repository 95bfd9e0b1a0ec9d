// Guided decoding by a regular expression or a list of choices (vLLM's guided_regex,
// guided_choice): the output is one whole match of a RegexDfa. A token may come next when its bytes
// walk the automaton from the current state to a live state; the sequence may end in an accepting
// state. The allowed tokens depend on the automaton's state alone, so each state's set is computed
// once per sequence and reused (a few states cover most outputs: digits, a choice's remaining
// letters).
//
// Ownership and threading: as every Guide (guided_json.h): one sequence's, not thread-safe; the
// RegexDfa and the TokenVocabulary are shared read-only.
#pragma once

#include <memory>

#include "sampling/guided_json.h"
#include "sampling/regex_dfa.h"

namespace xinfer {

std::unique_ptr<Guide> NewRegexGuide(std::shared_ptr<const TokenVocabulary> vocabulary,
                                     std::shared_ptr<const RegexDfa> dfa);

}  // namespace xinfer
