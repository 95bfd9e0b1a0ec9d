#include "golden_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "test_util.h"

namespace xinfer::testing {

using nlohmann::json;

json ReadJson(const std::string& path) {
  std::ifstream f(path);
  return json::parse(f);
}

std::vector<GoldenPrompt> ReadLogitsGolden(const std::string& golden_dir) {
  const json golden = ReadJson(golden_dir + "/golden.json");
  std::vector<GoldenPrompt> prompts;
  for (const auto& p : golden.at("prompts")) {
    GoldenPrompt g;
    g.name = p.at("name").get<std::string>();
    if (p.contains("text")) g.text = p["text"].get<std::string>();
    g.ids = p.at("ids").get<std::vector<int32_t>>();
    g.greedy = p.at("greedy").get<std::vector<int32_t>>();
    g.greedy_top2_gap = p.at("greedy_top2_gap").get<std::vector<double>>();
    g.logits = ReadF32(golden_dir + "/" + g.name + ".logits.f32");
    prompts.push_back(std::move(g));
  }
  EXPECT_FALSE(prompts.empty()) << golden_dir << "/golden.json has no prompts";
  return prompts;
}

std::vector<float> LastLogits(CausalLM& model, Backend& backend, const std::vector<int32_t>& ids) {
  std::vector<float> logits(model.config().vocab_size);
  SingleSequence seq(model, backend, static_cast<int64_t>(ids.size()));
  Status s = seq.Append(ids, logits);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return logits;
}

double ExpectMatchesGolden(CausalLM& model, Backend& backend, const std::string& golden_dir,
                           double logit_tolerance, double gap_threshold, double relative_tolerance,
                           DType kv_dtype) {
  const int vocab = model.config().vocab_size;
  const std::vector<GoldenPrompt> prompts = ReadLogitsGolden(golden_dir);
  EXPECT_FALSE(prompts.empty());
  double worst = 0;
  for (const GoldenPrompt& prompt : prompts) {
    SCOPED_TRACE(prompt.name);
    const std::vector<int32_t>& greedy = prompt.greedy;
    EXPECT_EQ(static_cast<int>(prompt.logits.size()), vocab);
    if (static_cast<int>(prompt.logits.size()) != vocab) return worst;
    SingleSequence seq(model, backend, static_cast<int64_t>(prompt.ids.size() + greedy.size()),
                       kv_dtype);
    std::vector<float> logits(vocab);
    const Status appended = seq.Append(prompt.ids, logits);
    EXPECT_TRUE(appended.ok()) << appended.ToString();
    if (!appended.ok()) return worst;
    const double diff = MaxAbsDiff(logits, prompt.logits);
    worst = std::max(worst, diff);
    double largest = 0;
    for (float v : prompt.logits) largest = std::max(largest, std::fabs(static_cast<double>(v)));
    EXPECT_LT(diff, logit_tolerance + relative_tolerance * largest);
    for (size_t step = 0; step < greedy.size(); ++step) {
      const int32_t next = Argmax(logits);
      if (next != greedy[step]) {
        EXPECT_LE(prompt.greedy_top2_gap[step], gap_threshold)
            << "step " << step << ": got " << next << ", reference " << greedy[step];
        break;
      }
      if (step + 1 == greedy.size()) break;
      std::vector<int32_t> one = {next};
      const Status stepped = seq.Append(one, logits);
      EXPECT_TRUE(stepped.ok()) << stepped.ToString();
      if (!stepped.ok()) break;
    }
  }
  return worst;
}

}  // namespace xinfer::testing
