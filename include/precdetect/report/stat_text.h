#pragma once
/// How the text renderings (table, markdown, the progress line) print statistics and names.

#include <string>

namespace precdetect {

/// "%.3e" as seed 000 prints, "-" for a value that does not exist, "inf" for an infinite one.
std::string format_stat(bool present, double value);

/// `text` cut to `width` characters (at least 5) by dropping its middle, where names say least: "org/…/model-7b".
std::string elide_middle(const std::string& text, size_t width);

}  // namespace precdetect
