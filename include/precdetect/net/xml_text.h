#pragma once
/// The text of simple XML elements: enough of S3's ListObjectsV2 answer (its keys, prefixes and continuation token)
/// to list a folder, without an XML library for three tags.

#include <string>
#include <string_view>
#include <vector>

namespace precdetect {

/// The text of each `<tag>...</tag>` element in `xml`, in document order, with XML's five predefined entities and
/// its character references (`&#39;`, `&#x2F;`, which S3-compatible stores write for `'` and `"`) decoded in one
/// pass, so that a decoded `&` never starts another. An unterminated element ends the list; a reference that is
/// none of these stays as written.
std::vector<std::string> xml_element_texts(std::string_view xml, std::string_view tag);

}  // namespace precdetect
