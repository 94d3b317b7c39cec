#include "client/iron_cost_files.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace irontune {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// IRON's files are small; a CostTable of a large model is a few MiB.
constexpr std::uintmax_t kMaxFileBytes = std::uintmax_t{64} << 20;

absl::StatusOr<std::string> ReadWhole(const fs::path& path) {
  std::error_code ec;
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) {
    return absl::NotFoundError(
        absl::StrCat("cannot read ", path.string(), ": ", ec.message()));
  }
  if (size > kMaxFileBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path.string(), ": ", size,
                     " bytes, more than an IRON cost file's 64 MiB"));
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in)
    return absl::NotFoundError(absl::StrCat("cannot read ", path.string()));
  return text.str();
}

std::string Line(const fs::path& path, const std::string& text) {
  json line = {{"kind", "iron_file"}, {"path", path.string()}, {"text", text}};
  return line.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

absl::StatusOr<std::optional<std::vector<std::string>>> IronImportLines(
    const std::string& path) {
  std::error_code ec;
  std::vector<std::string> lines;
  if (fs::is_directory(path, ec)) {
    std::vector<fs::path> files;
    for (fs::recursive_directory_iterator it(path, ec), end; !ec && it != end;
         it.increment(ec)) {
      if (it->is_regular_file(ec)) files.push_back(it->path());
    }
    if (ec) {
      return absl::NotFoundError(
          absl::StrCat("listing ", path, ": ", ec.message()));
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& file : files) {
      absl::StatusOr<std::string> text = ReadWhole(file);
      if (!text.ok()) return text.status();
      lines.push_back(Line(file, *text));
    }
    return lines;
  }
  absl::StatusOr<std::string> text = ReadWhole(path);
  if (!text.ok()) return text.status();
  const json j = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || j.contains("kind")) {
    return std::nullopt;
  }
  lines.push_back(Line(path, *text));
  return lines;
}

}  // namespace irontune
