// Guided decoding by a grammar (vLLM's guided_grammar / structured_outputs.grammar, GBNF): the
// output is one whole match of a Grammar (grammar.h). A token may come next when all its bytes
// keep some parse stack alive (grammar_matcher.h); the sequence may end once the output is a whole
// match. The allowed tokens of a state come from one walk of the vocabulary's trie and are cached
// per state (token_set.h), as the states of a loop or a repeated rule recur.
//
// Ownership and threading: as every Guide (guided_json.h): one sequence's, not thread-safe; the
// Grammar and the TokenVocabulary are shared read-only.
#pragma once

#include <memory>

#include "sampling/grammar.h"
#include "sampling/guided_json.h"

namespace xinfer {

std::unique_ptr<Guide> NewGrammarGuide(std::shared_ptr<const TokenVocabulary> vocabulary,
                                       std::shared_ptr<const Grammar> grammar);

}  // namespace xinfer
