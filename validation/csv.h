// A small RFC-4180 CSV reader for the reference data in validation/data: quoted fields may
// hold commas, quotes ("") and newlines; lines starting with '#' before the header are comments.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace gpusim::validation {

class CsvTable {
 public:
  // Throws ConfigError naming the file (and line) when it cannot be read or a row is ragged.
  static CsvTable read(const std::filesystem::path& file);

  const std::vector<std::string>& header() const { return header_; }
  std::size_t rows() const { return rows_.size(); }
  // The cell of `row` in `column`; ConfigError when the column does not exist.
  const std::string& at(std::size_t row, const std::string& column) const;
  double number(std::size_t row, const std::string& column) const;
  int line_of(std::size_t row) const { return lines_[row]; }
  const std::filesystem::path& file() const { return file_; }

 private:
  std::filesystem::path file_;
  std::vector<std::string> header_;
  std::map<std::string, std::size_t> column_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<int> lines_;
};

}  // namespace gpusim::validation
