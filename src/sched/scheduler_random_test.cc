// Randomized end-to-end test of the scheduler + KV cache manager against a fake runner.
//
// The fake runner keeps a fake KV cache: writing position p of a sequence stores a hash of the
// sequence's tokens [0, p] (and its extra_key) in slot SlotForPosition(table, p). Every step it
// checks that all earlier positions of every scheduled sequence read back the right value, so a
// wrong prefix-cache hit, a reused block or a bad block table is caught. After every step the
// scheduler's invariants and the step's budget/cap/order properties are checked; at the end all
// requests must have finished (no starvation or livelock) and every block must be free.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "sched/scheduler.h"

namespace xinfer {
namespace {

struct RandomCase {
  std::string name;
  SchedulerConfig config;
  uint32_t seed = 1;
  int arrival_steps = 1500;  // steps during which new requests arrive
  double arrival_prob = 0.5;
  double abort_prob = 0.02;
  double stop_prob = 0.03;
  int max_output = 24;
};

struct Shadow {
  std::vector<TokenId> tokens;
  std::vector<uint64_t> prefix_hash;  // prefix_hash[p] identifies tokens [0, p] + extra_key
  uint64_t extra_key = 0;
  int max_tokens = 0;
  bool stop_sent = false;

  void Append(TokenId t) {
    uint64_t h = prefix_hash.empty() ? 0x51ed270b7a3c1f29ULL ^ extra_key : prefix_hash.back();
    h = (h ^ static_cast<uint64_t>(static_cast<uint32_t>(t))) * 0x100000001b3ULL;
    h ^= h >> 29;
    tokens.push_back(t);
    prefix_hash.push_back(h);
  }
};

void PrintTo(const RandomCase& c, std::ostream* os) { *os << c.name; }

class SchedulerRandomTest : public ::testing::TestWithParam<RandomCase> {};

TEST_P(SchedulerRandomTest, InvariantsHoldAndEveryRequestFinishes) {
  const RandomCase& tc = GetParam();
  const SchedulerConfig& cfg = tc.config;
  auto created = Scheduler::Create(cfg);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Scheduler& s = **created;
  std::mt19937 rng(tc.seed);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto chance = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };

  // A few shared "system prompts" so that prefix caching gets hits.
  std::vector<std::vector<TokenId>> shared(4);
  for (auto& p : shared) {
    p.resize(static_cast<size_t>(uniform(1, cfg.max_model_len / 2)));
    for (TokenId& t : p) t = uniform(0, 50);
  }

  std::vector<uint64_t> fake_kv(static_cast<size_t>(cfg.num_blocks) * cfg.block_size, 0);
  std::map<RequestId, Shadow> live;
  std::set<RequestId> finished_ok, aborted;
  int64_t accepted = 0, rejected = 0, preemptions_seen = 0, next_id = 0, drafts_seen = 0;
  const int bs = cfg.block_size;
  const bool by_priority = cfg.policy == SchedulingPolicy::kPriority;
  auto key = [&](const Request* r) {
    return std::pair<int64_t, uint64_t>(by_priority ? r->priority : 0, r->arrival);
  };

  auto add_random_request = [&]() {
    NewRequest nr;
    nr.id = fmt::format("r{}", next_id++);
    if (chance(0.6)) {
      const auto& p = shared[static_cast<size_t>(uniform(0, 3))];
      nr.prompt_token_ids.assign(p.begin(), p.begin() + uniform(1, static_cast<int>(p.size())));
    }
    const int tail = uniform(chance(0.3) ? 0 : 1, cfg.max_model_len / 3);
    // A 2-token vocabulary now and then: equal blocks after different prefixes.
    const int vocab = chance(0.2) ? 1 : 50;
    for (int i = 0; i < tail; ++i) nr.prompt_token_ids.push_back(uniform(0, vocab));
    const int prompt = static_cast<int>(nr.prompt_token_ids.size());
    const int room = cfg.max_model_len - prompt;
    nr.max_tokens = room >= 1 ? uniform(1, std::min(room, tc.max_output)) : 1;
    if (chance(0.02)) nr.max_tokens = cfg.max_model_len;  // always too long
    nr.priority = uniform(0, 3);
    nr.extra_key = chance(0.1) ? 7 : 0;
    nr.prompt_logits = chance(0.1);
    const int64_t total = static_cast<int64_t>(prompt) + nr.max_tokens;
    const bool fits = prompt > 0 && total <= cfg.max_model_len &&
                      CeilDiv(static_cast<int>(total) - 1, bs) <= cfg.num_blocks;
    Shadow sh;
    sh.extra_key = nr.extra_key;
    sh.max_tokens = nr.max_tokens;
    for (TokenId t : nr.prompt_token_ids) sh.Append(t);
    const RequestId id = nr.id;
    const Status st = s.AddRequest(std::move(nr));
    ASSERT_EQ(st.ok(), fits) << st.ToString();
    if (st.ok()) {
      ++accepted;
      live.emplace(id, std::move(sh));
    } else {
      ++rejected;
    }
  };
  auto random_live_id = [&]() {
    auto it = live.begin();
    std::advance(it, uniform(0, static_cast<int>(live.size()) - 1));
    return it->first;
  };
  auto abort_one = [&]() {
    const RequestId id = random_live_id();
    ASSERT_TRUE(s.Abort(id).ok());
    live.erase(id);
    aborted.insert(id);
  };

  int step = 0;
  constexpr int kMaxSteps = 200000;
  for (; step < kMaxSteps; ++step) {
    const bool arriving = step < tc.arrival_steps;
    if (!arriving && !s.HasUnfinishedRequests()) break;
    if (arriving && chance(tc.arrival_prob)) {
      const int n = uniform(1, 3);
      for (int i = 0; i < n; ++i) add_random_request();
    }
    if (arriving && !live.empty() && chance(tc.abort_prob)) abort_one();

    SchedulerOutput out = s.Schedule();
    // Budget, caps, uniqueness.
    ASSERT_LE(out.total_num_tokens, cfg.max_num_batched_tokens);
    ASSERT_LE(static_cast<int>(out.scheduled.size()), cfg.max_num_seqs);
    int sum = 0;
    int prompt_logits_rows = 0;
    std::set<RequestId> ids;
    std::map<BlockId, RequestId> owner;
    // Order: running decodes, then running prefill chunks, then admissions.
    int last_running_decode = -1, first_running_chunk = static_cast<int>(out.scheduled.size());
    int last_running = -1, first_admitted = static_cast<int>(out.scheduled.size());
    for (size_t i = 0; i < out.scheduled.size(); ++i) {
      const ScheduledSequence& seq = out.scheduled[i];
      sum += seq.num_new_tokens;
      ASSERT_TRUE(ids.insert(seq.request_id).second);
      ASSERT_GE(seq.num_new_tokens, 1);
      const Request* r = s.GetRequest(seq.request_id);
      ASSERT_NE(r, nullptr);
      ASSERT_EQ(r->status, RequestStatus::kRunning);
      const Shadow& sh = live.at(seq.request_id);
      ASSERT_EQ(seq.start_position, r->num_computed_tokens);
      const int end = seq.start_position + seq.num_new_tokens;
      // Draft tokens (speculative decoding) follow a decode's token, within max_tokens.
      const int k = static_cast<int>(seq.spec_token_ids.size());
      const int real_end = end - k;
      std::vector<TokenId> inputs(sh.tokens.begin() + seq.start_position,
                                  sh.tokens.begin() + std::min<int>(real_end, sh.tokens.size()));
      inputs.insert(inputs.end(), seq.spec_token_ids.begin(), seq.spec_token_ids.end());
      ASSERT_LE(real_end, static_cast<int>(sh.tokens.size()));
      ASSERT_EQ(seq.token_ids, inputs);
      ASSERT_EQ(seq.needs_sampling, real_end == static_cast<int>(sh.tokens.size()));
      if (k > 0) {
        ASSERT_LE(k, cfg.num_speculative_tokens);
        ASSERT_FALSE(seq.is_prefill);
        ASSERT_EQ(seq.num_new_tokens, k + 1);
        ASSERT_LE(r->num_output_tokens() + k + 1, r->max_tokens);
        drafts_seen += k;
      }
      if (!cfg.enable_chunked_prefill && !r->prompt_logits) {
        ASSERT_TRUE(seq.needs_sampling);
      }
      // Prompt logprobs: the chunk's prompt positions (all but the last prompt token's), none
      // read from the cache.
      const int prompt_rows =
          std::max(0, std::min(real_end, r->num_prompt_tokens - 1) - seq.start_position);
      ASSERT_EQ(seq.num_prompt_logits, r->prompt_logits ? prompt_rows : 0);
      prompt_logits_rows += seq.num_prompt_logits;
      if (r->prompt_logits && seq.newly_admitted) {
        ASSERT_EQ(seq.start_position, 0);
      }
      ASSERT_EQ(seq.block_table, s.kv_cache().block_table(seq.request_id));
      ASSERT_GE(static_cast<int>(seq.block_table.size()), CeilDiv(end, bs));
      // Blocks written this step belong to this sequence alone and are not cached.
      for (int b = seq.start_position / bs; b < CeilDiv(end, bs); ++b) {
        const BlockId id = seq.block_table[static_cast<size_t>(b)];
        ASSERT_EQ(s.kv_cache().pool().ref_count(id), 1);
        ASSERT_FALSE(s.kv_cache().pool().is_cached(id));
      }
      // A block in two tables must be a shared cached block.
      for (BlockId id : seq.block_table) {
        auto [it, inserted] = owner.emplace(id, seq.request_id);
        if (!inserted) {
          ASSERT_TRUE(s.kv_cache().pool().is_cached(id));
        }
      }
      const int index = static_cast<int>(i);
      if (seq.newly_admitted) {
        first_admitted = std::min(first_admitted, index);
      } else {
        last_running = index;
        if (!seq.is_prefill) last_running_decode = index;
        if (real_end - seq.start_position > 1)
          first_running_chunk = std::min(first_running_chunk, index);
      }
    }
    ASSERT_EQ(sum, out.total_num_tokens);
    ASSERT_LE(prompt_logits_rows, cfg.max_prompt_logits_per_step);
    ASSERT_LT(last_running, first_admitted) << "running requests must precede admissions";
    ASSERT_LT(last_running_decode, first_running_chunk) << "decodes must precede chunks";
    // Victims are the last in (priority, arrival) order and nothing is admitted with them.
    preemptions_seen += static_cast<int64_t>(out.preempted_request_ids.size());
    for (const RequestId& v : out.preempted_request_ids) {
      const Request* victim = s.GetRequest(v);
      ASSERT_NE(victim, nullptr);
      ASSERT_EQ(victim->status, RequestStatus::kPreempted);
      ASSERT_FALSE(ids.contains(v));
      for (const ScheduledSequence& seq : out.scheduled) {
        ASSERT_FALSE(seq.newly_admitted);
        ASSERT_LT(key(s.GetRequest(seq.request_id)), key(victim));
      }
    }
    ASSERT_TRUE(s.CheckInvariants().ok()) << s.CheckInvariants().ToString();

    // Fake execution: read all earlier positions, write this step's.
    std::vector<SequenceResult> results(out.scheduled.size());
    for (size_t i = 0; i < out.scheduled.size(); ++i) {
      const ScheduledSequence& seq = out.scheduled[i];
      Shadow& sh = live.at(seq.request_id);
      for (int p = 0; p < seq.start_position; ++p) {
        ASSERT_EQ(fake_kv[static_cast<size_t>(SlotForPosition(seq.block_table, p, bs))],
                  sh.prefix_hash[static_cast<size_t>(p)])
            << "stale KV for " << seq.request_id << " at position " << p;
      }
      // The drafts' positions hold what their tokens give; those rejected must never be read.
      Shadow with_drafts = sh;
      for (TokenId t : seq.spec_token_ids) with_drafts.Append(t);
      for (int p = seq.start_position; p < seq.start_position + seq.num_new_tokens; ++p) {
        fake_kv[static_cast<size_t>(SlotForPosition(seq.block_table, p, bs))] =
            with_drafts.prefix_hash[static_cast<size_t>(p)];
      }
      if (seq.needs_sampling) {
        results[i].sampled_token = uniform(0, 7);  // small vocab: repeated contents
        results[i].stop = chance(tc.stop_prob);
        results[i].num_accepted_drafts = uniform(0, static_cast<int>(seq.spec_token_ids.size()));
      }
    }
    // Sometimes a request is aborted while its step is executing.
    if (!out.scheduled.empty() && chance(tc.abort_prob)) {
      const RequestId& id =
          out.scheduled[static_cast<size_t>(uniform(0, static_cast<int>(out.scheduled.size()) - 1))]
              .request_id;
      ASSERT_TRUE(s.Abort(id).ok());
      live.erase(id);
      aborted.insert(id);
    }
    std::vector<FinishedRequest> finished = s.Update(out, results);
    for (size_t i = 0; i < out.scheduled.size(); ++i) {
      auto it = live.find(out.scheduled[i].request_id);
      if (it == live.end() || !results[i].sampled_token) continue;
      for (int j = 0; j < results[i].num_accepted_drafts; ++j)
        it->second.Append(out.scheduled[i].spec_token_ids[static_cast<size_t>(j)]);
      it->second.Append(*results[i].sampled_token);
      it->second.stop_sent = results[i].stop;
    }
    for (const FinishedRequest& f : finished) {
      const Shadow& sh = live.at(f.request_id);
      ASSERT_EQ(f.num_output_tokens, static_cast<int>(sh.tokens.size()) - f.num_prompt_tokens);
      if (sh.stop_sent) {
        ASSERT_EQ(f.status, RequestStatus::kFinishedStopped);
      } else {
        ASSERT_EQ(f.status, RequestStatus::kFinishedLength);
        ASSERT_EQ(f.num_output_tokens, sh.max_tokens);
      }
      finished_ok.insert(f.request_id);
      live.erase(f.request_id);
    }
    for (const auto& [id, sh] : live) {
      const Request* r = s.GetRequest(id);
      ASSERT_NE(r, nullptr);
      ASSERT_EQ(r->token_ids, sh.tokens);
    }
    ASSERT_TRUE(s.CheckInvariants().ok()) << s.CheckInvariants().ToString();
  }

  ASSERT_LT(step, kMaxSteps) << "requests did not drain (livelock or starvation)";
  EXPECT_TRUE(live.empty());
  EXPECT_EQ(static_cast<int64_t>(finished_ok.size() + aborted.size()), accepted);
  EXPECT_EQ(s.kv_cache().num_free_blocks(), cfg.num_blocks);
  EXPECT_EQ(s.kv_cache().num_requests(), 0);
  EXPECT_EQ(s.stats().kv_cache_usage, 0.0);
  EXPECT_EQ(s.stats().num_preemptions, preemptions_seen);
  EXPECT_LE(s.stats().prefix_cache_hits, s.stats().prefix_cache_queries);
  if (cfg.num_speculative_tokens > 0) {
    EXPECT_GT(drafts_seen, 0);
  }
  if (cfg.enable_prefix_caching) {
    EXPECT_GT(s.stats().prefix_cache_hits, 0);
  } else {
    EXPECT_EQ(s.kv_cache().pool().num_cached_blocks(), 0);
  }
  EXPECT_TRUE(s.CheckInvariants().ok());
  RecordProperty("steps", step);
  RecordProperty("accepted", static_cast<int>(accepted));
  RecordProperty("preemptions", static_cast<int>(preemptions_seen));
  std::printf(
      "[%s] steps=%d accepted=%lld rejected=%lld aborted=%zu preemptions=%lld "
      "prefix hits/queries=%lld/%lld drafts=%lld\n",
      tc.name.c_str(), step, static_cast<long long>(accepted), static_cast<long long>(rejected),
      aborted.size(), static_cast<long long>(preemptions_seen),
      static_cast<long long>(s.stats().prefix_cache_hits),
      static_cast<long long>(s.stats().prefix_cache_queries), static_cast<long long>(drafts_seen));
}

SchedulerConfig Make(int block_size, int num_blocks, int budget, int max_seqs, int max_model_len,
                     bool chunked, bool caching, SchedulingPolicy policy) {
  SchedulerConfig c;
  c.block_size = block_size;
  c.num_blocks = num_blocks;
  c.max_num_batched_tokens = budget;
  c.max_num_seqs = max_seqs;
  c.max_model_len = max_model_len;
  c.enable_chunked_prefill = chunked;
  c.enable_prefix_caching = caching;
  c.policy = policy;
  return c;
}

std::vector<RandomCase> Cases() {
  using enum SchedulingPolicy;
  std::vector<RandomCase> cases = {
      {"tiny_chunked_cached_fcfs", Make(4, 24, 16, 4, 64, true, true, kFcfs), 1},
      {"tiny_chunked_cached_priority", Make(4, 24, 16, 4, 64, true, true, kPriority), 2},
      {"tiny_unchunked_cached_fcfs", Make(4, 20, 64, 4, 64, false, true, kFcfs), 3},
      {"odd_block_chunked_uncached_priority", Make(3, 30, 12, 6, 60, true, false, kPriority), 4},
      {"unchunked_uncached_fcfs", Make(8, 40, 128, 8, 128, false, false, kFcfs), 5},
      {"block1_chunked_cached_fcfs", Make(1, 48, 8, 8, 40, true, true, kFcfs), 6},
      {"medium_chunked_cached_priority", Make(16, 64, 256, 16, 512, true, true, kPriority), 7},
      {"roomy_chunked_cached_fcfs", Make(16, 400, 512, 32, 256, true, true, kFcfs), 8},
  };
  cases[6].arrival_steps = 800;
  cases[7].arrival_prob = 0.8;
  // Speculative decoding: drafts from the small vocabulary's repeats, a random number kept.
  cases.push_back({"spec_tiny_chunked_cached_fcfs", Make(4, 24, 16, 4, 64, true, true, kFcfs), 9});
  cases.push_back({"spec_roomy_chunked_cached_priority",
                   Make(16, 400, 512, 32, 256, true, true, kPriority), 10});
  cases.push_back(
      {"spec_block1_unchunked_uncached_fcfs", Make(1, 64, 64, 8, 40, false, false, kFcfs), 11});
  for (size_t i = cases.size() - 3; i < cases.size(); ++i) {
    cases[i].config.num_speculative_tokens = 3;
    cases[i].config.prompt_lookup_min = 1;
    cases[i].config.prompt_lookup_max = 2;
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Configs, SchedulerRandomTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<RandomCase>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace xinfer
