// The filter table behind FindFilter (builtins.h), assembled from two halves: filters_string.cc
// (text and number filters, and the pass-through ones) and filters_collection.cc (filters over
// sequences, mappings and attributes). Internal to chat_template.
#pragma once

#include <string>
#include <unordered_map>

#include "chat_template/builtins.h"
#include "chat_template/evaluator.h"

namespace xinfer::jinja {

using FilterTable = std::unordered_map<std::string, FilterFn>;

void AddStringFilters(FilterTable* table);
void AddCollectionFilters(FilterTable* table);

// The text a filter sees for a value: a string as it is, anything else as Jinja2's str() prints
// it (bounded by max_output_bytes).
StatusOr<std::string> ToStr(Renderer& r, const Value& v);

}  // namespace xinfer::jinja
