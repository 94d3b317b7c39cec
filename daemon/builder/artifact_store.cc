#include "daemon/builder/artifact_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <tuple>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "daemon/base/beneath.h"
#include "daemon/base/sha256.h"
#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"

namespace irontune {
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

// /2: full-ELF arenas and views, value kinds. /3: the files are irontuned's
// copies, made through the descriptors the reply's check opened, under
// names of irontuned's (FileRoles). An entry of another format (a /1
// entry, whose manifest XrtDevice refuses; a /2 entry, which holds the
// builder's own files, as they stood after the check) is deleted and
// rebuilt.
constexpr char kEntryFormat[] = "irontune-artifact-entry/3";
// daemon/xrt/artifact_manifest.h's kXrtManifestFormat (this layer cannot
// include it; tests/xrt/real_path_e2e_test.cc loads what is written here).
constexpr char kManifestFormat[] = "irontune-xrt-artifact/2";
constexpr char kEntryFile[] = "entry.json";
constexpr char kTmpDir[] = ".tmp";

// A file of an entry, as entry.json records it.
struct StoredFile {
  std::string role;  // "xclbin", "insts", "elf"
  std::string name;  // in the entry's directory
  uint64_t nbytes = 0;
  std::string sha256;
};

// Reads `from` from its start to its end, hashing it and, when `to` >= 0,
// writing it there. The bytes read into *nbytes; the sha256 hex.
absl::StatusOr<std::string> Pump(int from, int to, uint64_t* nbytes) {
  Sha256 hash;
  char buffer[1 << 16];
  uint64_t offset = 0;
  while (true) {
    const ssize_t n =
        ::pread(from, buffer, sizeof buffer, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::InternalError(std::strerror(errno));
    if (n == 0) break;
    hash.Update(std::string_view(buffer, static_cast<size_t>(n)));
    for (ssize_t done = 0; to >= 0 && done < n;) {
      const ssize_t w =
          ::write(to, buffer + done, static_cast<size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return absl::InternalError(std::strerror(errno));
      done += w;
    }
    offset += static_cast<uint64_t>(n);
  }
  *nbytes = offset;
  return hash.HexDigest();
}

// The files of a reply by role, with the names their copies get.
std::vector<std::pair<StoredFile, const BuiltFile*>> FileRoles(
    const BuiltFiles& files) {
  std::vector<std::pair<StoredFile, const BuiltFile*>> out;
  const auto add = [&out](const char* role, const char* name,
                          const BuiltFile& file) {
    if (file.path.empty()) return;
    StoredFile stored;
    stored.role = role;
    stored.name = name;
    out.emplace_back(std::move(stored), &file);
  };
  add("elf", "design.elf", files.elf);
  add("xclbin", "design.xclbin", files.xclbin);
  add("insts", "insts.bin", files.insts);
  return out;
}

// Copies `from` into a new file `to.name` of the directory `dir_fd` (shown
// as `dir`), filling in `to`'s size and sha256. Internal naming the file
// when it cannot be copied or its size changed since it was opened.
absl::Status CopyInto(const BuiltFile& from, int dir_fd, const fs::path& dir,
                      StoredFile& to) {
  const std::string shown = (dir / to.name).string();
  UniqueFd out(::openat(dir_fd, to.name.c_str(),
                        O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                        0600));
  if (!out.valid()) {
    return absl::InternalError(
        absl::StrCat("cannot create ", shown, ": ", std::strerror(errno)));
  }
  absl::StatusOr<std::string> sha = Pump(from.fd.get(), out.get(), &to.nbytes);
  if (!sha.ok()) {
    return absl::InternalError(absl::StrCat("cannot copy artifact ", from.path,
                                            " to ", shown, ": ",
                                            sha.status().message()));
  }
  if (to.nbytes != from.nbytes) {
    return absl::InternalError(absl::StrCat(
        "artifact ", from.path, " changed while it was copied: ", from.nbytes,
        " bytes when checked, ", to.nbytes, " copied"));
  }
  to.sha256 = *std::move(sha);
  return absl::OkStatus();
}

// The entry.json of a build whose files are `files`.
Json EntryJson(const std::string& recipe_hash,
               const std::vector<StoredFile>& stored, const BuilderReply& reply,
               const BuildRequest& request) {
  Json files = Json::object();
  for (const StoredFile& f : stored) {
    files[f.role] = {
        {"path", f.name}, {"nbytes", f.nbytes}, {"sha256", f.sha256}};
  }
  Json buffers = Json::array(), symbols = Json::array();
  Json arenas = Json::array();
  for (size_t i = 0; i < reply.buffers.size(); ++i) {
    const ArtifactBuffer& b = reply.buffers[i];
    Json one = {{"name", b.name},           {"step", b.step},
                {"op_buffer", b.op_buffer}, {"nbytes", b.nbytes},
                {"fills", b.fills},         {"drains", b.drains}};
    if (i < reply.views.size()) {
      one["arena"] = reply.views[i].arena;
      one["offset"] = reply.views[i].offset;
    }
    buffers.push_back(std::move(one));
  }
  for (const BuiltArena& a : reply.arenas)
    arenas.push_back({{"name", a.name}, {"nbytes", a.nbytes}});
  for (const BuiltSymbol& s : reply.symbols) {
    Json one = {{"name", s.name}};
    if (s.insts_word >= 0) one["insts_word"] = s.insts_word;
    if (s.scratchpad_word >= 0) {
      one["scratchpad_word"] = s.scratchpad_word;
      one["kind"] = s.kind;
    }
    symbols.push_back(one);
  }
  return Json{{"format", kEntryFormat},
              {"arenas", arenas},
              {"recipe_hash", recipe_hash},
              {"builder_artifact_hash", reply.builder_artifact_hash},
              {"packaging", PackagingWord(request.packaging)},
              {"kernel", reply.files.kernel},
              {"files", files},
              {"buffers", buffers},
              {"symbols", symbols}};
}

// The artifact of `entry`, its files under `dir`, for `request`. Throws
// nlohmann::json::exception for a malformed entry.
Artifact ArtifactOf(const Json& entry, const fs::path& dir,
                    const BuildRequest& request) {
  Artifact a;
  a.recipe_hash = entry.at("recipe_hash").get<std::string>();
  a.packaging = request.packaging;
  a.steps = request.steps;
  a.distinct = request.distinct;
  Json manifest = {{"format", kManifestFormat},
                   {"packaging", PackagingWord(request.packaging)}};
  std::string identity =
      absl::StrCat(kManifestFormat, "\n", PackagingWord(request.packaging));
  const std::string kernel = entry.at("kernel").get<std::string>();
  if (!kernel.empty()) {
    manifest["kernel"] = kernel;
    absl::StrAppend(&identity, "\nkernel ", kernel);
  }
  for (const auto& [role, file] : entry.at("files").items()) {
    manifest[role] = (dir / file.at("path").get<std::string>()).string();
    absl::StrAppend(&identity, "\n", role, " ",
                    file.at("sha256").get<std::string>());
  }
  Json views = Json::object();
  for (const Json& b : entry.at("buffers")) {
    a.buffers.push_back(
        {b.at("name").get<std::string>(), b.at("step").get<int>(),
         b.at("op_buffer").get<int>(), b.at("nbytes").get<uint64_t>(),
         b.at("fills").get<bool>(), b.at("drains").get<bool>()});
    if (!b.contains("arena")) continue;
    views[a.buffers.back().name] = {{"arena", b.at("arena")},
                                    {"offset", b.at("offset")},
                                    {"nbytes", b.at("nbytes")}};
  }
  if (request.packaging == v1::PACKAGING_FULL_ELF) {
    manifest["arenas"] = entry.at("arenas");
    manifest["buffers"] = views;
    absl::StrAppend(&identity, "\narenas ", entry.at("arenas").dump(),
                    "\nviews ", views.dump());
  }
  manifest["symbols"] = entry.at("symbols");
  for (const Json& s : entry.at("symbols")) {
    a.symbols.push_back(s.at("name").get<std::string>());
    absl::StrAppend(&identity, "\nsymbol ", s.dump());
  }
  a.payload = manifest.dump();
  a.artifact_hash = Sha256Hex(identity);
  return a;
}

// Why the entry in `dir` cannot be used; "" when it can.
std::string EntryProblem(const Json& entry, const fs::path& dir,
                         const std::string& recipe_hash,
                         const BuildRequest& request) {
  if (entry.value("format", "") != kEntryFormat) return "an unknown format";
  if (entry.value("recipe_hash", "") != recipe_hash) return "another recipe";
  if (entry.value("packaging", "") != PackagingWord(request.packaging))
    return "another packaging";
  absl::StatusOr<UniqueFd> dir_fd = OpenDirectory(dir.string());
  if (!dir_fd.ok()) return std::string(dir_fd.status().message());
  for (const auto& [role, file] : entry.at("files").items()) {
    absl::StatusOr<BeneathFile> f =
        OpenBeneath(dir_fd->get(), file.at("path").get<std::string>());
    if (!f.ok())
      return absl::StrCat("its ", role, " file ", f.status().message());
    if (f->size != file.at("nbytes").get<uint64_t>())
      return absl::StrCat("its ", role, " file changed size");
    uint64_t read = 0;
    absl::StatusOr<std::string> sha = Pump(f->fd.get(), -1, &read);
    if (!sha.ok() || *sha != file.at("sha256").get<std::string>())
      return absl::StrCat("its ", role, " file changed");
  }
  return "";
}

absl::StatusOr<Json> ReadJson(const fs::path& path) {
  std::ifstream in(path);
  if (!in)
    return absl::NotFoundError(absl::StrCat(path.string(), " is missing"));
  Json json = Json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object())
    return absl::DataLossError(absl::StrCat(path.string(), " is not JSON"));
  return json;
}

absl::Status WriteFileAtomically(const fs::path& path,
                                 const std::string& text) {
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out)
      return absl::InternalError(absl::StrCat("cannot write ", tmp.string()));
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec)
    return absl::InternalError(
        absl::StrCat("cannot write ", path.string(), ": ", ec.message()));
  return absl::OkStatus();
}

// Copies `reply`'s files through its descriptors into the empty directory
// `staging` and writes its entry.json there; returns the entry.
absl::StatusOr<Json> StageEntry(const std::string& recipe_hash,
                                const std::string& staging,
                                const BuilderReply& reply,
                                const BuildRequest& request) {
  ASSIGN_OR_RETURN(const UniqueFd fd, OpenDirectory(staging));
  std::vector<StoredFile> stored;
  for (auto& [file, from] : FileRoles(reply.files)) {
    RETURN_IF_ERROR(CopyInto(*from, fd.get(), staging, file));
    stored.push_back(std::move(file));
  }
  Json entry = EntryJson(recipe_hash, stored, reply, request);
  RETURN_IF_ERROR(
      WriteFileAtomically(fs::path(staging) / kEntryFile, entry.dump(1)));
  return entry;
}

uint64_t TreeBytes(const fs::path& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    std::error_code size_ec;
    if (it->is_regular_file(size_ec)) total += it->file_size(size_ec);
  }
  return total;
}

void RemoveTree(const fs::path& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec)
    spdlog::warn("artifact store: cannot delete {}: {}", path.string(),
                 ec.message());
}

}  // namespace

absl::StatusOr<std::unique_ptr<ArtifactStore>> ArtifactStore::Open(
    std::string dir, uint64_t max_bytes) {
  std::error_code ec;
  fs::path root = fs::absolute(dir, ec);
  if (!ec) fs::create_directories(root / kTmpDir, ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("artifact store ", dir, ": ", ec.message()));
  }
  for (fs::directory_iterator it(root / kTmpDir, ec), end; !ec && it != end;
       it.increment(ec)) {
    RemoveTree(it->path());
  }
  return std::unique_ptr<ArtifactStore>(
      new ArtifactStore(root.lexically_normal().string(), max_bytes));
}

absl::StatusOr<std::optional<Artifact>> ArtifactStore::Lookup(
    const std::string& recipe_hash, const BuildRequest& request) {
  absl::MutexLock lock(&mu_);
  return LoadEntry(recipe_hash, request);
}

absl::StatusOr<std::optional<Artifact>> ArtifactStore::LoadEntry(
    const std::string& recipe_hash, const BuildRequest& request) {
  const fs::path dir = fs::path(dir_) / recipe_hash;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return std::nullopt;
  std::string problem;
  absl::StatusOr<Json> entry = ReadJson(dir / kEntryFile);
  if (!entry.ok()) problem = std::string(entry.status().message());
  try {
    if (problem.empty())
      problem = EntryProblem(*entry, dir, recipe_hash, request);
    if (problem.empty()) {
      Artifact artifact = ArtifactOf(*entry, dir, request);
      fs::last_write_time(dir / kEntryFile, fs::file_time_type::clock::now(),
                          ec);
      return artifact;
    }
  } catch (const Json::exception& e) {
    problem = absl::StrCat("entry.json is malformed: ", e.what());
  }
  spdlog::warn("artifact store: {} is unusable ({}); deleting it to rebuild",
               dir.string(), problem);
  RemoveTree(dir);
  return std::nullopt;
}

absl::StatusOr<std::string> ArtifactStore::NewBuildDir(
    const std::string& recipe_hash) {
  absl::MutexLock lock(&mu_);
  return NewTmpDir(recipe_hash);
}

absl::StatusOr<std::string> ArtifactStore::NewTmpDir(
    const std::string& recipe_hash) {
  const fs::path dir =
      fs::path(dir_) / kTmpDir /
      absl::StrCat(recipe_hash, "-", ::getpid(), "-", next_build_++);
  if (::mkdir(dir.c_str(), 0700) != 0) {
    return absl::InternalError(
        absl::StrCat("cannot make ", dir.string(), ": ", std::strerror(errno)));
  }
  return dir.string();
}

absl::StatusOr<Artifact> ArtifactStore::Insert(const std::string& recipe_hash,
                                               const std::string& build_dir,
                                               const BuilderReply& reply,
                                               const BuildRequest& request) {
  absl::MutexLock lock(&mu_);
  // The builder's directory is read only through the reply's descriptors,
  // and goes whatever happens.
  absl::Cleanup discard = [&build_dir] { RemoveTree(build_dir); };
  ASSIGN_OR_RETURN(std::optional<Artifact> there,
                   LoadEntry(recipe_hash, request));
  if (there) return *std::move(there);  // another build got there first
  ASSIGN_OR_RETURN(const std::string staging, NewTmpDir(recipe_hash));
  absl::StatusOr<Json> entry = StageEntry(recipe_hash, staging, reply, request);
  const fs::path dir = fs::path(dir_) / recipe_hash;
  std::error_code ec;
  if (entry.ok()) fs::rename(staging, dir, ec);
  if (!entry.ok() || ec) {
    RemoveTree(staging);
    if (!entry.ok()) return entry.status();
    return absl::InternalError(absl::StrCat("cannot move ", staging, " to ",
                                            dir.string(), ": ", ec.message()));
  }
  Evict(recipe_hash);
  try {
    return ArtifactOf(*entry, dir, request);
  } catch (const Json::exception& e) {
    return absl::InternalError(
        absl::StrCat("entry of ", dir.string(), ": ", e.what()));
  }
}

void ArtifactStore::Discard(const std::string& build_dir) {
  RemoveTree(build_dir);
}

uint64_t ArtifactStore::TotalBytes() {
  absl::MutexLock lock(&mu_);
  uint64_t total = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it->path().filename() != kTmpDir) total += TreeBytes(it->path());
  }
  return total;
}

void ArtifactStore::Evict(const std::string& keep) {
  if (max_bytes_ == 0) return;
  struct Entry {
    fs::file_time_type used;
    std::string name;
    uint64_t bytes;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name == kTmpDir) continue;
    std::error_code time_ec;
    fs::file_time_type used =
        fs::last_write_time(it->path() / kEntryFile, time_ec);
    if (time_ec) used = fs::file_time_type::min();
    entries.push_back({used, name, TreeBytes(it->path())});
    total += entries.back().bytes;
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.used, a.name) < std::tie(b.used, b.name);
  });
  for (const Entry& e : entries) {
    if (total <= max_bytes_) break;
    if (e.name == keep) continue;
    spdlog::info(
        "artifact store: evicting {} ({} bytes) to stay within {} bytes",
        e.name, e.bytes, max_bytes_);
    RemoveTree(fs::path(dir_) / e.name);
    total -= e.bytes;
  }
}

}  // namespace irontune
