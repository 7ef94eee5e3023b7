// Chat templates: the Jinja2 lexer and parser on any bytes (escapes, brackets, nesting and size bounds), then the
// judge's walk and the origins' fixed point over what parsed.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "precdetect/safety/chat_template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  precdetect::judge_chat_template(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
