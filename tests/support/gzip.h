// Gzip'd bytes for tests of readers that take plain or gzip'd files.
#pragma once

#include <libdeflate.h>

#include <string>
#include <string_view>

namespace gpusim::testing {

// `text` gzip'd as one member, or as two (its halves compressed apart, as `cat a.gz b.gz` makes).
inline std::string gzipped(const std::string& text, bool two_members = false) {
  const auto member = [](std::string_view part) {
    libdeflate_compressor* c = libdeflate_alloc_compressor(6);
    std::string out(libdeflate_gzip_compress_bound(c, part.size()), '\0');
    out.resize(libdeflate_gzip_compress(c, part.data(), part.size(), out.data(), out.size()));
    libdeflate_free_compressor(c);
    return out;
  };
  if (!two_members) return member(text);
  const std::string_view t = text;
  return member(t.substr(0, t.size() / 2)) + member(t.substr(t.size() / 2));
}

}  // namespace gpusim::testing
