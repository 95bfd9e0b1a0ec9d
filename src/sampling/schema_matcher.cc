#include "sampling/schema_matcher.h"

#include <bit>

#include "base/check.h"

namespace xinfer {
namespace {

bool IsWhitespace(uint8_t b) { return b == ' ' || b == '\t' || b == '\n' || b == '\r'; }
bool IsNumberByte(uint8_t b) {
  return (b >= '0' && b <= '9') || b == '.' || b == 'e' || b == 'E' || b == '+' || b == '-';
}

// The candidates (bits into `options`) whose byte at `pos` is `byte`.
uint64_t Narrow(const std::vector<std::string>& options, uint64_t candidates, int pos,
                uint8_t byte) {
  uint64_t keep = 0;
  for (uint64_t c = candidates; c != 0; c &= c - 1) {
    const int i = std::countr_zero(c);
    const std::string& o = options[static_cast<size_t>(i)];
    if (static_cast<int>(o.size()) > pos &&
        static_cast<uint8_t>(o[static_cast<size_t>(pos)]) == byte)
      keep |= uint64_t{1} << i;
  }
  return keep;
}

// Some / every candidate is exactly `len` bytes long.
bool AnyEndsAt(const std::vector<std::string>& options, uint64_t candidates, int len) {
  for (uint64_t c = candidates; c != 0; c &= c - 1)
    if (static_cast<int>(options[static_cast<size_t>(std::countr_zero(c))].size()) == len)
      return true;
  return false;
}
// The candidate exactly `len` bytes long, or -1.
int EndedAt(const std::vector<std::string>& options, uint64_t candidates, int len) {
  for (uint64_t c = candidates; c != 0; c &= c - 1) {
    const int i = std::countr_zero(c);
    if (static_cast<int>(options[static_cast<size_t>(i)].size()) == len) return i;
  }
  return -1;
}
bool AllEndAt(const std::vector<std::string>& options, uint64_t candidates, int len) {
  for (uint64_t c = candidates; c != 0; c &= c - 1)
    if (static_cast<int>(options[static_cast<size_t>(std::countr_zero(c))].size()) != len)
      return false;
  return true;
}

}  // namespace

SchemaMatcher::SchemaMatcher(const JsonSchema* schema) : schema_(schema) {
  XI_CHECK(schema_ != nullptr && !schema_->nodes.empty());
  frames_[0] = Frame{schema_->root};
  depth_ = 1;
}

SchemaMatcher& SchemaMatcher::operator=(const SchemaMatcher& other) {
  schema_ = other.schema_;
  depth_ = other.depth_;
  ws_run_ = other.ws_run_;
  max_ws_run_ = other.max_ws_run_;
  leaf_ = other.leaf_;
  for (int i = 0; i < depth_; ++i)
    frames_[static_cast<size_t>(i)] = other.frames_[static_cast<size_t>(i)];
  return *this;
}

bool SchemaMatcher::in_string() const {
  if (depth_ == 0) return false;
  const Frame& f = frames_[static_cast<size_t>(depth_ - 1)];
  const SchemaNode::Kind kind = node(f).kind;
  return f.phase == Phase::kLeaf && leaf_.in_string() &&
         (kind == SchemaNode::Kind::kString || kind == SchemaNode::Kind::kAny);
}

void SchemaMatcher::AppendStateKey(std::string* key) const {
  const uint8_t head[] = {static_cast<uint8_t>(depth_), ws_run_};
  key->append(reinterpret_cast<const char*>(head), sizeof(head));
  for (int i = 0; i < depth_; ++i) {
    const Frame& f = frames_[static_cast<size_t>(i)];
    const uint8_t phase = static_cast<uint8_t>(f.phase);
    key->append(reinterpret_cast<const char*>(&f.node), sizeof(f.node));
    key->append(reinterpret_cast<const char*>(&phase), 1);
    key->append(reinterpret_cast<const char*>(&f.count), sizeof(f.count));
    key->append(reinterpret_cast<const char*>(&f.pos), sizeof(f.pos));
    key->append(reinterpret_cast<const char*>(&f.candidates), sizeof(f.candidates));
  }
  // The leaf matcher only matters while the top frame is in it (it is restarted for each leaf).
  if (depth_ > 0 && frames_[static_cast<size_t>(depth_ - 1)].phase == Phase::kLeaf)
    leaf_.AppendStateKey(key);
}

uint64_t SchemaMatcher::AllowedKeys(const SchemaNode& n, int next) {
  uint64_t keys = 0;
  for (int i = next; i < static_cast<int>(n.keys.size()); ++i) {
    keys |= uint64_t{1} << i;
    if ((n.required >> i) & 1) break;  // a required property cannot be skipped
  }
  return keys;
}

bool SchemaMatcher::CanClose(const SchemaNode& n, int next) {
  return next >= 64 || (n.required >> next) == 0;
}

bool SchemaMatcher::Push(int32_t node) {
  if (depth_ == kMaxDepth) return false;
  frames_[static_cast<size_t>(depth_++)] = Frame{node};
  return true;
}

void SchemaMatcher::EndLiteral(int literal) {
  Pop();
  if (depth_ == 0) return;
  // The discriminator of a union object: the object goes on as the alternative it names.
  Frame& parent = frames_[static_cast<size_t>(depth_ - 1)];
  const SchemaNode& p = node(parent);
  if (!p.union_alternatives.empty())
    parent.node =
        p.union_alternatives[static_cast<size_t>(p.union_owner[static_cast<size_t>(literal)])];
}

bool SchemaMatcher::StartValue(Frame& f, uint8_t byte) {
  const SchemaNode& n = node(f);
  if (n.text_dfa != nullptr) {  // a string / integer with assertions: its automaton
    const int32_t state = n.text_dfa->Next(n.text_dfa->start(), byte);
    if (state == RegexDfa::kDead) return false;
    f.phase = Phase::kText;
    f.candidates = static_cast<uint64_t>(state);
    if (n.text_dfa->accepting(state) && !n.text_dfa->can_continue(state)) Pop();
    return true;
  }
  switch (n.kind) {
    case SchemaNode::Kind::kAnyOf: {
      const int8_t a = n.alternative_by_first_byte[byte];
      if (a < 0) return false;
      f.node = n.values[static_cast<size_t>(a)];
      return StartValue(f, byte);
    }
    case SchemaNode::Kind::kObject:
      if (byte != '{') return false;
      f.phase = Phase::kKeyOrClose;
      f.count = 0;
      return true;
    case SchemaNode::Kind::kArray:
      if (byte != '[') return false;
      f.phase = Phase::kArrayFirst;
      f.count = 0;
      return true;
    case SchemaNode::Kind::kLiterals: {
      const uint64_t all =
          n.literals.size() >= 64 ? ~uint64_t{0} : (uint64_t{1} << n.literals.size()) - 1;
      f.candidates = Narrow(n.literals, all, 0, byte);
      if (f.candidates == 0) return false;
      f.phase = Phase::kLiteral;
      f.pos = 1;
      if (AllEndAt(n.literals, f.candidates, 1)) EndLiteral(std::countr_zero(f.candidates));
      return true;
    }
    default:  // string, number, integer, boolean, null, any
      if (!n.first_bytes[byte]) return false;
      break;
  }
  // A leaf: the JsonMatcher of one value lexes it.
  leaf_ = JsonMatcher::ForValue();
  leaf_.set_whitespace_allowed(max_ws_run_ != 0);
  if (!leaf_.Advance(byte)) return false;
  f.phase = Phase::kLeaf;
  if (leaf_.value_complete()) Pop();
  return true;
}

bool SchemaMatcher::Advance(std::string_view bytes) {
  for (char c : bytes)
    if (!Advance(static_cast<uint8_t>(c))) return false;
  return true;
}

bool SchemaMatcher::Advance(uint8_t byte) {
  const bool ws = IsWhitespace(byte);
  for (;;) {  // again when a value ends at this byte and its container takes the byte
    if (depth_ == 0) return ws && Whitespace();
    Frame& f = frames_[static_cast<size_t>(depth_ - 1)];
    const SchemaNode& n = node(f);
    switch (f.phase) {
      case Phase::kLeaf:
        if (leaf_.in_top_number() && !IsNumberByte(byte)) {
          if (!leaf_.number_can_end()) return false;
          Pop();
          continue;
        }
        if (n.kind == SchemaNode::Kind::kInteger && leaf_.in_top_number() &&
            (byte == '.' || byte == 'e' || byte == 'E'))
          return false;
        if (!leaf_.Advance(byte)) return false;
        if (leaf_.value_complete()) Pop();
        return true;
      case Phase::kInKey: {
        const uint64_t keep = Narrow(n.keys, f.candidates, f.pos, byte);
        if (keep == 0) return false;
        f.candidates = keep;
        ++f.pos;
        // Keys are JSON strings: one that ends here (its closing quote) is the only candidate.
        if (AnyEndsAt(n.keys, keep, f.pos)) f.phase = Phase::kColon;
        return true;
      }
      case Phase::kText: {
        const RegexDfa& dfa = *n.text_dfa;
        const int32_t state = dfa.Next(static_cast<int32_t>(f.candidates), byte);
        if (state == RegexDfa::kDead) {
          // A value that can end (an integer's last digit) ends before this byte, which its
          // container then takes.
          if (!dfa.accepting(static_cast<int32_t>(f.candidates))) return false;
          Pop();
          continue;
        }
        f.candidates = static_cast<uint64_t>(state);
        // A value that cannot go on (a string past its closing quote) ends here.
        if (dfa.accepting(state) && !dfa.can_continue(state)) Pop();
        return true;
      }
      case Phase::kLiteral: {
        const uint64_t keep = Narrow(n.literals, f.candidates, f.pos, byte);
        if (keep != 0) {
          f.candidates = keep;
          ++f.pos;
          if (AllEndAt(n.literals, keep, f.pos)) EndLiteral(std::countr_zero(keep));
          return true;
        }
        // A literal that ended before this byte (a number of an enum such as [1, 12]).
        const int ended = EndedAt(n.literals, f.candidates, f.pos);
        if (ended < 0) return false;
        EndLiteral(ended);
        continue;
      }
      default:
        break;
    }
    // Between tokens: whitespace in bounded runs, then the structure.
    if (ws) return Whitespace();
    ws_run_ = 0;
    switch (f.phase) {
      case Phase::kValue:
        return StartValue(f, byte);
      case Phase::kKeyOrClose:
      case Phase::kKey:
        if (byte == '}' && f.phase == Phase::kKeyOrClose && CanClose(n, f.count)) {
          Pop();
          return true;
        }
        if (byte != '"') return false;
        f.candidates = AllowedKeys(n, f.count);
        if (f.candidates == 0) return false;
        f.phase = Phase::kInKey;
        f.pos = 1;  // every key starts with '"'
        return true;
      case Phase::kColon: {
        if (byte != ':') return false;
        const int chosen = std::countr_zero(f.candidates);
        f.count = static_cast<uint16_t>(chosen + 1);
        f.phase = Phase::kObjectNext;
        return Push(n.values[static_cast<size_t>(chosen)]);
      }
      case Phase::kObjectNext:
        if (byte == ',') {
          if (AllowedKeys(n, f.count) == 0) return false;
          f.phase = Phase::kKey;
          return true;
        }
        if (byte != '}' || !CanClose(n, f.count)) return false;
        Pop();
        return true;
      case Phase::kArrayFirst:
        if (byte == ']') {
          if (n.min_items > 0) return false;
          Pop();
          return true;
        }
        if (n.max_items == 0) return false;
        f.count = 1;
        f.phase = Phase::kArrayNext;
        if (!Push(n.values[0])) return false;
        continue;  // the byte starts the first item
      case Phase::kArrayNext:
        if (byte == ',') {
          if ((n.max_items >= 0 && f.count >= n.max_items) || f.count == UINT16_MAX) return false;
          ++f.count;
          return Push(n.values[0]);
        }
        if (byte != ']' || f.count < n.min_items) return false;
        Pop();
        return true;
      default:
        return false;
    }
  }
}

}  // namespace xinfer
