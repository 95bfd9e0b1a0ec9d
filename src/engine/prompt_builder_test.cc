// PromptBuilder's continue_final_message, as transformers' apply_chat_template does it (vLLM's
// path): the closed rendering cut after the final message's text, however the template spaces it.
#include "engine/prompt_builder.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace xinfer {
namespace {

using json = nlohmann::ordered_json;

std::string QwenDir() { return std::string(XINFER_SHARED_DIR) + "/models/tiny-qwen3"; }

class ContinueFinalMessageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(QwenDir() + "/tokenizer.json"))
      GTEST_SKIP() << QwenDir() << " not found (../shared absent)";
    auto tokenizer = Tokenizer::FromDir(QwenDir());
    ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().ToString();
    tokenizer_ = std::move(*tokenizer);
  }
  // A builder with `chat_template` (text) in place of the model's.
  std::unique_ptr<PromptBuilder> Builder(const std::string& chat_template) {
    auto b = PromptBuilder::Create(QwenDir(), *tokenizer_, chat_template);
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    return b.ok() ? std::move(*b) : nullptr;
  }
  static json Chat(json last, json extra = json::object()) {
    json body = {{"messages", json::array({{{"role", "user"}, {"content", "Hi"}}, last})},
                 {"continue_final_message", true}};
    for (auto& [k, v] : extra.items()) body[k] = v;
    return body;
  }
  std::unique_ptr<Tokenizer> tokenizer_;
};

const char* kPlain =
    "{% for m in messages %}<{{ m.role }}>{{ m.content }}</{{ m.role }}>\n{% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}";
const char* kTrimming =
    "{% for m in messages %}<{{ m.role }}>{{ m.content | trim }}</{{ m.role }}>{% endfor %}";

TEST_F(ContinueFinalMessageTest, CutsAfterTheFinalMessageText) {
  auto plain = Builder(kPlain);
  ASSERT_NE(plain, nullptr);
  const json assistant = {{"role", "assistant"}, {"content", "Once upon a"}};
  auto text = plain->RenderChat(Chat(assistant));
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text, "<user>Hi</user>\n<assistant>Once upon a");
  // Trailing whitespace the template keeps is kept; one it trims is gone (as transformers).
  const json spaced = {{"role", "assistant"}, {"content", "Once upon a "}};
  EXPECT_EQ(*plain->RenderChat(Chat(spaced)), "<user>Hi</user>\n<assistant>Once upon a ");
  auto trimming = Builder(kTrimming);
  ASSERT_NE(trimming, nullptr);
  EXPECT_EQ(*trimming->RenderChat(Chat(spaced)), "<user>Hi</user><assistant>Once upon a");
  // A list content: cut after its last text part (here the template prints the list).
  const json parts = {{"role", "assistant"},
                      {"content", json::array({{{"type", "text"}, {"text", "x"}},
                                               {{"type", "text"}, {"text", "Once upon a"}}})}};
  EXPECT_EQ(*trimming->RenderChat(Chat(parts)),
            "<user>Hi</user><assistant>[{'type': 'text', 'text': 'x'}, {'type': 'text', 'text': "
            "'Once upon a");
  // add_generation_prompt false is the same request.
  EXPECT_EQ(*plain->RenderChat(Chat(assistant, {{"add_generation_prompt", false}})), *text);
  // Off, the rendering is the usual one.
  EXPECT_EQ(*plain->RenderChat(Chat(assistant, {{"continue_final_message", false}})),
            "<user>Hi</user>\n<assistant>Once upon a</assistant>\n<assistant>");
}

TEST_F(ContinueFinalMessageTest, RefusesWhatCannotBeContinued) {
  auto plain = Builder(kPlain);
  ASSERT_NE(plain, nullptr);
  const json assistant = {{"role", "assistant"}, {"content", "Once"}};
  auto both = plain->RenderChat(Chat(assistant, {{"add_generation_prompt", true}}));
  EXPECT_EQ(both.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(both.status().message().find("cannot both be true"), std::string::npos);
  for (const json& content : {json(""), json(" \n"), json(nullptr), json::array()}) {
    auto empty = plain->RenderChat(Chat({{"role", "assistant"}, {"content", content}}));
    EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument) << content;
    EXPECT_NE(empty.status().message().find("needs text to continue"), std::string::npos);
  }
  auto hidden = Builder("{% for m in messages %}{{ m.role }}{% endfor %}");
  ASSERT_NE(hidden, nullptr);
  auto missing = hidden->RenderChat(Chat(assistant));
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(missing.status().message().find("does not appear"), std::string::npos);
  auto wrong_type = plain->RenderChat(Chat(assistant, {{"continue_final_message", "yes"}}));
  EXPECT_EQ(wrong_type.status().message(), "continue_final_message must be a boolean");
}

}  // namespace
}  // namespace xinfer
