#include "daemon/ops/reference.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/op_access.h"
#include "common/recording.h"
#include "common/status_macros.h"
#include "daemon/ops/numeric.h"

namespace irontune {
namespace {

// Elements of a buffer: product(shape), saturating at 2^62.
uint64_t Elements(const v1::Buffer& b) {
  uint64_t n = 1;
  for (uint64_t e : b.shape()) {
    if (e != 0 && n > (uint64_t{1} << 62) / e) return uint64_t{1} << 62;
    n *= e;
  }
  return n;
}

// An input buffer; a missing one reads as zeros.
class In {
 public:
  In(const v1::Buffer& meta, const std::string* bytes)
      : meta_(&meta),
        data_(bytes == nullptr ? nullptr : bytes->data()),
        size_(Elements(meta)) {}
  const v1::Buffer& meta() const { return *meta_; }
  uint64_t size() const { return size_; }
  double operator[](uint64_t i) const {
    return data_ == nullptr ? 0.0 : LoadElement(meta_->dtype(), data_, i);
  }
  // Elements [begin, begin + n) into out[0, n), as operator[] reads them.
  void Load(uint64_t begin, uint64_t n, double* out) const {
    if (data_ == nullptr) {
      std::fill(out, out + n, 0.0);
      return;
    }
    std::vector<float> run(n);
    LoadElements(meta_->dtype(), data_, begin, n, run.data());
    std::copy(run.begin(), run.end(), out);
  }

 private:
  const v1::Buffer* meta_;
  const char* data_;
  uint64_t size_;
};

// An output buffer, zero-filled.
class Out {
 public:
  explicit Out(const v1::Buffer& meta)
      : meta_(&meta),
        size_(Elements(meta)),
        bytes_(size_ * DTypeSize(meta.dtype()), '\0') {}
  uint64_t size() const { return size_; }
  void Set(uint64_t i, double v) {
    StoreElement(meta_->dtype(), bytes_.data(), i, static_cast<float>(v));
  }
  std::string& bytes() { return bytes_; }

 private:
  const v1::Buffer* meta_;
  uint64_t size_;
  std::string bytes_;
};

// What one family's computation needs.
struct Ctx {
  const v1::Operator& op;
  const CallValues& values;
  std::vector<In> ins;  // by operator buffer index
  BufferRoles roles;

  int64_t Param(std::string_view name, int64_t fallback) const {
    return IntParam(op, name).value_or(fallback);
  }
  int64_t Extent(std::string_view name, int64_t fallback) const {
    return BoundExtent(op, values, name, fallback);
  }
  const In& in(size_t k) const { return ins[roles.in[k]]; }
  const v1::Buffer& out_meta() const { return op.buffers(roles.out[0]); }
};

absl::Status NoFit(const v1::Operator& op) {
  return absl::UnimplementedError(absl::StrCat(
      "the buffers do not fit ", op.class_name(), "'s layout: no reference"));
}

using Result = absl::StatusOr<std::pair<Out, ComputedRows>>;

// `out`, of which `computed` of the first `rows` rows of `row_len`
// contiguous elements were computed.
Result RowsOf(Out out, int64_t rows, int64_t computed, int64_t row_len) {
  return std::make_pair(std::move(out), ComputedRows{.rows = rows,
                                                     .computed = computed,
                                                     .row_elements = row_len,
                                                     .row_stride = row_len});
}

// The `rows` sampled rows of A(m x k) B(k x n), row j's n sums at
// [j * n, (j + 1) * n), each summed over k in ascending order in double.
// B is read a row of it at a time (a column where `b_col`), decoded once.
std::vector<double> GemmRows(const In& a, const In& b, bool b_col, int64_t used,
                             int64_t rows, int64_t k, int64_t n) {
  std::vector<double> a_rows(rows * k);
  for (int64_t j = 0; j < rows; ++j) {
    a.Load(SampleRow(j, rows, used) * k, k, a_rows.data() + j * k);
  }
  std::vector<double> acc(rows * n, 0.0), line(b_col ? k : n);
  if (b_col) {  // column `col` of B: k elements from col * k
    for (int64_t col = 0; col < n; ++col) {
      b.Load(col * k, k, line.data());
      for (int64_t j = 0; j < rows; ++j) {
        const double* av = a_rows.data() + j * k;
        double sum = 0;
        for (int64_t kk = 0; kk < k; ++kk) sum += av[kk] * line[kk];
        acc[j * n + col] = sum;
      }
    }
    return acc;
  }
  for (int64_t kk = 0; kk < k; ++kk) {  // row kk of B: n elements
    b.Load(kk * n, n, line.data());
    for (int64_t j = 0; j < rows; ++j) {
      const double av = a_rows[j * k + kk];
      double* sums = acc.data() + j * n;
      for (int64_t col = 0; col < n; ++col) sums[col] += av * line[col];
    }
  }
  return acc;
}

Result Gemm(const Ctx& c) {
  if (c.roles.in.size() < 2 || c.roles.out.empty()) return NoFit(c.op);
  const int64_t m = c.Param("M", 0), k = c.Param("K", 0), n = c.Param("N", 0);
  if (!Sane({m, k, n})) return NoFit(c.op);
  const In &a = c.in(0), &b = c.in(1);
  Out out(c.out_meta());
  if (a.size() < static_cast<uint64_t>(m * k) ||
      b.size() < static_cast<uint64_t>(k * n) ||
      out.size() < static_cast<uint64_t>(m * n)) {
    return NoFit(c.op);
  }
  const bool b_col = c.Param("b_col_maj", 0) != 0,
             c_col = c.Param("c_col_maj", 0) != 0;
  const int64_t used = c.Extent("M", m);
  const int64_t rows = SampledRows(used, k * n, kMaxGemmRows);
  const std::vector<double> acc = GemmRows(a, b, b_col, used, rows, k, n);
  for (int64_t j = 0; j < rows; ++j) {
    const int64_t i = SampleRow(j, rows, used);
    for (int64_t col = 0; col < n; ++col)
      out.Set(c_col ? col * m + i : i * n + col, acc[j * n + col]);
  }
  ComputedRows computed{.rows = used,
                        .computed = rows,
                        .row_elements = n,
                        .row_stride = c_col ? 1 : n,
                        .element_stride = c_col ? m : 1};
  return std::make_pair(std::move(out), computed);
}

Result Gemv(const Ctx& c) {
  if (c.roles.in.size() < 2 || c.roles.out.empty()) return NoFit(c.op);
  const int64_t m = c.Param("M", 0), k = c.Param("K", 0);
  if (!Sane({m, k, std::max<int64_t>(c.Param("num_batches", 1), 1)}))
    return NoFit(c.op);
  const In &a = c.in(0), &x = c.in(1);
  Out y(c.out_meta());
  if (a.size() < static_cast<uint64_t>(m * k) ||
      x.size() < static_cast<uint64_t>(k) ||
      y.size() < static_cast<uint64_t>(m)) {
    return NoFit(c.op);
  }
  int64_t batches = std::max<int64_t>(c.Param("num_batches", 1), 1);
  if (x.size() < static_cast<uint64_t>(batches * k) ||
      y.size() < static_cast<uint64_t>(batches * m))
    batches = 1;
  const bool a_per_batch =
      static_cast<__int128>(a.size()) >= static_cast<__int128>(batches) * m * k;
  const int64_t used = c.Extent("M", m);
  const int64_t rows = SampledRows(used, k * batches, used);
  for (int64_t bt = 0; bt < batches; ++bt) {
    const int64_t a_base = a_per_batch ? bt * m * k : 0;
    for (int64_t j = 0; j < rows; ++j) {
      const int64_t i = SampleRow(j, rows, used);
      double sum = 0;
      for (int64_t kk = 0; kk < k; ++kk)
        sum += a[a_base + i * k + kk] * x[bt * k + kk];
      y.Set(bt * m + i, sum);
    }
  }
  ComputedRows computed{
      .rows = used, .computed = rows, .batches = batches, .batch_stride = m};
  return std::make_pair(std::move(y), computed);
}

Result Elementwise(const Ctx& c) {
  const bool binary = IsBinaryElementwiseClass(c.op.class_name());
  if (c.roles.in.size() < (binary ? 2u : 1u) || c.roles.out.empty())
    return NoFit(c.op);
  const In &x = c.in(0), &z = c.in(binary ? 1 : 0);
  Out out(c.out_meta());
  // RowwiseMul's row serves every row of x.
  const bool broadcast = BroadcastsSecond(c.op.class_name());
  if (broadcast && z.size() == 0) return NoFit(c.op);
  const uint64_t n = broadcast ? std::min(x.size(), out.size())
                               : std::min({x.size(), z.size(), out.size()});
  const int64_t count =
      SampledRows(static_cast<int64_t>(n), 1, static_cast<int64_t>(n));
  const ElementMapper map(c.op);
  for (int64_t j = 0; j < count; ++j) {
    const uint64_t i = SampleRow(j, count, n);
    out.Set(i, map(x[i], z[broadcast ? i % z.size() : i]));
  }
  ComputedRows computed{.rows = static_cast<int64_t>(n), .computed = count};
  return std::make_pair(std::move(out), computed);
}

Result RowWise(const Ctx& c) {
  const bool rms = c.op.class_name() == "RMSNorm";
  if (c.roles.in.empty() || c.roles.out.empty()) return NoFit(c.op);
  const In& x = c.in(0);
  int64_t row_len = c.Param(rms ? "tile_size" : "cols", LastAxis(x.meta(), 0));
  const bool weighted = rms && c.roles.in.size() >= 2;
  if (weighted) row_len = LastAxis(c.in(1).meta(), row_len);
  Out out(c.out_meta());
  if (!Sane({row_len}) || x.size() < static_cast<uint64_t>(row_len) ||
      out.size() < x.size())
    return NoFit(c.op);
  if (weighted && c.in(1).size() < static_cast<uint64_t>(row_len))
    return NoFit(c.op);
  const int64_t total_rows = static_cast<int64_t>(x.size()) / row_len;
  const int64_t rows = SampledRows(total_rows, row_len, total_rows);
  for (int64_t j = 0; j < rows; ++j) {
    const int64_t base = SampleRow(j, rows, total_rows) * row_len;
    if (rms) {
      double sum = 0;
      for (int64_t i = 0; i < row_len; ++i) sum += x[base + i] * x[base + i];
      const double inv = 1.0 / std::sqrt(sum / row_len + kRmsNormEps);
      for (int64_t i = 0; i < row_len; ++i)
        out.Set(base + i, x[base + i] * inv * (weighted ? c.in(1)[i] : 1.0));
    } else {
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t i = 0; i < row_len; ++i) mx = std::max(mx, x[base + i]);
      double sum = 0;
      for (int64_t i = 0; i < row_len; ++i) sum += std::exp(x[base + i] - mx);
      for (int64_t i = 0; i < row_len; ++i)
        out.Set(base + i, std::exp(x[base + i] - mx) / sum);
    }
  }
  return RowsOf(std::move(out), total_rows, rows, row_len);
}

// Limbs and Magnitude: each row of the input's last axis mapped (RowMap),
// over the rows in use.
Result RowMapped(const Ctx& c) {
  if (c.roles.in.empty() || c.roles.out.empty()) return NoFit(c.op);
  const std::string& cls = c.op.class_name();
  const In& x = c.in(0);
  const int64_t in_len = LastAxis(x.meta(), 0);
  const int64_t out_len = RowMapOutLength(cls, in_len);
  Out out(c.out_meta());
  if (!Sane({in_len, out_len}) || x.size() % in_len != 0) return NoFit(c.op);
  const int64_t total = static_cast<int64_t>(x.size()) / in_len;
  if (out.size() < static_cast<uint64_t>(total * out_len)) return NoFit(c.op);
  const int64_t used = std::clamp<int64_t>(c.Extent("rows", total), 0, total);
  const int64_t rows = SampledRows(used, in_len, used);
  std::vector<float> y(out_len);
  for (int64_t j = 0; j < rows; ++j) {
    const int64_t row = SampleRow(j, rows, used);
    RowMap(cls, x, row * in_len, in_len, y.data());
    for (int64_t i = 0; i < out_len; ++i) out.Set(row * out_len + i, y[i]);
  }
  return RowsOf(std::move(out), used, rows, out_len);
}

// GQAScores and GQAContext (GqaRow), on gqa.py @ 607010e's layout: an
// operator without its `heads` param (the older gqa_context.py's) has none.
Result Gqa(const Ctx& c) {
  if (c.roles.in.size() < 2 || c.roles.out.empty() ||
      !IntParam(c.op, "heads").has_value())
    return NoFit(c.op);
  const bool scores = c.op.class_name() == "GQAScores";
  const std::optional<GqaDims> dims = ReadGqaDims(c);
  if (!dims.has_value()) return NoFit(c.op);
  const GqaDims& s = *dims;
  const In &a = c.in(0), &b = c.in(1);
  Out out(c.out_meta());
  const int64_t row_len = s.RowLength(scores);
  if (!s.Fits(scores, a.size(), b.size(), out.size())) return NoFit(c.op);
  const int64_t rows = SampledRows(s.heads, s.used * s.head_dim, s.heads);
  const int64_t valid = scores ? s.used : s.head_dim;
  std::vector<double> y(row_len);
  for (int64_t j = 0; j < rows; ++j) {
    const int64_t h = SampleRow(j, rows, s.heads);
    std::fill(y.begin(), y.end(), 0.0);
    GqaRow(scores, a, b, s, h, y.data());
    for (int64_t i = 0; i < valid; ++i) out.Set(h * row_len + i, y[i]);
  }
  return std::make_pair(std::move(out), ComputedRows{.rows = s.heads,
                                                     .computed = rows,
                                                     .row_elements = valid,
                                                     .row_stride = row_len});
}

Result Rope(const Ctx& c) {
  if (c.roles.in.size() < 2 || c.roles.out.empty()) return NoFit(c.op);
  const int64_t rows = c.Param("rows", 0), cols = c.Param("cols", 0);
  const int64_t angle_rows = c.Param("angle_rows", rows);
  const bool halves = c.Param("method_type", 0) == 0;
  if (!Sane({rows, cols, angle_rows}) || !Sane({rows * cols}) ||
      cols % 2 != 0 || rows % angle_rows != 0)
    return NoFit(c.op);
  const In &x = c.in(0), &ang = c.in(1);
  Out out(c.out_meta());
  if (x.size() < static_cast<uint64_t>(rows * cols) ||
      ang.size() < static_cast<uint64_t>(angle_rows * cols) ||
      out.size() < static_cast<uint64_t>(rows * cols))
    return NoFit(c.op);
  const int64_t used = c.Extent("rows", rows), per = rows / angle_rows;
  const int64_t sampled = SampledRows(used, cols, used);
  for (int64_t j = 0; j < sampled; ++j) {
    const int64_t row = SampleRow(j, sampled, used);
    RopeRow<double>(x, row * cols, ang, (row / per) * cols, cols, halves,
                    [&](int64_t i, double v) { out.Set(row * cols + i, v); });
  }
  return RowsOf(std::move(out), used, sampled, cols);
}

Result Mha(const Ctx& c) {
  if (c.roles.in.size() < 3 || c.roles.out.empty()) return NoFit(c.op);
  const int64_t heads = c.Param("num_heads", 0),
                kv_heads = c.Param("num_KV_heads", 0), d = c.Param("d", 0),
                pad = c.Param("seq_pad", 0);
  if (!Sane({heads, kv_heads, d, pad}) || !Sane({kv_heads * pad}))
    return NoFit(c.op);
  const In &q = c.in(0), &kc = c.in(1), &vc = c.in(2);
  Out out(c.out_meta());
  const uint64_t cache = static_cast<uint64_t>(kv_heads * pad * d);
  if (q.size() < static_cast<uint64_t>(heads * d) || kc.size() < cache ||
      vc.size() < cache || out.size() < static_cast<uint64_t>(heads * d)) {
    return NoFit(c.op);
  }
  const int64_t len = c.Extent("seq_pad", pad);
  const int64_t group = std::max<int64_t>(heads / kv_heads, 1);
  const int64_t sampled = SampledRows(heads, 2 * len * d, heads);
  std::vector<double> p(len), y(d);
  for (int64_t j = 0; j < sampled; ++j) {
    const int64_t h = SampleRow(j, sampled, heads);
    const int64_t base = std::min(h / group, kv_heads - 1) * pad * d;
    std::fill(y.begin(), y.end(), 0.0);
    AttendRow(q, kc, vc, h, base, len, d, p, y.data());
    for (int64_t i = 0; i < d; ++i) out.Set(h * d + i, y[i]);
  }
  return RowsOf(std::move(out), heads, sampled, d);
}

Result Sample(const Ctx& c) {
  if (c.roles.in.empty() || c.roles.out.empty()) return NoFit(c.op);
  const In& logits = c.in(0);
  const int64_t vocab = c.Param("vocab", LastAxis(logits.meta(), 0));
  Out out(c.out_meta());
  if (!Sane({vocab}) || logits.size() < static_cast<uint64_t>(vocab))
    return NoFit(c.op);
  const int64_t total_rows = static_cast<int64_t>(logits.size()) / vocab;
  if (out.size() < static_cast<uint64_t>(total_rows)) return NoFit(c.op);
  const int64_t rows = SampledRows(total_rows, vocab, total_rows);
  for (int64_t j = 0; j < rows; ++j) {
    const int64_t row = SampleRow(j, rows, total_rows);
    const int64_t base = row * vocab;
    double top = logits[base];
    int64_t best = 0;
    for (int64_t i = 1; i < vocab; ++i) {
      if (logits[base + i] > top) {
        top = logits[base + i];
        best = i;
      }
    }
    out.Set(row, static_cast<double>(best));
  }
  ComputedRows computed{.rows = total_rows, .computed = rows};
  return std::make_pair(std::move(out), computed);
}

}  // namespace

std::vector<int64_t> ComputedRows::RowIndices() const {
  std::vector<int64_t> out;
  out.reserve(computed);
  for (int64_t j = 0; j < computed; ++j)
    out.push_back(SampleRow(j, computed, rows));
  return out;
}

int64_t ComputedRows::ElementIndex(int64_t k) const {
  const int64_t per_batch = computed * row_elements;
  const int64_t b = k / per_batch, rest = k % per_batch;
  const int64_t j = rest / row_elements, e = rest % row_elements;
  return b * batch_stride + SampleRow(j, computed, rows) * row_stride +
         e * element_stride;
}

absl::StatusOr<Reference> ReferenceOutputs(const v1::Operator& op,
                                           const SharedInputs& inputs,
                                           const CallValues& values) {
  const std::string& cls = op.class_name();
  using Compute = Result (*)(const Ctx&);
  const Compute compute = ComputationOf<Compute>(
      cls,
      {Gemm, Gemv, Elementwise, RowWise, Rope, Mha, Sample, RowMapped, Gqa});
  if (compute == nullptr) {
    return absl::UnimplementedError(
        absl::StrCat("no CPU reference for class \"", cls, "\""));
  }
  for (const v1::Buffer& b : op.buffers()) {
    if (DTypeSize(b.dtype()) == 0) {
      return absl::UnimplementedError(absl::StrCat(
          "buffer \"", b.name(), "\" has a dtype the reference does not read"));
    }
  }
  Ctx ctx{op, values, {}, FindRoles(op)};
  for (const v1::Buffer& b : op.buffers()) {
    auto it = inputs.find(b.name());
    const std::string* bytes = it == inputs.end() ? nullptr : it->second.get();
    if (bytes != nullptr && bytes->size() != Elements(b) * DTypeSize(b.dtype()))
      return absl::InvalidArgumentError(
          absl::StrCat("input \"", b.name(), "\" holds ", bytes->size(),
                       " bytes, not ", Elements(b) * DTypeSize(b.dtype())));
    ctx.ins.emplace_back(b, bytes);
  }
  ASSIGN_OR_RETURN(auto result, compute(ctx));
  Reference reference;
  // The kernels compute their first output only; others hold nothing to
  // compare (no computed elements).
  for (size_t k = 0; k < ctx.roles.out.size(); ++k) {
    const v1::Buffer& b = op.buffers(ctx.roles.out[k]);
    if (k == 0) {
      reference.outputs[b.name()] = std::move(result.first.bytes());
      reference.computed[b.name()] = result.second;
    } else {
      reference.outputs[b.name()] =
          std::string(Elements(b) * DTypeSize(b.dtype()), '\0');
      reference.computed[b.name()] = ComputedRows{};
    }
  }
  return reference;
}

}  // namespace irontune
