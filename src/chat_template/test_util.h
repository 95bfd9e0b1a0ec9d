// Helpers shared by the chat_template tests.
#pragma once

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "chat_template/chat_template.h"

namespace xinfer::testing {

// One table-driven rendering case: `want` is what Jinja2 renders for `tmpl` with `ctx` (JSON).
struct RenderCase {
  const char* name;
  const char* tmpl;
  const char* ctx;
  const char* want;
};

// Renders `source` with `context_json` (a JSON object text); returns the output, or
// "ERROR: <message>" so that expectations can state the exact failure text.
inline std::string RenderOrError(const std::string& source, const std::string& context_json = "{}",
                                 const TemplateLimits& limits = {}) {
  auto tmpl = ChatTemplate::Parse(source, limits);
  if (!tmpl.ok()) return "ERROR: " + tmpl.status().message();
  auto out = tmpl->Render(nlohmann::ordered_json::parse(context_json));
  if (!out.ok()) return "ERROR: " + out.status().message();
  return *out;
}

inline std::string SharedDir() { return XINFER_SHARED_DIR; }

inline bool ReadText(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

}  // namespace xinfer::testing
