#include "daemon/tune/verdicts.h"

#include <future>
#include <map>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/design.h"
#include "common/status_macros.h"
#include "daemon/base/sha256.h"
#include "daemon/base/thread_roles.h"
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

// A kept verdict's text read: nullopt where none is kept (or it does not
// read), else "" for `yes` and the reason for a refusal.
std::optional<std::string> ReadVerdict(const std::optional<std::string>& kept,
                                       const char* yes) {
  if (!kept) return std::nullopt;
  if (*kept == yes) return std::string();
  if (kept->starts_with(kRefusedPrefix)) {
    return kept->substr(kRefusedPrefixSize);
  }
  return std::nullopt;
}

// The verdict kept under `key` (ReadVerdict).
absl::StatusOr<std::optional<std::string>> KeptVerdict(Cache* cache,
                                                       const VerdictKey& key,
                                                       const char* yes) {
  if (cache == nullptr) return std::nullopt;
  ASSIGN_OR_RETURN(std::optional<std::string> kept, cache->GetVerdict(key));
  return ReadVerdict(kept, yes);
}

absl::Status KeepVerdict(Cache* cache, const VerdictKey& key, const char* yes,
                         const std::string& why) {
  if (cache == nullptr) return absl::OkStatus();
  return cache->PutVerdict(
      key, why.empty() ? std::string(yes) : absl::StrCat(kRefusedPrefix, why));
}

// Each given input's name and sha256, a line each: part of a judgement's
// key (the inputs that are not given are the seed's).
std::string GivenText(const MeasurePlan& plan) {
  std::string out;
  for (const auto& [name, bytes] : plan.inputs) {
    absl::StrAppend(&out, "\n", name, "=", Sha256Hex(bytes));
  }
  return out;
}

// The kept verdicts of `keys`, looked up together (one read transaction),
// as KeptVerdict reads each.
absl::StatusOr<std::vector<std::optional<std::string>>> KeptVerdicts(
    Cache* cache, const std::vector<VerdictKey>& keys, const char* yes) {
  std::vector<std::optional<std::string>> out(keys.size());
  if (cache == nullptr || keys.empty()) return out;
  ASSIGN_OR_RETURN(std::vector<std::optional<std::string>> kept,
                   cache->GetVerdicts(keys));
  for (size_t k = 0; k < keys.size(); ++k) out[k] = ReadVerdict(kept[k], yes);
  return out;
}

// Where the judgement of setting `i` of `plan` is kept: the two designs,
// the two output digests (`want` the default's, `got` its), the per-call
// values, the seed, its tolerance, the given inputs (GivenText) and the
// judge's id.
VerdictKey JudgementKey(const OutputJudge::Options& options,
                        const MeasurePlan& plan, int i, const std::string& want,
                        const std::string& got, const std::string& given) {
  const v1::Operator& op = plan.settings[i];
  const std::string text = absl::StrCat(
      "judge\n",
      RecipeKeyHash(plan.settings[0], options.platform, options.packaging),
      "\n", RecipeKeyHash(op, options.platform, options.packaging), "\n", want,
      "\n", got, "\n", ValuesText(plan.values), "\n", options.seed, "\n",
      Sha256Hex(op.tolerance().SerializeAsString()), given);
  return VerdictKey{Sha256Hex(text), absl::StrCat("judge:", options.judge_id)};
}

// Why a setting whose figure came from the cache, its output differing from
// the default's, is refused when no judgement is kept: there is no output
// to judge, so conservatively.
constexpr char kNoOutput[] =
    "its output differs from the recorded setting's and, its figure "
    "coming from the cache, there is no output to judge (remeasure to "
    "judge it)";

}  // namespace

std::string RecipeKeyHash(const v1::Operator& op, const Platform& platform,
                          v1::Packaging packaging) {
  return Sha256Hex(absl::StrCat("recipe\n", platform.generation, "\n",
                                static_cast<int>(packaging), "\n",
                                DesignBytes(op)));
}

VerdictKey BuilderVerdictKey(const v1::Operator& op, const Platform& platform,
                             v1::Packaging packaging,
                             const std::string& environment) {
  return VerdictKey{RecipeKeyHash(op, platform, packaging), environment};
}

absl::StatusOr<std::vector<std::optional<std::string>>> KeptRefusals(
    const std::vector<v1::Operator>& ops, const Platform& platform,
    v1::Packaging packaging, const std::string& environment, Cache* cache) {
  std::vector<VerdictKey> keys;
  for (const v1::Operator& op : ops) {
    keys.push_back(BuilderVerdictKey(op, platform, packaging, environment));
  }
  return KeptVerdicts(cache, keys, kFits);
}

absl::StatusOr<std::string> Refusal(const v1::Operator& op,
                                    const Platform& platform,
                                    v1::Packaging packaging, Builder& builder,
                                    Cache* cache) {
  const VerdictKey key =
      BuilderVerdictKey(op, platform, packaging, builder.Environment());
  ASSIGN_OR_RETURN(std::optional<std::string> kept,
                   KeptVerdict(cache, key, kFits));
  if (kept) return *kept;
  ASSIGN_OR_RETURN(std::string why,
                   builder.Fit(MeasureRequest(op, op, platform, 1, packaging)));
  RETURN_IF_ERROR(KeepVerdict(cache, key, kFits, why));
  return why;
}

absl::StatusOr<std::vector<std::string>> Refusals(
    const std::vector<v1::Operator>& ops, const Platform& platform,
    v1::Packaging packaging, Builder& builder, Cache* cache,
    const std::function<bool()>& cancelled) {
  const std::string environment = builder.Environment();
  ASSIGN_OR_RETURN(std::vector<std::optional<std::string>> kept,
                   KeptRefusals(ops, platform, packaging, environment, cache));
  std::vector<std::string> out(ops.size());
  std::vector<size_t> todo;
  auto request = [&](size_t i) {
    return MeasureRequest(ops[i], ops[i], platform, 1, packaging);
  };
  for (size_t i = 0; i < ops.size(); ++i) {
    if (kept[i]) {
      out[i] = *kept[i];
      continue;
    }
    todo.push_back(i);
    // A check that builds: all queued at once.
    if (!builder.ChecksFit()) builder.Prefetch(request(i));
  }
  const std::function<bool()> never = [] { return false; };
  for (size_t i : todo) {
    if (builder.ChecksFit()) {
      if (cancelled && cancelled()) {
        return absl::CancelledError("cancelled while checking fits");
      }
      ASSIGN_OR_RETURN(out[i], builder.Fit(request(i)));
    } else {
      ASSIGN_OR_RETURN(
          BuildOutcome outcome,
          builder.Await(request(i), cancelled ? cancelled : never));
      out[i] = RefusalOf(outcome);
    }
    RETURN_IF_ERROR(KeepVerdict(
        cache, BuilderVerdictKey(ops[i], platform, packaging, environment),
        kFits, out[i]));
  }
  return out;
}

// What the helper judges: the settings whose verdicts are not known, with
// the outputs they need (moved out of the outcome).
struct OutputJudge::Work {
  v1::Operator default_op;
  SharedInputs inputs;  // the default's, shared with its images
  CallValues values;
  std::string inputs_id;  // names `inputs` in the memo
  std::vector<v1::Operator> ops;
  std::vector<std::map<std::string, std::string>> written;
};

// A Start not yet finished.
struct OutputJudge::Pending {
  std::map<int, std::string> known;  // verdicts that needed no judging
  std::vector<int> index;            // the settings judged, in Work's order
  std::vector<VerdictKey> keys;      // where their judgements are kept
  std::future<std::vector<std::string>> judged;  // "" or why not, each
};

OutputJudge::OutputJudge(Options options)
    : options_(std::move(options)), memo_(options_.reference) {}

OutputJudge::~OutputJudge() = default;

absl::Status OutputJudge::Start(const MeasurePlan& plan, MeasureOutcome outcome,
                                const std::vector<int>& settings) {
  if (pending_ != nullptr) {
    return absl::InternalError("judging started before the last finished");
  }
  auto pending = std::make_unique<Pending>();
  std::optional<std::string> given;  // GivenText, once a key needs it
  std::vector<int> unknown;
  std::vector<VerdictKey> keys;
  const std::string& want = outcome.measurements.at(0).output();
  for (int i : settings) {
    const std::string& got = outcome.measurements.at(i).output();
    if (want == got) {
      pending->known[i] = "";
      continue;
    }
    if (!given) given = GivenText(plan);
    unknown.push_back(i);
    keys.push_back(JudgementKey(options_, plan, i, want, got, *given));
  }
  ASSIGN_OR_RETURN(std::vector<std::optional<std::string>> kept,
                   KeptVerdicts(options_.cache, keys, kAdmitted));
  Work work;
  auto def = outcome.outputs.find(0);
  for (size_t k = 0; k < unknown.size(); ++k) {
    const int i = unknown[k];
    auto own = outcome.outputs.find(i);
    if (kept[k]) {
      pending->known[i] = *kept[k];
    } else if (def == outcome.outputs.end() || own == outcome.outputs.end()) {
      pending->known[i] = kNoOutput;
    } else {
      pending->index.push_back(i);
      pending->keys.push_back(keys[k]);
      work.ops.push_back(plan.settings[i]);
      work.written.push_back(std::move(own->second.written));
    }
  }
  if (!pending->index.empty()) {
    work.default_op = plan.settings[0];
    work.inputs = std::move(def->second.inputs);
    work.values = plan.values;
    work.inputs_id = absl::StrCat(
        RecipeKeyHash(plan.settings[0], options_.platform, options_.packaging),
        "\n", options_.seed, *given);
    pending->judged =
        std::async(std::launch::async, [this, work = std::move(work)] {
          BecomeHelperThread();
          return JudgeAll(work);
        });
  }
  pending_ = std::move(pending);
  return absl::OkStatus();
}

std::vector<std::string> OutputJudge::JudgeAll(const Work& work) {
  const JudgeFn& fn = options_.judge ? options_.judge : BitIdenticalJudge();
  const ReferenceLookup reference = [this, &work](const v1::Operator& op,
                                                  const SharedInputs& inputs,
                                                  const CallValues& values) {
    return memo_.Get(work.inputs_id, op, inputs, values);
  };
  std::vector<std::string> out;
  for (size_t k = 0; k < work.ops.size(); ++k) {
    out.push_back(fn(work.default_op, work.ops[k], work.inputs, work.written[k],
                     work.values, reference)
                      .value_or(""));
  }
  return out;
}

absl::StatusOr<std::map<int, std::string>> OutputJudge::Finish() {
  if (pending_ == nullptr) return std::map<int, std::string>();
  const std::unique_ptr<Pending> done = std::move(pending_);
  std::map<int, std::string> out = std::move(done->known);
  if (!done->judged.valid()) return out;
  const std::vector<std::string> why = done->judged.get();
  for (size_t k = 0; k < why.size(); ++k) {
    RETURN_IF_ERROR(
        KeepVerdict(options_.cache, done->keys[k], kAdmitted, why[k]));
    out[done->index[k]] = why[k];
  }
  return out;
}

}  // namespace irontune
