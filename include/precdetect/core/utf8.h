#pragma once
/// Code points written as UTF-8: what a Jinja2 escape (`\u00e9`) and an XML character reference (`&#233;`) decode to.

#include <cstdint>
#include <string>

namespace precdetect {

/// Appends `code_point` (at most 0x10FFFF) to `out` in UTF-8, in one to four bytes. Surrogates are written as their
/// three bytes, as Python's str may hold them; a caller that must refuse them checks before.
void append_utf8(std::string& out, uint32_t code_point);

}  // namespace precdetect
