#pragma once
/// URLs of models read over the network: what counts as one, its parts, and where a redirect leads.

#include <optional>
#include <string>
#include <string_view>

namespace precdetect {

/// An http(s) URL split into the parts the reader needs. `authority` is host[:port] as written, the unit a
/// credential is bound to.
struct Url {
  std::string scheme;     ///< "http" or "https"
  std::string authority;  ///< host[:port]
  std::string path;       ///< from the first '/', without the query; "/" when empty
  std::string query;      ///< after '?', without it; empty when none

  /// The URL written back: scheme://authority/path[?query].
  std::string text() const;
};

/// True for an input or file that names a remote model or file: `http://`, `https://`, `hf://` or `s3://`.
bool is_url(std::string_view text);

/// `text` split, when it is an http(s) URL with a host; nullopt otherwise (hf:// and s3:// are resolved to one
/// first, discover/remote.h).
std::optional<Url> parse_http_url(std::string_view text);

/// A Hub model named by URL: `hf://org/name[@revision][/folder]`.
struct HubRef {
  std::string repo;      ///< "org/name"
  std::string revision;  ///< a branch, tag or commit; "main" when none is given
  std::string folder;    ///< a folder of the repository ("unet": a diffusers pipeline's component); empty: its top
};

/// `text` split when it is `hf://org/name[@revision][/folder]`: a revision that holds '/' is written with `%2F`
/// (`@refs%2Fpr%2F1`, as huggingface_hub's HfFileSystem writes it), and is decoded here; the folder keeps its '/'s,
/// none at either end. nullopt for anything else (an empty org, name or revision, a revision with a `.` or `..`
/// segment, which no git ref has).
std::optional<HubRef> parse_hub_url(std::string_view text);

/// Where a redirect's `Location` leads from `base`: an absolute URL as it is, `/path` on base's authority, a
/// relative one beside base's path.
std::string resolve_location(const Url& base, std::string_view location);

/// The part of `url` after the last '/' of its path: the file's name.
std::string url_file_name(std::string_view url);

/// `url` up to and including the last '/' of its path: the folder its neighbours are named from.
std::string url_folder(std::string_view url);

/// True when the '/'-separated `path` has a `.` or `..` segment: a URL's path loses them (RFC 3986's
/// remove_dot_segments, which libcurl applies), so it would name another file; an S3 key keeps them (remote_env.h).
bool has_dot_segment(std::string_view path);

/// `text` with every byte outside RFC 3986's unreserved set (and '/', when `keep_slash`) percent-encoded: how an
/// S3 key or a Hub file name is written into a path.
std::string percent_encode(std::string_view text, bool keep_slash);

}  // namespace precdetect
