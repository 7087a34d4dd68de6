// One line of CSV (RFC 4180 quoting: fields with a comma, quote or newline are quoted, quotes
// doubled), for the files the CLI writes and reads back (a sweep's journal and results).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace gpusim::cli {

std::string csv_line(const std::vector<std::string>& fields);

// The fields of one line as csv_line writes them; nullopt for a line cut inside quotes.
std::optional<std::vector<std::string>> split_csv_line(const std::string& line);

}  // namespace gpusim::cli
