// The reasoning and tool-call parsers (whole outputs and every way of cutting them into deltas),
// the error mapping and the Prometheus format.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/errors.h"
#include "server/metrics.h"
#include "server/reasoning_parser.h"
#include "server/required_tool_calls.h"
#include "server/tool_parser.h"

namespace xinfer::server {
namespace {

using nlohmann::json;

TEST(ReasoningParserTest, SplitsWholeOutput) {
  auto r = SplitReasoning("<think>\nhmm\n</think>\n\nHello", ReasoningFormat::kQwen3);
  EXPECT_EQ(*r.reasoning, "\nhmm\n");
  EXPECT_EQ(*r.content, "\n\nHello");
  r = SplitReasoning("just content", ReasoningFormat::kQwen3);
  EXPECT_FALSE(r.reasoning);
  EXPECT_EQ(*r.content, "just content");
  r = SplitReasoning("<think>truncated", ReasoningFormat::kQwen3);
  EXPECT_EQ(*r.reasoning, "truncated");
  EXPECT_FALSE(r.content);
  r = SplitReasoning("prompt-opened</think>answer",
                     ReasoningFormat::kQwen3);  // <think> was in the prompt
  EXPECT_EQ(*r.reasoning, "prompt-opened");
  EXPECT_EQ(*r.content, "answer");
}

// `text` streamed as the deltas [0, i), [i, j), [j, end): the reasoning and the content.
std::pair<std::string, std::string> StreamInThreePieces(ReasoningFormat format,
                                                        const std::string& text, size_t i,
                                                        size_t j) {
  ReasoningStream s(format);
  std::string reasoning, content;
  for (auto piece : {text.substr(0, i), text.substr(i, j - i), text.substr(j)}) {
    auto d = s.Append(piece);
    reasoning += d.reasoning;
    content += d.content;
  }
  auto d = s.Finish();
  return {reasoning + d.reasoning, content + d.content};
}

// Every split point into three deltas gives the same result as the whole text.
TEST(ReasoningParserTest, StreamingMatchesWholeForEveryCut) {
  const std::string text = "<think>\nabc</thi nk>x\n</think>\n\nThe answer";
  for (size_t i = 0; i <= text.size(); ++i) {
    for (size_t j = i; j <= text.size(); ++j) {
      const auto [reasoning, content] = StreamInThreePieces(ReasoningFormat::kQwen3, text, i, j);
      ASSERT_EQ(reasoning, "\nabc</thi nk>x\n") << i << "," << j;
      ASSERT_EQ(content, "\n\nThe answer") << i << "," << j;
    }
  }
}

// deepseek_r1: the chat template opened "<think>" in the prompt, so the output is reasoning until
// "</think>" (all of it when there is none).
TEST(ReasoningParserTest, DeepSeekR1OutputStartsInsideTheReasoning) {
  constexpr auto kR1 = ReasoningFormat::kDeepSeekR1;
  auto r = SplitReasoning("step 1\n</think>\n\nanswer", kR1);
  EXPECT_EQ(*r.reasoning, "step 1\n");
  EXPECT_EQ(*r.content, "\n\nanswer");
  r = SplitReasoning("<think>step</think>answer", kR1);
  EXPECT_EQ(*r.reasoning, "step");
  EXPECT_EQ(*r.content, "answer");
  r = SplitReasoning("still thinking", kR1);  // cut by max_tokens
  EXPECT_EQ(*r.reasoning, "still thinking");
  EXPECT_FALSE(r.content);
  r = SplitReasoning("</think>", kR1);
  EXPECT_EQ(*r.reasoning, "");
  EXPECT_FALSE(r.content);
  // qwen3 reads the unclosed text as content instead.
  EXPECT_EQ(*SplitReasoning("still thinking", ReasoningFormat::kQwen3).content, "still thinking");
  EXPECT_EQ(ReasoningFormatNamed("deepseek_r1"), kR1);
  EXPECT_EQ(ReasoningFormatNamed("qwen3"), ReasoningFormat::kQwen3);
  EXPECT_FALSE(ReasoningFormatNamed("granite"));

  // Streamed in three pieces cut anywhere: the same split as the whole text.
  for (const std::string text :
       {"a<b</think>c", "<think>x</thi</think>y", "no end <thi", "<thi", "<think>", ""}) {
    const ReasoningSplit whole = SplitReasoning(text, kR1);
    for (size_t i = 0; i <= text.size(); ++i) {
      for (size_t j = i; j <= text.size(); ++j) {
        const auto [reasoning, content] = StreamInThreePieces(kR1, text, i, j);
        ASSERT_EQ(reasoning, whole.reasoning.value_or("")) << text << " " << i << "," << j;
        ASSERT_EQ(content, whole.content.value_or("")) << text << " " << i << "," << j;
      }
    }
  }
}

TEST(ToolParserTest, ParsesHermesCalls) {
  auto r = ParseHermesToolCalls(
      "Sure.\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"g\", \"arguments\": {}}\n</tool_call>");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].name, "f");
  EXPECT_EQ(json::parse(r.calls[0].arguments), json({{"a", 1}}));
  EXPECT_EQ(r.calls[1].name, "g");
  EXPECT_EQ(*r.content, "Sure.\n");
  EXPECT_NE(r.calls[0].id, r.calls[1].id);
  EXPECT_EQ(r.calls[0].ToJson()["type"], "function");
}

TEST(ToolParserTest, InvalidJsonStaysContent) {
  auto r = ParseHermesToolCalls("<tool_call>{\"name\": oops}</tool_call>");
  EXPECT_TRUE(r.calls.empty());
  EXPECT_EQ(*r.content, "<tool_call>{\"name\": oops}</tool_call>");
  r = ParseHermesToolCalls("no calls");
  EXPECT_TRUE(r.calls.empty());
  EXPECT_EQ(*r.content, "no calls");
}

TEST(ToolParserTest, StreamingMatchesWholeForEveryCut) {
  const std::string text =
      "Let me check.\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"city\": \"Oslo\"}}\n"
      "</tool_call>\n<tool_call>\n{\"name\": \"g\", \"arguments\": {\"x\": [1, 2]}}\n"
      "</tool_call>";
  for (size_t i = 0; i <= text.size(); ++i) {
    for (size_t j = i; j <= text.size(); j += 3) {
      HermesToolStream s;
      std::string content;
      std::vector<json> deltas;
      auto take = [&](HermesToolStream::Delta d) {
        content += d.content;
        for (auto& t : d.tool_call_deltas) deltas.push_back(t);
      };
      for (auto piece : {text.substr(0, i), text.substr(i, j - i), text.substr(j)})
        take(s.Append(piece));
      take(s.Finish());
      ASSERT_EQ(content, "Let me check.\n") << i << "," << j;
      ASSERT_EQ(deltas.size(), 4u);
      EXPECT_EQ(deltas[0]["function"]["name"], "f");
      EXPECT_EQ(deltas[0]["function"]["arguments"], "");
      EXPECT_EQ(json::parse(deltas[1]["function"]["arguments"].get<std::string>()),
                json({{"city", "Oslo"}}));
      EXPECT_EQ(deltas[2]["index"], 1);
      EXPECT_EQ(deltas[2]["function"]["name"], "g");
    }
  }
}

TEST(ToolParserTest, UnterminatedCallAtTheEnd) {
  HermesToolStream s;
  auto d = s.Append("<tool_call>{\"name\": \"f\", \"arguments\": {}}");
  EXPECT_TRUE(d.tool_call_deltas.empty());
  d = s.Finish();
  ASSERT_EQ(d.tool_call_deltas.size(), 2u);
  EXPECT_EQ(s.num_calls(), 1);
}

// tool_choice "required": the list read piece by piece gives, for every cut, the headers in order
// as each name completes and arguments that join to the parameters' text; cut short or not a
// list, it is not complete.
TEST(RequiredToolCallStreamTest, StreamsCallsAsTheListArrives) {
  const std::string text =
      " [{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\", \"n\": [1, 2.5]}},\n"
      "  {\"name\":\"t\\u00e9\",\"parameters\":{}}, {\"name\": \"x\", \"parameters\": 12}] ";
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"get_weather", "{\"city\": \"Paris\", \"n\": [1, 2.5]}"}, {"t\xC3\xA9", "{}"}, {"x", "12"}};
  for (size_t i = 0; i <= text.size(); ++i) {
    for (size_t j = i; j <= text.size(); j += 5) {
      RequiredToolCallStream s;
      std::vector<json> deltas;
      for (auto piece : {text.substr(0, i), text.substr(i, j - i), text.substr(j)})
        for (auto& d : s.Append(piece)) deltas.push_back(d);
      ASSERT_TRUE(s.complete()) << i << "," << j;
      std::vector<std::string> names, arguments(3);
      for (const json& d : deltas) {
        const int index = d["index"].get<int>();
        if (d.contains("id")) {
          ASSERT_EQ(index, static_cast<int>(names.size()));
          names.push_back(d["function"]["name"].get<std::string>());
        } else {
          ASSERT_LT(index, static_cast<int>(names.size()));  // arguments after their header
          arguments[static_cast<size_t>(index)] += d["function"]["arguments"].get<std::string>();
        }
      }
      ASSERT_EQ(names.size(), 3u);
      for (size_t k = 0; k < 3; ++k) {
        EXPECT_EQ(names[k], expected[k].first);
        EXPECT_EQ(arguments[k], expected[k].second);
        EXPECT_EQ(s.calls()[k].arguments, expected[k].second);
      }
    }
  }
  // The header goes out as soon as the name is complete, before any argument.
  RequiredToolCallStream s;
  EXPECT_TRUE(s.Append("[{\"name\": \"get_wea").empty());
  auto d = s.Append("ther\", \"parameters\": {\"ci");
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0]["function"]["name"], "get_weather");
  EXPECT_EQ(d[1]["function"]["arguments"], "{\"ci");
  EXPECT_FALSE(s.complete());
  for (const char* bad :
       {"", "[]", "[{\"name\": \"f\"}]", "{\"name\": \"f\"}", "[{\"name\": 3, \"parameters\": {}}]",
        "[{\"name\": \"f\", \"parameters\": {}}] x", "[{\"name\": \"f\", \"parameters\": {}}"}) {
    RequiredToolCallStream b;
    b.Append(bad);
    EXPECT_FALSE(b.complete()) << bad;
  }
}

TEST(ErrorsTest, MapsStatusCodesInOnePlace) {
  auto e = ErrorFromStatus(InvalidArgument("top_p must be in (0, 1], got 0"));
  EXPECT_EQ(e.status, 400);
  json j = json::parse(e.body);
  EXPECT_EQ(j["error"]["param"], "top_p");
  EXPECT_EQ(j["error"]["code"], 400);
  EXPECT_EQ(j["error"]["type"], "BadRequestError");
  EXPECT_EQ(ErrorFromStatus(NotFound("The model `x` does not exist.")).status, 404);
  auto busy = ErrorFromStatus(Status(StatusCode::kUnavailable, "retry later"));
  EXPECT_EQ(busy.status, 503);
  ASSERT_EQ(busy.headers.size(), 1u);
  EXPECT_EQ(busy.headers[0].first, "Retry-After");
  EXPECT_EQ(ErrorFromStatus(Internal("boom")).status, 500);
  EXPECT_EQ(ErrorFromStatus(OutOfRange("too long")).status, 400);
  EXPECT_TRUE(json::parse(MakeError(401, "bad key").body)["error"]["param"].is_null());
}

TEST(MetricsTest, PrometheusTextHasVllmNames) {
  AsyncEngineStats s;
  s.engine.num_running = 3;
  s.metrics.time_to_first_token.Observe(0.05);
  s.metrics.request_success["stop"] = 2;
  ProcessStats process;
  process.resident_bytes = 123456789;
  process.open_fds = 17;
  process.cpu_seconds = 1.5;
  EngineConfig cache;
  cache.kv_cache_dtype = "bfloat16";
  s.engine.num_blocks = 512;
  std::string text = FormatPrometheus(s, "m\"x", process, cache);
  EXPECT_NE(
      text.find("# TYPE vllm:cache_config_info gauge\nvllm:cache_config_info{block_size=\"16\","
                "cache_dtype=\"bfloat16\",enable_prefix_caching=\"True\","
                "gpu_memory_utilization=\"0.9\",num_gpu_blocks=\"512\","
                "num_gpu_blocks_override=\"None\"} 1\n"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("vllm:num_requests_running{model_name=\"m\\\"x\"} 3"), std::string::npos);
  EXPECT_NE(text.find("# TYPE vllm:prompt_tokens counter"), std::string::npos);
  EXPECT_NE(
      text.find("vllm:request_success_total{model_name=\"m\\\"x\",finished_reason=\"stop\"} 2"),
      std::string::npos);
  EXPECT_NE(
      text.find("vllm:time_to_first_token_seconds_bucket{model_name=\"m\\\"x\",le=\"+Inf\"} 1"),
      std::string::npos);
  EXPECT_NE(text.find("vllm:time_to_first_token_seconds_count{model_name=\"m\\\"x\"} 1"),
            std::string::npos);
  // The process collector's names, unlabelled, as prometheus_client writes them.
  EXPECT_NE(text.find("\nprocess_resident_memory_bytes 123456789\n"), std::string::npos);
  EXPECT_NE(text.find("\nprocess_open_fds 17\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE process_cpu_seconds counter\nprocess_cpu_seconds_total 1.5\n"),
            std::string::npos);
  EXPECT_EQ(text.find("xinfer:heap_in_use_bytes"), std::string::npos);  // absent when unknown
  process.heap_in_use_bytes = 4096;
  EXPECT_NE(FormatPrometheus(s, "m", process, cache).find("\nxinfer:heap_in_use_bytes 4096\n"),
            std::string::npos);
}

}  // namespace
}  // namespace xinfer::server
