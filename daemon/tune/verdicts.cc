#include "daemon/tune/verdicts.h"

#include <map>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/design.h"
#include "common/status_macros.h"
#include "daemon/base/sha256.h"
#include "daemon/store/cache.h"

namespace irontune {
namespace {

// Verdict texts in the cache's verdict store.
constexpr char kFits[] = "fits";
constexpr char kRefusedPrefix[] = "refused: ";
constexpr size_t kRefusedPrefixSize = sizeof(kRefusedPrefix) - 1;
constexpr char kAdmitted[] = "admitted";

std::string ValuesText(const CallValues& values) {
  std::string out;
  for (const auto& [name, value] : values) {
    absl::StrAppend(&out, name.size(), ":", name, "=", value, ";");
  }
  return out;
}

// A kept verdict: nullopt where none is kept (or it does not read), else ""
// for `yes` and the reason for a refusal.
absl::StatusOr<std::optional<std::string>> KeptVerdict(Cache* cache,
                                                       const VerdictKey& key,
                                                       const char* yes) {
  if (cache == nullptr) return std::nullopt;
  ASSIGN_OR_RETURN(std::optional<std::string> kept, cache->GetVerdict(key));
  if (!kept) return std::nullopt;
  if (*kept == yes) return std::string();
  if (kept->starts_with(kRefusedPrefix)) {
    return kept->substr(kRefusedPrefixSize);
  }
  return std::nullopt;
}

absl::Status KeepVerdict(Cache* cache, const VerdictKey& key, const char* yes,
                         const std::string& why) {
  if (cache == nullptr) return absl::OkStatus();
  return cache->PutVerdict(
      key, why.empty() ? std::string(yes) : absl::StrCat(kRefusedPrefix, why));
}

}  // namespace

std::string RecipeKeyHash(const v1::Operator& op, const Platform& platform,
                          v1::Packaging packaging) {
  return Sha256Hex(absl::StrCat("recipe\n", platform.generation, "\n",
                                static_cast<int>(packaging), "\n",
                                DesignBytes(op)));
}

absl::StatusOr<std::string> Refusal(const v1::Operator& op,
                                    const Platform& platform,
                                    v1::Packaging packaging, Builder& builder,
                                    Cache* cache) {
  const VerdictKey key{RecipeKeyHash(op, platform, packaging),
                       builder.Environment()};
  ASSIGN_OR_RETURN(std::optional<std::string> kept,
                   KeptVerdict(cache, key, kFits));
  if (kept) return *kept;
  BuildRequest request;
  request.op = op;
  request.platform = platform;
  request.steps = 1;
  request.packaging = packaging;
  ASSIGN_OR_RETURN(BuildOutcome outcome, builder.Build(request));
  std::string why = outcome.artifact ? std::string() : outcome.refusal;
  if (!outcome.artifact && why.empty()) why = "refused without a reason";
  RETURN_IF_ERROR(KeepVerdict(cache, key, kFits, why));
  return why;
}

absl::StatusOr<std::vector<std::string>> Refusals(
    const std::vector<v1::Operator>& ops, const Platform& platform,
    v1::Packaging packaging, Builder& builder, Cache* cache,
    const std::function<bool()>& cancelled) {
  const std::string environment = builder.Environment();
  std::vector<VerdictKey> keys;
  for (const v1::Operator& op : ops) {
    keys.push_back({RecipeKeyHash(op, platform, packaging), environment});
  }
  std::vector<std::optional<std::string>> kept(ops.size());
  if (cache != nullptr) {
    ASSIGN_OR_RETURN(kept, cache->GetVerdicts(keys));
  }
  std::vector<std::string> out(ops.size());
  std::vector<size_t> todo;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (kept[i] && *kept[i] == kFits) continue;
    if (kept[i] && kept[i]->starts_with(kRefusedPrefix)) {
      out[i] = kept[i]->substr(kRefusedPrefixSize);
      continue;
    }
    todo.push_back(i);
    builder.Prefetch(BuildRequest{ops[i], platform, 1, true, packaging});
  }
  const std::function<bool()> never = [] { return false; };
  for (size_t i : todo) {
    ASSIGN_OR_RETURN(
        BuildOutcome outcome,
        builder.Await(BuildRequest{ops[i], platform, 1, true, packaging},
                      cancelled ? cancelled : never));
    out[i] = outcome.artifact ? std::string() : outcome.refusal;
    if (!outcome.artifact && out[i].empty()) {
      out[i] = "refused without a reason";
    }
    RETURN_IF_ERROR(KeepVerdict(cache, keys[i], kFits, out[i]));
  }
  return out;
}

absl::StatusOr<std::string> OutputJudge::Verdict(const MeasurePlan& plan,
                                                 const MeasureOutcome& outcome,
                                                 int i) const {
  const v1::Operator& default_op = plan.settings[0];
  const v1::Operator& op = plan.settings[i];
  const std::string& want = outcome.measurements.at(0).output();
  const std::string& got = outcome.measurements.at(i).output();
  if (want == got) return std::string();
  std::string text =
      absl::StrCat("judge\n", RecipeKeyHash(default_op, platform, packaging),
                   "\n", RecipeKeyHash(op, platform, packaging), "\n", want,
                   "\n", got, "\n", ValuesText(plan.values), "\n", seed, "\n",
                   Sha256Hex(op.tolerance().SerializeAsString()));
  for (const auto& [name, bytes] : plan.inputs) {
    absl::StrAppend(&text, "\n", name, "=", Sha256Hex(bytes));
  }
  const VerdictKey key{Sha256Hex(text), absl::StrCat("judge:", judge_id)};
  ASSIGN_OR_RETURN(std::optional<std::string> kept,
                   KeptVerdict(cache, key, kAdmitted));
  if (kept) return *kept;
  auto def = outcome.outputs.find(0);
  auto own = outcome.outputs.find(i);
  if (def == outcome.outputs.end() || own == outcome.outputs.end()) {
    // A figure from the cache carries its output's digest, not the output:
    // with no judgement kept, it cannot be judged. Refused, conservatively.
    return std::string(
        "its output differs from the recorded setting's and, its figure "
        "coming from the cache, there is no output to judge (remeasure to "
        "judge it)");
  }
  const JudgeFn& fn = judge ? judge : BitIdenticalJudge();
  const std::optional<std::string> why =
      fn(default_op, op, def->second.inputs, own->second.written, plan.values);
  RETURN_IF_ERROR(KeepVerdict(cache, key, kAdmitted, why.value_or("")));
  return why.value_or("");
}

}  // namespace irontune
