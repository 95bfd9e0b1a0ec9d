// Decoders: token strings → text (tokenizer.json "decoder"), written as streaming stages so that
// one implementation serves both Tokenizer::Decode and IncrementalDecoder. Decode is literally
// "push every token, then finish", so incremental output always concatenates to Decode's.
//
// Stages pass DecodePieces along. Before a fusing stage (Fuse, ByteLevel) every piece is one
// whole token (starts && ends). After it, the text is one growing token delivered in chunks
// (starts only on the first chunk, ends only on the final, possibly empty, chunk), and per-token
// stages (Replace, Strip, Metaspace) hold back what they cannot decide yet.
//
// A Decoder is immutable and shared; all mutable state lives in a DecodeState, one per stream.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/utf8.h"

namespace xinfer::tok {

struct DecodePiece {
  std::string text;
  bool starts = true;  // first chunk of a token
  bool ends = true;    // last chunk of a token
};

// Per-stream scratch state of one stage; each stage uses the fields it needs.
struct StageState {
  std::string buf;
  std::string bytes;
  int count = 0;
  bool flag = false;
  Utf8Sanitizer utf8;
};

class DecodeStage {
 public:
  virtual ~DecodeStage() = default;
  virtual void Push(DecodePiece piece, StageState& st, std::vector<DecodePiece>* out) const = 0;
  virtual void Finish(StageState& st, std::vector<DecodePiece>* out) const { (void)st, (void)out; }
};

struct DecodeState {
  std::vector<StageState> stages;
};

class Decoder {
 public:
  // An empty stage list behaves like a tokenizer without decoder: tokens joined by spaces.
  explicit Decoder(std::vector<std::unique_ptr<DecodeStage>> stages);

  DecodeState NewState() const { return DecodeState{std::vector<StageState>(stages_.size())}; }
  // Feeds one token; appends the text that became final to `out` (always valid UTF-8).
  void Push(DecodeState& state, std::string_view token, std::string* out) const;
  // Ends the stream, appending whatever was held back.
  void Finish(DecodeState& state, std::string* out) const;
  // A ByteLevel stage maps the tokens back to bytes (GPT-2 / Qwen vocabularies); otherwise
  // tokens are text (sentencepiece style, `▁` for spaces, <0xNN> byte fallback).
  bool byte_level() const { return byte_level_; }

 private:
  void Run(DecodeState& state, std::vector<DecodePiece> pieces, bool finish,
           std::string* out) const;
  std::vector<std::unique_ptr<DecodeStage>> stages_;
  bool byte_level_ = false;
};

// A sentencepiece byte-fallback token "<0xNN>": true and its byte, else false.
bool ParseByteToken(std::string_view token, uint8_t* byte);

// --- Stages (tokenizer.json decoder types) ---

// ByteLevel: maps the byte-level alphabet back to bytes and fuses everything into UTF-8 text,
// replacing ill-formed sequences with U+FFFD (like from_utf8_lossy). A token with characters
// outside the alphabet contributes its own UTF-8 bytes.
class ByteLevelStage : public DecodeStage {
 public:
  void Push(DecodePiece piece, StageState& st, std::vector<DecodePiece>* out) const override;
  void Finish(StageState& st, std::vector<DecodePiece>* out) const override;
};

// ByteFallback: runs of <0xNN> tokens become the bytes they stand for when those form valid
// UTF-8; otherwise every byte of the run becomes one U+FFFD (Hugging Face's rule).
class ByteFallbackStage : public DecodeStage {
 public:
  void Push(DecodePiece piece, StageState& st, std::vector<DecodePiece>* out) const override;
  void Finish(StageState& st, std::vector<DecodePiece>* out) const override;

 private:
  static void Flush(StageState& st, std::vector<DecodePiece>* out);
};

// Fuse: all tokens become one.
class FuseStage : public DecodeStage {
 public:
  void Push(DecodePiece piece, StageState& st, std::vector<DecodePiece>* out) const override;
  void Finish(StageState& st, std::vector<DecodePiece>* out) const override;
};

// Replace: literal `pattern` → `content` within each token.
class ReplaceStage : public DecodeStage {
 public:
  ReplaceStage(std::string pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void Push(DecodePiece piece, StageState& st, std::vector<DecodePiece>* out) const override;

 private:
  std::string pattern_, content_;
};

// Strip: removes up to `start` leading and `stop` trailing `content` characters of each token.
class StripStage : public DecodeStage {
 public:
  StripStage(std::string content, int start, int stop)
      : content_(std::move(content)), start_(start), stop_(stop) {}
  void Push(DecodePiece piece, StageState& st, std::vector<DecodePiece>* out) const override;

 private:
  std::string content_;  // one character
  int start_, stop_;
};

// Metaspace: `replacement` → ' '; in the first token it is dropped instead unless the prepend
// scheme is "never" (Hugging Face's rule).
class MetaspaceStage : public DecodeStage {
 public:
  MetaspaceStage(std::string replacement, bool strip_first)
      : replacement_(std::move(replacement)), strip_first_(strip_first) {}
  void Push(DecodePiece piece, StageState& st, std::vector<DecodePiece>* out) const override;

 private:
  std::string replacement_;
  bool strip_first_;
};

}  // namespace xinfer::tok
