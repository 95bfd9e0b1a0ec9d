// Loading templates from model directories and --chat-template, building the context, and
// rendering one template from many threads.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "chat_template/chat_template.h"
#include "chat_template/test_util.h"

namespace xinfer {
namespace {

using nlohmann::ordered_json;

class ScratchDir {
 public:
  ScratchDir() {
    std::string name = "xinfer_tmpl_test_";
    name += std::to_string(::getpid());
    name += "_";
    name += std::to_string(counter_++);
    path_ = std::filesystem::temp_directory_path() / name;
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  std::string Write(const std::string& name, const std::string& text) const {
    const auto p = path_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  std::string path() const { return path_.string(); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

TEST(ChatTemplateConfigTest, LoadsRealQwen3Config) {
  const std::string dir = testing::SharedDir() + "/models/tiny-qwen3";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "../shared not found; skipped";
  auto config = LoadChatTemplateConfig(dir);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_THAT(config->source, ::testing::HasSubstr("<|im_start|>"));
  EXPECT_EQ(config->bos_token, "");  // null in the config
  EXPECT_EQ(config->eos_token, "<|im_end|>");
}

TEST(ChatTemplateConfigTest, TemplateListAndTokenObjects) {
  ScratchDir dir;
  dir.Write("tokenizer_config.json", R"({
    "chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}],
    "bos_token": {"__type": "AddedToken", "content": "<s>"}, "eos_token": "</s>"})");
  auto config = LoadChatTemplateConfig(dir.path());
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->source, "D");
  EXPECT_EQ(config->bos_token, "<s>");
  EXPECT_EQ(config->eos_token, "</s>");
}

TEST(ChatTemplateConfigTest, JinjaFileTakesPrecedence) {
  ScratchDir dir;
  dir.Write("tokenizer_config.json", R"({"chat_template": "from config"})");
  dir.Write("chat_template.jinja", "from file");
  auto config = LoadChatTemplateConfig(dir.path());
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->source, "from file");
}

TEST(ChatTemplateConfigTest, Errors) {
  ScratchDir dir;
  EXPECT_EQ(LoadChatTemplateConfig(dir.path()).status().code(), StatusCode::kNotFound);
  dir.Write("tokenizer_config.json", R"({"eos_token": "x"})");
  EXPECT_EQ(LoadChatTemplateConfig(dir.path()).status().code(), StatusCode::kNotFound);
  dir.Write("tokenizer_config.json", R"({"chat_template": [{"name": "other", "template": "x"}]})");
  EXPECT_EQ(LoadChatTemplateConfig(dir.path()).status().code(), StatusCode::kNotFound);
  dir.Write("tokenizer_config.json", "{not json");
  EXPECT_EQ(LoadChatTemplateConfig(dir.path()).status().code(), StatusCode::kInvalidArgument);
  dir.Write("tokenizer_config.json", R"({"chat_template": "x", "eos_token": 5})");
  EXPECT_EQ(LoadChatTemplateConfig(dir.path()).status().code(), StatusCode::kInvalidArgument);
}

TEST(ChatTemplateConfigTest, ResolveChatTemplateArg) {
  ScratchDir dir;
  const std::string file = dir.Write("t.jinja", "{{ 'from file' }}");
  EXPECT_EQ(*ResolveChatTemplateArg(file), "{{ 'from file' }}");
  EXPECT_EQ(*ResolveChatTemplateArg("{{ messages }}"), "{{ messages }}");
  EXPECT_EQ(*ResolveChatTemplateArg("plain text"), "plain text");
  EXPECT_EQ(ResolveChatTemplateArg(dir.path() + "/missing.jinja").status().code(),
            StatusCode::kNotFound);
}

TEST(ChatTemplateContextTest, MakeChatContext) {
  const ordered_json messages = ordered_json::parse(R"([{"role": "user", "content": "hi"}])");
  ordered_json ctx = MakeChatContext(messages, nullptr, true, "", "<|im_end|>",
                                     ordered_json::parse(R"({"enable_thinking": false})"));
  EXPECT_EQ(ctx["messages"], messages);
  EXPECT_TRUE(ctx["tools"].is_null());
  EXPECT_TRUE(ctx["add_generation_prompt"].get<bool>());
  EXPECT_FALSE(ctx.contains("bos_token"));
  EXPECT_EQ(ctx["eos_token"], "<|im_end|>");
  EXPECT_FALSE(ctx["enable_thinking"].get<bool>());
  auto tmpl = ChatTemplate::Parse(
      "{{ tools is none }} {{ bos_token is defined }} {{ enable_thinking is false }} "
      "{{ add_generation_prompt }}");
  ASSERT_TRUE(tmpl.ok());
  EXPECT_EQ(*tmpl->Render(ctx), "True False True True");
}

TEST(ChatTemplateConcurrencyTest, OneTemplateManyThreads) {
  auto tmpl = ChatTemplate::Parse(
      "{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}"
      "{{ loop.index }}:{{ m.content|upper }}|{{ m|tojson }};{% endfor %}{{ ns.n }}");
  ASSERT_TRUE(tmpl.ok());
  ordered_json messages = ordered_json::array();
  for (int i = 0; i < 50; ++i) {
    messages.push_back({{"role", "user"}, {"content", fmt::format("m{}", i)}});
  }
  const ordered_json ctx = MakeChatContext(messages, nullptr, false, "", "", nullptr);
  const std::string expected = *tmpl->Render(ctx);
  std::vector<std::thread> threads;
  std::vector<int> mismatches(8, 0);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      ChatTemplate copy = *tmpl;  // copies share the parsed tree
      for (int i = 0; i < 50; ++i) {
        auto out = (i % 2 == 0 ? *tmpl : copy).Render(ctx);
        if (!out.ok() || *out != expected) ++mismatches[t];
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int m : mismatches) EXPECT_EQ(m, 0);
}

}  // namespace
}  // namespace xinfer
