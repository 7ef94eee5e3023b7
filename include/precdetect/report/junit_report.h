#pragma once
/// --format junit: JUnit XML, as GitLab's `artifacts:reports:junit` and the JUnit report actions read it: a test
/// suite per model, holding a test case `scan` (an error when the model could not be read) and one per gate the run
/// checked (a failure whose message is the gate's reason).

#include <string>
#include <string_view>

#include "precdetect/report/report.h"

namespace precdetect {

/// `text` as XML character data or an attribute value: markup characters as entities, line breaks and tabs as
/// character references (kept in attributes), and whatever XML 1.0 cannot hold (control characters, invalid
/// UTF-8) as U+FFFD.
std::string xml_escaped(std::string_view text);

/// The whole document. A gate a model could not be judged by (it was not read) is a skipped test case.
std::string render_junit(const ScanReport& report);

}  // namespace precdetect
