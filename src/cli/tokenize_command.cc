// `xinfer tokenize --model PATH (TEXT | --file F)`: prints the token ids as a JSON array.
#include <fmt/core.h>

#include "base/mapped_file.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "tokenizer/tokenizer.h"

namespace xinfer {
namespace {

struct TokenizeOptions {
  std::string model;
  std::string text;
  std::string file;
  bool no_special = false;
};

int RunTokenize(const TokenizeOptions& o) {
  if (o.text.empty() == o.file.empty())
    return ReportError(InvalidArgument("give exactly one of TEXT or --file"));
  std::string text = o.text;
  if (!o.file.empty()) {
    auto content = ReadFileToString(o.file);
    if (!content.ok()) return ReportError(content.status());
    text = *content;
  }
  auto tokenizer = Tokenizer::FromDir(o.model);
  if (!tokenizer.ok()) return ReportError(tokenizer.status());
  auto ids = (*tokenizer)->Encode(text, !o.no_special);
  if (!ids.ok()) return ReportError(ids.status());
  std::string out = "[";
  for (size_t i = 0; i < ids->size(); ++i) out += (i ? ", " : "") + std::to_string((*ids)[i]);
  fmt::print("{}]\n", out);
  return 0;
}

}  // namespace

void AddTokenizeCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<TokenizeOptions>();
  CLI::App* cmd = app.add_subcommand("tokenize", "Print the token ids of a text as JSON");
  cmd->add_option("--model", opts->model, "Model folder with tokenizer.json")->required();
  cmd->add_option("text", opts->text, "Text to tokenize");
  cmd->add_option("--file", opts->file, "Read the text from a file");
  cmd->add_flag("--no-special-tokens", opts->no_special, "Do not add BOS/EOS");
  cmd->callback([opts, exit_code] { *exit_code = RunTokenize(*opts); });
}

}  // namespace xinfer
