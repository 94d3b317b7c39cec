// The plain (non-libFuzzer) driver of a fuzz target: runs its entry
// function on every file named, or in a directory named, on the command
// line, and prints how many. A crash or failed FUZZ_CHECK ends the process
// like any crashing test; an unreadable argument exits 1.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

int RunFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    return 1;
  }
  const std::string bytes((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  std::fprintf(stderr, "replaying %s (%zu bytes)\n", path.c_str(),
               bytes.size());
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()),
                         bytes.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int inputs = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg(argv[i]);
    std::error_code ec;
    if (std::filesystem::is_directory(arg, ec)) {
      std::vector<std::filesystem::path> files;
      for (const auto& e : std::filesystem::directory_iterator(arg)) {
        if (e.is_regular_file() && e.path().filename() != ".gitkeep") {
          files.push_back(e.path());
        }
      }
      std::sort(files.begin(), files.end());
      for (const auto& f : files) {
        if (RunFile(f) != 0) return 1;
        ++inputs;
      }
    } else if (std::filesystem::exists(arg, ec)) {
      if (RunFile(arg) != 0) return 1;
      ++inputs;
    }
    // A missing directory (no regressions yet) replays nothing.
  }
  std::printf("%d inputs replayed without a crash\n", inputs);
  return 0;
}
