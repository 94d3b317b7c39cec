// The client's files written whole (client/replace_file.h): created
// exclusively beside their name, never through a symlink, and named only
// once whole. Also the commands that write files through it.
#include "client/replace_file.h"

#include <sys/stat.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "client/cli.h"
#include "tests/client/fake_tuner.h"
#include "tests/testing/process.h"

namespace irontune {
namespace {

namespace fs = std::filesystem;
using e2e::TempDir;

std::string Slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void Put(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// The names in `dir`, sorted.
std::vector<std::string> Names(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST_CASE("ReplaceFile writes the file whole, with the umask's mode") {
  const fs::path dir = TempDir("replace");
  const fs::path file = dir / "out.jsonl";
  Put(file, "old\n");
  const mode_t old_mask = umask(027);
  const absl::Status s = ReplaceFile(file.string(), "new\n");
  umask(old_mask);
  REQUIRE(s.ok());
  CHECK(Slurp(file) == "new\n");
  struct stat st;
  REQUIRE(lstat(file.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0640);
  CHECK(Names(dir) == std::vector<std::string>{"out.jsonl"});
}

TEST_CASE("ReplaceFile replaces a symlink at the name, not what it points to") {
  const fs::path dir = TempDir("replace-link");
  const fs::path victim = dir / "victim";
  Put(victim, "precious\n");
  const fs::path file = dir / "out.jsonl";
  fs::create_symlink(victim, file);
  REQUIRE(ReplaceFile(file.string(), "new\n").ok());
  CHECK(Slurp(victim) == "precious\n");
  CHECK_FALSE(fs::is_symlink(file));
  CHECK(Slurp(file) == "new\n");
}

TEST_CASE(
    "a FileReplacement not committed leaves nothing; a bad directory "
    "is named") {
  const fs::path dir = TempDir("replace-abandon");
  {
    FileReplacement file((dir / "out").string());
    REQUIRE(file.status().ok());
    CHECK(file.Append("half"));
    CHECK(Names(dir).size() == 1);  // the temporary
  }
  CHECK(Names(dir).empty());

  FileReplacement missing((dir / "no-such-dir" / "out").string());
  CHECK(missing.status().code() == absl::StatusCode::kDataLoss);
  CHECK_THAT(std::string(missing.status().message()),
             Catch::Contains("no-such-dir/out"));
  CHECK_FALSE(missing.Append("x"));
  CHECK_FALSE(missing.Commit().ok());
}

TEST_CASE(
    "cache export FILE never writes through a symlink planted beside "
    "it") {
  FakeServer server;
  const fs::path dir = server.dir();
  const fs::path victim = dir / "victim";
  Put(victim, "precious\n");
  const fs::path file = dir / "cache.jsonl";
  // The name the export's temporary once had.
  fs::create_symlink(victim, dir / "cache.jsonl.tmp");
  const std::vector<std::string> args = {"irontune-client", "--server",
                                         server.address(),  "cache",
                                         "export",          file.string()};
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  const int code = RunClient(static_cast<int>(argv.size()), argv.data(), out,
                             err, ClientEnvironment());
  INFO(err.str());
  REQUIRE(code == kExitOk);
  CHECK(Slurp(victim) == "precious\n");
  CHECK_FALSE(fs::is_symlink(file));
  CHECK(Slurp(file) == "{\"key\": \"a\"}\n{\"key\": \"b\"}\n");
}

}  // namespace
}  // namespace irontune
