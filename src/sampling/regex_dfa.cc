#include "sampling/regex_dfa.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "base/check.h"
#include "sampling/utf8_ranges.h"

namespace xinfer {
namespace {

// Thompson's construction over bytes.
class NfaBuilder {
 public:
  struct Edge {
    ByteRange bytes;
    int32_t to;
  };
  struct Fragment {
    int32_t start;
    int32_t end;
  };

  // nullopt once the automaton passes RegexDfa::kMaxNfaStates.
  std::optional<Fragment> Build(const RegexNode& node) {
    switch (node.kind) {
      case RegexNode::Kind::kEmpty: {
        const int32_t s = New();
        return Fragment{s, s};
      }
      case RegexNode::Kind::kChars:
        return Chars(node);
      case RegexNode::Kind::kConcat: {
        std::optional<Fragment> whole;
        for (const RegexNode& child : node.children) {
          auto f = Build(child);
          if (!f) return std::nullopt;
          if (whole) {
            Epsilon(whole->end, f->start);
            whole->end = f->end;
          } else {
            whole = f;
          }
        }
        if (!whole) return Build(RegexNode{});
        return whole;
      }
      case RegexNode::Kind::kAlternate: {
        const Fragment whole{New(), New()};
        for (const RegexNode& child : node.children) {
          auto f = Build(child);
          if (!f) return std::nullopt;
          Epsilon(whole.start, f->start);
          Epsilon(f->end, whole.end);
        }
        return whole;
      }
      case RegexNode::Kind::kRepeat:
        return Repeat(node);
    }
    return std::nullopt;
  }

  bool too_large() const { return too_large_; }
  const std::vector<std::vector<int32_t>>& epsilons() const { return epsilon_; }
  const std::vector<std::vector<Edge>>& edges() const { return edges_; }

 private:
  int32_t New() {
    if (static_cast<int32_t>(edges_.size()) >= RegexDfa::kMaxNfaStates) too_large_ = true;
    epsilon_.emplace_back();
    edges_.emplace_back();
    return static_cast<int32_t>(edges_.size()) - 1;
  }
  void Epsilon(int32_t from, int32_t to) { epsilon_[static_cast<size_t>(from)].push_back(to); }

  std::optional<Fragment> Chars(const RegexNode& node) {
    std::vector<Utf8Sequence> sequences;
    for (const auto& [lo, hi] : node.ranges) Utf8Sequences(lo, hi, &sequences);
    const Fragment f{New(), New()};
    for (const Utf8Sequence& seq : sequences) {
      int32_t at = f.start;
      for (size_t i = 0; i < seq.size(); ++i) {
        const int32_t to = i + 1 == seq.size() ? f.end : New();
        edges_[static_cast<size_t>(at)].push_back({seq[i], to});
        at = to;
      }
    }
    if (too_large_) return std::nullopt;
    return f;
  }

  // min copies, then either a loop (no maximum) or max - min nested optional copies: x(x(x)?)?
  // rather than x?x?x?, so that after k characters the automaton is in one place, not k.
  std::optional<Fragment> Repeat(const RegexNode& node) {
    const RegexNode& child = node.children[0];
    const int32_t start = New();
    const int32_t end = New();
    int32_t at = start;
    for (int32_t i = 0; i < node.min_repeat; ++i) {
      auto f = Build(child);
      if (!f || too_large_) return std::nullopt;
      Epsilon(at, f->start);
      at = f->end;
    }
    if (node.max_repeat < 0) {
      auto f = Build(child);
      if (!f) return std::nullopt;
      Epsilon(at, f->start);
      Epsilon(f->end, f->start);
      Epsilon(at, end);
      Epsilon(f->end, end);
      return Fragment{start, end};
    }
    for (int32_t i = node.min_repeat; i < node.max_repeat; ++i) {
      Epsilon(at, end);
      auto f = Build(child);
      if (!f || too_large_) return std::nullopt;
      Epsilon(at, f->start);
      at = f->end;
    }
    Epsilon(at, end);
    return Fragment{start, end};
  }

  std::vector<std::vector<int32_t>> epsilon_;
  std::vector<std::vector<Edge>> edges_;
  bool too_large_ = false;
};

}  // namespace

StatusOr<std::shared_ptr<const RegexDfa>> RegexDfa::Compile(const RegexNode& regex,
                                                            std::string_view what) {
  NfaBuilder nfa;
  const std::optional<NfaBuilder::Fragment> whole = nfa.Build(regex);
  if (!whole || nfa.too_large())
    return InvalidArgument("{} is too large: its automaton would pass {} states", what,
                           kMaxNfaStates);
  const auto& epsilons = nfa.epsilons();
  const auto& edges = nfa.edges();

  std::shared_ptr<RegexDfa> dfa(new RegexDfa);
  // Byte classes: the bytes between two consecutive range boundaries behave alike.
  std::array<bool, 257> boundary{};
  boundary[0] = true;
  for (const auto& out : edges)
    for (const NfaBuilder::Edge& e : out) {
      boundary[e.bytes.lo] = true;
      boundary[e.bytes.hi + 1] = true;
    }
  std::vector<uint8_t> representative;
  for (int b = 0; b < 256; ++b) {
    if (boundary[static_cast<size_t>(b)]) representative.push_back(static_cast<uint8_t>(b));
    dfa->class_of_[static_cast<size_t>(b)] = static_cast<uint8_t>(representative.size() - 1);
  }
  dfa->classes_ = representative.size();

  // Subset construction; DFA state 0 is the start.
  std::vector<uint8_t> mark(edges.size(), 0);
  std::vector<int32_t> stack;
  auto closure = [&](std::vector<int32_t> set) {
    stack = set;
    for (int32_t s : set) mark[static_cast<size_t>(s)] = 1;
    while (!stack.empty()) {
      const int32_t s = stack.back();
      stack.pop_back();
      for (int32_t t : epsilons[static_cast<size_t>(s)]) {
        if (mark[static_cast<size_t>(t)]) continue;
        mark[static_cast<size_t>(t)] = 1;
        set.push_back(t);
        stack.push_back(t);
      }
    }
    for (int32_t s : set) mark[static_cast<size_t>(s)] = 0;
    std::sort(set.begin(), set.end());
    return set;
  };
  std::map<std::vector<int32_t>, int32_t> ids;
  std::vector<std::vector<int32_t>> sets;
  auto intern = [&](std::vector<int32_t> set) -> int32_t {
    if (set.empty()) return kDead;
    auto [it, inserted] = ids.emplace(std::move(set), static_cast<int32_t>(sets.size()));
    if (inserted) sets.push_back(it->first);
    return it->second;
  };
  intern(closure({whole->start}));
  int64_t steps = 0;
  for (size_t d = 0; d < sets.size(); ++d) {
    steps += static_cast<int64_t>(sets[d].size() * representative.size());
    if (sets.size() > static_cast<size_t>(kMaxStates) ||
        static_cast<int64_t>(sets.size() * representative.size()) > kMaxTransitions ||
        steps > kMaxConstructionSteps)
      return InvalidArgument("{} is too large: its automaton would pass {} states", what,
                             kMaxStates);
    dfa->accepting_.push_back(std::binary_search(sets[d].begin(), sets[d].end(), whole->end));
    for (uint8_t byte : representative) {
      std::vector<int32_t> moved;
      for (int32_t s : sets[d])
        for (const NfaBuilder::Edge& e : edges[static_cast<size_t>(s)])
          if (e.bytes.lo <= byte && byte <= e.bytes.hi) moved.push_back(e.to);
      std::sort(moved.begin(), moved.end());
      moved.erase(std::unique(moved.begin(), moved.end()), moved.end());
      dfa->next_.push_back(moved.empty() ? kDead : intern(closure(std::move(moved))));
    }
  }

  XI_RETURN_IF_ERROR(dfa->PruneDeadStates(what));
  return std::shared_ptr<const RegexDfa>(std::move(dfa));
}

Status RegexDfa::PruneDeadStates(std::string_view what) {
  // The live states: those an accepting one can be reached from, found backwards from them.
  const size_t n = accepting_.size();
  std::vector<std::vector<int32_t>> from(n);  // state -> the states with a transition into it
  for (size_t s = 0; s < n; ++s)
    for (size_t c = 0; c < classes_; ++c) {
      const int32_t t = next_[s * classes_ + c];
      if (t != kDead) from[static_cast<size_t>(t)].push_back(static_cast<int32_t>(s));
    }
  std::vector<uint8_t> live(accepting_);
  std::vector<int32_t> stack;
  for (size_t s = 0; s < n; ++s)
    if (live[s]) stack.push_back(static_cast<int32_t>(s));
  while (!stack.empty()) {
    const int32_t t = stack.back();
    stack.pop_back();
    for (int32_t s : from[static_cast<size_t>(t)])
      if (!live[static_cast<size_t>(s)]) {
        live[static_cast<size_t>(s)] = 1;
        stack.push_back(s);
      }
  }
  if (n == 0 || !live[0]) return InvalidArgument("{} matches no string", what);
  can_continue_.assign(n, 0);
  for (size_t s = 0; s < n; ++s)
    for (size_t c = 0; c < classes_; ++c) {
      int32_t& t = next_[s * classes_ + c];
      if (t != kDead && !live[static_cast<size_t>(t)]) t = kDead;
      if (t != kDead) can_continue_[s] = 1;
    }
  return Status::Ok();
}

StatusOr<std::shared_ptr<const RegexDfa>> RegexDfa::Intersect(const RegexDfa& a, const RegexDfa& b,
                                                              std::string_view what) {
  std::shared_ptr<RegexDfa> dfa(new RegexDfa);
  // Byte classes: the pairs of the two automata's classes that occur.
  std::map<std::pair<uint8_t, uint8_t>, uint8_t> class_ids;
  std::vector<uint8_t> representative;
  for (int byte = 0; byte < 256; ++byte) {
    const auto key = std::make_pair(a.class_of_[static_cast<size_t>(byte)],
                                    b.class_of_[static_cast<size_t>(byte)]);
    auto [it, inserted] = class_ids.emplace(key, static_cast<uint8_t>(representative.size()));
    if (inserted) representative.push_back(static_cast<uint8_t>(byte));
    dfa->class_of_[static_cast<size_t>(byte)] = it->second;
  }
  dfa->classes_ = representative.size();
  // Pairs of states reachable from the two starts; state 0 is the pair of starts.
  std::map<std::pair<int32_t, int32_t>, int32_t> ids;
  std::vector<std::pair<int32_t, int32_t>> pairs;
  auto intern = [&](int32_t sa, int32_t sb) -> int32_t {
    if (sa == kDead || sb == kDead) return kDead;
    auto [it, inserted] = ids.emplace(std::make_pair(sa, sb), static_cast<int32_t>(pairs.size()));
    if (inserted) pairs.emplace_back(sa, sb);
    return it->second;
  };
  intern(a.start(), b.start());
  for (size_t d = 0; d < pairs.size(); ++d) {
    if (pairs.size() > static_cast<size_t>(kMaxStates) ||
        static_cast<int64_t>(pairs.size() * representative.size()) > kMaxTransitions)
      return InvalidArgument("{} is too large: its automaton would pass {} states", what,
                             kMaxStates);
    const auto [sa, sb] = pairs[d];
    dfa->accepting_.push_back(a.accepting(sa) && b.accepting(sb));
    for (uint8_t byte : representative)
      dfa->next_.push_back(intern(a.Next(sa, byte), b.Next(sb, byte)));
  }
  XI_RETURN_IF_ERROR(dfa->PruneDeadStates(what));
  return std::shared_ptr<const RegexDfa>(std::move(dfa));
}

StatusOr<std::shared_ptr<const RegexDfa>> RegexDfa::FromPattern(std::string_view pattern,
                                                                std::string_view what) {
  XI_ASSIGN_OR_RETURN(RegexNode regex, ParseRegex(pattern, what));
  return Compile(regex, what);
}

StatusOr<std::shared_ptr<const RegexDfa>> RegexDfa::FromChoices(
    const std::vector<std::string>& choices, std::string_view what) {
  if (choices.empty()) return InvalidArgument("{} must be a non-empty list of strings", what);
  std::vector<RegexNode> literals;
  for (const std::string& choice : choices) {
    XI_ASSIGN_OR_RETURN(RegexNode literal, LiteralRegex(choice, what));
    literals.push_back(std::move(literal));
  }
  return Compile(RegexAlternate(std::move(literals)), what);
}

int32_t RegexDfa::Walk(int32_t state, std::string_view bytes) const {
  for (char c : bytes) {
    state = Next(state, static_cast<uint8_t>(c));
    if (state == kDead) return kDead;
  }
  return state;
}

}  // namespace xinfer
