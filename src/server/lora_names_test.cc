#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "server/protocol.h"

namespace xinfer::server {
namespace {

// A name is taken by an entry or a reservation; a reservation is invisible to requests until
// committed, and a released one is free again.
TEST(LoraNamesTest, ReserveCommitRelease) {
  LoraNames names;
  EXPECT_TRUE(names.Add({"a", "/a", "base"}));
  EXPECT_FALSE(names.Add({"a", "/other", "base"}));
  EXPECT_TRUE(names.Reserve("b"));
  EXPECT_FALSE(names.Contains("b"));
  EXPECT_FALSE(names.Reserve("b"));
  EXPECT_FALSE(names.Reserve("a"));
  EXPECT_FALSE(names.Add({"b", "/b", "base"}));
  names.Commit({"b", "/b", "base"});
  EXPECT_TRUE(names.Contains("b"));
  EXPECT_TRUE(names.Reserve("c"));
  names.Release("c");
  EXPECT_FALSE(names.Contains("c"));
  EXPECT_TRUE(names.Reserve("c"));
  names.Release("c");
  const auto list = names.List();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].name, "a");
  EXPECT_EQ(list[1].path, "/b");
  EXPECT_TRUE(names.Remove("a"));
  EXPECT_FALSE(names.Remove("a"));
  EXPECT_FALSE(names.Contains("a"));
}

// CheckModel takes the served names and the adapters' (setting lora_name), and nothing else.
TEST(LoraNamesTest, CheckModelResolvesAdapterNames) {
  ServerConfig config;
  config.served_model_name = "base";
  config.served_model_aliases = {"alias"};
  config.loras->Add({"sql", "/sql", "base"});
  std::string lora = "stale";
  EXPECT_TRUE(CheckModel({{"model", "base"}}, config, &lora).ok());
  EXPECT_EQ(lora, "");
  EXPECT_TRUE(CheckModel({{"model", "alias"}}, config, &lora).ok());
  EXPECT_TRUE(CheckModel({{"model", "sql"}}, config, &lora).ok());
  EXPECT_EQ(lora, "sql");
  EXPECT_TRUE(CheckModel(nlohmann::ordered_json::object(), config, &lora).ok());
  EXPECT_EQ(lora, "");
  Status s = CheckModel({{"model", "other"}}, config, &lora);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "The model `other` does not exist.");
  // Concurrent readers and writers (the I/O threads and an admin request): TSan checks this.
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        const std::string name(1, static_cast<char>('a' + t));
        if (config.loras->Reserve(name)) config.loras->Commit({name, "/p", "base"});
        (void)CheckModel({{"model", name}}, config);
        (void)config.loras->List();
        config.loras->Remove(name);
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(config.loras->List().size(), 1u);
}

}  // namespace
}  // namespace xinfer::server
