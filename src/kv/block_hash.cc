#include "kv/block_hash.h"

#include "base/check.h"

namespace xinfer {
namespace {

constexpr uint64_t kSecret0 = 0xa0761d6478bd642fULL;
constexpr uint64_t kSecret1 = 0xe7037ed1a0b428dbULL;
constexpr uint64_t kSecret2 = 0x8ebc6af09c88c6e3ULL;
constexpr uint64_t kSecret3 = 0x589965cc75374cc3ULL;
constexpr uint64_t kSecret4 = 0x1d8e4e27c47d124fULL;
constexpr uint64_t kSecret5 = 0x9e3779b97f4a7c15ULL;

// 64x64 -> 128 multiply, folded (the "mum" primitive of wyhash).
inline uint64_t Mum(uint64_t a, uint64_t b) {
  unsigned __int128 r = static_cast<unsigned __int128>(a) * b;
  return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
}

inline uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// splitmix64 finalizer: full avalanche of one word.
inline uint64_t Avalanche(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

BlockHash RootBlockHash(uint64_t seed) {
  return BlockHash{Avalanche(seed ^ kSecret0), Avalanche(Rotl(seed, 32) ^ kSecret3)};
}

BlockHash HashBlock(const BlockHash& parent, uint64_t extra_key, std::span<const TokenId> tokens) {
  // Two lanes with different secrets and different word orders of the parent; each step keeps
  // the previous state through a rotated xor so a zero product cannot erase it.
  uint64_t a = Mum(parent.lo ^ kSecret0, parent.hi ^ kSecret1);
  uint64_t b = Mum(parent.hi ^ kSecret2, parent.lo ^ kSecret3);
  a = Mum(a ^ extra_key ^ kSecret4, kSecret1) ^ Rotl(a, 23);
  b = Mum(b ^ Rotl(extra_key, 17) ^ kSecret5, kSecret2) ^ Rotl(b, 41);
  const size_t n = tokens.size();
  size_t i = 0;
  for (; i + 2 <= n; i += 2) {
    const uint64_t w = static_cast<uint64_t>(static_cast<uint32_t>(tokens[i])) |
                       (static_cast<uint64_t>(static_cast<uint32_t>(tokens[i + 1])) << 32);
    a = Mum(a ^ w ^ kSecret1, kSecret4) ^ Rotl(a, 23);
    b = Mum(b ^ Rotl(w, 29) ^ kSecret3, kSecret5) ^ Rotl(b, 41);
  }
  if (i < n) {
    const uint64_t w = static_cast<uint64_t>(static_cast<uint32_t>(tokens[i])) | (1ULL << 63);
    a = Mum(a ^ w ^ kSecret1, kSecret4) ^ Rotl(a, 23);
    b = Mum(b ^ Rotl(w, 29) ^ kSecret3, kSecret5) ^ Rotl(b, 41);
  }
  a = Avalanche(a ^ static_cast<uint64_t>(n) * kSecret2);
  b = Avalanche(b ^ static_cast<uint64_t>(n) * kSecret0);
  return BlockHash{a ^ Rotl(b, 13), b + a * kSecret5};
}

}  // namespace xinfer
