// Gzip'd text, inflated whole: profiler traces (gpusim replay) and the large measurement files
// in validation/data, which are kept gzip'd to keep the repository small.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>

namespace gpusim::replay {

// Text in one buffer with at least `padding` zero bytes after it (simdjson reads past the end).
struct PaddedText {
  std::unique_ptr<char[]> bytes;
  std::size_t size = 0, capacity = 0;  // capacity: size plus the padding and any spare room
};

// Whether the bytes at `in` (of `n`) begin a gzip member.
bool is_gzip(const unsigned char* in, std::size_t n);

// Every gzip member of in[0, n) (one, or several as `cat a.gz b.gz` makes) inflated into one
// buffer, by libdeflate, with `padding` zero bytes after the text. A member's last four bytes give
// its size (mod 2^32), so the buffer is sized once for a single member. ConfigError naming `file`
// on corrupt or truncated data.
PaddedText gunzip(const unsigned char* in, std::size_t n, std::size_t padding, const std::string& file);

// The whole of `file` (read_input_file's checks and messages), inflated when it is gzip'd: the
// measurement tables and case files in validation/data are read through this.
std::string read_text_file(const std::filesystem::path& file);

}  // namespace gpusim::replay
