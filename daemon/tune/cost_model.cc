#include "daemon/tune/cost_model.h"

#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"

namespace irontune {
namespace {

// The trees: few, shallow and slowly learnt, since a shape's own figures
// are tens, not thousands.
constexpr int kRounds = 60;
constexpr const char* kParams[][2] = {
    {"objective", "reg:squarederror"},
    {"tree_method", "exact"},
    {"max_depth", "4"},
    {"eta", "0.2"},
    {"min_child_weight", "1"},
    {"lambda", "1"},
    {"subsample", "1"},
    {"nthread", "1"},
    {"seed", "0"},
    {"verbosity", "0"},
};

// A stable number for a category (FNV-1a over its text), small enough to
// stay exact in a float.
float Category(const std::string& text) {
  uint32_t h = 2166136261u;
  for (unsigned char c : text) h = (h ^ c) * 16777619u;
  return static_cast<float>(h % 4096);
}

// The positive number `v` holds, if it holds one.
std::optional<double> Positive(const v1::Value& v) {
  if (v.has_int_value() && v.int_value() > 0) {
    return static_cast<double>(v.int_value());
  }
  if (v.has_double_value() && v.double_value() > 0 &&
      std::isfinite(v.double_value())) {
    return v.double_value();
  }
  return std::nullopt;
}

float ValueFeature(const v1::Value& v) {
  if (std::optional<double> p = Positive(v)) return std::log2(*p);
  if (v.has_bool_value()) return v.bool_value() ? 1.0f : 0.0f;
  if (v.has_string_value()) return Category(v.string_value());
  if (v.has_int_value()) return -1.0f;  // 0 or negative: "none"
  return std::numeric_limits<float>::quiet_NaN();
}

// Frees an XGBoost handle as it leaves scope.
struct MatrixFree {
  void operator()(void* m) const { XGDMatrixFree(m); }
};
using Matrix = std::unique_ptr<void, MatrixFree>;

absl::Status XgbError(const char* what) {
  return absl::InternalError(
      absl::StrCat("the cost model's ", what, ": ", XGBGetLastError()));
}

}  // namespace

double LogWork(const std::vector<v1::Field>& dims) {
  double sum = 0;
  for (const v1::Field& d : dims) {
    if (std::optional<double> p = Positive(d.value())) sum += std::log(*p);
  }
  return sum;
}

CostFeatures FeaturesOf(const std::vector<v1::Field>& dims,
                        const TunableValues& setting) {
  CostFeatures out;
  for (const v1::Field& d : dims) {
    out["d:" + d.name()] = ValueFeature(d.value());
  }
  for (const v1::Field& t : setting) {
    out["t:" + t.name()] = ValueFeature(t.value());
    const std::optional<double> tile = Positive(t.value());
    if (!tile) continue;
    for (const v1::Field& d : dims) {
      const std::optional<double> extent = Positive(d.value());
      if (!extent) continue;
      const std::string pair = t.name() + "/" + d.name();
      out["r:" + pair] = static_cast<float>(std::log2(*extent / *tile));
      const double tiles = std::ceil(*extent / *tile);
      out["w:" + pair] = static_cast<float>(tiles * *tile / *extent - 1.0);
    }
  }
  return out;
}

struct CostModel::Trees {
  std::vector<std::string> names;  // the columns, in order
  void* booster = nullptr;
  ~Trees() {
    if (booster != nullptr) XGBoosterFree(booster);
  }

  std::vector<float> Rows(const std::vector<const CostFeatures*>& rows) const {
    std::vector<float> out;
    out.reserve(rows.size() * names.size());
    for (const CostFeatures* f : rows) {
      for (const std::string& n : names) {
        auto it = f->find(n);
        out.push_back(it == f->end() ? std::numeric_limits<float>::quiet_NaN()
                                     : it->second);
      }
    }
    return out;
  }

  absl::StatusOr<Matrix> MatrixOf(
      const std::vector<const CostFeatures*>& rows) const {
    const std::vector<float> data = Rows(rows);
    void* m = nullptr;
    if (XGDMatrixCreateFromMat(data.data(), rows.size(), names.size(),
                               std::numeric_limits<float>::quiet_NaN(),
                               &m) != 0) {
      return XgbError("matrix");
    }
    return Matrix(m);
  }
};

CostModel::CostModel() = default;
CostModel::~CostModel() = default;
CostModel::CostModel(CostModel&&) noexcept = default;
CostModel& CostModel::operator=(CostModel&&) noexcept = default;

bool CostModel::fitted() const { return trees_ != nullptr; }

absl::Status CostModel::Fit(const std::vector<CostSample>& samples) {
  trees_.reset();
  if (samples.size() < 2) return absl::OkStatus();
  std::vector<const CostSample*> sorted;
  for (const CostSample& s : samples) sorted.push_back(&s);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) {
    return std::tie(a->features, a->log_cost, a->weight) <
           std::tie(b->features, b->log_cost, b->weight);
  });
  auto trees = std::make_unique<Trees>();
  std::set<std::string> names;
  for (const CostSample* s : sorted) {
    for (const auto& [name, value] : s->features) names.insert(name);
  }
  trees->names.assign(names.begin(), names.end());
  std::vector<const CostFeatures*> rows;
  std::vector<float> labels, weights;
  for (const CostSample* s : sorted) {
    rows.push_back(&s->features);
    labels.push_back(static_cast<float>(s->log_cost));
    weights.push_back(static_cast<float>(s->weight));
  }
  absl::StatusOr<Matrix> train = trees->MatrixOf(rows);
  if (!train.ok()) return train.status();
  if (XGDMatrixSetFloatInfo(train->get(), "label", labels.data(),
                            labels.size()) != 0 ||
      XGDMatrixSetFloatInfo(train->get(), "weight", weights.data(),
                            weights.size()) != 0) {
    return XgbError("labels");
  }
  void* handle = train->get();
  if (XGBoosterCreate(&handle, 1, &trees->booster) != 0) {
    return XgbError("booster");
  }
  for (const auto& [name, value] : kParams) {
    if (XGBoosterSetParam(trees->booster, name, value) != 0) {
      return XgbError(name);
    }
  }
  for (int i = 0; i < kRounds; ++i) {
    if (XGBoosterUpdateOneIter(trees->booster, i, train->get()) != 0) {
      return XgbError("fit");
    }
  }
  trees_ = std::move(trees);
  return absl::OkStatus();
}

std::vector<double> CostModel::Predict(
    const std::vector<CostFeatures>& settings) const {
  if (trees_ == nullptr || settings.empty()) return {};
  std::vector<const CostFeatures*> rows;
  for (const CostFeatures& f : settings) rows.push_back(&f);
  absl::StatusOr<Matrix> m = trees_->MatrixOf(rows);
  if (!m.ok()) return {};
  bst_ulong n = 0;
  const float* out = nullptr;
  if (XGBoosterPredict(trees_->booster, m->get(), 0, 0, 0, &n, &out) != 0 ||
      n != settings.size()) {
    return {};
  }
  return std::vector<double>(out, out + n);
}

void CostKnowledge::Learn(const std::string& class_name, const std::string& key,
                          std::vector<CostSample> samples) {
  absl::MutexLock lock(&mu_);
  std::vector<Shape>& shapes = by_class_[class_name];
  shapes.erase(std::remove_if(shapes.begin(), shapes.end(),
                              [&](const Shape& s) { return s.key == key; }),
               shapes.end());
  for (CostSample& s : samples) s.weight = 1;
  shapes.push_back({key, std::move(samples)});
  size_t total = 0;
  for (const Shape& s : shapes) total += s.samples.size();
  while (total > kMostSamplesPerClass && shapes.size() > 1) {
    total -= shapes.front().samples.size();
    shapes.erase(shapes.begin());
  }
}

std::vector<CostSample> CostKnowledge::SamplesOf(
    const std::string& class_name, const std::string& except_key) const {
  absl::MutexLock lock(&mu_);
  std::vector<CostSample> out;
  auto it = by_class_.find(class_name);
  if (it == by_class_.end()) return out;
  for (const Shape& s : it->second) {
    if (s.key == except_key) continue;
    out.insert(out.end(), s.samples.begin(), s.samples.end());
  }
  return out;
}

size_t CostKnowledge::shapes() const {
  absl::MutexLock lock(&mu_);
  size_t n = 0;
  for (const auto& [name, shapes] : by_class_) n += shapes.size();
  return n;
}

}  // namespace irontune
