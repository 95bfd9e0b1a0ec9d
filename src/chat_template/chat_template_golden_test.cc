// Renders the golden conversations with the real Qwen3 and Qwen2.5 templates and compares with
// the output of Jinja2 under Hugging Face's settings, byte for byte.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>

#include "chat_template/chat_template.h"
#include "chat_template/test_util.h"

namespace xinfer {
namespace {

using nlohmann::ordered_json;

void CheckGolden(const std::string& model, const std::string& golden_file) {
  const std::string shared = testing::SharedDir();
  if (!std::filesystem::exists(shared)) GTEST_SKIP() << "../shared not found; golden test skipped";
  auto config = LoadChatTemplateConfig(shared + "/models/" + model);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  auto tmpl = ChatTemplate::Parse(config->source);
  ASSERT_TRUE(tmpl.ok()) << tmpl.status().ToString();
  std::string text;
  ASSERT_TRUE(testing::ReadText(shared + "/golden/chat_template/" + golden_file, &text));
  std::istringstream lines(text);
  std::string line;
  int cases = 0;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    const ordered_json golden = ordered_json::parse(line);
    const ordered_json& input = golden["input"];
    SCOPED_TRACE(golden["name"].get<std::string>());
    // The golden inputs leave add_generation_prompt out unless it is false.
    const ordered_json context =
        MakeChatContext(input["messages"], input.value("tools", ordered_json()),
                        input.value("add_generation_prompt", true), config->bos_token,
                        config->eos_token, input.value("kwargs", ordered_json::object()));
    auto out = tmpl->Render(context);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(*out, golden["rendered"].get<std::string>());
    ++cases;
  }
  EXPECT_EQ(cases, 8);
}

TEST(ChatTemplateGoldenTest, Qwen3) { CheckGolden("tiny-qwen3", "qwen3.jsonl"); }
TEST(ChatTemplateGoldenTest, Qwen25) { CheckGolden("tiny-qwen2", "qwen2.5.jsonl"); }

}  // namespace
}  // namespace xinfer
