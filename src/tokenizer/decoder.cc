#include "tokenizer/decoder.h"

#include "base/hex.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/normalizer.h"

namespace xinfer::tok {
namespace {

// What Hugging Face does without a decoder: tokens joined by single spaces.
class JoinStage : public DecodeStage {
 public:
  void Push(DecodePiece piece, StageState& st, std::vector<DecodePiece>* out) const override {
    if (piece.starts && st.flag) piece.text.insert(piece.text.begin(), ' ');
    st.flag = true;
    out->push_back(std::move(piece));
  }
};

// Length of the longest suffix of `s` that is a proper prefix of `pattern`.
size_t PartialMatchSuffix(std::string_view s, std::string_view pattern) {
  size_t max = std::min(s.size(), pattern.size() - 1);
  for (size_t len = max; len > 0; --len) {
    if (s.substr(s.size() - len) == pattern.substr(0, len)) return len;
  }
  return 0;
}

}  // namespace

bool ParseByteToken(std::string_view t, uint8_t* byte) {
  if (t.size() != 6 || t.substr(0, 3) != "<0x" || t[5] != '>') return false;
  int v = 0;
  for (char c : t.substr(3, 2)) {
    const int d = HexDigitValue(c);
    if (d < 0) return false;
    v = v * 16 + d;
  }
  *byte = static_cast<uint8_t>(v);
  return true;
}

Decoder::Decoder(std::vector<std::unique_ptr<DecodeStage>> stages) : stages_(std::move(stages)) {
  if (stages_.empty()) stages_.push_back(std::make_unique<JoinStage>());
  for (const auto& stage : stages_)
    if (dynamic_cast<const ByteLevelStage*>(stage.get()) != nullptr) byte_level_ = true;
}

void Decoder::Push(DecodeState& state, std::string_view token, std::string* out) const {
  std::vector<DecodePiece> pieces;
  pieces.push_back(DecodePiece{std::string(token), true, true});
  Run(state, std::move(pieces), /*finish=*/false, out);
}

void Decoder::Finish(DecodeState& state, std::string* out) const {
  Run(state, {}, /*finish=*/true, out);
}

void Decoder::Run(DecodeState& state, std::vector<DecodePiece> pieces, bool finish,
                  std::string* out) const {
  std::vector<DecodePiece> next;
  for (size_t i = 0; i < stages_.size(); ++i) {
    next.clear();
    for (DecodePiece& p : pieces) stages_[i]->Push(std::move(p), state.stages[i], &next);
    if (finish) stages_[i]->Finish(state.stages[i], &next);
    pieces.swap(next);
  }
  for (const DecodePiece& p : pieces) out->append(p.text);
}

void ByteLevelStage::Push(DecodePiece piece, StageState& st, std::vector<DecodePiece>* out) const {
  std::string bytes;
  if (!ByteLevelDecode(piece.text, &bytes)) bytes = std::move(piece.text);
  std::string text;
  st.utf8.Feed(bytes, &text);
  if (text.empty()) return;
  out->push_back(DecodePiece{std::move(text), !st.flag, false});
  st.flag = true;
}

void ByteLevelStage::Finish(StageState& st, std::vector<DecodePiece>* out) const {
  std::string text;
  st.utf8.Finish(&text);
  out->push_back(DecodePiece{std::move(text), !st.flag, true});
  st.flag = true;
}

void ByteFallbackStage::Push(DecodePiece piece, StageState& st,
                             std::vector<DecodePiece>* out) const {
  uint8_t b;
  if (piece.starts && piece.ends && ParseByteToken(piece.text, &b)) {
    // The whole run decides between bytes and U+FFFDs, so nothing leaves until it ends.
    st.bytes.push_back(static_cast<char>(b));
    return;
  }
  Flush(st, out);
  out->push_back(std::move(piece));
}

void ByteFallbackStage::Finish(StageState& st, std::vector<DecodePiece>* out) const {
  Flush(st, out);
}

void ByteFallbackStage::Flush(StageState& st, std::vector<DecodePiece>* out) {
  if (st.bytes.empty()) return;
  if (IsValidUtf8(st.bytes)) {
    out->push_back(DecodePiece{std::move(st.bytes), true, true});
  } else {
    for (size_t i = 0; i < st.bytes.size(); ++i) {
      out->push_back(DecodePiece{std::string(kReplacementChar), true, true});
    }
  }
  st.bytes.clear();
}

void FuseStage::Push(DecodePiece piece, StageState& st, std::vector<DecodePiece>* out) const {
  out->push_back(DecodePiece{std::move(piece.text), !st.flag, false});
  st.flag = true;
}

void FuseStage::Finish(StageState& st, std::vector<DecodePiece>* out) const {
  out->push_back(DecodePiece{std::string(), !st.flag, true});
  st.flag = true;
}

void ReplaceStage::Push(DecodePiece piece, StageState& st, std::vector<DecodePiece>* out) const {
  if (pattern_.empty()) {
    out->push_back(std::move(piece));
    return;
  }
  if (piece.starts && piece.ends) {
    out->push_back(DecodePiece{ReplaceAll(piece.text, pattern_, content_), true, true});
    return;
  }
  // Chunked token: a match may straddle chunks, so keep a tail that could still start one.
  if (piece.starts) st.buf.clear();
  st.buf.append(piece.text);
  std::string text;
  size_t pos = 0;
  for (size_t hit = st.buf.find(pattern_); hit != std::string::npos;
       hit = st.buf.find(pattern_, pos)) {
    text.append(st.buf, pos, hit - pos);
    text.append(content_);
    pos = hit + pattern_.size();
  }
  std::string_view rest = std::string_view(st.buf).substr(pos);
  size_t keep = piece.ends ? 0 : PartialMatchSuffix(rest, pattern_);
  text.append(rest.substr(0, rest.size() - keep));
  st.buf = std::string(rest.substr(rest.size() - keep));
  out->push_back(DecodePiece{std::move(text), piece.starts, piece.ends});
}

void StripStage::Push(DecodePiece piece, StageState& st, std::vector<DecodePiece>* out) const {
  if (piece.starts) {
    st.count = 0;     // leading characters stripped so far
    st.flag = false;  // past the leading run
    st.buf.clear();   // trailing run of `content_` held back (at most stop_ characters)
  }
  std::string text;
  std::string_view in = piece.text;
  size_t pos = 0;
  while (pos < in.size()) {
    size_t begin = pos;
    NextCodepoint(in, &pos);
    std::string_view ch = in.substr(begin, pos - begin);
    const bool is_content = ch == content_;
    if (!st.flag) {
      if (is_content && st.count < start_) {
        ++st.count;
        continue;
      }
      st.flag = true;
    }
    if (stop_ == 0) {
      text.append(ch);
    } else if (is_content) {
      st.buf.append(ch);
      if (st.buf.size() > static_cast<size_t>(stop_) * content_.size()) {
        text.append(content_);
        st.buf.erase(0, content_.size());
      }
    } else {
      text.append(st.buf);
      st.buf.clear();
      text.append(ch);
    }
  }
  if (piece.ends) st.buf.clear();  // the held trailing characters are the ones stripped
  out->push_back(DecodePiece{std::move(text), piece.starts, piece.ends});
}

void MetaspaceStage::Push(DecodePiece piece, StageState& st, std::vector<DecodePiece>* out) const {
  if (piece.starts) ++st.count;
  const bool first = st.count == 1;
  piece.text = ReplaceAll(piece.text, replacement_, first && strip_first_ ? "" : " ");
  out->push_back(std::move(piece));
}

}  // namespace xinfer::tok
