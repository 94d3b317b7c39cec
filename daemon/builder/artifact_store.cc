#include "daemon/builder/artifact_store.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "daemon/base/sha256.h"
#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"

namespace irontune {
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

// /2: full-ELF arenas and views, value kinds. An entry of another format
// (a /1 entry, whose manifest XrtDevice refuses) is deleted and rebuilt.
constexpr char kEntryFormat[] = "irontune-artifact-entry/2";
// daemon/xrt/artifact_manifest.h's kXrtManifestFormat (this layer cannot
// include it; tests/xrt/real_path_e2e_test.cc loads what is written here).
constexpr char kManifestFormat[] = "irontune-xrt-artifact/2";
constexpr char kEntryFile[] = "entry.json";
constexpr char kTmpDir[] = ".tmp";

// The sha256 hex of the file at `path`; NotFound/Internal naming it.
absl::StatusOr<std::string> FileSha256(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::NotFoundError(absl::StrCat("cannot read ", path.string()));
  Sha256 hash;
  char buffer[1 << 16];
  while (in) {
    in.read(buffer, sizeof buffer);
    hash.Update(std::string_view(buffer, static_cast<size_t>(in.gcount())));
  }
  if (in.bad())
    return absl::InternalError(absl::StrCat("cannot read ", path.string()));
  return hash.HexDigest();
}

// The files of a reply by role ("xclbin", "insts", "elf").
std::vector<std::pair<std::string, std::string>> FileRoles(
    const BuiltFiles& files) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!files.elf.empty()) out.emplace_back("elf", files.elf);
  if (!files.xclbin.empty()) out.emplace_back("xclbin", files.xclbin);
  if (!files.insts.empty()) out.emplace_back("insts", files.insts);
  return out;
}

// The entry.json of a checked build in `dir`.
absl::StatusOr<Json> EntryJson(const std::string& recipe_hash,
                               const fs::path& dir, const BuilderReply& reply,
                               const BuildRequest& request) {
  Json files = Json::object();
  for (const auto& [role, path] : FileRoles(reply.files)) {
    std::error_code ec;
    const uint64_t size = fs::file_size(dir / path, ec);
    if (ec)
      return absl::InternalError(
          absl::StrCat("cannot stat ", (dir / path).string()));
    ASSIGN_OR_RETURN(std::string sha, FileSha256(dir / path));
    files[role] = {{"path", path}, {"nbytes", size}, {"sha256", sha}};
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
  for (const auto& [role, file] : entry.at("files").items()) {
    const fs::path path = dir / file.at("path").get<std::string>();
    std::error_code ec;
    const uint64_t size = fs::file_size(path, ec);
    if (ec) return absl::StrCat("its ", role, " file is missing");
    if (size != file.at("nbytes").get<uint64_t>())
      return absl::StrCat("its ", role, " file changed size");
    absl::StatusOr<std::string> sha = FileSha256(path);
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
  const fs::path dir =
      fs::path(dir_) / kTmpDir /
      absl::StrCat(recipe_hash, "-", ::getpid(), "-", next_build_++);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot make ", dir.string(), ": ", ec.message()));
  }
  return dir.string();
}

absl::StatusOr<Artifact> ArtifactStore::Insert(const std::string& recipe_hash,
                                               const std::string& build_dir,
                                               const BuilderReply& reply,
                                               const BuildRequest& request) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Json> entry =
      EntryJson(recipe_hash, build_dir, reply, request);
  absl::Status written =
      entry.ok() ? WriteFileAtomically(fs::path(build_dir) / kEntryFile,
                                       entry->dump(1))
                 : entry.status();
  if (!written.ok()) {
    RemoveTree(build_dir);
    return written;
  }
  ASSIGN_OR_RETURN(std::optional<Artifact> there,
                   LoadEntry(recipe_hash, request));
  if (there) {  // another build of the recipe got there first
    RemoveTree(build_dir);
    return *std::move(there);
  }
  const fs::path dir = fs::path(dir_) / recipe_hash;
  std::error_code ec;
  fs::rename(build_dir, dir, ec);
  if (ec) {
    RemoveTree(build_dir);
    return absl::InternalError(absl::StrCat("cannot move ", build_dir, " to ",
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
