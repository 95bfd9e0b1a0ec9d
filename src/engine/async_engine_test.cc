// AsyncEngine on the TinyStories model: streaming, cancellation, the queue cap, slow consumers,
// shutdown, many threads at once, and two data-parallel replicas behind one front (run under
// ThreadSanitizer in CI).
#include "engine/async_engine.h"

#include <fmt/core.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>

#include "base/cpu_topology.h"

namespace xinfer {
namespace {

using namespace std::chrono_literals;

std::string StoriesDir() { return std::string(XINFER_SHARED_DIR) + "/models/tinystories-656k"; }

#define REQUIRE_STORIES()                     \
  if (!std::filesystem::exists(StoriesDir())) \
  GTEST_SKIP() << StoriesDir()                \
               << " is absent "               \
                  "(../shared not available)"

std::unique_ptr<AsyncEngine> MakeEngine(AsyncEngineOptions options = {}, int max_num_seqs = 8) {
  EngineConfig c;
  c.model = StoriesDir();
  c.max_model_len = 256;
  c.max_num_seqs = max_num_seqs;
  c.num_gpu_blocks_override = 256;
  c.threads = 1;
  auto engine = LLMEngine::Create(c);
  EXPECT_TRUE(engine.ok()) << engine.status().ToString();
  if (!engine.ok()) return nullptr;
  auto ae = AsyncEngine::Create(std::move(*engine), options);
  EXPECT_TRUE(ae.ok()) << ae.status().ToString();
  return ae.ok() ? std::move(*ae) : nullptr;
}

EngineRequest Request(int max_tokens, int n = 1) {
  EngineRequest r;
  r.prompt_ids = {1, 400, 500, 600};
  r.params.temperature = 0;
  r.params.max_tokens = max_tokens;
  r.params.ignore_eos = true;
  r.params.n = n;
  return r;
}

// A consumer that sleeps until the engine notifies it, as the HTTP server does.
struct Waiter {
  std::mutex mu;
  std::condition_variable cv;
  bool pending = false;
  std::function<void()> Notifier() {
    return [this] {
      std::lock_guard<std::mutex> l(mu);
      pending = true;
      cv.notify_all();
    };
  }
  bool Wait(std::chrono::milliseconds timeout = 30s) {
    std::unique_lock<std::mutex> l(mu);
    bool ok = cv.wait_for(l, timeout, [&] { return pending; });
    pending = false;
    return ok;
  }
};

struct Collected {
  std::vector<RequestOutput> outputs;
  Status error;
  bool done = false;
};

Collected Collect(RequestStream& s, Waiter& w) {
  Collected c;
  while (!c.done) {
    RequestStream::Batch b = s.Drain();
    for (auto& o : b.outputs) c.outputs.push_back(std::move(o));
    c.error = b.error;
    c.done = b.done;
    if (!c.done && !w.Wait()) break;
  }
  return c;
}

TEST(AsyncEngineTest, StreamsTokensUntilLength) {
  REQUIRE_STORIES();
  auto ae = MakeEngine();
  ASSERT_NE(ae, nullptr);
  Waiter w;
  auto s = ae->Submit("a", Request(12, 2), w.Notifier());
  ASSERT_TRUE(s.ok());
  Collected c = Collect(**s, w);
  ASSERT_TRUE(c.done);
  EXPECT_TRUE(c.error.ok());
  int tokens[2] = {0, 0}, finished = 0;
  for (const auto& o : c.outputs) {
    tokens[o.index] += static_cast<int>(o.token_ids.size());
    if (o.finished) {
      ++finished;
      EXPECT_EQ(o.finish_reason, "length");
    }
  }
  EXPECT_EQ(tokens[0], 12);
  EXPECT_EQ(tokens[1], 12);
  EXPECT_EQ(finished, 2);
  // Read right after the last output: the engine's counters already include it.
  AsyncEngineStats st = ae->Stats();
  EXPECT_EQ(st.engine.generation_tokens, 24);
  EXPECT_EQ(st.engine.num_running, 0);
  EXPECT_EQ(st.num_active_requests, 0);
  EXPECT_EQ(st.metrics.time_to_first_token.count, 1u);
  EXPECT_EQ(st.metrics.e2e_request_latency.count, 1u);
  EXPECT_EQ(st.metrics.request_success["length"], 2);
  EXPECT_GT(st.metrics.inter_token_latency.count, 0u);
}

TEST(AsyncEngineTest, CancelFreesBlocksWithinAStep) {
  REQUIRE_STORIES();
  auto ae = MakeEngine();
  ASSERT_NE(ae, nullptr);
  Waiter w;
  // As long as the context allows, and cancelled as soon as the first tokens are out: the tiny
  // model decodes a token in ~50 us, so polling for stats first (as this test once did) let a
  // loaded CI host finish a 200-token request before the Cancel arrived.
  constexpr int kMaxTokens = 250;
  auto s = ae->Submit("long", Request(kMaxTokens), w.Notifier());
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(w.Wait());
  ae->Cancel("long");
  Collected c = Collect(**s, w);
  ASSERT_TRUE(c.done);
  ASSERT_FALSE(c.outputs.empty());
  EXPECT_EQ(c.outputs.back().finish_reason, "abort");
  // It was running (it had blocks) when cancelled: tokens out, not all of them.
  size_t tokens = 0;
  for (const RequestOutput& o : c.outputs) tokens += o.token_ids.size();
  EXPECT_GT(tokens, 0u);
  EXPECT_LT(tokens, static_cast<size_t>(kMaxTokens));
  // The abort is reported by the step after the Cancel; the stats of that step show no usage.
  for (int i = 0; i < 100 && ae->Stats().engine.kv_cache_usage > 0; ++i)
    std::this_thread::sleep_for(5ms);
  AsyncEngineStats st = ae->Stats();
  EXPECT_EQ(st.engine.kv_cache_usage, 0);
  EXPECT_EQ(st.engine.num_free_blocks, st.engine.num_blocks);
  EXPECT_EQ(st.metrics.request_success["abort"], 1);
  ae->Cancel("unknown");  // harmless
}

TEST(AsyncEngineTest, QueueCapRejectsWithUnavailable) {
  REQUIRE_STORIES();
  AsyncEngineOptions o;
  o.max_queue_len = 2;
  auto ae = MakeEngine(o, /*max_num_seqs=*/1);
  ASSERT_NE(ae, nullptr);
  Waiter w;
  auto a = ae->Submit("a", Request(200), w.Notifier());
  ASSERT_TRUE(a.ok());
  for (int i = 0; i < 1000 && ae->Stats().engine.num_running == 0; ++i)
    std::this_thread::sleep_for(2ms);
  ASSERT_TRUE(ae->Submit("b", Request(1), [] {}).ok());
  ASSERT_TRUE(ae->Submit("c", Request(1), [] {}).ok());
  auto d = ae->Submit("d", Request(1), [] {});
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(d.status().message().find("retry later"), std::string::npos);
  ae->Cancel("a");
}

TEST(AsyncEngineTest, SlowConsumerIsDropped) {
  REQUIRE_STORIES();
  AsyncEngineOptions o;
  o.max_buffered_outputs = 3;
  auto ae = MakeEngine(o);
  ASSERT_NE(ae, nullptr);
  Waiter w;
  auto s = ae->Submit("slow", Request(100), w.Notifier());
  ASSERT_TRUE(s.ok());
  // Never drain until the engine gives up on us.
  for (int i = 0; i < 2000 && ae->Stats().metrics.num_dropped_slow_consumers == 0; ++i)
    std::this_thread::sleep_for(2ms);
  RequestStream::Batch b = (*s)->Drain();
  EXPECT_TRUE(b.done);
  EXPECT_EQ(b.error.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(b.outputs.size(), 3u);
  for (int i = 0; i < 100 && ae->Stats().engine.kv_cache_usage > 0; ++i)
    std::this_thread::sleep_for(5ms);
  EXPECT_EQ(ae->Stats().engine.kv_cache_usage, 0);
}

TEST(AsyncEngineTest, ShutdownFinishesInFlightThenRefuses) {
  REQUIRE_STORIES();
  auto ae = MakeEngine();
  ASSERT_NE(ae, nullptr);
  Waiter w;
  auto s = ae->Submit("a", Request(20), w.Notifier());
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(ae->Shutdown(30s));
  Collected c = Collect(**s, w);
  ASSERT_TRUE(c.done);
  EXPECT_EQ(c.outputs.back().finish_reason, "length");
  auto late = ae->Submit("b", Request(1), [] {});
  EXPECT_EQ(late.status().code(), StatusCode::kUnavailable);
  EXPECT_FALSE(ae->accepting());
}

TEST(AsyncEngineTest, ShutdownTimeoutAbortsTheRest) {
  REQUIRE_STORIES();
  auto ae = MakeEngine();
  ASSERT_NE(ae, nullptr);
  Waiter w;
  auto s = ae->Submit("a", Request(240), w.Notifier());
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(w.Wait());
  EXPECT_FALSE(ae->Shutdown(0ms));
  Collected c = Collect(**s, w);
  EXPECT_TRUE(c.done);
}

TEST(AsyncEngineTest, ManyThreadsSubmitAndCancel) {
  REQUIRE_STORIES();
  auto ae = MakeEngine({}, 16);
  ASSERT_NE(ae, nullptr);
  std::atomic<int> completed{0}, aborted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 6; ++i) {
        Waiter w;
        const std::string id = std::to_string(t) + "-" + std::to_string(i);
        auto s = ae->Submit(id, Request(8), w.Notifier());
        ASSERT_TRUE(s.ok());
        if (i % 3 == 2) ae->Cancel(id);
        Collected c = Collect(**s, w);
        ASSERT_TRUE(c.done);
        (c.outputs.back().finish_reason == "abort" ? aborted : completed)++;
        (void)ae->Stats();
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(completed + aborted, 24);
  EXPECT_EQ(ae->Stats().num_active_requests, 0);
}

TEST(AsyncEngineTest, ScriptedOutputReplacesTokens) {
  REQUIRE_STORIES();
  const std::string file = ::testing::TempDir() + "/xinfer_script.json";
  std::ofstream(file) << R"([{"trigger": "dog", "output": "The cat sat."}])";
  AsyncEngineOptions o;
  o.scripted_output_file = file;
  auto ae = MakeEngine(o);
  ASSERT_NE(ae, nullptr);
  auto prompt = ae->tokenizer().Encode("The dog", true);
  ASSERT_TRUE(prompt.ok());
  EngineRequest r = Request(50);
  r.prompt_ids = *prompt;
  Waiter w;
  auto s = ae->Submit("s", std::move(r), w.Notifier());
  ASSERT_TRUE(s.ok());
  Collected c = Collect(**s, w);
  std::string text;
  for (const auto& out : c.outputs) text += out.text;
  EXPECT_EQ(text, "The cat sat.");
  EXPECT_EQ(c.outputs.back().finish_reason, "stop");
  std::remove(file.c_str());
}

// --data-parallel-size: `dp` replicas of the engine, ranks 0..dp-1 of one configuration.
std::vector<std::unique_ptr<LLMEngine>> MakeReplicas(int dp, const std::string& bind) {
  EngineConfig c;
  c.model = StoriesDir();
  c.max_model_len = 256;
  c.max_num_seqs = 8;
  c.num_gpu_blocks_override = 64;  // per replica
  c.threads = dp;
  c.data_parallel_size = dp;
  c.cpu_threads_bind = bind;
  std::vector<std::unique_ptr<LLMEngine>> engines;
  for (int rank = 0; rank < dp; ++rank) {
    auto engine = LLMEngine::Create(c, rank);
    EXPECT_TRUE(engine.ok()) << engine.status().ToString();
    if (!engine.ok()) return {};
    engines.push_back(std::move(*engine));
  }
  return engines;
}

// Six greedy requests with different prompts, submitted at once: each one's tokens.
std::map<std::string, std::vector<int32_t>> RunSix(AsyncEngine& ae) {
  std::vector<std::unique_ptr<Waiter>> waiters;
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (int k = 0; k < 6; ++k) {
    EngineRequest r = Request(20 + 3 * k);
    r.prompt_ids = {1, 400 + 13 * k, 500 + 7 * k, 600};
    waiters.push_back(std::make_unique<Waiter>());
    const std::string id = fmt::format("r{}", k);  // (GCC 12's -Wrestrict misfires on "r" + ...)
    auto s = ae.Submit(id, std::move(r), waiters.back()->Notifier());
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    if (!s.ok()) return {};
    streams.push_back(*s);
  }
  std::map<std::string, std::vector<int32_t>> tokens;
  for (size_t k = 0; k < streams.size(); ++k) {
    Collected c = Collect(*streams[k], *waiters[k]);
    EXPECT_TRUE(c.done && c.error.ok()) << c.error.ToString();
    for (const RequestOutput& o : c.outputs)
      tokens[o.request_id].insert(tokens[o.request_id].end(), o.token_ids.begin(),
                                  o.token_ids.end());
  }
  return tokens;
}

TEST(AsyncEngineTest, DataParallelReplicasShareRequestsAndGiveOneEnginesTokens) {
  REQUIRE_STORIES();
  auto one = MakeEngine();
  ASSERT_NE(one, nullptr);
  const auto expected = RunSix(*one);
  ASSERT_EQ(expected.size(), 6u);
  std::vector<std::string> binds = {"nobind"};
  if (AllowedCpus().size() >= 2) binds.push_back("auto");  // a CPU per replica
  for (const std::string& bind : binds) {
    SCOPED_TRACE(bind);
    auto ae = AsyncEngine::Create(MakeReplicas(2, bind), {});
    ASSERT_TRUE(ae.ok()) << ae.status().ToString();
    EXPECT_EQ((*ae)->num_replicas(), 2);
    EXPECT_EQ(RunSix(**ae), expected);
    // Read right after the last outputs, as a client reads /metrics after its responses.
    const AsyncEngineStats st = (*ae)->Stats();
    ASSERT_EQ(st.replicas.size(), 2u);
    // Both replicas served some; the front adds their figures up.
    EXPECT_GE(st.replicas[0].num_requests_finished, 1);
    EXPECT_GE(st.replicas[1].num_requests_finished, 1);
    EXPECT_EQ(st.engine.num_requests_finished, 6);
    EXPECT_EQ(st.engine.num_blocks, 128);
    EXPECT_EQ(st.engine.generation_tokens,
              st.replicas[0].generation_tokens + st.replicas[1].generation_tokens);
    EXPECT_EQ(st.engine.generation_tokens, 20 + 23 + 26 + 29 + 32 + 35);
    EXPECT_EQ(st.num_active_requests, 0);
    EXPECT_EQ(st.metrics.request_success.at("length"), 6);
  }
}

// RunOnEngines: the call runs once on each replica's engine thread, `done` once with the first
// error; after Shutdown it is Unavailable at once.
TEST(AsyncEngineTest, RunOnEnginesCallsEveryReplicaOnceAndReportsTheFirstError) {
  REQUIRE_STORIES();
  auto ae = AsyncEngine::Create(MakeReplicas(2, "nobind"), {});
  ASSERT_TRUE(ae.ok()) << ae.status().ToString();
  struct Outcome {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<int> ranks;
    std::optional<Status> done;
    int done_calls = 0;
  };
  auto run = [&](bool fail_rank1) {
    auto o = std::make_shared<Outcome>();
    (*ae)->RunOnEngines(
        [o, fail_rank1](LLMEngine& e) {
          std::lock_guard<std::mutex> l(o->mu);
          o->ranks.push_back(e.data_parallel_rank());
          return fail_rank1 && e.data_parallel_rank() == 1 ? InvalidArgument("rank 1 says no")
                                                           : Status::Ok();
        },
        [o](Status s) {
          std::lock_guard<std::mutex> l(o->mu);
          o->done = s;
          ++o->done_calls;
          o->cv.notify_all();
        });
    std::unique_lock<std::mutex> l(o->mu);
    EXPECT_TRUE(o->cv.wait_for(l, std::chrono::seconds(30), [&] { return o->done.has_value(); }));
    std::sort(o->ranks.begin(), o->ranks.end());
    return o;
  };
  auto ok = run(false);
  EXPECT_EQ(ok->ranks, (std::vector<int>{0, 1}));
  EXPECT_TRUE(ok->done->ok());
  auto failed = run(true);
  EXPECT_EQ(failed->ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(failed->done->message(), "rank 1 says no");
  EXPECT_EQ(failed->done_calls, 1);
  (*ae)->Shutdown(std::chrono::milliseconds(1000));
  std::optional<Status> after;
  (*ae)->RunOnEngines([](LLMEngine&) { return Status::Ok(); }, [&](Status s) { after = s; });
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->code(), StatusCode::kUnavailable);
}

TEST(AsyncEngineTest, DataParallelCancelAndShutdownReachTheReplicaThatHoldsTheRequest) {
  REQUIRE_STORIES();
  auto ae = AsyncEngine::Create(MakeReplicas(2, "nobind"), {});
  ASSERT_TRUE(ae.ok()) << ae.status().ToString();
  // The first request goes to replica 0, the second to replica 1 (fewest unfinished).
  Waiter wa, wb;
  auto a = (*ae)->Submit("a", Request(250), wa.Notifier());
  auto b = (*ae)->Submit("b", Request(250), wb.Notifier());
  ASSERT_TRUE(a.ok() && b.ok());
  // Replicas do not share ids, so the front refuses a duplicate itself.
  auto dup = (*ae)->Submit("a", Request(1), [] {});
  EXPECT_EQ(dup.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(dup.status().message().find("request id 'a' is already in use"), std::string::npos);
  for (auto [stream, waiter] : {std::pair{*a, &wa}, std::pair{*b, &wb}}) {
    ASSERT_TRUE(waiter->Wait());
    (*ae)->Cancel(stream->id());
    Collected c = Collect(*stream, *waiter);
    ASSERT_TRUE(c.done);
    EXPECT_EQ(c.outputs.back().finish_reason, "abort") << stream->id();
  }
  AsyncEngineStats st = (*ae)->Stats();
  for (int i = 0; i < 500 && st.engine.kv_cache_usage > 0; ++i) {
    std::this_thread::sleep_for(2ms);
    st = (*ae)->Stats();
  }
  EXPECT_EQ(st.engine.kv_cache_usage, 0);
  EXPECT_EQ(st.metrics.request_success.at("abort"), 2);
  // The id is free again once its request ended.
  Waiter wa2, wc;
  auto a2 = (*ae)->Submit("a", Request(250), wa2.Notifier());
  auto c = (*ae)->Submit("c", Request(250), wc.Notifier());
  ASSERT_TRUE(a2.ok() && c.ok());
  // Shutdown with a request in flight on each replica: both end, nothing stays active.
  EXPECT_FALSE((*ae)->Shutdown(0ms));
  EXPECT_TRUE(Collect(**a2, wa2).done);
  EXPECT_TRUE(Collect(**c, wc).done);
  EXPECT_EQ((*ae)->Stats().num_active_requests, 0);
  EXPECT_EQ((*ae)->Submit("d", Request(1), [] {}).status().code(), StatusCode::kUnavailable);
}

TEST(AsyncEngineTest, DataParallelEnginesMustBeTheReplicasInOrder) {
  REQUIRE_STORIES();
  auto engines = MakeReplicas(2, "nobind");
  ASSERT_EQ(engines.size(), 2u);
  std::swap(engines[0], engines[1]);
  auto swapped = AsyncEngine::Create(std::move(engines), {});
  ASSERT_FALSE(swapped.ok());
  EXPECT_EQ(swapped.status().message(), "engine 0 is not data-parallel replica 0");
  engines = MakeReplicas(2, "nobind");
  engines.pop_back();
  auto short_list = AsyncEngine::Create(std::move(engines), {});
  ASSERT_FALSE(short_list.ok());
  EXPECT_EQ(short_list.status().message(), "data_parallel_size 2 needs 2 engines, got 1");
  EngineConfig c;
  c.model = StoriesDir();
  c.data_parallel_size = 2;
  c.threads = 2;
  auto past = LLMEngine::Create(c, 2);
  ASSERT_FALSE(past.ok());
  EXPECT_EQ(past.status().message(), "data_parallel_rank must be in [0, 2), got 2");
  c.threads = 1;
  auto thin = LLMEngine::Create(c, 0);
  ASSERT_FALSE(thin.ok());
  EXPECT_EQ(thin.status().message(),
            "tensor_parallel_size 1 x data_parallel_size 2 needs at least one thread per rank, "
            "got threads 1");
}

}  // namespace
}  // namespace xinfer
