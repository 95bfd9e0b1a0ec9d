// Methods of str and dict values; see methods.cc.
#pragma once

#include <string>

#include "chat_template/value.h"

namespace xinfer::jinja {

using Method = StatusOr<Value> (*)(Renderer& r, const Value& self, CallArgs& args);

// nullptr when the type has no such method.
Method FindStrMethod(const std::string& name);
Method FindDictMethod(const std::string& name);
Method FindListMethod(const std::string& name);

}  // namespace xinfer::jinja
