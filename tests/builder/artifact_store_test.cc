#include "daemon/builder/artifact_store.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "catch2/catch.hpp"
#include "daemon/base/beneath.h"
#include "daemon/base/sha256.h"
#include "nlohmann/json.hpp"
#include "tests/builder/builder_fixtures.h"

namespace irontune {
namespace {

namespace fs = std::filesystem;
using testing::GemmRequest;

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// File `name` of `dir` opened as ParseReply opens a reply's files.
BuiltFile Opened(const std::string& dir, const std::string& name) {
  absl::StatusOr<UniqueFd> d = OpenDirectory(dir);
  REQUIRE(d.ok());
  absl::StatusOr<BeneathFile> f = OpenBeneath(d->get(), name);
  REQUIRE(f.ok());
  return BuiltFile{name, std::move(f->fd), f->size};
}

// A build of `recipe` in the store's build dir, as a builder leaves it
// and ParseReply opens it: an xclbin of `xclbin_bytes` bytes and a 64-word
// instruction stream.
BuilderReply FakeBuild(ArtifactStore& store, const std::string& recipe,
                       std::string* dir, size_t xclbin_bytes = 1000) {
  *dir = *store.NewBuildDir(recipe);
  WriteFile(*dir + "/design.xclbin", std::string(xclbin_bytes, 'x'));
  WriteFile(*dir + "/insts.bin", std::string(256, 'i'));
  BuilderReply reply;
  reply.status = ReplyStatus::kBuilt;
  reply.files.xclbin = Opened(*dir, "design.xclbin");
  reply.files.kernel = "MLIR_AIE";
  reply.files.insts = Opened(*dir, "insts.bin");
  reply.buffers.push_back({"s0.A", 0, 0, 16, true, false});
  reply.symbols.push_back({"seq_len", 7, -1, ""});
  return reply;
}

Artifact Insert(ArtifactStore& store, const std::string& recipe,
                size_t xclbin_bytes = 1000) {
  std::string dir;
  BuilderReply reply = FakeBuild(store, recipe, &dir, xclbin_bytes);
  absl::StatusOr<Artifact> a = store.Insert(recipe, dir, reply, GemmRequest());
  REQUIRE(a.ok());
  CHECK_FALSE(fs::exists(dir));
  return *a;
}

bool Has(ArtifactStore& store, const std::string& recipe) {
  absl::StatusOr<std::optional<Artifact>> hit =
      store.Lookup(recipe, GemmRequest());
  REQUIRE(hit.ok());
  return hit->has_value();
}

TEST_CASE("ArtifactStore inserts an entry and finds it again") {
  const std::string root = e2e::TempDir("store") + "/artifacts";
  auto store = *ArtifactStore::Open(root, 0);
  const std::string recipe = Sha256Hex("one");
  CHECK_FALSE(Has(*store, recipe));
  const Artifact inserted = Insert(*store, recipe);
  CHECK(inserted.recipe_hash == recipe);
  CHECK(inserted.artifact_hash.size() == 64);
  CHECK(inserted.buffers.size() == 1);
  const auto manifest = nlohmann::json::parse(inserted.payload);
  CHECK(manifest["xclbin"] == root + "/" + recipe + "/design.xclbin");
  CHECK(manifest["symbols"][0]["insts_word"] == 7);

  // A new store on the same directory (a restart) finds it.
  auto reopened = *ArtifactStore::Open(root, 0);
  auto hit = reopened->Lookup(recipe, GemmRequest());
  REQUIRE(hit.ok());
  REQUIRE(hit->has_value());
  CHECK((*hit)->artifact_hash == inserted.artifact_hash);
  CHECK((*hit)->payload == inserted.payload);
  CHECK(reopened->TotalBytes() >= 1256);
}

TEST_CASE("The artifact hash follows the files' contents") {
  auto store = *ArtifactStore::Open(e2e::TempDir("store-hash"), 0);
  const Artifact a = Insert(*store, Sha256Hex("a"), 1000);
  const Artifact b = Insert(*store, Sha256Hex("b"), 1000);
  const Artifact c = Insert(*store, Sha256Hex("c"), 999);
  CHECK(a.artifact_hash == b.artifact_hash);  // same bytes, same hash
  CHECK(a.artifact_hash != c.artifact_hash);
}

TEST_CASE("ArtifactStore deletes and misses a broken entry") {
  const std::string root = e2e::TempDir("store-broken");
  auto store = *ArtifactStore::Open(root, 0);
  const std::string truncated = Sha256Hex("truncated");
  const std::string changed = Sha256Hex("changed");
  const std::string no_entry = Sha256Hex("no-entry");
  const std::string garbage = Sha256Hex("garbage");
  for (const std::string& r : {truncated, changed, no_entry, garbage})
    Insert(*store, r);
  fs::resize_file(root + "/" + truncated + "/design.xclbin", 10);
  WriteFile(root + "/" + changed + "/design.xclbin", std::string(1000, 'y'));
  fs::remove(root + "/" + no_entry + "/entry.json");
  WriteFile(root + "/" + garbage + "/entry.json", "{\"format\": ");
  for (const std::string& r : {truncated, changed, no_entry, garbage}) {
    CHECK_FALSE(Has(*store, r));
    CHECK_FALSE(fs::exists(root + "/" + r));
  }
  // Rebuilt, it is found again.
  Insert(*store, changed);
  CHECK(Has(*store, changed));
}

TEST_CASE("ArtifactStore clears builds a crash left behind") {
  const std::string root = e2e::TempDir("store-tmp");
  {
    auto store = *ArtifactStore::Open(root, 0);
    std::string dir;
    FakeBuild(*store, Sha256Hex("half"), &dir);
    CHECK(fs::exists(dir));
  }
  auto store = *ArtifactStore::Open(root, 0);
  CHECK(fs::is_empty(root + "/.tmp"));
  CHECK_FALSE(Has(*store, Sha256Hex("half")));
}

TEST_CASE("ArtifactStore evicts the least recently used entries") {
  const std::string root = e2e::TempDir("store-evict");
  // Every entry here has the same size: measure one, then hold three.
  auto scratch = *ArtifactStore::Open(e2e::TempDir("store-size"), 0);
  Insert(*scratch, Sha256Hex("size"));
  const uint64_t entry = scratch->TotalBytes();
  const uint64_t cap = 3 * entry + entry / 2;
  auto store = *ArtifactStore::Open(root, cap);
  const std::string a = Sha256Hex("a"), b = Sha256Hex("b"), c = Sha256Hex("c"),
                    d = Sha256Hex("d");
  Insert(*store, a);
  Insert(*store, b);
  // Mark a as used after b, whatever the clock's resolution.
  fs::last_write_time(root + "/" + b + "/entry.json",
                      fs::file_time_type::clock::now() - std::chrono::hours(2));
  fs::last_write_time(root + "/" + a + "/entry.json",
                      fs::file_time_type::clock::now() - std::chrono::hours(1));
  Insert(*store, c);  // three fit
  CHECK((Has(*store, a) && Has(*store, b) && Has(*store, c)));
  fs::last_write_time(root + "/" + b + "/entry.json",
                      fs::file_time_type::clock::now() - std::chrono::hours(3));
  Insert(*store, d);
  CHECK_FALSE(fs::exists(root + "/" + b));  // the least recently used
  CHECK(fs::exists(root + "/" + a));
  CHECK(fs::exists(root + "/" + d));
  CHECK(store->TotalBytes() <= cap);
}

TEST_CASE("ArtifactStore keeps the entry just inserted even over the cap") {
  auto store = *ArtifactStore::Open(e2e::TempDir("store-big"), 100);
  const std::string big = Sha256Hex("big");
  Insert(*store, Sha256Hex("small"), 10);
  Insert(*store, big, 5000);
  CHECK(Has(*store, big));
  CHECK_FALSE(Has(*store, Sha256Hex("small")));
}

TEST_CASE("A second insert of a recipe keeps the first") {
  auto store = *ArtifactStore::Open(e2e::TempDir("store-race"), 0);
  const std::string recipe = Sha256Hex("twice");
  const Artifact first = Insert(*store, recipe, 1000);
  std::string dir;
  BuilderReply reply = FakeBuild(*store, recipe, &dir, 2000);
  auto second = store->Insert(recipe, dir, reply, GemmRequest());
  REQUIRE(second.ok());
  CHECK(second->artifact_hash == first.artifact_hash);
  CHECK_FALSE(fs::exists(dir));
}

TEST_CASE("A full-ELF entry keeps its arenas, views and value kinds") {
  const std::string root = e2e::TempDir("store-elf") + "/artifacts";
  auto store = *ArtifactStore::Open(root, 0);
  const std::string recipe = Sha256Hex("elf");
  const BuildRequest request = GemmRequest(64, v1::PACKAGING_FULL_ELF);
  const std::string dir = *store->NewBuildDir(recipe);
  WriteFile(dir + "/design.elf",
            "\x7f"
            "ELF elf bytes");
  BuilderReply reply;
  reply.status = ReplyStatus::kBuilt;
  reply.files.elf = Opened(dir, "design.elf");
  reply.buffers.push_back({"s0.A", 0, 0, 16, true, false});
  reply.buffers.push_back({"s0.C", 0, 2, 8, false, true});
  reply.arenas = {{"input", 16}, {"output", 24}, {"scratch", 0}};
  reply.views = {{"input", 0}, {"output", 16}};
  reply.symbols.push_back({"seq_len", -1, 2, "core"});
  absl::StatusOr<Artifact> a = store->Insert(recipe, dir, reply, request);
  REQUIRE(a.ok());
  const auto m = nlohmann::json::parse(a->payload);
  CHECK(m["format"] == "irontune-xrt-artifact/2");
  CHECK(m["arenas"][1] == nlohmann::json({{"name", "output"}, {"nbytes", 24}}));
  CHECK(m["buffers"]["s0.C"] ==
        nlohmann::json({{"arena", "output"}, {"offset", 16}, {"nbytes", 8}}));
  CHECK(m["symbols"][0] ==
        nlohmann::json(
            {{"name", "seq_len"}, {"scratchpad_word", 2}, {"kind", "core"}}));
  // Found again, it is the same artifact.
  absl::StatusOr<std::optional<Artifact>> hit = store->Lookup(recipe, request);
  REQUIRE(hit.ok());
  REQUIRE(hit->has_value());
  CHECK((*hit)->payload == a->payload);
  CHECK((*hit)->artifact_hash == a->artifact_hash);
}

TEST_CASE("An entry of format /1 or /2 is deleted, so the design is rebuilt") {
  const std::string root = e2e::TempDir("store-v1") + "/artifacts";
  auto store = *ArtifactStore::Open(root, 0);
  const std::string recipe = Sha256Hex("old");
  Insert(*store, recipe);
  const std::string entry = root + "/" + recipe + "/entry.json";
  auto json = nlohmann::json::parse(e2e::ReadFile(entry));
  CHECK(json["format"] == "irontune-artifact-entry/3");
  json["format"] = "irontune-artifact-entry/1";  // as an older irontuned wrote
  WriteFile(entry, json.dump());
  CHECK_FALSE(Has(*store, recipe));
  CHECK_FALSE(fs::exists(root + "/" + recipe));
  // /2 kept the builder's own files, as they stood after the check.
  Insert(*store, recipe);
  json = nlohmann::json::parse(e2e::ReadFile(entry));
  json["format"] = "irontune-artifact-entry/2";
  WriteFile(entry, json.dump());
  CHECK_FALSE(Has(*store, recipe));
}

TEST_CASE("The store keeps copies of what the reply's check opened") {
  const std::string root = e2e::TempDir("store-copy") + "/artifacts";
  auto store = *ArtifactStore::Open(root, 0);
  const std::string recipe = Sha256Hex("swapped");
  std::string dir;
  BuilderReply reply = FakeBuild(*store, recipe, &dir, 1000);
  // After the check, the builder's files are swapped: one renamed over by
  // other bytes, one replaced by a symlink out of the directory.
  WriteFile(dir + "/other.xclbin", std::string(1000, 'z'));
  fs::rename(dir + "/other.xclbin", dir + "/design.xclbin");
  fs::remove(dir + "/insts.bin");
  fs::create_symlink("/etc/passwd", dir + "/insts.bin");
  absl::StatusOr<Artifact> a = store->Insert(recipe, dir, reply, GemmRequest());
  REQUIRE(a.ok());
  CHECK_FALSE(fs::exists(dir));
  const std::string entry = root + "/" + recipe;
  CHECK(e2e::ReadFile(entry + "/design.xclbin") == std::string(1000, 'x'));
  CHECK(e2e::ReadFile(entry + "/insts.bin") == std::string(256, 'i'));
  CHECK_FALSE(fs::is_symlink(entry + "/insts.bin"));
  const auto manifest = nlohmann::json::parse(a->payload);
  CHECK(manifest["insts"] == entry + "/insts.bin");
}

TEST_CASE("A stored file made a symlink breaks its entry") {
  const std::string root = e2e::TempDir("store-link") + "/artifacts";
  auto store = *ArtifactStore::Open(root, 0);
  const std::string recipe = Sha256Hex("linked");
  Insert(*store, recipe);
  const std::string xclbin = root + "/" + recipe + "/design.xclbin";
  const std::string copy = root + "/copy.xclbin";
  fs::rename(xclbin, copy);  // the same bytes, reached through a symlink
  fs::create_symlink(copy, xclbin);
  CHECK_FALSE(Has(*store, recipe));
  CHECK_FALSE(fs::exists(root + "/" + recipe));
}

}  // namespace
}  // namespace irontune
