#pragma once
/// Archive members that extraction would write outside its folder (zip slip, tar slip): the rules of PEP 706's
/// `filter='data'`, which Python 3.14 applies by default and which NeMo's restore and `tarfile` users rely on.
/// A zip or tar precdetect walks reports each such member as FileTampering::kArchiveEscape.

#include <optional>
#include <string>
#include <string_view>

namespace precdetect {

/// Why a member named `name` would land outside the extraction folder, or nullopt: an absolute name (`/x`, `\x`,
/// `C:x`), or a `..` component (either separator) that climbs above the folder.
std::optional<std::string> member_name_escape(std::string_view name);

/// Why a link member `name` pointing at `target` would reach outside the extraction folder, or nullopt: an
/// absolute target, or one that climbs above the folder from the member's own folder (a symbolic link) or from
/// the folder itself (a hard link, whose target tar names from the archive's root).
std::optional<std::string> link_member_escape(std::string_view name, std::string_view target, bool hard);

}  // namespace precdetect
