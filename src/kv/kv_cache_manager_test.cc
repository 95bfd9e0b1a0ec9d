#include "kv/kv_cache_manager.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace xinfer {
namespace {

std::vector<TokenId> Range(int n, int start = 0) {
  std::vector<TokenId> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), start);
  return t;
}

std::vector<TokenId> Concat(std::vector<TokenId> a, const std::vector<TokenId>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

int HitTokens(const KvCacheManager& kv, const std::vector<TokenId>& tokens) {
  return kv.GetComputedBlocks(tokens).num_tokens;
}

KvCacheConfig Config(int num_blocks, int block_size = 16, bool caching = true) {
  KvCacheConfig c;
  c.num_blocks = num_blocks;
  c.block_size = block_size;
  c.enable_prefix_caching = caching;
  return c;
}

// Admits `tokens` as request `id` the way the scheduler does, prefills it whole and caches its
// full blocks. Returns the prefix hit it got.
PrefixHit Prefill(KvCacheManager& kv, const RequestId& id, const std::vector<TokenId>& tokens,
                  uint64_t extra_key = 0) {
  PrefixHit hit = kv.GetComputedBlocks(tokens, extra_key);
  const int n = static_cast<int>(tokens.size()) - hit.num_tokens;
  EXPECT_TRUE(kv.AllocateSlots(id, hit.num_tokens, n, &hit).has_value());
  kv.CacheFullBlocks(id, tokens, static_cast<int>(tokens.size()));
  EXPECT_TRUE(kv.CheckInvariants().ok()) << kv.CheckInvariants().ToString();
  return hit;
}

TEST(KvCacheConfigTest, Validate) {
  EXPECT_TRUE(Config(1).Validate().ok());
  EXPECT_EQ(Config(0).Validate().message(), "num_blocks must be positive, got 0");
  EXPECT_EQ(Config(4, 0).Validate().message(), "block_size must be positive, got 0");
}

TEST(KvCacheManagerTest, SlotForPosition) {
  const std::vector<BlockId> table = {7, 2, 9};
  EXPECT_EQ(SlotForPosition(table, 0, 16), 7 * 16);
  EXPECT_EQ(SlotForPosition(table, 15, 16), 7 * 16 + 15);
  EXPECT_EQ(SlotForPosition(table, 16, 16), 2 * 16);
  EXPECT_EQ(SlotForPosition(table, 47, 16), 9 * 16 + 15);
  EXPECT_DEATH((void)SlotForPosition(table, 48, 16), "not covered");
}

TEST(KvCacheManagerTest, AllocateSlotsIsAllOrNothing) {
  KvCacheManager kv(Config(4, 4, false));
  auto a = kv.AllocateSlots("a", 0, 9);  // 3 blocks
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->size(), 3u);
  EXPECT_EQ(kv.num_free_blocks(), 1);
  EXPECT_FALSE(kv.AllocateSlots("b", 0, 5).has_value());  // needs 2
  EXPECT_FALSE(kv.HasBlocks("b"));
  EXPECT_EQ(kv.num_free_blocks(), 1);
  // Growing "a": tokens 9..11 fit in block 3, token 12 needs a 4th block.
  auto grow = kv.AllocateSlots("a", 9, 3);
  ASSERT_TRUE(grow.has_value());
  EXPECT_TRUE(grow->empty());
  grow = kv.AllocateSlots("a", 12, 1);
  ASSERT_TRUE(grow.has_value());
  EXPECT_EQ(grow->size(), 1u);
  EXPECT_EQ(kv.block_table("a").size(), 4u);
  EXPECT_FALSE(kv.AllocateSlots("a", 16, 1).has_value());
  EXPECT_EQ(kv.block_table("a").size(), 4u);
  EXPECT_DOUBLE_EQ(kv.usage(), 1.0);
  kv.Free("a");
  EXPECT_EQ(kv.num_free_blocks(), 4);
  EXPECT_DOUBLE_EQ(kv.usage(), 0.0);
  EXPECT_TRUE(kv.block_table("a").empty());
  EXPECT_TRUE(kv.CheckInvariants().ok());
}

TEST(KvCacheManagerTest, SecondRequestReusesA1024TokenPrefix) {
  KvCacheManager kv(Config(200));
  const std::vector<TokenId> prefix = Range(1024, 5);
  const std::vector<TokenId> a = Concat(prefix, Range(10, 50000));
  const std::vector<TokenId> b = Concat(prefix, Range(37, 60000));
  const PrefixHit hit_a = Prefill(kv, "a", a);
  EXPECT_EQ(hit_a.num_tokens, 0);
  const PrefixHit hit_b = Prefill(kv, "b", b);
  EXPECT_EQ(hit_b.num_tokens, 1024);
  ASSERT_EQ(hit_b.blocks.size(), 64u);
  // The shared blocks are the same physical blocks, referenced twice.
  for (size_t i = 0; i < 64; ++i) {
    EXPECT_EQ(kv.block_table("a")[i], kv.block_table("b")[i]);
    EXPECT_EQ(kv.pool().ref_count(kv.block_table("a")[i]), 2);
  }
  EXPECT_NE(kv.block_table("a")[64], kv.block_table("b")[64]);
  EXPECT_EQ(kv.block_table("b").size(), static_cast<size_t>(CeilDiv(1024 + 37, 16)));
  EXPECT_EQ(kv.prefix_cache_queries(), 1034 + 1061);
  EXPECT_EQ(kv.prefix_cache_hits(), 1024);
}

TEST(KvCacheManagerTest, NeverHitsTheWholePrompt) {
  KvCacheManager kv(Config(10, 4));
  const std::vector<TokenId> t = Range(8);
  Prefill(kv, "a", t);
  kv.Free("a");
  // Both blocks are cached, but the last token must be recomputed: only one block is a hit.
  const PrefixHit hit = kv.GetComputedBlocks(t);
  EXPECT_EQ(hit.num_tokens, 4);
  EXPECT_EQ(kv.GetComputedBlocks(Range(9)).num_tokens, 8);
  EXPECT_EQ(kv.GetComputedBlocks(Range(1)).num_tokens, 0);
  EXPECT_EQ(kv.GetComputedBlocks({}).num_tokens, 0);
}

TEST(KvCacheManagerTest, HashChainDependsOnTheParent) {
  KvCacheManager kv(Config(10, 4));
  Prefill(kv, "a", {1, 2, 3, 4, 5, 6, 7, 8, 9});
  // Same second block after a different first block: no hit at all.
  EXPECT_EQ(HitTokens(kv, {9, 9, 9, 9, 5, 6, 7, 8, 9}), 0);
  // Same first block, different second: one block.
  EXPECT_EQ(HitTokens(kv, {1, 2, 3, 4, 5, 6, 7, 0, 9}), 4);
  EXPECT_EQ(HitTokens(kv, {1, 2, 3, 4, 5, 6, 7, 8, 0}), 8);
}

TEST(KvCacheManagerTest, ExtraKeySeparatesEntries) {
  KvCacheManager kv(Config(10, 4));
  const std::vector<TokenId> t = Range(9);
  Prefill(kv, "lora1", t, /*extra_key=*/1);
  EXPECT_EQ(kv.GetComputedBlocks(t, 1).num_tokens, 8);
  EXPECT_EQ(kv.GetComputedBlocks(t, 0).num_tokens, 0);
  EXPECT_EQ(kv.GetComputedBlocks(t, 2).num_tokens, 0);
  // Blocks filled later by the same request keep its extra key.
  ASSERT_TRUE(kv.AllocateSlots("lora1", 9, 3).has_value());
  const std::vector<TokenId> longer = Range(13);
  kv.CacheFullBlocks("lora1", longer, 12);
  EXPECT_EQ(kv.GetComputedBlocks(longer, 1).num_tokens, 12);
  EXPECT_EQ(kv.GetComputedBlocks(longer, 0).num_tokens, 0);
}

TEST(KvCacheManagerTest, BlocksFilledDuringDecodeAreCached) {
  KvCacheManager kv(Config(10, 4));
  std::vector<TokenId> t = {1, 2, 3};
  Prefill(kv, "a", t);
  EXPECT_EQ(kv.pool().num_cached_blocks(), 0);
  // Decode: each step computes the newest token.
  for (TokenId next : {4, 5, 6}) {
    t.push_back(next);
    const int computed = static_cast<int>(t.size()) - 1;
    ASSERT_TRUE(kv.AllocateSlots("a", computed, 1).has_value());
    kv.CacheFullBlocks("a", t, computed + 1);
  }
  EXPECT_EQ(kv.pool().num_cached_blocks(), 1);  // tokens 1..4 form a full block
  kv.Free("a");
  EXPECT_EQ(HitTokens(kv, {1, 2, 3, 4, 5}), 4);
  EXPECT_TRUE(kv.CheckInvariants().ok());
}

TEST(KvCacheManagerTest, FreedChainIsEvictedTailFirst) {
  KvCacheManager kv(Config(4, 4));
  const std::vector<TokenId> t = Range(16);
  Prefill(kv, "a", t);  // 4 cached blocks
  kv.Free("a");
  EXPECT_EQ(kv.num_free_blocks(), 4);
  EXPECT_EQ(kv.pool().num_evictable_blocks(), 4);
  ASSERT_TRUE(kv.AllocateSlots("x", 0, 1).has_value());  // evicts one block: the tail
  EXPECT_EQ(kv.GetComputedBlocks(Concat(t, {99})).num_tokens, 12);
  ASSERT_TRUE(kv.AllocateSlots("x", 1, 4).has_value());  // and the next one from the tail
  EXPECT_EQ(kv.GetComputedBlocks(Concat(t, {99})).num_tokens, 8);
  EXPECT_EQ(kv.pool().num_evictions(), 2);
  EXPECT_TRUE(kv.CheckInvariants().ok());
}

TEST(KvCacheManagerTest, EvictableHitCountsAgainstFreeBlocks) {
  KvCacheManager kv(Config(3, 4));
  const std::vector<TokenId> t = Range(9);
  Prefill(kv, "a", t);  // 3 blocks, 2 full and cached
  kv.Free("a");
  // A hit on two evictable blocks + one new block uses all three.
  PrefixHit hit = kv.GetComputedBlocks(t);
  ASSERT_EQ(hit.num_tokens, 8);
  ASSERT_TRUE(kv.AllocateSlots("b", 8, 1, &hit).has_value());
  EXPECT_EQ(kv.num_free_blocks(), 0);
  kv.Free("b");
  // Revived blocks plus new ones beyond the pool: refused, nothing changes.
  hit = kv.GetComputedBlocks(t);
  EXPECT_FALSE(kv.AllocateSlots("c", 8, 5, &hit).has_value());
  EXPECT_EQ(kv.pool().num_evictable_blocks(), 2);
  EXPECT_EQ(kv.prefix_cache_hits(), 8);  // only the admitted request counted
  EXPECT_TRUE(kv.CheckInvariants().ok());
}

TEST(KvCacheManagerTest, DuplicateComputationStaysConsistent) {
  KvCacheManager kv(Config(10, 4));
  const std::vector<TokenId> t = Range(9);
  // Both admitted before either computed: no hit, both compute the same blocks.
  PrefixHit ha = kv.GetComputedBlocks(t);
  PrefixHit hb = kv.GetComputedBlocks(t);
  ASSERT_TRUE(kv.AllocateSlots("a", 0, 9, &ha).has_value());
  ASSERT_TRUE(kv.AllocateSlots("b", 0, 9, &hb).has_value());
  kv.CacheFullBlocks("a", t, 9);
  kv.CacheFullBlocks("b", t, 9);
  EXPECT_EQ(kv.pool().num_cached_blocks(), 2);
  ASSERT_TRUE(kv.CheckInvariants().ok());
  // b's later blocks still chain correctly although its own copies are uncached.
  std::vector<TokenId> longer = Range(13);
  ASSERT_TRUE(kv.AllocateSlots("b", 9, 3).has_value());
  kv.CacheFullBlocks("b", longer, 12);
  EXPECT_EQ(kv.GetComputedBlocks(longer).num_tokens, 12);
  kv.Free("a");
  kv.Free("b");
  EXPECT_EQ(kv.num_free_blocks(), 10);
  EXPECT_TRUE(kv.CheckInvariants().ok());
}

TEST(KvCacheManagerTest, PrefixCachingDisabled) {
  KvCacheManager kv(Config(10, 4, false));
  const std::vector<TokenId> t = Range(9);
  Prefill(kv, "a", t);
  kv.Free("a");
  EXPECT_EQ(kv.GetComputedBlocks(t).num_tokens, 0);
  EXPECT_EQ(kv.pool().num_cached_blocks(), 0);
  EXPECT_EQ(kv.pool().num_evictable_blocks(), 0);
}

TEST(KvCacheManagerTest, ResetPrefixCacheDropsOnlyUnreferencedEntries) {
  KvCacheManager kv(Config(10, 4));
  Prefill(kv, "a", Range(9));
  Prefill(kv, "b", Range(9, 100));
  kv.Free("a");
  EXPECT_EQ(kv.ResetPrefixCache(), 2);
  EXPECT_EQ(kv.GetComputedBlocks(Range(9)).num_tokens, 0);
  EXPECT_EQ(kv.GetComputedBlocks(Range(9, 100)).num_tokens, 8);
  EXPECT_TRUE(kv.CheckInvariants().ok());
}

}  // namespace
}  // namespace xinfer
