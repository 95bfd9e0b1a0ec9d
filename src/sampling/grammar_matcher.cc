#include "sampling/grammar_matcher.h"

#include <algorithm>

#include "base/check.h"

namespace xinfer {
namespace {

using Kind = Grammar::Kind;

uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  return h * 0xFF51AFD7ED558CCDull;
}

}  // namespace

GrammarMatcher::GrammarMatcher(const Grammar* grammar, size_t walk_budget)
    : grammar_(grammar), walk_budget_(walk_budget) {
  XI_CHECK(grammar_ != nullptr);
  // A grammar whose start passes a bound leaves no stack: nothing can come (CanBegin says so).
  steps_ = 0;
  if (!Expand(Grammar::kStart, kEmpty, &tops_) || !Merge(&tops_)) tops_.clear();
}

int32_t GrammarMatcher::NewNode(uint32_t pos, int32_t below, uint16_t sub) const {
  const Node* b = below == kEmpty ? nullptr : &arena_[static_cast<size_t>(below)];
  const uint32_t depth = b == nullptr ? 1 : b->depth + 1u;
  if (depth > kMaxDepth) {
    overflow_ = true;
    return kEmpty;
  }
  arena_.push_back({pos, below, static_cast<uint16_t>(depth), sub,
                    Mix(b == nullptr ? 0 : b->hash, pos | uint64_t{sub} << 32)});
  return static_cast<int32_t>(arena_.size() - 1);
}

bool GrammarMatcher::Expand(uint32_t pos, int32_t below, std::vector<int32_t>* to) const {
  work_.clear();
  work_.emplace_back(pos, below);
  while (!work_.empty()) {
    auto [p, b] = work_.back();
    work_.pop_back();
    int32_t self = -2;  // a node that already stands for (p, b), when the walk popped to it
    while (true) {
      if (++steps_ > kMaxExpansionSteps) return false;
      const Grammar::Element& e = grammar_->element(p);
      if (e.kind == Kind::kEnd) {  // the alternative is done: continue with the stack below
        if (b == kEmpty) {
          to->push_back(kEmpty);
          break;
        }
        self = b;
        p = arena_[static_cast<size_t>(b)].pos;
        b = arena_[static_cast<size_t>(b)].below;
        continue;
      }
      if (e.kind == Kind::kBytes || e.kind == Kind::kChars) {
        const int32_t top = self >= 0 ? self : NewNode(p, b);
        if (overflow_) return false;
        to->push_back(top);
        break;
      }
      // A rule: one stack per alternative, over the rest of this sequence (nothing when the
      // reference ends it, so that right recursion does not deepen the stack).
      int32_t rest = b;
      if (grammar_->element(p + 1).kind != Kind::kEnd) {
        rest = NewNode(p + 1, b);
        if (overflow_) return false;
      }
      const auto alternatives = grammar_->alternatives(e.value);
      for (size_t i = alternatives.size(); i-- > 0;) work_.emplace_back(alternatives[i], rest);
      break;
    }
  }
  return true;
}

bool GrammarMatcher::SameStack(int32_t a, int32_t b) const {
  while (a != b) {
    if (a == kEmpty || b == kEmpty) return false;
    const Node& x = arena_[static_cast<size_t>(a)];
    const Node& y = arena_[static_cast<size_t>(b)];
    if (x.pos != y.pos || x.sub != y.sub || x.depth != y.depth || x.hash != y.hash) return false;
    a = x.below;
    b = y.below;
  }
  return true;
}

bool GrammarMatcher::Merge(std::vector<int32_t>* tops) const {
  // Equal stacks have equal hashes: each stack is compared with the kept ones of its hash only.
  // (Few stacks is the common case; past kSmall they are sorted by hash first.)
  constexpr size_t kSmall = 16;
  auto hash = [&](int32_t t) { return t == kEmpty ? 0 : arena_[static_cast<size_t>(t)].hash; };
  const size_t n = tops->size();
  if (n <= 1) return true;
  steps_ += n;  // merging is expansion work too (a walk's budget counts it)
  if (n > kSmall) {
    merge_sorted_.clear();
    for (int32_t t : *tops) merge_sorted_.emplace_back(hash(t), t);
    std::sort(merge_sorted_.begin(), merge_sorted_.end());
    for (size_t i = 0; i < n; ++i) (*tops)[i] = merge_sorted_[i].second;
  }
  merge_hashes_.clear();
  size_t kept = 0;
  for (size_t i = 0; i < n; ++i) {
    const int32_t t = (*tops)[i];
    const uint64_t h = hash(t);
    bool duplicate = false;
    // Sorted: only the run of equal hashes just before; unsorted: every kept stack.
    for (size_t j = kept; j-- > 0;) {
      if (merge_hashes_[j] != h) {
        if (n > kSmall) break;
        continue;
      }
      if (SameStack((*tops)[j], t)) {
        duplicate = true;
        break;
      }
    }
    if (duplicate) continue;
    (*tops)[kept++] = t;
    merge_hashes_.push_back(h);
  }
  tops->resize(kept);
  return kept <= kMaxStacks;
}

bool GrammarMatcher::Step(const std::vector<int32_t>& from, uint8_t byte,
                          std::vector<int32_t>* to) const {
  to->clear();
  overflow_ = false;
  steps_ = 0;
  for (int32_t top : from) {
    if (top == kEmpty) continue;
    const Node n = arena_[static_cast<size_t>(top)];
    const Grammar::Element& e = grammar_->element(n.pos);
    if (e.kind == Kind::kChars) {
      const int16_t next = grammar_->CharNext(e.value, n.sub, byte);
      if (next == Grammar::kCharDead) continue;
      if (next != Grammar::kCharDone) {  // inside a character: the same element, further on
        const int32_t moved = NewNode(n.pos, n.below, static_cast<uint16_t>(next));
        if (overflow_) {
          to->clear();
          return false;
        }
        to->push_back(moved);
        continue;
      }
    } else if (!grammar_->allows(e.value, byte)) {
      continue;
    }
    if (!Expand(n.pos + 1, n.below, to)) {
      to->clear();
      return false;
    }
  }
  if (!Merge(to)) {
    to->clear();
    return false;
  }
  return !to->empty();
}

bool GrammarMatcher::Advance(std::string_view bytes) {
  const std::vector<int32_t> before = tops_;
  for (char c : bytes) {
    if (!Step(tops_, static_cast<uint8_t>(c), &step_scratch_)) {
      tops_ = before;
      return false;
    }
    tops_.swap(step_scratch_);
  }
  if (arena_.size() > compact_at_) {
    Compact();
    compact_at_ = std::max<size_t>(size_t{1} << 16, 2 * arena_.size());
  }
  return true;
}

bool GrammarMatcher::complete() const {
  return std::find(tops_.begin(), tops_.end(), kEmpty) != tops_.end();
}

void GrammarMatcher::AppendStateKey(std::string* key) const {
  auto put = [&](uint32_t v) { key->append(reinterpret_cast<const char*>(&v), sizeof(v)); };
  for (int32_t top : tops_) {
    for (int32_t t = top; t != kEmpty; t = arena_[static_cast<size_t>(t)].below) {
      put(arena_[static_cast<size_t>(t)].pos);
      put(arena_[static_cast<size_t>(t)].sub);
    }
    put(0xFFFFFFFFu);  // end of one stack (no position is this large)
  }
}

uint64_t GrammarMatcher::StateHash(const std::vector<int32_t>& tops) const {
  uint64_t sum = 0;  // order-free: the same stacks in any order hash alike
  for (int32_t t : tops) sum += Mix(t == kEmpty ? 1 : arena_[static_cast<size_t>(t)].hash, 7);
  return Mix(sum, tops.size());
}

bool GrammarMatcher::SameState(const std::vector<int32_t>& a, const std::vector<int32_t>& b) const {
  if (a.size() != b.size()) return false;
  for (int32_t x : a)  // both merged: no stack twice, so one match each suffices
    if (std::none_of(b.begin(), b.end(), [&](int32_t y) { return SameStack(x, y); })) return false;
  return true;
}

void GrammarMatcher::BeginWalk(size_t depth) const {
  if (walk_tops_.size() < depth) walk_tops_.resize(depth);
  walk_marks_.resize(depth);
  walk_hashes_.resize(depth);
  walk_tops_[0] = tops_;
  walk_marks_[0] = arena_.size();
  walk_hashes_[0] = StateHash(tops_);
  memo_.assign(kMemoSlots, ByteMemo{});
  walk_steps_ = 0;
}

bool GrammarMatcher::WalkStep(uint32_t from, uint8_t byte, uint32_t depth, uint32_t* next) const {
  arena_.resize(walk_marks_[from]);  // what the walks of earlier siblings made
  const uint64_t state = walk_hashes_[from];
  ByteMemo& memo = memo_[state % kMemoSlots];
  if (memo.state != state) memo = ByteMemo{state, {}, {}};
  const size_t word = byte >> 6;
  const uint64_t bit = uint64_t{1} << (byte & 63);
  if (memo.loops[word] & bit) {
    *next = from;
    return true;
  }
  if (memo.dead[word] & bit) return false;
  if (walk_steps_ > walk_budget_) return false;  // out of budget: no further token
  std::vector<int32_t>& after = walk_tops_[depth];
  const bool live = Step(walk_tops_[from], byte, &after);
  walk_steps_ += steps_;
  if (!live) {
    memo.dead[word] |= bit;
    return false;
  }
  const uint64_t after_hash = StateHash(after);
  if (after_hash == state && SameState(walk_tops_[from], after)) {
    memo.loops[word] |= bit;
    arena_.resize(walk_marks_[from]);
    *next = from;
    return true;
  }
  walk_hashes_[depth] = after_hash;
  walk_marks_[depth] = arena_.size();
  *next = depth;
  return true;
}

void GrammarMatcher::Compact() {
  std::vector<Node> fresh;
  std::vector<int32_t> moved(arena_.size(), -2);
  std::vector<int32_t> chain;
  for (int32_t& top : tops_) {
    chain.clear();
    for (int32_t t = top; t != kEmpty && moved[static_cast<size_t>(t)] == -2;
         t = arena_[static_cast<size_t>(t)].below)
      chain.push_back(t);
    for (size_t i = chain.size(); i-- > 0;) {  // bottom first, so `below` is already moved
      Node n = arena_[static_cast<size_t>(chain[i])];
      if (n.below != kEmpty) n.below = moved[static_cast<size_t>(n.below)];
      fresh.push_back(n);
      moved[static_cast<size_t>(chain[i])] = static_cast<int32_t>(fresh.size() - 1);
    }
    if (top != kEmpty) top = moved[static_cast<size_t>(top)];
  }
  arena_ = std::move(fresh);
}

}  // namespace xinfer
