// The Responses API's output: the items a response lists, and the events that stream them, for
// every way of cutting the model's text into engine outputs. The events are replayed the way
// OpenAI's client assembles a response from them (openai-node's ResponseStream).
#include "server/responses_api.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace xinfer::server {
namespace {

using Json = nlohmann::ordered_json;

const std::string kBoth =
    "<think>\nTwo tools.\n</think>\n\nLet me check.\n<tool_call>\n{\"name\": \"get_weather\", "
    "\"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", "
    "\"arguments\": {\"tz\": \"CET\"}}\n</tool_call>";

GenerationRequest Request(bool stream) {
  GenerationRequest r;
  r.endpoint = Endpoint::kResponses;
  r.id = "resp_test";
  r.model = "m";
  r.stream = stream;
  r.prompts = {{1, 2, 3}};
  return r;
}

// The engine's outputs for `text` cut at `cuts` (ascending), the last one finished with `reason`.
std::vector<RequestOutput> Outputs(const std::string& text, const std::vector<size_t>& cuts,
                                   const std::string& reason = "stop") {
  std::vector<RequestOutput> outs;
  size_t from = 0;
  for (size_t to : cuts) {
    outs.emplace_back().text = text.substr(from, to - from);
    from = to;
  }
  RequestOutput& last = outs.emplace_back();
  last.text = text.substr(from);
  last.finished = true;
  last.finish_reason = reason;
  for (size_t i = 0; i < outs.size(); ++i) outs[i].completion_tokens = static_cast<int>(i + 1);
  return outs;
}

// The events of an SSE text, in order.
std::vector<Json> Events(const std::string& sse) {
  std::vector<Json> events;
  size_t pos = 0;
  while ((pos = sse.find("data: ", pos)) != std::string::npos) {
    const size_t end = sse.find("\n\n", pos);
    events.push_back(json::parse(sse.substr(pos + 6, end - pos - 6)));
    pos = end;
  }
  return events;
}

// What openai-node's stream helper makes of the events: the final response, after checking
// that each event refers to an output it has (or throws, as the client does).
Json Assemble(const std::vector<Json>& events) {
  EXPECT_FALSE(events.empty());
  Json snapshot = events.at(0)["response"];
  EXPECT_EQ(events[0]["type"], "response.created");
  for (size_t i = 0; i < events.size(); ++i) {
    const Json& e = events[i];
    EXPECT_EQ(e["sequence_number"], i);
    const std::string type = e["type"];
    if (type == "response.output_item.added") {
      EXPECT_EQ(e["output_index"], snapshot["output"].size());
      snapshot["output"].push_back(e["item"]);
      continue;
    }
    if (!e.contains("output_index")) {
      if (type == "response.completed" || type == "response.incomplete") snapshot = e["response"];
      continue;
    }
    Json& item = snapshot["output"].at(e["output_index"].get<size_t>());
    EXPECT_EQ(item["id"], e.value("item_id", item["id"].get<std::string>())) << type;
    if (type == "response.content_part.added") item["content"].push_back(e["part"]);
    if (type == "response.output_text.delta" || type == "response.reasoning_text.delta") {
      Json& part = item["content"].at(e["content_index"].get<size_t>());
      part["text"] = part["text"].get<std::string>() + e["delta"].get<std::string>();
    }
    if (type == "response.function_call_arguments.delta")
      item["arguments"] = item["arguments"].get<std::string>() + e["delta"].get<std::string>();
    if (type == "response.function_call_arguments.done") {
      EXPECT_EQ(item["arguments"], e["arguments"]);
    }
    if (type == "response.output_item.done") {
      EXPECT_EQ(item["type"], e["item"]["type"]);
      if (item["type"] == "function_call") {
        EXPECT_EQ(item["arguments"], e["item"]["arguments"]);
      }
    }
  }
  return snapshot;
}

// What the items say, without their random ids.
Json Summary(const Json& output) {
  Json s = Json::array();
  for (const Json& item : output) {
    const std::string type = item["type"];
    if (type == "function_call") {
      EXPECT_EQ(item["status"], "completed");
      s.push_back({type, item["name"], json::parse(item["arguments"].get<std::string>())});
    } else {
      s.push_back({type, item["content"][0]["text"]});
    }
  }
  return s;
}

// `text` answered whole and streamed in three pieces [0, i), [i, j), [j, end): the response's
// items (summarized), checking that the stream assembles to the final response it ends with.
std::pair<Json, Json> WholeAndStreamed(const GenerationRequest& whole_req, const std::string& text,
                                       size_t i, size_t j, const std::string& reason = "stop") {
  ResponsesApiBuilder whole(whole_req);
  for (const RequestOutput& out : Outputs(text, {i, j}, reason)) EXPECT_EQ(whole.Add(0, out), "");
  const Json response = whole.Response();

  GenerationRequest stream_req = whole_req;
  stream_req.stream = true;
  ResponsesApiBuilder streamed(stream_req);
  std::string sse;
  for (const RequestOutput& out : Outputs(text, {i, j}, reason)) sse += streamed.Add(0, out);
  sse += streamed.StreamEnd();
  const std::vector<Json> events = Events(sse);
  const Json assembled = Assemble(events);
  EXPECT_EQ(Summary(assembled["output"]), Summary(events.back()["response"]["output"]));
  EXPECT_EQ(assembled["status"], response["status"]);
  return {Summary(response["output"]), Summary(assembled["output"])};
}

TEST(ResponsesApiBuilderTest, ToolCallsAreFunctionCallItemsForEveryCut) {
  GenerationRequest req = Request(false);
  req.reasoning = ReasoningFormat::kQwen3;
  req.parse_tool_calls = true;
  const Json expected = Json::array({{"reasoning", "\nTwo tools.\n"},
                                     {"message", "\n\nLet me check.\n"},
                                     {"function_call", "get_weather", {{"city", "Oslo"}}},
                                     {"function_call", "get_time", {{"tz", "CET"}}}});
  for (size_t i = 0; i <= kBoth.size(); i += 3) {
    for (size_t j = i; j <= kBoth.size(); j += 5) {
      const auto [whole, streamed] = WholeAndStreamed(req, kBoth, i, j);
      ASSERT_EQ(whole, expected) << i << "," << j;
      ASSERT_EQ(streamed, expected) << i << "," << j;
    }
  }
}

TEST(ResponsesApiBuilderTest, ParallelToolCallsFalseKeepsTheFirstCall) {
  GenerationRequest req = Request(false);
  req.parse_tool_calls = true;
  req.parallel_tool_calls = false;
  const Json expected =
      Json::array({{"message", "<think>\nTwo tools.\n</think>\n\nLet me check.\n"},
                   {"function_call", "get_weather", {{"city", "Oslo"}}}});
  for (size_t i = 0; i <= kBoth.size(); i += 7) {
    const auto [whole, streamed] = WholeAndStreamed(req, kBoth, i, (i + kBoth.size()) / 2);
    ASSERT_EQ(whole, expected) << i;
    ASSERT_EQ(streamed, expected) << i;
  }
}

TEST(ResponsesApiBuilderTest, OnlyCallsMeansNoMessageItem) {
  GenerationRequest req = Request(false);
  req.parse_tool_calls = true;
  const std::string text =
      "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>";
  const auto [whole, streamed] = WholeAndStreamed(req, text, 4, 20);
  const Json expected = Json::array({{"function_call", "f", {{"a", 1}}}});
  EXPECT_EQ(whole, expected);
  EXPECT_EQ(streamed, expected);
  // Without the parser (tool_choice none) the same text is the message.
  req.parse_tool_calls = false;
  EXPECT_EQ(WholeAndStreamed(req, text, 4, 20).first, Json::array({{"message", text}}));
}

TEST(ResponsesApiBuilderTest, NamedAndRequiredToolChoices) {
  GenerationRequest named = Request(false);
  named.forced_tool = "get_weather";
  const std::string arguments = "{\"city\": \"Paris\"}";
  for (size_t i = 0; i <= arguments.size(); ++i) {
    const auto [whole, streamed] = WholeAndStreamed(named, arguments, i, i);
    const Json expected = Json::array({{"function_call", "get_weather", {{"city", "Paris"}}}});
    ASSERT_EQ(whole, expected) << i;
    ASSERT_EQ(streamed, expected) << i;
  }
  GenerationRequest required = Request(false);
  required.tools_required = true;
  const std::string list =
      "[{\"name\": \"f\", \"parameters\": {\"x\": [1, 2]}}, {\"name\": \"g\", \"parameters\": {}}]";
  for (size_t i = 0; i <= list.size(); ++i) {
    const auto [whole, streamed] = WholeAndStreamed(required, list, i, (i + list.size()) / 2);
    const Json expected = Json::array(
        {{"function_call", "f", {{"x", {1, 2}}}}, {"function_call", "g", Json::object()}});
    ASSERT_EQ(whole, expected) << i;
    ASSERT_EQ(streamed, expected) << i;
  }
}

TEST(ResponsesApiBuilderTest, AnEmptyAnswerIsAnEmptyMessageAndACutOneIsIncomplete) {
  GenerationRequest req = Request(false);
  EXPECT_EQ(WholeAndStreamed(req, "", 0, 0).first, Json::array({{"message", ""}}));
  ResponsesApiBuilder cut(req);
  for (const RequestOutput& out : Outputs("Once upon", {4}, "length")) cut.Add(0, out);
  const Json r = cut.Response();
  EXPECT_EQ(r["status"], "incomplete");
  EXPECT_EQ(r["incomplete_details"]["reason"], "max_output_tokens");
  EXPECT_EQ(r["usage"]["output_tokens"], 2);
  EXPECT_EQ(r["usage"]["input_tokens"], 3);
}

}  // namespace
}  // namespace xinfer::server
