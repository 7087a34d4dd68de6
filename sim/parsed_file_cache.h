// What a program parsed from an input file, kept for the next time it reads the same file: every
// lookup reads the file again and reuses the parse only while the text is the same to the byte,
// so a cached result is always the one a fresh parse would give. For small files read by every
// call (hardware presets, the preset catalog) whose parsing is most of a short call's time; the
// Python API makes many such calls in one process. Thread-safe.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "sim/input_file.h"

namespace gpusim {

template <class Value>
class ParsedFileCache {
 public:
  // `parse(text)` makes the value from the file's text; its errors propagate and nothing is kept.
  template <class Parse>
  std::shared_ptr<const Value> get(const std::filesystem::path& file, Parse&& parse) {
    std::string text = read_input_file(file);
    const std::string key = file.string();
    {
      const std::lock_guard lock(mutex_);
      if (const auto it = entries_.find(key); it != entries_.end() && it->second.text == text) return it->second.value;
    }
    auto value = std::make_shared<const Value>(parse(text));
    const std::lock_guard lock(mutex_);
    entries_.insert_or_assign(key, Entry{std::move(text), value});
    return value;
  }

 private:
  struct Entry {
    std::string text;
    std::shared_ptr<const Value> value;
  };
  std::mutex mutex_;
  std::map<std::string, Entry> entries_;  // by path as given
};

}  // namespace gpusim
