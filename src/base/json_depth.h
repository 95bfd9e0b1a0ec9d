// JSON parsing with a nesting limit, for text from clients and model files. nlohmann's parser is
// iterative, but copying, converting or walking a parsed value recurses once per level: a body of
// 200 000 nested brackets overflowed the stack. Real inputs nest a few dozen levels at most.
#pragma once

#include <string_view>

namespace xinfer {

// `text` parsed as Json (nlohmann::json or ordered_json); a discarded value when it is not valid
// JSON or opens more than `max_depth` nested objects / arrays (*too_deep then says which).
template <class Json>
Json ParseJsonNoDeeperThan(std::string_view text, int max_depth, bool* too_deep) {
  *too_deep = false;
  typename Json::parser_callback_t limit = [&](int depth, typename Json::parse_event_t event,
                                               Json&) {
    if ((event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start) &&
        depth >= max_depth)
      *too_deep = true;
    return !*too_deep;  // past the limit, keep nothing (the parse itself goes on)
  };
  Json j = Json::parse(text, limit, /*allow_exceptions=*/false);
  if (*too_deep) return Json(Json::value_t::discarded);
  return j;
}

}  // namespace xinfer
