#include "kv/block_pool.h"

#include <gtest/gtest.h>

#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "kv/block_hash.h"

namespace xinfer {
namespace {

std::vector<TokenId> Tokens(int n, int start) {
  std::vector<TokenId> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), start);
  return t;
}

// Allocates a block and registers it in the cache as block `k` of a fake chain.
BlockId AllocateCached(BlockPool& pool, int k) {
  const BlockId id = pool.Allocate();
  const std::vector<TokenId> t = Tokens(pool.block_size(), 1000 * k);
  const BlockHash root = RootBlockHash(0);
  EXPECT_TRUE(pool.Insert(id, HashBlock(root, 0, t), root, 0, t));
  return id;
}

std::optional<BlockId> LookupFake(const BlockPool& pool, int k) {
  const std::vector<TokenId> t = Tokens(pool.block_size(), 1000 * k);
  const BlockHash root = RootBlockHash(0);
  return pool.Lookup(HashBlock(root, 0, t), root, 0, t);
}

TEST(BlockPoolTest, AllocateAndReleaseAllBlocks) {
  BlockPool pool(8, 4);
  EXPECT_EQ(pool.num_free_blocks(), 8);
  std::set<BlockId> got;
  for (int i = 0; i < 8; ++i) got.insert(pool.Allocate());
  EXPECT_EQ(got.size(), 8u);
  EXPECT_EQ(*got.begin(), 0);
  EXPECT_EQ(*got.rbegin(), 7);
  EXPECT_EQ(pool.num_free_blocks(), 0);
  for (BlockId id : got) EXPECT_EQ(pool.ref_count(id), 1);
  for (BlockId id : got) pool.Release(id);
  EXPECT_EQ(pool.num_free_blocks(), 8);
  EXPECT_TRUE(pool.CheckConsistency().ok());
}

TEST(BlockPoolTest, SharedBlockNeedsEveryReferenceReleased) {
  BlockPool pool(2, 4);
  const BlockId a = AllocateCached(pool, 1);
  pool.Touch(a);
  EXPECT_EQ(pool.ref_count(a), 2);
  pool.Release(a);
  EXPECT_EQ(pool.num_free_blocks(), 1);
  pool.Release(a);
  EXPECT_EQ(pool.num_free_blocks(), 2);
  EXPECT_TRUE(pool.is_evictable(a));
  EXPECT_TRUE(pool.CheckConsistency().ok());
}

TEST(BlockPoolTest, CachedBlockSurvivesReleaseAndIsRevivedByTouch) {
  BlockPool pool(4, 4);
  const BlockId a = AllocateCached(pool, 1);
  pool.Release(a);
  EXPECT_EQ(pool.num_evictable_blocks(), 1);
  EXPECT_EQ(pool.num_free_blocks(), 4);
  ASSERT_EQ(LookupFake(pool, 1), a);
  pool.Touch(a);
  EXPECT_EQ(pool.ref_count(a), 1);
  EXPECT_EQ(pool.num_evictable_blocks(), 0);
  EXPECT_EQ(pool.num_free_blocks(), 3);
  EXPECT_TRUE(pool.CheckConsistency().ok());
}

TEST(BlockPoolTest, EvictsOnlyWhenFreeListIsEmptyOldestFirst) {
  BlockPool pool(4, 4);
  const BlockId c1 = AllocateCached(pool, 1);
  const BlockId c2 = AllocateCached(pool, 2);
  pool.Release(c1);  // released first: oldest
  pool.Release(c2);
  // Two uncached free blocks are used before any eviction.
  const BlockId f1 = pool.Allocate();
  const BlockId f2 = pool.Allocate();
  EXPECT_NE(f1, c1);
  EXPECT_NE(f2, c2);
  EXPECT_EQ(pool.num_evictions(), 0);
  EXPECT_EQ(pool.num_cached_blocks(), 2);
  // Now the free list is empty: the oldest evictable block goes first.
  EXPECT_EQ(pool.Allocate(), c1);
  EXPECT_EQ(pool.num_evictions(), 1);
  EXPECT_FALSE(LookupFake(pool, 1).has_value());
  EXPECT_EQ(LookupFake(pool, 2), c2);
  EXPECT_EQ(pool.Allocate(), c2);
  EXPECT_FALSE(LookupFake(pool, 2).has_value());
  EXPECT_EQ(pool.num_cached_blocks(), 0);
  EXPECT_TRUE(pool.CheckConsistency().ok());
}

TEST(BlockPoolTest, TouchRefreshesRecency) {
  BlockPool pool(2, 4);
  const BlockId c1 = AllocateCached(pool, 1);
  const BlockId c2 = AllocateCached(pool, 2);
  pool.Release(c1);
  pool.Release(c2);
  pool.Touch(c1);  // used again: now the most recent once released
  pool.Release(c1);
  EXPECT_EQ(pool.Allocate(), c2);
  EXPECT_EQ(LookupFake(pool, 1), c1);
}

TEST(BlockPoolTest, ReferencedCachedBlockIsNeverEvicted) {
  BlockPool pool(3, 4);
  const BlockId held = AllocateCached(pool, 1);  // stays referenced
  const BlockId c2 = AllocateCached(pool, 2);
  pool.Release(c2);
  const BlockId x = pool.Allocate();  // the one free block
  EXPECT_NE(x, held);
  EXPECT_EQ(pool.Allocate(), c2);  // evicts the unreferenced cached block
  EXPECT_EQ(pool.num_free_blocks(), 0);
  EXPECT_EQ(LookupFake(pool, 1), held);
  EXPECT_EQ(pool.ref_count(held), 1);
  EXPECT_TRUE(pool.CheckConsistency().ok());
}

TEST(BlockPoolTest, DuplicateInsertIsRefused) {
  BlockPool pool(2, 4);
  const BlockId a = AllocateCached(pool, 1);
  const BlockId b = pool.Allocate();
  const std::vector<TokenId> t = Tokens(4, 1000);
  const BlockHash root = RootBlockHash(0);
  EXPECT_FALSE(pool.Insert(b, HashBlock(root, 0, t), root, 0, t));
  EXPECT_FALSE(pool.is_cached(b));
  EXPECT_EQ(LookupFake(pool, 1), a);
  pool.Release(b);
  EXPECT_EQ(pool.num_evictable_blocks(), 0);  // the uncached duplicate went to the free list
  EXPECT_TRUE(pool.CheckConsistency().ok());
}

TEST(BlockPoolTest, LookupVerifiesContentsNotJustTheHash) {
  BlockPool pool(2, 4);
  const BlockId a = pool.Allocate();
  const std::vector<TokenId> t = Tokens(4, 7);
  const BlockHash root = RootBlockHash(0);
  const BlockHash h = HashBlock(root, 5, t);
  ASSERT_TRUE(pool.Insert(a, h, root, 5, t));
  EXPECT_EQ(pool.Lookup(h, root, 5, t), a);
  // Pretend another block collided on the 128-bit hash: each mismatch is refused.
  std::vector<TokenId> other = t;
  other[3] = 99;
  EXPECT_FALSE(pool.Lookup(h, root, 5, other).has_value());
  EXPECT_FALSE(pool.Lookup(h, root, 6, t).has_value());
  EXPECT_FALSE(pool.Lookup(h, RootBlockHash(1), 5, t).has_value());
}

TEST(BlockPoolTest, DropEvictableKeepsReferencedEntries) {
  BlockPool pool(3, 4);
  const BlockId held = AllocateCached(pool, 1);
  const BlockId c2 = AllocateCached(pool, 2);
  pool.Release(c2);
  EXPECT_EQ(pool.DropEvictable(), 1);
  EXPECT_FALSE(pool.is_cached(c2));
  EXPECT_TRUE(pool.is_cached(held));
  EXPECT_EQ(pool.num_free_blocks(), 2);
  EXPECT_TRUE(pool.CheckConsistency().ok());
}

TEST(BlockHashTest, DependsOnParentExtraKeyTokensAndLength) {
  const BlockHash root = RootBlockHash(0);
  const std::vector<TokenId> t = Tokens(16, 0);
  const BlockHash h = HashBlock(root, 0, t);
  EXPECT_EQ(h, HashBlock(root, 0, t));
  EXPECT_FALSE(h == HashBlock(RootBlockHash(1), 0, t));
  EXPECT_FALSE(h == HashBlock(root, 1, t));
  EXPECT_FALSE(h == HashBlock(h, 0, t));
  std::vector<TokenId> swapped = t;
  std::swap(swapped[0], swapped[1]);
  EXPECT_FALSE(h == HashBlock(root, 0, swapped));
  EXPECT_FALSE(HashBlock(root, 0, std::span(t).first(15)) == HashBlock(root, 0, t));
}

TEST(BlockHashTest, NoCollisionsAmongManyRandomBlocks) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<TokenId> tok(0, 200);  // small vocab: many near-duplicates
  std::set<std::pair<uint64_t, uint64_t>> seen_full;
  std::set<uint64_t> seen_lo;
  BlockHash parent = RootBlockHash(0);
  constexpr int kBlocks = 50000;
  std::vector<TokenId> t(16);
  for (int i = 0; i < kBlocks; ++i) {
    for (TokenId& x : t) x = tok(rng);
    parent = HashBlock(i % 3 == 0 ? RootBlockHash(0) : parent, static_cast<uint64_t>(i % 2), t);
    seen_full.insert({parent.lo, parent.hi});
    seen_lo.insert(parent.lo);
  }
  EXPECT_EQ(seen_full.size(), static_cast<size_t>(kBlocks));
  EXPECT_EQ(seen_lo.size(), static_cast<size_t>(kBlocks));
}

}  // namespace
}  // namespace xinfer
