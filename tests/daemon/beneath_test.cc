#include "daemon/base/beneath.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/testing/process.h"

namespace irontune {
namespace {

namespace fs = std::filesystem;

// An output dir as a build command may leave it: a good file, a
// subdirectory with one, and a symlink of each kind to outside it.
struct Tree {
  std::string dir = e2e::TempDir("beneath") + "/out";
  std::string outside = fs::path(dir).parent_path() / "outside";
  UniqueFd fd;

  Tree() {
    fs::create_directories(dir + "/sub");
    fs::create_directories(outside);
    std::ofstream(dir + "/x.elf") << "ELF!";
    std::ofstream(dir + "/sub/y.bin") << "12345678";
    std::ofstream(outside + "/secret") << "not the builder's";
    fs::create_directory_symlink(outside, dir + "/link");
    fs::create_symlink(outside + "/secret", dir + "/file_link");
    fs::create_symlink("x.elf", dir + "/inside_link");
    REQUIRE(::mkfifo((dir + "/fifo").c_str(), 0600) == 0);
    absl::StatusOr<UniqueFd> opened = OpenDirectory(dir);
    REQUIRE(opened.ok());
    fd = *std::move(opened);
  }
};

std::string Error(const Tree& t, const std::string& path,
                  BeneathMethod method) {
  absl::StatusOr<BeneathFile> f = OpenBeneath(t.fd.get(), path, method);
  return f.ok() ? "ok" : std::string(f.status().message());
}

std::string Read(BeneathFile& f) {
  std::string text(f.size, '\0');
  REQUIRE(::read(f.fd.get(), text.data(), text.size()) ==
          static_cast<ssize_t>(text.size()));
  return text;
}

TEST_CASE("OpenBeneath opens regular files inside the directory") {
  Tree t;
  for (BeneathMethod m : {BeneathMethod::kBest, BeneathMethod::kWalk}) {
    absl::StatusOr<BeneathFile> f = OpenBeneath(t.fd.get(), "x.elf", m);
    REQUIRE(f.ok());
    CHECK(f->size == 4);
    CHECK(Read(*f) == "ELF!");
    f = OpenBeneath(t.fd.get(), "./sub//y.bin", m);
    REQUIRE(f.ok());
    CHECK(Read(*f) == "12345678");
    // The descriptor blocks again: it was opened O_NONBLOCK for fifos only.
    CHECK((::fcntl(f->fd.get(), F_GETFL) & O_NONBLOCK) == 0);
  }
}

TEST_CASE("OpenBeneath follows no symlink, inside or out") {
  Tree t;
  for (BeneathMethod m : {BeneathMethod::kBest, BeneathMethod::kWalk}) {
    CHECK(Error(t, "link/secret", m) ==
          "\"link/secret\": a component (\"link\") is a symlink");
    CHECK(Error(t, "file_link", m) == "\"file_link\": the file is a symlink");
    CHECK(Error(t, "inside_link", m) ==
          "\"inside_link\": the file is a symlink");
    CHECK(OpenBeneath(t.fd.get(), "link/secret", m).status().code() ==
          absl::StatusCode::kFailedPrecondition);
  }
}

TEST_CASE("OpenBeneath refuses paths that leave the directory") {
  Tree t;
  for (BeneathMethod m : {BeneathMethod::kBest, BeneathMethod::kWalk}) {
    CHECK(Error(t, "../outside/secret", m) ==
          "\"../outside/secret\": has a \"..\" component, which may leave it");
    CHECK(Error(t, "sub/../x.elf", m).find("has a \"..\" component") !=
          std::string::npos);
    CHECK(Error(t, t.outside + "/secret", m).find("is absolute") !=
          std::string::npos);
    CHECK(Error(t, "", m) == "the path is empty");
    CHECK(Error(t, ".", m) == "\".\": names the directory itself");
    CHECK(
        Error(t, std::string("x.elf\0/etc", 10), m).find("holds a NUL byte") !=
        std::string::npos);
    CHECK(OpenBeneath(t.fd.get(), "/etc/hostname", m).status().code() ==
          absl::StatusCode::kInvalidArgument);
  }
}

TEST_CASE("OpenBeneath opens only regular files") {
  Tree t;
  for (BeneathMethod m : {BeneathMethod::kBest, BeneathMethod::kWalk}) {
    // A fifo nobody writes is refused at once, not waited on.
    CHECK(Error(t, "fifo", m) == "\"fifo\": is not a regular file (a fifo)");
    CHECK(Error(t, "sub", m) == "\"sub\": is not a regular file (a directory)");
    CHECK(Error(t, "x.elf/y", m) ==
          "\"x.elf/y\": a component (\"x.elf\") is not a directory");
    CHECK(Error(t, "missing.elf", m) ==
          "\"missing.elf\": the file does not exist");
    CHECK(OpenBeneath(t.fd.get(), "sub/missing/z", m).status().code() ==
          absl::StatusCode::kNotFound);
  }
  // A device (a build command cannot make one; /dev has them).
  absl::StatusOr<UniqueFd> dev = OpenDirectory("/dev");
  REQUIRE(dev.ok());
  absl::StatusOr<BeneathFile> null = OpenBeneath(dev->get(), "null");
  REQUIRE_FALSE(null.ok());
  CHECK(null.status().message() ==
        "\"null\": is not a regular file (a character device)");
}

TEST_CASE("OpenDirectory refuses a symlink to a directory") {
  Tree t;
  absl::StatusOr<UniqueFd> d = OpenDirectory(t.dir + "/link");
  REQUIRE_FALSE(d.ok());
  CHECK(d.status().message().find("not a directory (or a symlink to one)") !=
        std::string::npos);
  CHECK(OpenDirectory(t.dir + "/nope").status().code() ==
        absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace irontune
