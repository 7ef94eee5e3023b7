#pragma once
/// How the text renderings (table, markdown) print a statistic.

#include <string>

namespace precdetect {

/// "%.3e" as seed 000 prints, "-" for a value that does not exist, "inf" for an infinite one.
std::string format_stat(bool present, double value);

}  // namespace precdetect
