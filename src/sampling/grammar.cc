#include "sampling/grammar.h"

#include <algorithm>
#include <map>
#include <utility>

#include "base/check.h"
#include "sampling/utf8_ranges.h"

namespace xinfer {
namespace {

using Kind = Grammar::Kind;

Grammar::ByteSet ByteRangeSet(uint8_t lo, uint8_t hi) {
  Grammar::ByteSet set{};
  for (int b = lo; b <= hi; ++b) set[static_cast<size_t>(b) >> 6] |= uint64_t{1} << (b & 63);
  return set;
}

}  // namespace

uint32_t GrammarBuilder::RuleNamed(std::string_view name) {
  auto it = rule_index_.find(name);
  if (it != rule_index_.end()) return it->second;
  rule_index_.emplace(std::string(name), static_cast<uint32_t>(names_.size()));
  names_.emplace_back(name);
  defined_.push_back(0);
  rules_.emplace_back();
  return static_cast<uint32_t>(names_.size() - 1);
}

uint32_t GrammarBuilder::NewRule(uint32_t parent) {
  names_.push_back(names_[parent] + "/" + std::to_string(++unnamed_));
  defined_.push_back(0);
  rules_.emplace_back();
  return static_cast<uint32_t>(names_.size() - 1);
}

Status GrammarBuilder::Define(uint32_t rule, std::vector<Sequence> alternatives) {
  if (defined_[rule]) return InvalidArgument("rule '{}' is defined twice", names_[rule]);
  defined_[rule] = 1;
  for (const Sequence& s : alternatives) elements_ += s.size() + 1;
  rules_[rule] = std::move(alternatives);
  return CheckSize();
}

Status GrammarBuilder::TooLarge() {
  return InvalidArgument(
      "the grammar is too large (more than {} elements or {} rules once repetitions are "
      "expanded)",
      Grammar::kMaxElements, Grammar::kMaxRules);
}

Status GrammarBuilder::CheckSize() const {
  if (elements_ > Grammar::kMaxElements || rules_.size() > Grammar::kMaxRules) return TooLarge();
  return Status::Ok();
}

uint32_t GrammarBuilder::ByteSetIndex(const Grammar::ByteSet& set) {
  auto [it, added] = byte_set_index_.emplace(set, static_cast<uint32_t>(byte_sets_.size()));
  if (added) byte_sets_.push_back(set);
  return it->second;
}

void GrammarBuilder::AppendByte(uint8_t byte, Sequence* out) {
  out->push_back({Kind::kBytes, ByteSetIndex(ByteRangeSet(byte, byte))});
}

void GrammarBuilder::AppendLiteral(std::string_view utf8, Sequence* out) {
  for (char c : utf8) AppendByte(static_cast<uint8_t>(c), out);
}

Status GrammarBuilder::AppendCharacters(const std::vector<std::pair<char32_t, char32_t>>& ranges,
                                        Sequence* out) {
  if (ranges.empty()) return InvalidArgument("matches no character");
  if (ranges.back().second < 0x80) {  // ASCII: one byte
    Grammar::ByteSet ascii{};
    for (auto [lo, hi] : ranges) {
      const Grammar::ByteSet r = ByteRangeSet(static_cast<uint8_t>(lo), static_cast<uint8_t>(hi));
      for (size_t w = 0; w < 4; ++w) ascii[w] |= r[w];
    }
    out->push_back({Kind::kBytes, ByteSetIndex(ascii)});
    return Status::Ok();
  }
  auto [it, added] =
      char_automaton_index_.emplace(ranges, static_cast<uint32_t>(char_automata_.size()));
  if (added) {
    // The encodings as byte-range sequences, then the subset construction over them: a state is
    // the set of (sequence, bytes read) still possible. UTF-8 is prefix-free, so a state in which
    // one sequence is complete has nothing else left.
    std::vector<Utf8Sequence> sequences;
    for (auto [lo, hi] : ranges) Utf8Sequences(lo, hi, &sequences);
    using Subset = std::vector<std::pair<uint32_t, uint32_t>>;
    Subset start;
    for (uint32_t i = 0; i < sequences.size(); ++i) start.emplace_back(i, 0);
    std::map<Subset, int16_t> state_of = {{start, 0}};
    std::vector<Subset> states = {start};
    Grammar::CharAutomaton automaton;
    for (size_t q = 0; q < states.size(); ++q) {
      automaton.next.emplace_back();
      automaton.next.back().fill(Grammar::kCharDead);
      for (int byte = 0; byte < 256; ++byte) {
        Subset after;
        bool done = false;
        for (auto [seq, read] : states[q]) {
          const ByteRange r = sequences[seq][read];
          if (byte < r.lo || byte > r.hi) continue;
          if (read + 1 == sequences[seq].size())
            done = true;
          else
            after.emplace_back(seq, read + 1);
        }
        int16_t next = Grammar::kCharDead;
        if (done) {
          next = Grammar::kCharDone;
        } else if (!after.empty()) {
          auto [s, is_new] = state_of.emplace(after, static_cast<int16_t>(states.size()));
          if (is_new) states.push_back(after);
          next = s->second;
        }
        automaton.next[q][static_cast<size_t>(byte)] = next;
      }
    }
    char_automata_.push_back(std::move(automaton));
  }
  out->push_back({Kind::kChars, it->second});
  return Status::Ok();
}

StatusOr<GrammarBuilder::Sequence> GrammarBuilder::Repeat(Sequence item, int32_t min, int32_t max,
                                                          uint32_t parent) {
  XI_CHECK(min >= 0 && (max == -1 || max >= min));
  Sequence out;
  // The copies are counted when the sequence holding them is defined; checked here first so
  // that a long item repeated many times is refused before it is built.
  if (elements_ + item.size() * static_cast<size_t>(min) > Grammar::kMaxElements) return TooLarge();
  for (int32_t i = 0; i < min; ++i) out.insert(out.end(), item.begin(), item.end());
  if (max == -1) {  // star ::= item star | ""
    const uint32_t star = NewRule(parent);
    Sequence again = item;
    again.push_back({Kind::kRule, star});
    XI_RETURN_IF_ERROR(Define(star, {std::move(again), {}}));
    out.push_back({Kind::kRule, star});
  } else if (max > min) {  // optional_k ::= item optional_(k-1) | ""
    uint32_t inner = 0;
    for (int32_t k = 1; k <= max - min; ++k) {
      const uint32_t optional = NewRule(parent);
      Sequence alt = item;
      if (k > 1) alt.push_back({Kind::kRule, inner});
      XI_RETURN_IF_ERROR(Define(optional, {std::move(alt), {}}));
      inner = optional;
    }
    out.push_back({Kind::kRule, inner});
  }
  return out;
}

std::vector<uint8_t> GrammarBuilder::RulesWithAnAlternativeOf(bool bytes_count) const {
  // Linear time (a fixed-point loop over all rules would be quadratic in a long chain of rules):
  // each alternative counts the references it still waits for, and a rule found reaches the
  // alternatives that reference it.
  const size_t n = rules_.size();
  std::vector<uint8_t> found(n, 0);
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> used_by(n);  // (rule, alternative)
  std::vector<std::vector<uint32_t>> waiting(n);
  std::vector<uint32_t> queue;
  auto add = [&](uint32_t r) {
    if (!found[r]) {
      found[r] = 1;
      queue.push_back(r);
    }
  };
  for (uint32_t r = 0; r < n; ++r) {
    waiting[r].assign(rules_[r].size(), 0);
    for (uint32_t a = 0; a < rules_[r].size(); ++a) {
      const Sequence& alt = rules_[r][a];
      if (!bytes_count && std::any_of(alt.begin(), alt.end(), [](const Grammar::Element& e) {
            return e.kind != Kind::kRule;
          }))
        continue;  // never all found: it consumes a byte
      for (const Grammar::Element& e : alt)
        if (e.kind == Kind::kRule) {
          ++waiting[r][a];
          used_by[e.value].emplace_back(r, a);
        }
      if (waiting[r][a] == 0) add(r);
    }
  }
  while (!queue.empty()) {
    const uint32_t s = queue.back();
    queue.pop_back();
    for (auto [r, a] : used_by[s])
      if (--waiting[r][a] == 0) add(r);
  }
  return found;
}

StatusOr<std::shared_ptr<const Grammar>> GrammarBuilder::Finish(std::string_view root_name) {
  const size_t n = rules_.size();
  uint32_t root = 0;
  while (root < n && names_[root] != root_name) ++root;
  if (root == n || !defined_[root]) return InvalidArgument("{}: no '{}' rule", what_, root_name);
  for (uint32_t r = 0; r < n; ++r)
    if (!defined_[r])
      return InvalidArgument("{}: rule '{}' is used but not defined", what_, names_[r]);

  // Rules that derive some text; alternatives that cannot are dropped, so that every state the
  // matcher reaches can still finish.
  const std::vector<uint8_t> productive = RulesWithAnAlternativeOf(/*bytes_count=*/true);
  if (!productive[root])
    return InvalidArgument("{}: rule '{}' matches no text (it never ends)", what_, root_name);
  for (uint32_t r = 0; r < n; ++r)
    std::erase_if(rules_[r], [&](const Sequence& alt) {
      for (const Grammar::Element& e : alt)
        if (e.kind == Kind::kRule && !productive[e.value]) return true;
      return false;
    });

  // Rules that can derive "", then the rules each can begin with without consuming a byte: a
  // cycle among those would expand forever.
  const std::vector<uint8_t> nullable = RulesWithAnAlternativeOf(/*bytes_count=*/false);
  std::vector<std::vector<uint32_t>> begins_with(n);
  for (uint32_t r = 0; r < n; ++r)
    for (const Sequence& alt : rules_[r])
      for (const Grammar::Element& e : alt) {
        if (e.kind != Kind::kRule) break;
        begins_with[r].push_back(e.value);
        if (!nullable[e.value]) break;
      }
  std::vector<uint8_t> color(n, 0);  // 0 unvisited, 1 on the path, 2 done
  for (uint32_t start = 0; start < n; ++start) {
    if (color[start]) continue;
    std::vector<std::pair<uint32_t, size_t>> path = {{start, 0}};
    color[start] = 1;
    while (!path.empty()) {
      auto& [r, next] = path.back();
      if (next == begins_with[r].size()) {
        color[r] = 2;
        path.pop_back();
        continue;
      }
      const uint32_t s = begins_with[r][next++];
      if (color[s] == 1)
        return InvalidArgument(
            "{}: rule '{}' can reach itself without consuming text (left recursion, or a "
            "repetition of something that can be empty), which this grammar engine does not take",
            what_, names_[s]);
      if (color[s] == 0) {
        color[s] = 1;
        path.push_back({s, 0});
      }
    }
  }

  auto g = std::shared_ptr<Grammar>(new Grammar());
  g->elements_ = {{Kind::kRule, root}, {Kind::kEnd, 0}};
  g->rule_begin_.push_back(0);
  for (uint32_t r = 0; r < n; ++r) {
    for (const Sequence& alt : rules_[r]) {
      g->alternative_starts_.push_back(static_cast<uint32_t>(g->elements_.size()));
      g->elements_.insert(g->elements_.end(), alt.begin(), alt.end());
      g->elements_.push_back({Kind::kEnd, 0});
    }
    g->rule_begin_.push_back(static_cast<uint32_t>(g->alternative_starts_.size()));
  }
  g->byte_sets_ = std::move(byte_sets_);
  g->char_automata_ = std::move(char_automata_);
  return std::shared_ptr<const Grammar>(std::move(g));
}

}  // namespace xinfer
