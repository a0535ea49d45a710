#include "pruner/measure/csv_table.h"

#include <csv.h>

#include <memory>

#include <fmt/format.h>

#include "models/errors.h"

namespace headprune::pruner {
namespace {

/// The records being built while libcsv calls back.
struct Records {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
};

void on_field(void* data, std::size_t size, void* sink) {
  static_cast<Records*>(sink)->row.emplace_back(static_cast<const char*>(data), size);
}

void on_record(int, void* sink) {
  auto* records = static_cast<Records*>(sink);
  records->rows.push_back(std::move(records->row));
  records->row.clear();
}

}  // namespace

std::vector<std::vector<std::string>> parse_csv(const std::string& text, const std::string& name) {
  csv_parser parser{};
  if (csv_init(&parser, CSV_STRICT | CSV_STRICT_FINI) != 0) throw Error("libcsv could not be initialised");
  std::unique_ptr<csv_parser, void (*)(csv_parser*)> guard(&parser, csv_free);
  Records records;
  if (csv_parse(&parser, text.data(), text.size(), on_field, on_record, &records) != text.size() ||
      csv_fini(&parser, on_field, on_record, &records) != 0)
    throw Error(fmt::format("{} is not valid CSV: {}", name, csv_strerror(csv_error(&parser))));
  return records.rows;
}

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> fields;
  std::size_t start = 0;
  while (true) {
    const auto tab = line.find('\t', start);
    fields.push_back(line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
    if (tab == std::string::npos) return fields;
    start = tab + 1;
  }
}

}  // namespace headprune::pruner
