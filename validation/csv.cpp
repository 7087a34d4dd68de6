#include "validation/csv.h"

#include <charconv>

#include "replay/gzip_text.h"
#include "sim/error.h"

namespace gpusim::validation {

CsvTable CsvTable::read(const std::filesystem::path& file) {
  // The large measurement tables are kept gzip'd (ops<N>_<gpu>.csv.gz): inflated whole.
  const std::string text = replay::read_text_file(file);

  CsvTable t;
  t.file_ = file;
  std::vector<std::string> record;
  std::string field;
  bool quoted = false, at_line_start = true;
  int line = 1, record_line = 1;
  auto end_record = [&] {
    record.push_back(field);
    field.clear();
    if (t.header_.empty()) {
      t.header_ = record;
      for (std::size_t i = 0; i < record.size(); ++i) t.column_[record[i]] = i;
    } else if (!(record.size() == 1 && record[0].empty())) {
      if (record.size() != t.header_.size()) {
        throw ConfigError(file.string(), record_line, "",
                          "row has " + std::to_string(record.size()) + " fields, header has " +
                              std::to_string(t.header_.size()));
      }
      t.rows_.push_back(record);
      t.lines_.push_back(record_line);
    }
    record.clear();
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (at_line_start && !quoted && t.header_.empty() && c == '#') {  // comment line
      while (i < text.size() && text[i] != '\n') ++i;
      ++line;
      continue;
    }
    if (at_line_start) record_line = line;
    at_line_start = false;
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        if (c == '\n') ++line;
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      record.push_back(field);
      field.clear();
    } else if (c == '\n') {
      end_record();
      ++line;
      at_line_start = true;
    } else if (c != '\r') {
      field += c;
    }
  }
  if (!field.empty() || !record.empty()) end_record();
  if (t.header_.empty()) throw ConfigError(file.string(), 0, "", "empty CSV file");
  return t;
}

const std::string& CsvTable::at(std::size_t row, const std::string& column) const {
  const auto it = column_.find(column);
  if (it == column_.end()) throw ConfigError(file_.string(), 1, column, "no such column");
  return rows_.at(row)[it->second];
}

double CsvTable::number(std::size_t row, const std::string& column) const {
  const std::string& s = at(row, column);
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) {
    throw ConfigError(file_.string(), lines_[row], column, "'" + s + "' is not a number");
  }
  return v;
}

}  // namespace gpusim::validation
