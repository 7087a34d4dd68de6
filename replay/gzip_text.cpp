#include "replay/gzip_text.h"

#include <libdeflate.h>

#include <algorithm>
#include <new>

#include "sim/error.h"
#include "sim/input_file.h"

namespace gpusim::replay {
namespace {

// Room for `n` bytes of text plus `padding`, the text so far kept.
void reserve(PaddedText& text, std::size_t n, std::size_t padding) {
  auto more = std::make_unique_for_overwrite<char[]>(n + padding);
  std::copy_n(text.bytes.get(), text.size, more.get());
  text.bytes = std::move(more);
  text.capacity = n + padding;
}

}  // namespace

bool is_gzip(const unsigned char* in, std::size_t n) { return n >= 18 && in[0] == 0x1f && in[1] == 0x8b; }

PaddedText gunzip(const unsigned char* in, std::size_t n, std::size_t padding, const std::string& file) {
  PaddedText text;
  if (n < 4) throw ConfigError(file, 0, "", "corrupt gzip data (a truncated gzip file?)");
  const unsigned char* last4 = in + n - 4;
  // One byte more than the trailer says, so that a short hint (a multi-member file) shows.
  reserve(text,
          (std::size_t{last4[0]} | std::size_t{last4[1]} << 8 | std::size_t{last4[2]} << 16 |
           std::size_t{last4[3]} << 24) + 1,
          padding);
  const std::unique_ptr<libdeflate_decompressor, void (*)(libdeflate_decompressor*)> inflater(
      libdeflate_alloc_decompressor(), libdeflate_free_decompressor);
  if (!inflater) throw std::bad_alloc();
  for (std::size_t at = 0; at < n && is_gzip(in + at, n - at);) {
    std::size_t used_in = 0, used_out = 0;
    const auto r = libdeflate_gzip_decompress_ex(inflater.get(), in + at, n - at, text.bytes.get() + text.size,
                                                 text.capacity - text.size - padding, &used_in, &used_out);
    if (r == LIBDEFLATE_INSUFFICIENT_SPACE) {
      reserve(text, 2 * (text.capacity + n), padding);
      continue;
    }
    if (r != LIBDEFLATE_SUCCESS) throw ConfigError(file, 0, "", "corrupt gzip data (a truncated gzip file?)");
    at += used_in;
    text.size += used_out;
  }
  std::fill(text.bytes.get() + text.size, text.bytes.get() + text.capacity, '\0');
  return text;
}

std::string read_text_file(const std::filesystem::path& file) {
  std::string raw = read_input_file(file);
  const auto* in = reinterpret_cast<const unsigned char*>(raw.data());
  if (!is_gzip(in, raw.size())) return raw;
  const PaddedText text = gunzip(in, raw.size(), 0, file.string());
  return std::string(text.bytes.get(), text.size);
}

}  // namespace gpusim::replay
