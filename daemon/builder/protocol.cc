#include "daemon/builder/protocol.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/buffer_role.h"
#include "common/design.h"
#include "common/recording.h"
#include "common/status_macros.h"
#include "common/value_json.h"
#include "daemon/base/beneath.h"
#include "daemon/base/sha256.h"
#include "daemon/npu/arena_view.h"
#include "nlohmann/json.hpp"

namespace irontune {
namespace {

using Json = nlohmann::json;

absl::string_view A(std::string_view s) {
  return absl::string_view(s.data(), s.size());
}

Json OperatorJson(const v1::Operator& op) {
  Json params = Json::object(), tunables = Json::object();
  for (const v1::Param& p : op.params())
    params[p.name()] = ValueJson(p.value());
  for (const v1::Tunable& t : op.tunables())
    tunables[t.name()] = ValueJson(t.value());
  Json buffers = Json::array(), values = Json::array();
  for (const v1::Buffer& b : op.buffers()) {
    buffers.push_back(
        {{"name", b.name()},
         {"role", BufferRoleName(b.role())},
         {"dtype", DTypeName(b.dtype())},
         {"shape", std::vector<uint64_t>(b.shape().begin(), b.shape().end())},
         {"fills", b.fills()},
         {"drains", b.drains()}});
  }
  for (const v1::CallValue& v : op.values()) {
    values.push_back(
        {{"name", v.name()}, {"symbol", v.symbol()}, {"bounds", v.bounds()}});
  }
  return {{"class", op.class_name()},
          {"params", params},
          {"tunables", tunables},
          {"buffers", buffers},
          {"values", values}};
}

// A JSON object's field, read with its path for errors.
class Field {
 public:
  Field(const Json& json, std::string path)
      : json_(json), path_(std::move(path)) {}

  absl::StatusOr<Field> Get(std::string_view key) const {
    const std::string path = absl::StrCat(path_, ".", A(key));
    if (!json_.is_object()) return Bad(path_, "is not an object");
    auto it = json_.find(std::string(key));
    if (it == json_.end()) return Bad(path, "is missing");
    return Field(*it, path);
  }
  absl::StatusOr<std::string> String() const {
    if (!json_.is_string()) return Bad(path_, "is not a string");
    return json_.get<std::string>();
  }
  absl::StatusOr<int64_t> Int(int64_t lo, int64_t hi) const {
    if (!json_.is_number_integer()) return Bad(path_, "is not an integer");
    const bool unsigned_big =
        json_.is_number_unsigned() && json_.get<uint64_t>() > uint64_t{1} << 62;
    const int64_t v = unsigned_big ? hi + 1 : json_.get<int64_t>();
    if (v < lo || v > hi) {
      return Bad(path_, absl::StrCat("is ", json_.dump(), ", not in [", lo,
                                     ", ", hi, "]"));
    }
    return v;
  }
  absl::StatusOr<bool> Bool() const {
    if (!json_.is_boolean()) return Bad(path_, "is not a boolean");
    return json_.get<bool>();
  }
  absl::StatusOr<size_t> ArraySize() const {
    if (!json_.is_array()) return Bad(path_, "is not an array");
    return json_.size();
  }
  Field At(size_t i) const {
    return Field(json_[i], absl::StrCat(path_, "[", i, "]"));
  }
  bool Has(std::string_view key) const {
    return json_.is_object() && json_.contains(std::string(key));
  }
  const std::string& path() const { return path_; }

  static absl::Status Bad(absl::string_view path, absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat(path, " ", what));
  }

 private:
  const Json& json_;
  std::string path_;
};

absl::StatusOr<ArtifactBuffer> ParseBuffer(const Field& f,
                                           const BuildRequest& request) {
  ArtifactBuffer b;
  ASSIGN_OR_RETURN(Field name, f.Get("name"));
  ASSIGN_OR_RETURN(b.name, name.String());
  if (b.name.empty()) return Field::Bad(name.path(), "is empty");
  ASSIGN_OR_RETURN(Field step, f.Get("step"));
  ASSIGN_OR_RETURN(int64_t s, step.Int(0, request.steps - 1));
  b.step = static_cast<int>(s);
  ASSIGN_OR_RETURN(Field op_buffer, f.Get("op_buffer"));
  ASSIGN_OR_RETURN(int64_t i, op_buffer.Int(0, request.op.buffers_size() - 1));
  b.op_buffer = static_cast<int>(i);
  ASSIGN_OR_RETURN(Field nbytes, f.Get("nbytes"));
  ASSIGN_OR_RETURN(int64_t n, nbytes.Int(1, int64_t{1} << 40));
  b.nbytes = static_cast<uint64_t>(n);
  ASSIGN_OR_RETURN(Field fills, f.Get("fills"));
  ASSIGN_OR_RETURN(b.fills, fills.Bool());
  ASSIGN_OR_RETURN(Field drains, f.Get("drains"));
  ASSIGN_OR_RETURN(b.drains, drains.Bool());
  return b;
}

absl::StatusOr<std::vector<ArtifactBuffer>> ParseBuffers(
    const Field& reply, const BuildRequest& request) {
  ASSIGN_OR_RETURN(Field list, reply.Get("buffers"));
  ASSIGN_OR_RETURN(size_t n, list.ArraySize());
  std::vector<ArtifactBuffer> out;
  std::set<std::string> names;
  for (size_t i = 0; i < n; ++i) {
    ASSIGN_OR_RETURN(ArtifactBuffer b, ParseBuffer(list.At(i), request));
    if (!names.insert(b.name).second) {
      return Field::Bad(list.At(i).path(),
                        absl::StrCat("repeats the name \"", b.name, "\""));
    }
    out.push_back(std::move(b));
  }
  if (out.empty() && request.op.buffers_size() > 0)
    return Field::Bad(list.path(), "is empty");
  return out;
}

// A file the reply names, relative to (or absolute inside) `dir`, opened
// beneath `dir_fd` (OpenBeneath): regular and not empty.
absl::StatusOr<BuiltFile> OpenFile(const Field& f, std::string_view dir,
                                   int dir_fd) {
  ASSIGN_OR_RETURN(std::string name, f.String());
  if (name.empty()) return Field::Bad(f.path(), "is empty");
  std::string relative = name;
  if (name.front() == '/') {
    const std::string inside =
        absl::StrCat(absl::StripSuffix(A(dir), "/"), "/");
    if (!absl::StartsWith(name, inside)) {
      return Field::Bad(f.path(),
                        absl::StrCat("\"", name, "\" is not inside ", A(dir)));
    }
    relative = name.substr(inside.size());
  }
  absl::StatusOr<BeneathFile> file = OpenBeneath(dir_fd, relative);
  if (!file.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(f.path(), ": artifact ", file.status().message()));
  }
  if (file->size == 0) return Field::Bad(f.path(), "names an empty file");
  return BuiltFile{std::move(relative), std::move(file->fd), file->size};
}

absl::Status ParseFiles(const Field& reply, const BuildRequest& request,
                        std::string_view dir, BuiltFiles& files,
                        uint64_t* insts_words) {
  ASSIGN_OR_RETURN(Field f, reply.Get("files"));
  ASSIGN_OR_RETURN(const UniqueFd dir_fd, OpenDirectory(std::string(dir)));
  if (request.packaging == v1::PACKAGING_FULL_ELF) {
    ASSIGN_OR_RETURN(Field elf, f.Get("elf"));
    ASSIGN_OR_RETURN(files.elf, OpenFile(elf, dir, dir_fd.get()));
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(Field xclbin, f.Get("xclbin"));
  ASSIGN_OR_RETURN(files.xclbin, OpenFile(xclbin, dir, dir_fd.get()));
  if (f.Has("kernel")) {  // absent or empty: the xclbin's first kernel
    ASSIGN_OR_RETURN(Field kernel, f.Get("kernel"));
    ASSIGN_OR_RETURN(files.kernel, kernel.String());
  }
  ASSIGN_OR_RETURN(Field insts, f.Get("insts"));
  ASSIGN_OR_RETURN(files.insts, OpenFile(insts, dir, dir_fd.get()));
  const uint64_t size = files.insts.nbytes;
  if (size % 4 != 0) {
    return Field::Bad(insts.path(), absl::StrCat("is ", size,
                                                 " bytes, not whole 32-bit "
                                                 "words"));
  }
  *insts_words = size / 4;
  return absl::OkStatus();
}

// A full ELF's symbol: its ctrl scratchpad word and kind; never "arg".
absl::Status ParseElfSymbol(const Field& f, BuiltSymbol& s) {
  if (f.Has("arg")) {
    return Field::Bad(absl::StrCat(f.path(), ".arg"),
                      "is refused: XRT takes no scalar arguments on a full "
                      "ELF's kernel (write the value to a scratchpad_word)");
  }
  ASSIGN_OR_RETURN(Field word, f.Get("scratchpad_word"));
  ASSIGN_OR_RETURN(s.scratchpad_word, word.Int(0, 1 << 20));
  ASSIGN_OR_RETURN(Field kind, f.Get("kind"));
  ASSIGN_OR_RETURN(s.kind, kind.String());
  if (s.kind != "core" && s.kind != "addr") {
    return Field::Bad(kind.path(),
                      absl::StrCat("is \"", s.kind, "\", not core or addr"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<BuiltSymbol>> ParseSymbols(
    const Field& reply, const BuildRequest& request, uint64_t insts_words) {
  ASSIGN_OR_RETURN(Field list, reply.Get("symbols"));
  ASSIGN_OR_RETURN(size_t n, list.ArraySize());
  const bool elf = request.packaging == v1::PACKAGING_FULL_ELF;
  std::vector<BuiltSymbol> out;
  std::set<std::string> names;
  for (size_t i = 0; i < n; ++i) {
    const Field f = list.At(i);
    BuiltSymbol s;
    ASSIGN_OR_RETURN(Field name, f.Get("name"));
    ASSIGN_OR_RETURN(s.name, name.String());
    if (s.name.empty()) return Field::Bad(name.path(), "is empty");
    if (!names.insert(s.name).second)
      return Field::Bad(f.path(), absl::StrCat("repeats \"", s.name, "\""));
    if (elf) {
      RETURN_IF_ERROR(ParseElfSymbol(f, s));
    } else {
      ASSIGN_OR_RETURN(Field word, f.Get("insts_word"));
      ASSIGN_OR_RETURN(s.insts_word,
                       word.Int(0, static_cast<int64_t>(insts_words) - 1));
    }
    out.push_back(std::move(s));
  }
  return out;
}

// The names of a full ELF's arenas in argument order (amd/IRON
// iron/common/image/fusion.py, ArgumentSizes).
constexpr const char* kArenaNames[] = {"input", "output", "scratch",
                                       "feedback"};

absl::StatusOr<std::vector<BuiltArena>> ParseArenas(const Field& reply) {
  ASSIGN_OR_RETURN(Field list, reply.Get("arenas"));
  ASSIGN_OR_RETURN(size_t n, list.ArraySize());
  if (n < 3 || n > 4) {
    return Field::Bad(list.path(),
                      absl::StrCat("has ", n,
                                   " arenas, not input, output, "
                                   "scratch and optionally feedback"));
  }
  std::vector<BuiltArena> out;
  for (size_t i = 0; i < n; ++i) {
    BuiltArena a;
    ASSIGN_OR_RETURN(Field name, list.At(i).Get("name"));
    ASSIGN_OR_RETURN(a.name, name.String());
    if (a.name != kArenaNames[i]) {
      return Field::Bad(
          name.path(),
          absl::StrCat("is \"", a.name, "\", not \"", kArenaNames[i],
                       "\" (arena ", i, " is kernel argument ", i, ")"));
    }
    ASSIGN_OR_RETURN(Field nbytes, list.At(i).Get("nbytes"));
    ASSIGN_OR_RETURN(int64_t bytes, nbytes.Int(0, int64_t{1} << 40));
    a.nbytes = static_cast<uint64_t>(bytes);
    out.push_back(std::move(a));
  }
  return out;
}

// Each full-ELF buffer's view: inside its arena, 4-byte aligned (the shim
// DMA's word, fusion.py SHIM_ADDRESS_ALIGNMENT), overlapping no other view
// unless identical to it (a buffer steps share).
absl::StatusOr<std::vector<BuiltView>> ParseViews(
    const Field& reply, const std::vector<BuiltArena>& arenas,
    const std::vector<ArtifactBuffer>& buffers) {
  ASSIGN_OR_RETURN(Field list, reply.Get("buffers"));
  std::vector<BuiltView> out;
  std::vector<ArenaView> placed;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const Field f = list.At(i);
    BuiltView v;
    ASSIGN_OR_RETURN(Field arena, f.Get("arena"));
    ASSIGN_OR_RETURN(v.arena, arena.String());
    size_t k = 0;
    while (k < arenas.size() && arenas[k].name != v.arena) ++k;
    if (k == arenas.size()) {
      return Field::Bad(arena.path(),
                        absl::StrCat("\"", v.arena, "\" is no arena"));
    }
    ASSIGN_OR_RETURN(Field offset, f.Get("offset"));
    ASSIGN_OR_RETURN(int64_t off, offset.Int(0, int64_t{1} << 40));
    v.offset = static_cast<uint64_t>(off);
    if (v.offset % kArenaViewAlignment != 0) {
      return Field::Bad(offset.path(), absl::StrCat("is not a multiple of ",
                                                    kArenaViewAlignment));
    }
    if (v.offset + buffers[i].nbytes > arenas[k].nbytes) {
      return Field::Bad(
          f.path(),
          absl::StrCat("ends at byte ", v.offset + buffers[i].nbytes,
                       ", past arena ", v.arena, "'s ", arenas[k].nbytes));
    }
    placed.push_back({k, v.offset, buffers[i].nbytes});
    out.push_back(std::move(v));
  }
  if (const auto pair = OverlappingViews(placed)) {
    const auto [at, other] = *pair;
    return Field::Bad(
        list.At(at).path(),
        absl::StrCat("overlaps ", buffers[other].name, " in arena ",
                     arenas[placed[at].arena].name));
  }
  return out;
}

// The reply's status; "fits" only where `fit` (a fit request's reply),
// "built" only where not.
absl::StatusOr<ReplyStatus> ParseStatus(const Field& reply, std::string* reason,
                                        bool fit = false) {
  ASSIGN_OR_RETURN(Field protocol, reply.Get("protocol"));
  RETURN_IF_ERROR(protocol.Int(kBuilderProtocol, kBuilderProtocol).status());
  ASSIGN_OR_RETURN(Field status, reply.Get("status"));
  ASSIGN_OR_RETURN(std::string word, status.String());
  if (reply.Has("reason")) {
    ASSIGN_OR_RETURN(Field r, reply.Get("reason"));
    ASSIGN_OR_RETURN(*reason, r.String());
  }
  if (word == (fit ? "fits" : "built")) {
    return fit ? ReplyStatus::kFits : ReplyStatus::kBuilt;
  }
  if (word == "refused") return ReplyStatus::kRefused;
  if (word == "failed") return ReplyStatus::kFailed;
  return Field::Bad(status.path(), absl::StrCat("is \"", word, "\", not ",
                                                fit ? "fits" : "built",
                                                ", refused or failed"));
}

absl::Status CheckEcho(const Field& reply, std::string_view key,
                       absl::string_view want) {
  ASSIGN_OR_RETURN(Field f, reply.Get(key));
  ASSIGN_OR_RETURN(std::string got, f.String());
  if (got != want) {
    return Field::Bad(
        f.path(),
        absl::StrCat("is \"", got, "\", not the request's \"", want, "\""));
  }
  return absl::OkStatus();
}

}  // namespace

std::string BuildRecipeHash(const BuildRequest& request,
                            std::string_view environment) {
  Sha256 hash;
  hash.Update(absl::StrCat(
      "irontune-recipe/1\n", environment.size(), ":", A(environment), "\n",
      request.platform.name.size(), ":", request.platform.name, "\n",
      request.platform.generation.size(), ":", request.platform.generation,
      "\n", PackagingWord(request.packaging), "\n", request.steps, "\n",
      request.distinct ? 1 : 0, "\n"));
  hash.Update(DesignBytes(request.op));
  return hash.HexDigest();
}

namespace {

// The fields every request has.
Json RequestFields(const BuildRequest& request, std::string_view recipe_hash) {
  const Json device = {{"platform", request.platform.name},
                       {"generation", request.platform.generation},
                       {"columns", request.platform.columns}};
  return {{"protocol", kBuilderProtocol},
          {"recipe_hash", recipe_hash},
          {"operator", OperatorJson(request.op)},
          {"device", device},
          {"packaging", PackagingWord(request.packaging)},
          {"steps", request.steps},
          {"distinct", request.distinct}};
}

// `json` parsed as one JSON object, or InvalidArgument.
absl::StatusOr<Json> ParseObject(std::string_view text) {
  if (absl::StripAsciiWhitespace(A(text)).empty())
    return absl::InvalidArgumentError("the reply is empty");
  Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object())
    return absl::InvalidArgumentError("the reply is not one JSON object");
  return json;
}

}  // namespace

std::string RequestJson(const BuildRequest& request,
                        std::string_view recipe_hash,
                        std::string_view output_dir) {
  Json json = RequestFields(request, recipe_hash);
  json["output_dir"] = output_dir;
  return json.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::string FitRequestJson(const BuildRequest& request,
                           std::string_view recipe_hash) {
  Json json = RequestFields(request, recipe_hash);
  json["check"] = "fit";
  return json.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
}

absl::StatusOr<BuilderReply> ParseFitReply(std::string_view text) {
  ASSIGN_OR_RETURN(const Json json, ParseObject(text));
  BuilderReply out;
  ASSIGN_OR_RETURN(out.status, ParseStatus(Field(json, "reply"), &out.reason,
                                           /*fit=*/true));
  return out;
}

absl::StatusOr<BuilderReply> ParseReply(std::string_view text,
                                        const BuildRequest& request,
                                        std::string_view recipe_hash,
                                        std::string_view output_dir) {
  ASSIGN_OR_RETURN(const Json json, ParseObject(text));
  const Field reply(json, "reply");
  BuilderReply out;
  ASSIGN_OR_RETURN(out.status, ParseStatus(reply, &out.reason));
  if (out.status != ReplyStatus::kBuilt) return out;
  RETURN_IF_ERROR(CheckEcho(reply, "recipe_hash", A(recipe_hash)));
  RETURN_IF_ERROR(
      CheckEcho(reply, "packaging", PackagingWord(request.packaging)));
  ASSIGN_OR_RETURN(Field hash, reply.Get("artifact_hash"));
  ASSIGN_OR_RETURN(out.builder_artifact_hash, hash.String());
  uint64_t insts_words = 0;
  RETURN_IF_ERROR(
      ParseFiles(reply, request, output_dir, out.files, &insts_words));
  ASSIGN_OR_RETURN(out.buffers, ParseBuffers(reply, request));
  if (request.packaging == v1::PACKAGING_FULL_ELF) {
    ASSIGN_OR_RETURN(out.arenas, ParseArenas(reply));
    ASSIGN_OR_RETURN(out.views, ParseViews(reply, out.arenas, out.buffers));
  }
  ASSIGN_OR_RETURN(out.symbols, ParseSymbols(reply, request, insts_words));
  return out;
}

}  // namespace irontune
