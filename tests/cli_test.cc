// End-to-end tests of the `xinfer` binary: exit codes, stdout and stderr as a user sees them.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>
#include <vector>

#include "test_util.h"

namespace xinfer {
namespace {

using nlohmann::json;

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// A scratch path private to this process: ctest runs the tests of this file as concurrent
// processes, which must not share file names.
std::string ScratchPath(const std::string& name) {
  return ::testing::TempDir() + "xinfer-cli-" + std::to_string(getpid()) + "-" + name;
}

// Runs `xinfer <args>` through the shell; `env` ("NAME=value ...") prefixes the command.
RunResult RunXinfer(const std::string& args, const std::string& env = "") {
  std::string err_path = ScratchPath("stderr.txt");
  std::string cmd = env + " " + std::string(XINFER_BIN) + " " + args + " 2>" + err_path;
  RunResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::ifstream e(err_path);
  std::stringstream ss;
  ss << e.rdbuf();
  r.err = ss.str();
  std::remove(err_path.c_str());
  return r;
}

std::string Model(const std::string& name) { return testing::SharedDir() + "/models/" + name; }

json GoldenPrompt(const std::string& model, const std::string& prompt) {
  std::ifstream f(testing::SharedDir() + "/golden/logits/" + model + "/golden.json");
  const json golden = json::parse(f);
  for (const auto& p : golden["prompts"])
    if (p["name"] == prompt) return p;
  return json();
}

// Acceptance: the README command prints the reference story, for the Llama and the Qwen2 copy.
TEST(CliTest, GenerateTinyStoriesMatchesGoldenStory) {
  XI_REQUIRE_SHARED("models/tinystories-656k");
  json golden = GoldenPrompt("tinystories-656k", "bos_only");
  ASSERT_FALSE(golden.is_null());
  for (const char* name : {"tinystories-656k", "tinystories-656k-qwen2"}) {
    SCOPED_TRACE(name);
    RunResult r = RunXinfer("generate --model " + Model(name) +
                            " --prompt-ids 1 --max-tokens 64 --temperature 0 --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    json j = json::parse(r.out);
    EXPECT_EQ(j["token_ids"], golden["greedy"]);
    EXPECT_EQ(j["finish_reason"], "length");
    EXPECT_NE(j["text"].get<std::string>().find("Lily"), std::string::npos) << j["text"];
    EXPECT_EQ(j["timings"]["generated_tokens"], 64);
  }
  // Plain-text mode prints the same story, and so do weights read from the mapped file
  // (--mmap-weights) instead of copied into huge pages.
  RunResult plain = RunXinfer("generate --model " + Model("tinystories-656k") +
                              " --prompt-ids 1 --max-tokens 64 --temperature 0");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_NE(plain.out.find("Lily"), std::string::npos);
  RunResult mapped = RunXinfer("generate --model " + Model("tinystories-656k") +
                               " --prompt-ids 1 --max-tokens 64 --temperature 0 --mmap-weights");
  ASSERT_EQ(mapped.exit_code, 0) << mapped.err;
  EXPECT_EQ(mapped.out, plain.out);
}

TEST(CliTest, GenerateWithPromptTextAndLogprobs) {
  XI_REQUIRE_SHARED("models/tiny-qwen3");
  json golden = GoldenPrompt("tiny-qwen3", "english");
  RunResult r = RunXinfer("generate --model " + Model("tiny-qwen3") + " --prompt '" +
                          golden["text"].get<std::string>() +
                          "' --max-tokens 4 --temperature 0 --logprobs 3 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["prompt_ids"], golden["ids"]);
  ASSERT_EQ(j["logprobs"].size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    ASSERT_EQ(j["logprobs"][i].size(), 3u);
    // Greedy: the chosen token is the most likely one, and the list is sorted.
    EXPECT_EQ(j["logprobs"][i][0]["id"], j["token_ids"][i]);
    EXPECT_GE(j["logprobs"][i][0]["logprob"].get<double>(),
              j["logprobs"][i][1]["logprob"].get<double>());
    EXPECT_LE(j["logprobs"][i][0]["logprob"].get<double>(), 0.0);
  }
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(j["token_ids"][i], golden["greedy"][i]);
}

TEST(CliTest, SeedMakesSamplingReproducible) {
  XI_REQUIRE_SHARED("models/tinystories-656k");
  std::string args = "generate --model " + Model("tinystories-656k") +
                     " --prompt-ids 1 --max-tokens 24 --temperature 1.0 --json --seed ";
  RunResult a = RunXinfer(args + "7"), b = RunXinfer(args + "7"), c = RunXinfer(args + "8");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(json::parse(a.out)["token_ids"], json::parse(b.out)["token_ids"]);
  EXPECT_NE(json::parse(a.out)["token_ids"], json::parse(c.out)["token_ids"]);
}

TEST(CliTest, TokenizeAndInspect) {
  XI_REQUIRE_SHARED("models/tiny-qwen3");
  json golden = GoldenPrompt("tiny-qwen3", "english");
  RunResult t = RunXinfer("tokenize --model " + Model("tiny-qwen3") + " '" +
                          golden["text"].get<std::string>() + "'");
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_EQ(json::parse(t.out), golden["ids"]);

  RunResult i = RunXinfer("inspect " + Model("tiny-qwen3"));
  ASSERT_EQ(i.exit_code, 0) << i.err;
  EXPECT_NE(i.out.find("Qwen3ForCausalLM"), std::string::npos);
  EXPECT_NE(i.out.find("head_dim 32"), std::string::npos);
  EXPECT_NE(i.out.find("model.layers.1.self_attn.q_norm.weight"), std::string::npos);
  RunResult ij = RunXinfer("inspect --json " + Model("tiny-qwen2"));
  ASSERT_EQ(ij.exit_code, 0) << ij.err;
  json j = json::parse(ij.out);
  EXPECT_EQ(j["architecture"], "Qwen2ForCausalLM");
  EXPECT_GT(j["parameters"].get<int64_t>(), 151936 * 64);
}

// The tiny MoE presets: written, exported as llama.cpp's qwen3moe / qwen2moe GGUF, inspected, and
// the file generates what the folder generates (same tokens, same log-probabilities).
TEST(CliTest, DemoMoePresetsExportToGgufAndGenerateTheSame) {
  XI_REQUIRE_SHARED("models/tiny-qwen3");
  for (const auto& [preset, arch, experts] :
       {std::tuple{"demo-moe", "Qwen3MoeForCausalLM (model_type qwen3moe)",
                   "experts: 8 per sparse layer (intermediate 64), 2 per token, weights "
                   "renormalized\n"},
        std::tuple{"demo-qwen2-moe", "Qwen2MoeForCausalLM (model_type qwen2moe)",
                   "experts: 8 per sparse layer (intermediate 64), 2 per token, a gated shared "
                   "expert (intermediate 128)\n"}}) {
    SCOPED_TRACE(preset);
    const std::string dir = ScratchPath(preset), gguf = ScratchPath(std::string(preset) + ".gguf");
    std::filesystem::remove_all(dir);
    std::filesystem::remove(gguf);
    RunResult m = RunXinfer("make-model --preset " + std::string(preset) + " --out " + dir +
                            " --tokenizer " + Model("tiny-qwen3"));
    ASSERT_EQ(m.exit_code, 0) << m.err;
    RunResult q = RunXinfer("quantize --gguf bf16 " + dir + " " + gguf);
    ASSERT_EQ(q.exit_code, 0) << q.err;
    RunResult i = RunXinfer("inspect " + gguf);
    ASSERT_EQ(i.exit_code, 0) << i.err;
    EXPECT_NE(i.out.find(std::string("architecture: ") + arch), std::string::npos) << i.out;
    EXPECT_NE(i.out.find(experts), std::string::npos) << i.out;
    EXPECT_NE(i.out.find("blk.1.ffn_down_exps.weight"), std::string::npos);
    std::vector<json> outs;
    for (const std::string& model : {dir, gguf}) {
      RunResult g = RunXinfer("generate --model " + model +
                              " --prompt-ids 9707,1052,11 --max-tokens 8 --temperature 0 "
                              "--logprobs 2 --json");
      ASSERT_EQ(g.exit_code, 0) << g.err;
      outs.push_back(json::parse(g.out));
    }
    EXPECT_EQ(outs[0]["token_ids"], outs[1]["token_ids"]);
    ASSERT_EQ(outs[0]["logprobs"].size(), 8u);
    for (size_t t = 0; t < 8; ++t)
      EXPECT_NEAR(outs[0]["logprobs"][t][0]["logprob"].get<double>(),
                  outs[1]["logprobs"][t][0]["logprob"].get<double>(), 1e-4);
    std::filesystem::remove_all(dir);
    std::filesystem::remove(gguf);
  }
}

// make-lora writes a PEFT adapter of a model's shape; generate runs prompts with it (--lora),
// alone and in batch mode alike, and the adapter changes the log-probabilities.
TEST(CliTest, MakeLoraAndGenerateWithIt) {
  XI_REQUIRE_SHARED("models/tiny-qwen3");
  const std::string dir = ScratchPath("lora"), in = ScratchPath("lora_in.jsonl"),
                    out = ScratchPath("lora_out.jsonl");
  std::filesystem::remove_all(dir);
  RunResult m =
      RunXinfer("make-lora --model " + Model("tiny-qwen3") + " --out " + dir + " --rank 8");
  ASSERT_EQ(m.exit_code, 0) << m.err;
  EXPECT_TRUE(std::filesystem::exists(dir + "/adapter_model.safetensors"));
  const json config = json::parse(std::ifstream(dir + "/adapter_config.json"));
  EXPECT_EQ(config["r"], 8);
  const std::string gen = "generate --model " + Model("tiny-qwen3") +
                          " --prompt-ids 9707,1052,11 --max-tokens 4 --temperature 0 "
                          "--logprobs 1 --json --enable-lora --lora-modules tuned=" +
                          dir;
  RunResult base = RunXinfer(gen), tuned = RunXinfer(gen + " --lora tuned");
  ASSERT_EQ(base.exit_code, 0) << base.err;
  ASSERT_EQ(tuned.exit_code, 0) << tuned.err;
  const json b = json::parse(base.out), t = json::parse(tuned.out);
  EXPECT_GT(std::abs(b["logprobs"][0][0]["logprob"].get<double>() -
                     t["logprobs"][0][0]["logprob"].get<double>()),
            1e-4);
  {
    std::ofstream f(in);
    f << R"({"prompt_ids": [9707, 1052, 11], "max_tokens": 4, "temperature": 0})"
      << "\n";
  }
  RunResult batch =
      RunXinfer("generate --model " + Model("tiny-qwen3") + " --input " + in + " --output " + out +
                " --enable-lora --lora-modules tuned=" + dir + " --lora tuned");
  ASSERT_EQ(batch.exit_code, 0) << batch.err;
  std::ifstream results(out);
  std::string line;
  ASSERT_TRUE(std::getline(results, line));
  EXPECT_EQ(json::parse(line)["token_ids"], t["token_ids"]) << line;
  RunResult unknown = RunXinfer(gen + " --lora other");
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.err.find("LoRA adapter 'other' is not loaded"), std::string::npos)
      << unknown.err;
  RunResult bad = RunXinfer("make-lora --model " + Model("tiny-qwen3") + " --out " + dir +
                            "-bad --targets q_proj,lm_head");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("'lm_head' is not one of"), std::string::npos) << bad.err;
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(dir + "-bad");
  std::filesystem::remove(in);
  std::filesystem::remove(out);
}

// Offline batch mode: JSONL in (prompt / prompt_ids / messages + sampling parameters), JSONL out
// in input order with usage, a progress bar on stderr; a bad line changes nothing.
TEST(CliTest, OfflineBatchJsonl) {
  XI_REQUIRE_SHARED("models/tinystories-656k");
  json golden = GoldenPrompt("tinystories-656k", "bos_only");
  const std::string in = ScratchPath("batch_in.jsonl"), out = ScratchPath("batch_out.jsonl");
  {
    std::ofstream f(in);
    f << R"({"prompt_ids": [1], "max_tokens": 64, "temperature": 0})"
      << "\n";
    f << R"({"prompt": "Once upon a time", "max_tokens": 8, "temperature": 0, "stop": ["."]})"
      << "\n\n";  // blank lines are skipped
    f << R"({"prompt_ids": [1], "max_tokens": 5, "temperature": 1.0, "seed": 3, "n": 2})"
      << "\n";
    f << R"({"prompt_ids": [1], "max_tokens": 3, "temperature": 0})"
      << "\n";
  }
  std::remove(out.c_str());
  RunResult r = RunXinfer("generate --model " + Model("tinystories-656k") + " --input " + in +
                          " --output " + out + " --num-gpu-blocks-override 64");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("4/4 requests"), std::string::npos) << r.err;
  std::ifstream f(out);
  std::vector<json> lines;
  for (std::string line; std::getline(f, line);) lines.push_back(json::parse(line));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0]["token_ids"], golden["greedy"]);
  EXPECT_EQ(lines[0]["finish_reason"], "length");
  EXPECT_EQ(lines[0]["usage"]["prompt_tokens"], 1);
  EXPECT_EQ(lines[0]["usage"]["completion_tokens"], 64);
  EXPECT_TRUE(lines[0]["usage"]["prompt_tokens_details"].contains("cached_tokens"));
  EXPECT_EQ(lines[1]["text"].get<std::string>().find('.'), std::string::npos);
  ASSERT_EQ(lines[2]["choices"].size(), 2u);
  EXPECT_EQ(lines[2]["usage"]["completion_tokens"], 10);
  EXPECT_NE(lines[2]["choices"][0]["token_ids"], lines[2]["choices"][1]["token_ids"]);
  EXPECT_EQ(lines[3]["token_ids"],
            json(std::vector<int>(golden["greedy"].begin(), golden["greedy"].begin() + 3)));

  // A bad line: clear error naming the line, exit 1, no output written.
  {
    std::ofstream bad(in);
    bad << R"({"prompt_ids": [1], "max_tokens": 4})"
        << "\n";
    bad << R"({"prompt_ids": [1], "top_p": 7})"
        << "\n";
  }
  std::remove(out.c_str());
  RunResult b = RunXinfer("generate --model " + Model("tinystories-656k") + " --input " + in +
                          " --output " + out);
  EXPECT_EQ(b.exit_code, 1);
  EXPECT_NE(b.err.find("line 2: top_p"), std::string::npos) << b.err;
  EXPECT_FALSE(std::ifstream(out).good());
  {
    std::ofstream bad(in);
    bad << "{not json\n";
  }
  RunResult nj = RunXinfer("generate --model " + Model("tinystories-656k") + " --input " + in +
                           " --output " + out);
  EXPECT_EQ(nj.exit_code, 1);
  EXPECT_NE(nj.err.find("line 1: not valid JSON"), std::string::npos) << nj.err;
  // Token ids past 32 bits (2^64 - 1 would read as -1, 2^32 + 1 as token 1) are refused.
  for (const char* id : {"18446744073709551615", "4294967297"}) {
    {
      std::ofstream bad(in);
      bad << R"({"prompt_ids": [1, )" << id << R"(]})"
          << "\n";
    }
    RunResult huge = RunXinfer("generate --model " + Model("tinystories-656k") + " --input " + in +
                               " --output " + out);
    EXPECT_EQ(huge.exit_code, 1) << id;
    EXPECT_NE(huge.err.find("prompt_ids must be a list of token ids"), std::string::npos)
        << huge.err;
  }
  std::remove(in.c_str());
  std::remove(out.c_str());
}

// A JSONL line or chat-template case nested 200,000 levels deep is an error, not a stack overflow
// (the chat template context copied the messages, recursing once per level).
TEST(CliTest, DeeplyNestedInputJson) {
  XI_REQUIRE_SHARED("models/tiny-qwen3");
  const std::string in = ScratchPath("deep_in.jsonl"), out = ScratchPath("deep_out.jsonl");
  {
    std::ofstream f(in);
    f << R"({"messages": [{"role": "user", "content": "hi", "x": )" << std::string(200000, '[')
      << std::string(200000, ']') << "}], \"max_tokens\": 1}\n";
  }
  std::remove(out.c_str());
  RunResult r = RunXinfer("generate --model " + Model("tiny-qwen3") + " --input " + in +
                          " --output " + out + " --max-model-len 64 --num-gpu-blocks-override 8");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("line 1: nested more than 512 levels deep"), std::string::npos) << r.err;
  EXPECT_FALSE(std::ifstream(out).good());
  // `chat-template --input` reads the same kind of JSON.
  {
    std::ofstream f(in);
    f << R"({"messages": [{"role": "user", "content": "hi", "x": )" << std::string(200000, '[')
      << std::string(200000, ']') << "}]}";
  }
  RunResult c = RunXinfer("chat-template --model " + Model("tiny-qwen3") + " --input " + in);
  EXPECT_EQ(c.exit_code, 1) << c.err;
  EXPECT_NE(c.err.find("nested more than 512 levels deep"), std::string::npos) << c.err;
  std::remove(in.c_str());
}

// Quantize to AWQ, then inspect and generate from the result; GGUF files run through the same
// commands.
TEST(CliTest, QuantizeAwqAndGguf) {
  XI_REQUIRE_SHARED("models/tinystories-656k-qwen2");
  XI_REQUIRE_SHARED("models/tiny-qwen3-q4_0.gguf");
  const std::string dst = ScratchPath("awq");
  std::filesystem::remove_all(dst);
  RunResult q = RunXinfer("quantize --awq " + Model("tinystories-656k-qwen2") + " " + dst);
  ASSERT_EQ(q.exit_code, 0) << q.err;
  RunResult again = RunXinfer("quantize --awq " + Model("tinystories-656k-qwen2") + " " + dst);
  EXPECT_EQ(again.exit_code, 1);  // refuses to overwrite
  EXPECT_NE(again.err.find("error: "), std::string::npos);
  RunResult i = RunXinfer("inspect " + dst);
  ASSERT_EQ(i.exit_code, 0) << i.err;
  EXPECT_NE(i.out.find("quantization: awq 4-bit group 128"), std::string::npos) << i.out;
  // Parameters are counted as the model's, not as packed int32 words plus scales and zeros.
  RunResult src = RunXinfer("inspect " + Model("tinystories-656k-qwen2"));
  ASSERT_EQ(src.exit_code, 0) << src.err;
  auto params_line = [](const std::string& out) {
    const size_t p = out.find("parameters: ");
    return p == std::string::npos ? std::string() : out.substr(p, out.find(" (", p) - p);
  };
  EXPECT_FALSE(params_line(src.out).empty()) << src.out;
  EXPECT_EQ(params_line(i.out), params_line(src.out)) << i.out;
  EXPECT_NE(i.out.find("  AWQ4: "), std::string::npos) << i.out;
  RunResult g = RunXinfer("generate --model " + dst +
                          " --prompt-ids 1 --max-tokens 16 --temperature 0 --json");
  ASSERT_EQ(g.exit_code, 0) << g.err;
  EXPECT_NE(json::parse(g.out)["text"].get<std::string>().find("Lily"), std::string::npos);
  // With int8 activations (vLLM's CPU arithmetic for AWQ) the story starts the same way.
  RunResult g8 = RunXinfer("generate --model " + dst +
                           " --prompt-ids 1 --max-tokens 16 --temperature 0 --json"
                           " --int8-activations");
  ASSERT_EQ(g8.exit_code, 0) << g8.err;
  EXPECT_EQ(json::parse(g8.out)["token_ids"], json::parse(g.out)["token_ids"]);
  std::filesystem::remove_all(dst);

  const std::string gguf = testing::SharedDir() + "/models/tiny-qwen3-q4_0.gguf";
  RunResult gi = RunXinfer("inspect " + gguf);
  ASSERT_EQ(gi.exit_code, 0) << gi.err;
  EXPECT_NE(gi.out.find("Qwen3ForCausalLM"), std::string::npos);
  RunResult gg = RunXinfer("generate --model " + gguf + " --prompt Hello --max-tokens 4 --json");
  ASSERT_EQ(gg.exit_code, 0) << gg.err;
  EXPECT_EQ(json::parse(gg.out)["token_ids"].size(), 4u);
}

// `quantize --gguf`: the export inspects and generates like the folder it came from; bad types
// and existing outputs exit 1 with a message.
TEST(CliTest, QuantizeGgufExport) {
  XI_REQUIRE_SHARED("models/tinystories-656k");
  const std::string dst = ScratchPath("export.gguf");
  std::filesystem::remove(dst);
  RunResult q = RunXinfer("quantize --gguf q8_0 " + Model("tinystories-656k") + " " + dst);
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_NE(q.out.find("(GGUF, q8_0)"), std::string::npos) << q.out;
  RunResult i = RunXinfer("inspect " + dst);
  ASSERT_EQ(i.exit_code, 0) << i.err;
  EXPECT_NE(i.out.find("LlamaForCausalLM"), std::string::npos) << i.out;
  EXPECT_NE(i.out.find("Q8_0"), std::string::npos) << i.out;
  RunResult g = RunXinfer("generate --model " + dst +
                          " --prompt-ids 1 --max-tokens 16 --temperature 0 --json");
  ASSERT_EQ(g.exit_code, 0) << g.err;
  EXPECT_NE(json::parse(g.out)["text"].get<std::string>().find("Lily"), std::string::npos);

  // Int8 activations (llama.cpp's arithmetic, the default for GGUF files): the story the F32
  // activations (--no-int8-activations) tell, for a Q8_0 and a Q4_0 export (hidden 128,
  // intermediate 384: every layer takes the int8 kernel on AVX512-VNNI CPUs). Its first 32 tokens
  // are the same (the Q8_0 one parts at token 60, where two candidates are close); the default is
  // exactly --int8-activations, and on CPUs with the kernel the log-probs show the difference.
  RunResult doctor = RunXinfer("doctor --json");
  ASSERT_EQ(doctor.exit_code, 0) << doctor.err;
  const bool vnni = json::parse(doctor.out)["avx512_vnni"].get<bool>();
  const std::string dst4 = ScratchPath("export-q4_0.gguf");
  std::filesystem::remove(dst4);
  RunResult q4 = RunXinfer("quantize --gguf q4_0 " + Model("tinystories-656k") + " " + dst4);
  ASSERT_EQ(q4.exit_code, 0) << q4.err;
  for (const std::string& file : {dst, dst4}) {
    const std::string gen = "generate --model " + file +
                            " --prompt-ids 1 --max-tokens 64 --temperature 0 --logprobs 1 --json";
    RunResult plain = RunXinfer(gen + " --no-int8-activations");
    RunResult int8 = RunXinfer(gen + " --int8-activations");
    RunResult dflt = RunXinfer(gen);
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    ASSERT_EQ(int8.exit_code, 0) << int8.err;
    ASSERT_EQ(dflt.exit_code, 0) << dflt.err;
    const json pj = json::parse(plain.out), ij = json::parse(int8.out), dj = json::parse(dflt.out);
    const std::vector<int> a = ij["token_ids"], b = pj["token_ids"];
    ASSERT_EQ(a.size(), 64u);
    ASSERT_EQ(b.size(), 64u);
    EXPECT_TRUE(std::equal(a.begin(), a.begin() + 32, b.begin())) << file;
    EXPECT_NE(ij["text"].get<std::string>().find("Lily"), std::string::npos);
    EXPECT_EQ(dj["token_ids"], ij["token_ids"]) << file;
    EXPECT_EQ(dj["logprobs"], ij["logprobs"]) << file;
    if (vnni) {
      EXPECT_NE(pj["logprobs"], ij["logprobs"]) << file;
    }
  }
  std::filesystem::remove(dst4);

  RunResult again = RunXinfer("quantize --gguf q8_0 " + Model("tinystories-656k") + " " + dst);
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.err.find("refusing to overwrite"), std::string::npos) << again.err;
  std::filesystem::remove(dst);
  RunResult bad = RunXinfer("quantize --gguf q5_k " + Model("tinystories-656k") + " " + dst);
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("unsupported GGUF type 'q5_k'"), std::string::npos) << bad.err;
  RunResult both = RunXinfer("quantize --awq --gguf f16 " + Model("tinystories-656k") + " " + dst);
  EXPECT_EQ(both.exit_code, 1);
  EXPECT_NE(both.err.find("exactly one of --awq and --gguf"), std::string::npos) << both.err;
  EXPECT_FALSE(std::filesystem::exists(dst));
}

// `xinfer chat-template` prints exactly what Jinja2 rendered for every golden case, and
// `generate --chat` tokenizes that rendering.
TEST(CliTest, ChatTemplateCommandMatchesJinja2) {
  XI_REQUIRE_SHARED("golden/chat_template/qwen3.jsonl");
  std::ifstream golden(testing::SharedDir() + "/golden/chat_template/qwen3.jsonl");
  const std::string case_path = ScratchPath("chat_case.json");
  int cases = 0;
  for (std::string line; std::getline(golden, line);) {
    // ordered: tool schemas must reach the template in their original key order.
    nlohmann::ordered_json g = nlohmann::ordered_json::parse(line);
    std::ofstream(case_path) << g["input"].dump();
    RunResult r =
        RunXinfer("chat-template --model " + Model("tiny-qwen3") + " --input " + case_path);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, g["rendered"].get<std::string>()) << g["name"];
    ++cases;
  }
  EXPECT_EQ(cases, 8);
  RunResult chat = RunXinfer("generate --model " + Model("tiny-qwen3") +
                             " --chat --prompt Hello! --max-tokens 2 --temperature 0 --json");
  ASSERT_EQ(chat.exit_code, 0) << chat.err;
  RunResult ids = RunXinfer("tokenize --no-special-tokens --model " + Model("tiny-qwen3") +
                            " '<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n'");
  ASSERT_EQ(ids.exit_code, 0) << ids.err;
  EXPECT_EQ(json::parse(chat.out)["prompt_ids"], json::parse(ids.out));
  std::ofstream(case_path) << "{\"messages\": 5}";
  RunResult bad =
      RunXinfer("chat-template --model " + Model("tiny-qwen3") + " --input " + case_path);
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("error: "), std::string::npos);
  std::remove(case_path.c_str());
}

// xinfer writes no temporary files of its own: commands run with a private, empty TMPDIR leave
// it empty. (The xinfer-bench-* / xinfer-script-* directories that once piled up in /tmp came
// from the server tests, which now run with a private TMPDIR that run-tests.sh checks likewise.)
TEST(CliTest, LeavesNothingInTmpdir) {
  XI_REQUIRE_SHARED("models/tinystories-656k");
  namespace fs = std::filesystem;
  const fs::path tmp =
      fs::path(::testing::TempDir()) / ("xinfer-cli-tmpdir-" + std::to_string(getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  const std::string env = "TMPDIR=" + tmp.string();
  const std::string m = " --model " + Model("tinystories-656k");
  RunResult gen = RunXinfer("generate" + m + " --prompt-ids 1 --max-tokens 4", env);
  EXPECT_EQ(gen.exit_code, 0) << gen.err;
  RunResult bench = RunXinfer(
      "bench offline" + m + " --input-len 8 --output-len 4 --batch 2 --runs 1 --threads 1", env);
  EXPECT_EQ(bench.exit_code, 0) << bench.err;
  RunResult bad = RunXinfer("generate --model /nonexistent/model --prompt hi", env);
  EXPECT_EQ(bad.exit_code, 1);
  std::string left;
  for (const auto& e : fs::directory_iterator(tmp)) left += " " + e.path().filename().string();
  EXPECT_EQ(left, "") << "left behind in TMPDIR";
  fs::remove_all(tmp);
}

// `bench offline --json`: the issue-6 figure names, and each run's decode against the bandwidth
// probed beside that run (one entry per run, the paired fraction their median).
TEST(CliTest, BenchOfflineJsonPairsEachRunWithItsBandwidth) {
  XI_REQUIRE_SHARED("models/tinystories-656k");
  RunResult r = RunXinfer("bench offline --model " + Model("tinystories-656k") +
                          " --input-len 8 --output-len 4 --batch 2 --runs 3 --threads 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  for (const char* key : {"prefill_tok_s", "decode_tok_s", "decode_tok_s_per_seq", "weight_bytes",
                          "read_gb_s", "decode_roofline_fraction"})
    EXPECT_GT(j.value(key, 0.0), 0.0) << key;
  EXPECT_EQ(j["threads"], 2);
  EXPECT_EQ(j["mmap_weights"], false);
  ASSERT_EQ(j["read_gb_s_runs"].size(), 3u);
  ASSERT_EQ(j["decode_roofline_fraction_runs"].size(), 3u);
  std::vector<double> fractions;
  for (int i = 0; i < 3; ++i) {
    EXPECT_GT(j["read_gb_s_runs"][i].get<double>(), 0.0);
    fractions.push_back(j["decode_roofline_fraction_runs"][i].get<double>());
    EXPECT_GT(fractions.back(), 0.0);
  }
  std::sort(fractions.begin(), fractions.end());
  EXPECT_DOUBLE_EQ(j["decode_roofline_fraction_paired"].get<double>(), fractions[1]);
}

// `bench offline` with random sampling: the parameters are echoed, every requested token is
// generated, and a parameter the sampler would refuse is a clear error, not a run.
TEST(CliTest, BenchOfflineSamplesWhenAskedAndRefusesBadSamplingParams) {
  XI_REQUIRE_SHARED("models/tinystories-656k");
  const std::string m = "bench offline --model " + Model("tinystories-656k") +
                        " --input-len 8 --output-len 6 --batch 2 --runs 1 --threads 1";
  RunResult r = RunXinfer(m + " --temperature 1 --top-p 0.9 --top-k 20 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_DOUBLE_EQ(j["temperature"].get<double>(), 1.0);
  EXPECT_NEAR(j["top_p"].get<double>(), 0.9, 1e-6);
  EXPECT_EQ(j["top_k"], 20);
  EXPECT_GT(j.value("decode_tok_s", 0.0), 0.0);
  RunResult bad = RunXinfer(m + " --temperature 1 --top-p 1.5");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("top_p"), std::string::npos) << bad.err;
}

// --speculative-config on `generate` and `bench offline`: the same tokens as without, and the
// bench's counts of drafts kept; a method it cannot run is refused.
TEST(CliTest, SpeculativeConfigGeneratesTheSameTokensAndBenchCountsDrafts) {
  XI_REQUIRE_SHARED("models/tinystories-656k");
  const std::string spec =
      R"( --speculative-config '{"method": "ngram", "num_speculative_tokens": 3,)"
      R"( "prompt_lookup_min": 1, "prompt_lookup_max": 2}')";
  const std::string gen = "generate --model " + Model("tinystories-656k") +
                          " --prompt-ids 1,80,147,201,282 --max-tokens 40 --temperature 0 --json";
  RunResult plain = RunXinfer(gen), drafted = RunXinfer(gen + spec);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(drafted.exit_code, 0) << drafted.err;
  EXPECT_EQ(json::parse(drafted.out)["token_ids"], json::parse(plain.out)["token_ids"]);
  RunResult bench = RunXinfer("bench offline --model " + Model("tinystories-656k") +
                              " --input-len 8 --output-len 48 --batch 1 --runs 1 --json" + spec);
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  const json j = json::parse(bench.out);
  EXPECT_GT(j["spec_draft_tokens"].get<int64_t>(), 0);
  EXPECT_GE(j["spec_draft_tokens"].get<int64_t>(), j["spec_accepted_tokens"].get<int64_t>());
  EXPECT_GT(j["spec_acceptance"].get<double>(), 0.0);
  RunResult bad = RunXinfer(gen + R"( --speculative-config '{"method": "medusa"}')");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("method 'medusa' is not supported"), std::string::npos) << bad.err;
}

TEST(CliTest, ErrorsExitNonZeroWithMessage) {
  RunResult missing = RunXinfer("generate --model /nonexistent/model --prompt hi");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("error: "), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("/nonexistent/model"), std::string::npos) << missing.err;

  RunResult inspect = RunXinfer("inspect /nonexistent/model");
  EXPECT_EQ(inspect.exit_code, 1);
  EXPECT_NE(inspect.err.find("no such file"), std::string::npos) << inspect.err;

  RunResult usage = RunXinfer("generate");
  EXPECT_NE(usage.exit_code, 0);
  EXPECT_NE(usage.err.find("--model is required"), std::string::npos) << usage.err;

  RunResult unknown = RunXinfer("frobnicate");
  EXPECT_NE(unknown.exit_code, 0);

  if (!testing::HaveShared("models/tinystories-656k")) GTEST_SKIP() << "../shared not found";
  const std::string m = " --model " + Model("tinystories-656k");
  RunResult bad_ids = RunXinfer("generate" + m + " --prompt-ids 1,x");
  EXPECT_EQ(bad_ids.exit_code, 1);
  EXPECT_NE(bad_ids.err.find("'x' is not a token id"), std::string::npos) << bad_ids.err;
  RunResult oov = RunXinfer("generate" + m + " --prompt-ids 1,999999");
  EXPECT_EQ(oov.exit_code, 1);
  EXPECT_NE(oov.err.find("outside the vocabulary"), std::string::npos) << oov.err;
  RunResult too_long = RunXinfer("generate" + m + " --prompt-ids 1 --max-tokens 100000");
  EXPECT_EQ(too_long.exit_code, 1);
  EXPECT_NE(too_long.err.find("exceeds the maximum context length"), std::string::npos)
      << too_long.err;
  RunResult bad_temp = RunXinfer("generate" + m + " --prompt-ids 1 --temperature -1");
  EXPECT_EQ(bad_temp.exit_code, 1);
  EXPECT_NE(bad_temp.err.find("temperature"), std::string::npos) << bad_temp.err;
}

// `xinfer plan`: the KV cache the engine would get from serve's flags, whether --max-num-seqs
// sequences of --context tokens fit in it (exit 0) or not (exit 1, with the numbers that would),
// and clear errors on bad input.
TEST(CliTest, PlanSaysWhetherTheModelFitsAtTheConcurrencyAsked) {
  XI_REQUIRE_SHARED("models/tiny-qwen3");
  const std::string model = Model("tiny-qwen3");  // 1 KiB of F32 K and V per token
  // 64 MiB x 0.5 - 18.8 MiB of weights leaves ~13.2 MiB: 845 blocks of 16 tokens.
  const std::string budget = " --cpu-memory-budget 67108864 --gpu-memory-utilization 0.5";
  RunResult fits =
      RunXinfer("plan " + model + budget + " --max-model-len 1024 --max-num-seqs 8 --json");
  ASSERT_EQ(fits.exit_code, 0) << fits.err;
  const json j = json::parse(fits.out);
  EXPECT_TRUE(j["fits"].get<bool>());
  EXPECT_TRUE(j["starts"].get<bool>());
  EXPECT_EQ(j["kv_bytes_per_token"], 1024);
  EXPECT_EQ(j["concurrent_seqs"], 8);
  EXPECT_EQ(j["kv_cache_blocks"], 8 * 1024 / 16);  // capped at what 8 sequences can use
  EXPECT_EQ(j["kv_cache_sized_by"], "gpu_memory_utilization");
  EXPECT_EQ(j["kv_cache_bytes_needed"], 8 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(j["max_concurrency_at_max_model_len"].get<double>(), 8.0);

  // Over 4 tensor-parallel ranks each of its 2 key-value heads is held twice.
  RunResult tp4 =
      RunXinfer("plan " + model + budget + " --max-model-len 1024 --max-num-seqs 4 -tp 4 --json");
  ASSERT_EQ(tp4.exit_code, 0) << tp4.err;
  EXPECT_EQ(json::parse(tp4.out)["kv_bytes_per_token"], 2048);
  RunResult tp2 =
      RunXinfer("plan " + model + budget + " --max-model-len 1024 --max-num-seqs 4 -tp 2 --json");
  EXPECT_EQ(json::parse(tp2.out)["kv_bytes_per_token"], 1024);

  // Two data-parallel replicas over twice the budget: each the single engine's cache, twice the
  // sequences in all; over the same budget each replica's half leaves nothing after its weights.
  const std::string budget2 = " --cpu-memory-budget 134217728 --gpu-memory-utilization 0.5";
  RunResult dp2 =
      RunXinfer("plan " + model + budget2 + " --max-model-len 1024 --max-num-seqs 8 -dp 2 --json");
  ASSERT_EQ(dp2.exit_code, 0) << dp2.err;
  const json d = json::parse(dp2.out);
  EXPECT_EQ(d["data_parallel_size"], 2);
  EXPECT_EQ(d["budget_bytes"], 64 << 20);
  EXPECT_EQ(d["kv_cache_blocks"], j["kv_cache_blocks"]);
  EXPECT_EQ(d["concurrent_seqs"], 8);
  EXPECT_EQ(d["budget_bytes_needed"].get<int64_t>(), 2 * j["budget_bytes_needed"].get<int64_t>());
  RunResult dp2_text =
      RunXinfer("plan " + model + budget2 + " --max-model-len 1024 --max-num-seqs 8 -dp 2");
  EXPECT_NE(dp2_text.out.find("fits: 16 sequences of 1024 tokens run at once (8 per replica)"),
            std::string::npos)
      << dp2_text.out;
  EXPECT_NE(dp2_text.out.find("in each of 2 data-parallel replicas"), std::string::npos)
      << dp2_text.out;
  RunResult dp2_small =
      RunXinfer("plan " + model + budget + " --max-model-len 1024 --max-num-seqs 8 -dp 2");
  EXPECT_EQ(dp2_small.exit_code, 1);
  EXPECT_NE(dp2_small.err.find("per data-parallel replica"), std::string::npos) << dp2_small.err;

  // 32 sequences of 1024 tokens need 32 MiB of KV cache: only 13 fit; the text says so and lists
  // the settings that would fit.
  RunResult some = RunXinfer("plan " + model + budget + " --max-model-len 1024 --max-num-seqs 32");
  EXPECT_EQ(some.exit_code, 1);
  EXPECT_NE(some.out.find("does not fit: the server starts, but only 13 of 32 sequences"),
            std::string::npos)
      << some.out;
  EXPECT_NE(some.out.find("--max-num-seqs 13"), std::string::npos) << some.out;
  EXPECT_NE(some.out.find("--kv-cache-dtype bfloat16"), std::string::npos) << some.out;
  EXPECT_NE(some.err.find("error: 32 sequences of 1024 tokens need a KV cache of 0.03 GiB"),
            std::string::npos)
      << some.err;
  // The same at 256 tokens each (--context) fits, and so does a BF16 cache at 512.
  EXPECT_EQ(RunXinfer("plan " + model + budget +
                      " --max-model-len 1024 --max-num-seqs 32 "
                      "--context 256")
                .exit_code,
            0);
  EXPECT_EQ(RunXinfer("plan " + model + budget +
                      " --max-model-len 1024 --max-num-seqs 32 "
                      "--context 512 --kv-cache-dtype bfloat16")
                .exit_code,
            0);

  // A budget the weights nearly fill: the engine would not start.
  RunResult none = RunXinfer("plan " + model + " --cpu-memory-budget 20000000 --json");
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_FALSE(json::parse(none.out)["starts"].get<bool>());
  EXPECT_NE(none.err.find("no memory left for the KV cache"), std::string::npos) << none.err;

  // Bad input: clear errors, exit 1.
  RunResult missing = RunXinfer("plan /nonexistent/model");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("/nonexistent/model"), std::string::npos) << missing.err;
  RunResult long_context = RunXinfer("plan " + model + " --max-model-len 512 --context 513");
  EXPECT_EQ(long_context.exit_code, 1);
  EXPECT_NE(long_context.err.find("--context must be in [1, max_model_len 512]"), std::string::npos)
      << long_context.err;
  RunResult over_model = RunXinfer("plan " + model + " --max-model-len 100000");
  EXPECT_EQ(over_model.exit_code, 1);
  EXPECT_NE(over_model.err.find("exceeds the model's maximum length"), std::string::npos)
      << over_model.err;
  RunResult half = RunXinfer("plan " + model + " --dtype float16");
  EXPECT_EQ(half.exit_code, 1);
  EXPECT_NE(half.err.find("not supported by the CPU backend"), std::string::npos) << half.err;
}

// vLLM's parallelism and device flags (its -tp / -pp / -dp spellings too) and its no-op flags are
// taken, so a vLLM command line runs unchanged; what this build cannot do is refused clearly.
TEST(CliTest, VllmParallelismAndDeviceFlags) {
  XI_REQUIRE_SHARED("models/tinystories-656k");
  const std::string run = "generate --model " + Model("tinystories-656k") +
                          " --prompt-ids 1 --max-tokens 2 --max-model-len 64";
  for (const char* flags :
       {"-tp 1", "-tp=1 -pp=1 -dp=1", "--tensor-parallel-size 1 --pipeline-parallel-size 1",
        "--device cpu --trust-remote-code --enforce-eager",
        "--data-parallel-size 1 --device auto"}) {
    RunResult r = RunXinfer(run + " " + flags);
    EXPECT_EQ(r.exit_code, 0) << flags << ": " << r.err;
  }
  // Tensor parallelism splits the model over ranks of the process's threads: the same greedy
  // tokens as one rank.
  const std::string greedy = "generate --model " + Model("tinystories-656k") +
                             " --prompt-ids 1,400,500 --max-tokens 24 --temperature 0 --json";
  RunResult whole = RunXinfer(greedy + " --threads 2");
  // (Info logs on: CI runs at XINFER_LOG_LEVEL=warning.)
  RunResult split = RunXinfer(greedy + " --threads 2 -tp 2", "XINFER_LOG_LEVEL=info");
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  ASSERT_EQ(split.exit_code, 0) << split.err;
  EXPECT_EQ(nlohmann::json::parse(split.out)["token_ids"],
            nlohmann::json::parse(whole.out)["token_ids"]);
  EXPECT_NE(split.err.find("tensor parallel rank 1: cpu"), std::string::npos) << split.err;
  EXPECT_NE(split.err.find("cpu_threads_bind=auto"), std::string::npos) << split.err;
  // vLLM's VLLM_CPU_OMP_THREADS_BIND is the default of --cpu-threads-bind: nobind leaves the
  // ranks' threads where the OS puts them.
  RunResult unbound = RunXinfer(greedy + " --threads 2 -tp 2",
                                "VLLM_CPU_OMP_THREADS_BIND=nobind XINFER_LOG_LEVEL=info");
  ASSERT_EQ(unbound.exit_code, 0) << unbound.err;
  EXPECT_EQ(json::parse(unbound.out)["token_ids"], json::parse(whole.out)["token_ids"]);
  EXPECT_NE(unbound.err.find("cpu_threads_bind=nobind"), std::string::npos) << unbound.err;
  EXPECT_EQ(unbound.err.find(" on CPUs "), std::string::npos) << unbound.err;
  // doctor shows the CPUs per NUMA node that --cpu-threads-bind auto places ranks on.
  RunResult doctor = RunXinfer("doctor --json");
  ASSERT_EQ(doctor.exit_code, 0) << doctor.err;
  const json machine = json::parse(doctor.out);
  EXPECT_FALSE(machine["allowed_cpus"].get<std::string>().empty());
  ASSERT_TRUE(machine["numa_nodes"].is_array());
  for (const json& node : machine["numa_nodes"]) EXPECT_TRUE(node.contains("cpus")) << node;
  EXPECT_NE(RunXinfer("doctor").out.find("numa:     "), std::string::npos);
  RunResult bench = RunXinfer("bench offline --model " + Model("tinystories-656k") +
                              " --input-len 8 --output-len 4 --batch 2 --runs 1 --threads 2 -tp 2");
  EXPECT_EQ(bench.exit_code, 0) << bench.err;
  const std::pair<const char*, const char*> refused[] = {
      {"-tp 3 --threads 3 --cpu-threads-bind nobind",
       "tensor_parallel_size 3 must divide the model's 8 attention heads"},
      {"-tp=4 --threads 2", "tensor_parallel_size 4 needs at least one thread per rank"},
      {"--tensor-parallel-size 0", "tensor_parallel_size must be >= 1, got 0"},
      {"-tp 2 --threads 2 --cpu-threads-bind '0|x'",
       "cpu_threads_bind '0|x' is not auto, nobind or CPU lists separated by '|'"},
      {"-tp 2 --threads 2 --cpu-threads-bind 0-1", "has 1 CPU lists for 2 ranks"},
      {"-pp 2", "pipeline_parallel_size 2: pipeline parallelism is not implemented yet"},
      {"-dp 2",
       "--data-parallel-size 2: generate runs one engine; data-parallel replicas share "
       "requests in `xinfer serve`"},
      {"-dp 0", "data_parallel_size must be >= 1, got 0"},
      {"--device cuda", "device 'cuda' is not available: this build has the cpu backend"}};
  for (const auto& [flags, message] : refused) {
    RunResult r = RunXinfer(run + " " + flags);
    EXPECT_EQ(r.exit_code, 1) << flags;
    EXPECT_NE(r.err.find(message), std::string::npos) << flags << ": " << r.err;
  }
  // Only the exact short spellings are expanded.
  EXPECT_NE(RunXinfer(run + " -tpx 1").exit_code, 0);
  // More --threads than a bound rank has CPUs: one thread per CPU, and a warning says so.
  std::vector<int> allowed;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    for (int cpu = 0; cpu < CPU_SETSIZE && allowed.size() < 2; ++cpu)
      if (CPU_ISSET(cpu, &set)) allowed.push_back(cpu);
  if (allowed.size() == 2) {
    RunResult over =
        RunXinfer(greedy + " --threads 4 -tp 2 --cpu-threads-bind '" + std::to_string(allowed[0]) +
                      "|" + std::to_string(allowed[1]) + "'",
                  "XINFER_LOG_LEVEL=info");
    ASSERT_EQ(over.exit_code, 0) << over.err;
    EXPECT_EQ(json::parse(over.out)["token_ids"], json::parse(whole.out)["token_ids"]);
    EXPECT_NE(over.err.find("--threads 4 gives each of the 2 ranks 2 threads, more than the 1 "
                            "CPUs it is bound to"),
              std::string::npos)
        << over.err;
    EXPECT_NE(over.err.find("1 threads on CPUs " + std::to_string(allowed[1])), std::string::npos)
        << over.err;
  }
  RunResult loud = RunXinfer("serve " + Model("tinystories-656k") + " --uvicorn-log-level loud");
  EXPECT_NE(loud.exit_code, 0);
  EXPECT_NE(loud.err.find("--uvicorn-log-level"), std::string::npos) << loud.err;
  // serve runs data-parallel replicas, but not more ranks than threads.
  RunResult thin =
      RunXinfer("serve " + Model("tinystories-656k") + " --port 0 -dp 2 -tp 2 --threads 2");
  EXPECT_EQ(thin.exit_code, 1);
  EXPECT_NE(thin.err.find("tensor_parallel_size 2 x data_parallel_size 2 needs at least one "
                          "thread per rank, got threads 2"),
            std::string::npos)
      << thin.err;
}

// vLLM's --tokenizer, --generation-config, --override-generation-config and --load-format, and its
// flags for machinery this engine does not have: accepted, or refused where the value asks for
// something else.
// --task embed (and vLLM's --runner pooling / --convert embed) is for serve; generate refuses it,
// and what the engine cannot pool or run is refused by name.
TEST(CliTest, VllmTaskAndPoolerFlags) {
  XI_REQUIRE_SHARED("models/tinystories-656k");
  const std::string gen =
      "generate --model " + Model("tinystories-656k") + " --prompt-ids 1,400 --max-tokens 2";
  for (const std::string& flags : {std::string(" --task embed"), std::string(" --runner pooling"),
                                   std::string(" --convert embed")}) {
    RunResult r = RunXinfer(gen + flags);
    EXPECT_EQ(r.exit_code, 1) << flags;
    EXPECT_NE(r.err.find("generate writes text"), std::string::npos) << flags << ": " << r.err;
  }
  EXPECT_EQ(RunXinfer(gen + " --task generate --runner generate --convert none").exit_code, 0);
  RunResult classify = RunXinfer(gen + " --task classify");
  EXPECT_NE(classify.err.find("task 'classify' is not available"), std::string::npos)
      << classify.err;
  RunResult runner = RunXinfer(gen + " --runner draft");
  EXPECT_NE(runner.exit_code, 0);
  // --hf-overrides reach the config the engine reads (here its context length); a GGUF file has
  // no config.json to override.
  RunResult shorter = RunXinfer("generate --model " + Model("tinystories-656k") +
                                " --prompt-ids 1,400 --max-tokens 16 --hf-overrides "
                                "'{\"max_position_embeddings\": 8}'");
  EXPECT_NE(shorter.err.find("exceeds the maximum context length of 8 tokens"), std::string::npos)
      << shorter.err;
  XI_REQUIRE_SHARED("models/tiny-qwen3-bf16.gguf");
  RunResult gguf = RunXinfer("generate --model " + Model("tiny-qwen3-bf16.gguf") +
                             " --prompt-ids 1,400 --max-tokens 2 --hf-overrides '{\"a\": 1}'");
  EXPECT_NE(gguf.err.find("hf_overrides apply to a Hugging Face folder's config.json"),
            std::string::npos)
      << gguf.err;
  RunResult mean = RunXinfer(gen + " --override-pooler-config '{\"pooling_type\": \"MEAN\"}'");
  EXPECT_NE(mean.err.find("pooling_type \"MEAN\" is not available"), std::string::npos) << mean.err;
}

// vLLM's --rope-scaling / --rope-theta (shorthands for those keys of --hf-overrides): the scaling
// lengthens the context the engine and plan allow (yarn: trained context x factor), the theta
// reaches the model (another greedy story), and bad values are refused by name.
TEST(CliTest, VllmRopeScalingFlags) {
  XI_REQUIRE_SHARED("models/tiny-qwen3");
  XI_REQUIRE_SHARED("models/tinystories-656k");
  const std::string qwen3 = Model("tiny-qwen3");
  const std::string yarn =
      " --rope-scaling '{\"rope_type\": \"yarn\", \"factor\": 4, "
      "\"original_max_position_embeddings\": 4096}'";
  const std::string gen = "generate --model " + qwen3 + " --prompt-ids 1,400 --max-tokens 2";
  RunResult over = RunXinfer(gen + " --max-model-len 8192");
  EXPECT_EQ(over.exit_code, 1);
  EXPECT_NE(over.err.find("exceeds the model's maximum length 4096"), std::string::npos)
      << over.err;
  RunResult stretched = RunXinfer(gen + " --max-model-len 8192" + yarn);
  EXPECT_EQ(stretched.exit_code, 0) << stretched.err;
  RunResult plan = RunXinfer("plan " + qwen3 + " --json" + yarn);
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_EQ(json::parse(plan.out)["max_model_len"].get<int>(), 16384);
  RunResult plan_overrides =
      RunXinfer("plan " + qwen3 + " --json --hf-overrides '{\"max_position_embeddings\": 64}'");
  ASSERT_EQ(plan_overrides.exit_code, 0) << plan_overrides.err;
  EXPECT_EQ(json::parse(plan_overrides.out)["max_model_len"].get<int>(), 64);
  if (testing::HaveShared("models/tiny-qwen3-bf16.gguf")) {  // no config.json to override
    RunResult gguf = RunXinfer("plan " + Model("tiny-qwen3-bf16.gguf") + yarn);
    EXPECT_EQ(gguf.exit_code, 1);
    EXPECT_NE(gguf.err.find("hf_overrides apply to a Hugging Face folder's config.json"),
              std::string::npos)
        << gguf.err;
  }

  const std::string story = "generate --model " + Model("tinystories-656k") +
                            " --prompt-ids 1,400 --max-tokens 12 --temperature 0 --json";
  RunResult base = RunXinfer(story), theta = RunXinfer(story + " --rope-theta 50");
  ASSERT_EQ(base.exit_code, 0) << base.err;
  ASSERT_EQ(theta.exit_code, 0) << theta.err;
  EXPECT_NE(json::parse(theta.out)["token_ids"], json::parse(base.out)["token_ids"]);
  EXPECT_EQ(json::parse(RunXinfer(story + " --rope-theta 10000").out)["token_ids"],
            json::parse(base.out)["token_ids"]);  // the model's own theta

  for (const auto& [flags, needle] : std::vector<std::pair<std::string, std::string>>{
           {" --rope-scaling '[1]'", "rope_scaling must be a JSON object"},
           {" --rope-scaling '{\"rope_type\": \"longrope\", \"factor\": 2}'",
            "rope_scaling type 'longrope' is not supported"},
           {" --rope-scaling '{\"rope_type\": \"yarn\"}'", "rope_scaling needs a 'factor'"},
           {" --rope-theta -1", "rope_theta must be a positive number"}}) {
    RunResult bad = RunXinfer(gen + flags);
    EXPECT_EQ(bad.exit_code, 1) << flags;
    EXPECT_NE(bad.err.find(needle), std::string::npos) << flags << ": " << bad.err;
  }
}

TEST(CliTest, VllmTokenizerAndGenerationConfigFlags) {
  XI_REQUIRE_SHARED("models/tiny-qwen3-bf16.gguf");
  // The GGUF file's own tokenizer and the folder's are the same vocabulary: the same ids.
  const std::string gguf = "generate --model " + Model("tiny-qwen3-bf16.gguf") +
                           " --prompt 'Hello world, 你好' --max-tokens 3 --temperature 0 --json";
  RunResult own = RunXinfer(gguf);
  RunResult folder = RunXinfer(gguf + " --tokenizer " + Model("tiny-qwen3") + " --load-format gguf",
                               "XINFER_LOG_LEVEL=info");
  ASSERT_EQ(own.exit_code, 0) << own.err;
  ASSERT_EQ(folder.exit_code, 0) << folder.err;
  EXPECT_EQ(json::parse(folder.out)["prompt_ids"], json::parse(own.out)["prompt_ids"]);
  EXPECT_EQ(json::parse(folder.out)["token_ids"], json::parse(own.out)["token_ids"]);
  EXPECT_NE(folder.err.find("tokenizer=" + Model("tiny-qwen3")), std::string::npos) << folder.err;
  RunResult missing = RunXinfer(gguf + " --tokenizer " + ScratchPath("no-such-tokenizer"));
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("no-such-tokenizer"), std::string::npos) << missing.err;

  // Sampling defaults: a request that sets no temperature takes the generation config's.
  const std::string stories = "generate --model " + Model("tinystories-656k") +
                              " --prompt-ids 1,400,500 --max-tokens 16 --json";
  RunResult greedy = RunXinfer(stories + " --temperature 0");
  ASSERT_EQ(greedy.exit_code, 0) << greedy.err;
  const std::string dir = ScratchPath("generation-config");
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/generation_config.json") << R"({"temperature": 0, "top_k": 3})";
  for (const std::string& flags :
       {" --generation-config " + dir,
        std::string(" --generation-config vllm --override-generation-config "
                    "'{\"temperature\": 0, \"repetition_penalty\": 1}'")}) {
    RunResult r = RunXinfer(stories + flags, "XINFER_LOG_LEVEL=info");
    ASSERT_EQ(r.exit_code, 0) << flags << ": " << r.err;
    EXPECT_EQ(json::parse(r.out)["token_ids"], json::parse(greedy.out)["token_ids"]) << flags;
    EXPECT_NE(r.err.find("sampling defaults from generation_config"), std::string::npos) << r.err;
  }
  RunResult listed = RunXinfer(stories + " --generation-config " + dir, "XINFER_LOG_LEVEL=info");
  EXPECT_NE(listed.err.find("temperature=0 top_p=1 top_k=3"), std::string::npos) << listed.err;
  // "vllm" takes none: no line about them.
  RunResult plain = RunXinfer(stories + " --generation-config vllm", "XINFER_LOG_LEVEL=info");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.err.find("sampling defaults from"), std::string::npos) << plain.err;
  std::filesystem::remove_all(dir);

  // Flags for what this engine does not have: accepted.
  RunResult accepted =
      RunXinfer(stories +
                " --swap-space 16 --max-seq-len-to-capture 4096 --disable-custom-all-reduce "
                "--distributed-executor-backend uni --tokenizer-mode slow --load-format "
                "safetensors --max-logprobs -1");
  EXPECT_EQ(accepted.exit_code, 0) << accepted.err;
  RunResult negative = RunXinfer(stories + " --swap-space -1");
  EXPECT_NE(negative.exit_code, 0);
  EXPECT_NE(negative.err.find("--swap-space"), std::string::npos) << negative.err;
  const std::pair<const char*, const char*> refused[] = {
      {"--load-format pt", "load_format 'pt' is not supported: auto, safetensors"},
      {"--load-format gguf", "load_format gguf was given but the model"},
      {"--tokenizer-mode mistral", "tokenizer_mode 'mistral' is not available"},
      {"--distributed-executor-backend ray", "distributed_executor_backend 'ray' is not available"},
      {"--override-generation-config '[1]'", "override_generation_config must be a JSON object"},
      {"--override-generation-config '{\"max_new_tokens\": 5}'",
       "'max_new_tokens' is not a sampling default this server takes"},
      {"--override-generation-config '{\"top_p\": 0}'",
       "the sampling defaults of generation_config auto with the overrides: top_p must be in"},
      {"--generation-config /no/such/folder",
       "generation_config /no/such/folder: not auto, vllm or a folder"},
      {"--max-logprobs -2", "max_logprobs must be >= -1, got -2"}};
  for (const auto& [flags, message] : refused) {
    RunResult r = RunXinfer(stories + " " + flags);
    EXPECT_EQ(r.exit_code, 1) << flags;
    EXPECT_NE(r.err.find(message), std::string::npos) << flags << ": " << r.err;
  }
}

// vLLM's --dtype and --quantization: accepted with vLLM's spellings, refused with a clear message
// when unsupported or when they contradict the model.
TEST(CliTest, DtypeAndQuantizationFlags) {
  if (!testing::HaveShared("models/tinystories-656k-awq")) GTEST_SKIP() << "../shared not found";
  const std::string plain =
      " --model " + Model("tinystories-656k") + " --prompt-ids 1 --max-tokens 4 --temperature 0";
  const std::string awq = " --model " + Model("tinystories-656k-awq") +
                          " --prompt-ids 1 --max-tokens 4 --temperature 0";
  RunResult half = RunXinfer("generate" + plain + " --dtype float16");
  EXPECT_EQ(half.exit_code, 1);
  EXPECT_NE(half.err.find("dtype float16 is not supported by the CPU backend"), std::string::npos)
      << half.err;
  RunResult typo = RunXinfer("generate" + plain + " --dtype bfloat17");
  EXPECT_EQ(typo.exit_code, 1);
  EXPECT_NE(typo.err.find("dtype must be auto, bfloat16, float32 or float, got 'bfloat17'"),
            std::string::npos)
      << typo.err;
  RunResult gptq = RunXinfer("generate" + awq + " --quantization gptq");
  EXPECT_EQ(gptq.exit_code, 1);
  EXPECT_NE(gptq.err.find("quantization 'gptq' is not supported (supported: awq, gguf)"),
            std::string::npos)
      << gptq.err;
  RunResult mismatch = RunXinfer("generate" + plain + " --quantization awq");
  EXPECT_EQ(mismatch.exit_code, 1);
  EXPECT_NE(mismatch.err.find("--quantization awq was given but the model"), std::string::npos)
      << mismatch.err;
  EXPECT_NE(mismatch.err.find("is not quantized"), std::string::npos) << mismatch.err;
  RunResult gguf = RunXinfer("generate" + awq + " --quantization gguf");
  EXPECT_EQ(gguf.exit_code, 1);
  EXPECT_NE(gguf.err.find("is quantized with awq"), std::string::npos) << gguf.err;

  // What vLLM users pass: the same tokens as without the flags (F32 weights: bfloat16 changes
  // nothing for them, and -q awq names what the model holds).
  RunResult base = RunXinfer("generate" + awq + " --json");
  ASSERT_EQ(base.exit_code, 0) << base.err;
  RunResult flagged = RunXinfer("generate" + awq + " --json --quantization awq --dtype float32");
  ASSERT_EQ(flagged.exit_code, 0) << flagged.err;
  EXPECT_EQ(json::parse(flagged.out)["token_ids"], json::parse(base.out)["token_ids"]);
  RunResult bf16 = RunXinfer("generate" + plain + " --json --dtype bfloat16");
  ASSERT_EQ(bf16.exit_code, 0) << bf16.err;
}

// vLLM's --kv-cache-dtype: bfloat16 accepted (the startup log names the cache's dtype), auto
// follows --dtype, fp8 refused with a clear message.
TEST(CliTest, KvCacheDtypeFlag) {
  if (!testing::HaveShared("models/tinystories-656k")) GTEST_SKIP() << "../shared not found";
  const std::string plain =
      " --model " + Model("tinystories-656k") + " --prompt-ids 1 --max-tokens 4 --temperature 0";
  // The KV cache line is logged at info level (CI runs with XINFER_LOG_LEVEL=warning).
  const std::string info = "XINFER_LOG_LEVEL=info";
  RunResult f32 = RunXinfer("generate" + plain + " --json", info);
  ASSERT_EQ(f32.exit_code, 0) << f32.err;
  EXPECT_NE(f32.err.find("GiB, F32)"), std::string::npos) << f32.err;
  RunResult bf16 = RunXinfer("generate" + plain + " --json --kv-cache-dtype bfloat16", info);
  ASSERT_EQ(bf16.exit_code, 0) << bf16.err;
  EXPECT_NE(bf16.err.find("GiB, BF16)"), std::string::npos) << bf16.err;
  EXPECT_EQ(json::parse(bf16.out)["token_ids"].size(), 4u);
  RunResult follows = RunXinfer("generate" + plain + " --json --dtype bfloat16", info);
  ASSERT_EQ(follows.exit_code, 0) << follows.err;
  EXPECT_NE(follows.err.find("GiB, BF16)"), std::string::npos) << follows.err;
  RunResult fp8 = RunXinfer("generate" + plain + " --kv-cache-dtype fp8");
  EXPECT_EQ(fp8.exit_code, 1);
  EXPECT_NE(fp8.err.find("kv_cache_dtype fp8 is not supported by the CPU backend"),
            std::string::npos)
      << fp8.err;
  RunResult typo = RunXinfer("generate" + plain + " --kv-cache-dtype bf16");
  EXPECT_EQ(typo.exit_code, 1);
  EXPECT_NE(typo.err.find("kv_cache_dtype must be auto, bfloat16, float32 or float, got 'bf16'"),
            std::string::npos)
      << typo.err;
}

}  // namespace
}  // namespace xinfer
