// CPU lists, NUMA nodes from sysfs, the placement of tensor-parallel ranks (auto / nobind /
// explicit lists, and what each refuses), thread binding, and a pool's bound workers.
#include "base/cpu_topology.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "base/thread_pool.h"

namespace xinfer {
namespace {

using Cpus = std::vector<int>;

TEST(CpuTopologyTest, CpuListsParseAndFormat) {
  EXPECT_EQ(*ParseCpuList("0-3,8,10-11\n"), (Cpus{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(*ParseCpuList("5"), (Cpus{5}));
  EXPECT_EQ(*ParseCpuList("3,1-2,2"), (Cpus{1, 2, 3}));
  EXPECT_EQ(FormatCpuList(Cpus{0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(FormatCpuList(Cpus{}), "");
  for (const char* bad : {"", "a", "1-", "-2", "3-1", "1,,2", "0-99999", "1 2", "2-3-4"})
    EXPECT_FALSE(ParseCpuList(bad).ok()) << bad;
}

TEST(CpuTopologyTest, NumaNodesFromSysfs) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / ("xinfer-nodes-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  for (auto [node, list] : {std::pair{0, "0-3"}, std::pair{1, "4-7"}, std::pair{3, ""}}) {
    std::filesystem::create_directories(dir / ("node" + std::to_string(node)));
    std::ofstream(dir / ("node" + std::to_string(node)) / "cpulist") << list << "\n";
  }
  const auto nodes = NumaNodeCpus(dir.string());
  ASSERT_EQ(nodes.size(), 4u);
  EXPECT_EQ(nodes[0], (Cpus{0, 1, 2, 3}));
  EXPECT_EQ(nodes[1], (Cpus{4, 5, 6, 7}));
  EXPECT_TRUE(nodes[2].empty());  // a hole in the ids
  EXPECT_TRUE(nodes[3].empty());  // memory only
  EXPECT_TRUE(NumaNodeCpus((dir / "absent").string()).empty());
  std::filesystem::remove_all(dir);
}

TEST(CpuTopologyTest, AutoPutsARankOnEachNodeOrSplitsTheCpus) {
  const std::vector<Cpus> two_nodes = {{0, 1, 2, 3}, {4, 5, 6, 7}};
  const Cpus all = {0, 1, 2, 3, 4, 5, 6, 7};
  auto p = PlanRankPlacement("auto", 2, all, two_nodes);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ((*p)[0].cpus, (Cpus{0, 1, 2, 3}));
  EXPECT_EQ((*p)[0].numa_node, 0);
  EXPECT_EQ((*p)[1].cpus, (Cpus{4, 5, 6, 7}));
  EXPECT_EQ((*p)[1].numa_node, 1);
  // Four ranks on two nodes: two runs of two CPUs per node, each on its node.
  p = PlanRankPlacement("auto", 4, all, two_nodes);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ((*p)[1].cpus, (Cpus{2, 3}));
  EXPECT_EQ((*p)[1].numa_node, 0);
  EXPECT_EQ((*p)[2].cpus, (Cpus{4, 5}));
  EXPECT_EQ((*p)[2].numa_node, 1);
  // Three ranks: runs of 2, 3, 3 CPUs; the middle one spans both nodes.
  p = PlanRankPlacement("auto", 3, all, two_nodes);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ((*p)[0].cpus, (Cpus{0, 1}));
  EXPECT_EQ((*p)[1].cpus, (Cpus{2, 3, 4}));
  EXPECT_EQ((*p)[1].numa_node, -1);
  EXPECT_EQ((*p)[2].cpus, (Cpus{5, 6, 7}));
  // The affinity mask rules: only allowed CPUs, and a node with none of them does not count.
  p = PlanRankPlacement("auto", 2, Cpus{4, 5, 6}, two_nodes);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ((*p)[0].cpus, (Cpus{4}));
  EXPECT_EQ((*p)[1].cpus, (Cpus{5, 6}));
  EXPECT_EQ((*p)[1].numa_node, 1);
  // No NUMA information: equal runs, no node.
  p = PlanRankPlacement("auto", 2, Cpus{0, 1, 2}, {});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ((*p)[0].cpus, (Cpus{0}));
  EXPECT_EQ((*p)[1].cpus, (Cpus{1, 2}));
  EXPECT_EQ((*p)[1].numa_node, -1);
  auto few = PlanRankPlacement("auto", 3, Cpus{0, 1}, {});
  ASSERT_FALSE(few.ok());
  EXPECT_NE(few.status().message().find("3 ranks need at least 3 CPUs, but this process may use 2 "
                                        "(0-1)"),
            std::string::npos)
      << few.status().ToString();
}

TEST(CpuTopologyTest, ExplicitListsAndNobind) {
  const std::vector<Cpus> two_nodes = {{0, 1, 2, 3}, {4, 5, 6, 7}};
  const Cpus all = {0, 1, 2, 3, 4, 5, 6, 7};
  auto p = PlanRankPlacement("0-1|4,6", 2, all, two_nodes);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ((*p)[0].cpus, (Cpus{0, 1}));
  EXPECT_EQ((*p)[0].numa_node, 0);
  EXPECT_EQ((*p)[1].cpus, (Cpus{4, 6}));
  EXPECT_EQ((*p)[1].numa_node, 1);
  p = PlanRankPlacement("nobind", 2, all, two_nodes);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE((*p)[0].cpus.empty() && (*p)[1].cpus.empty());
  const std::pair<const char*, const char*> refused[] = {
      {"0-3", "has 1 CPU lists for 2 ranks"},
      {"0|1|2", "has 3 CPU lists for 2 ranks"},
      {"0-2|2-3", "CPU 2 is in two ranks' lists"},
      {"0|9", "CPU 9 of rank 1 is not one this process may use (0-7)"},
      {"0|", "is not auto, nobind or CPU lists separated by '|'"},
      {"some", "is not auto, nobind or CPU lists separated by '|'"}};
  for (const auto& [bind, message] : refused) {
    auto bad = PlanRankPlacement(bind, 2, all, two_nodes);
    ASSERT_FALSE(bad.ok()) << bind;
    EXPECT_NE(bad.status().message().find(message), std::string::npos)
        << bind << ": " << bad.status().ToString();
  }
  EXPECT_TRUE(ValidateThreadsBind("auto").ok());
  EXPECT_TRUE(ValidateThreadsBind("0-31|32-63").ok());
  EXPECT_FALSE(ValidateThreadsBind("0-31|").ok());
}

Cpus AffinityOfThisThread() {
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  Cpus cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

TEST(CpuTopologyTest, PinnedThreadsRunWhereTheyAreTold) {
  const Cpus allowed = AllowedCpus();
  ASSERT_FALSE(allowed.empty());
  Cpus seen;
  std::thread([&] {
    EXPECT_TRUE(PinCurrentThread(Cpus{allowed.back()}));
    seen = AffinityOfThisThread();
  }).join();
  EXPECT_EQ(seen, (Cpus{allowed.back()}));
  EXPECT_TRUE(PinCurrentThread(Cpus{}));  // nothing to bind
  EXPECT_EQ(AffinityOfThisThread(), allowed);

  // A pool's worker t runs on cpus[t]: two chunks that wait for each other run on both threads.
  ThreadPool pool(2, Cpus{allowed.front(), allowed.back()});
  std::atomic<int> started{0};
  Cpus worker_affinity;
  pool.Run(2, [&](int64_t, int thread) {
    started.fetch_add(1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (started.load() < 2 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::yield();
    if (thread == 1) worker_affinity = AffinityOfThisThread();
  });
  EXPECT_EQ(worker_affinity, (Cpus{allowed.back()}));
}

}  // namespace
}  // namespace xinfer
