#include "daemon/sim/kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "common/op_access.h"
#include "daemon/base/big_bytes.h"
#include "daemon/ops/numeric.h"

namespace irontune::sim {
namespace {

bool Supported(v1::DType dtype) { return DTypeBytes(dtype) > 0; }

// Read access to a buffer; unwritten storage reads as zeros.
class In {
 public:
  explicit In(const StepBuffer& b)
      : dtype_(b.meta->dtype()),
        width_(DTypeBytes(b.meta->dtype())),
        data_(b.bytes->empty() ? nullptr : b.bytes->data()),
        size_(width_ ? b.nbytes / width_ : 0) {}

  uint64_t size() const { return size_; }
  bool written() const { return data_ != nullptr; }
  float operator[](uint64_t i) const {
    return data_ == nullptr ? 0 : LoadElement(dtype_, data_, i);
  }
  // Elements [begin, begin + n) as floats into `out` (resized to n): the
  // values operator[] reads, decoded in one pass.
  void Load(uint64_t begin, uint64_t n, std::vector<float>& out) const {
    out.resize(n);
    if (data_ == nullptr) {
      std::fill(out.begin(), out.end(), 0.0f);
    } else {
      LoadElements(dtype_, data_, begin, n, out.data());
    }
  }

 private:
  v1::DType dtype_;
  int width_;
  const char* data_;
  uint64_t size_;
};

// Write access to an output: zero-filled on construction.
class Out {
 public:
  explicit Out(StepBuffer& b)
      : dtype_(b.meta->dtype()), width_(DTypeBytes(b.meta->dtype())) {
    AssignZeros(*b.bytes, b.nbytes);
    data_ = b.bytes->data();
    size_ = width_ ? b.nbytes / width_ : 0;
  }

  uint64_t size() const { return size_; }
  // `v` at the output's precision.
  float Round(float v) const { return RoundTo(dtype_, v); }
  void Set(uint64_t i, float v) { StoreElement(dtype_, data_, i, v); }
  // Elements [0, values.size()), each as Set stores it.
  void SetFirst(const std::vector<float>& values) {
    StoreElements(dtype_, data_, 0, values.size(), values.data());
  }

 private:
  v1::DType dtype_;
  int width_;
  char* data_ = nullptr;
  uint64_t size_ = 0;
};

// Decoded elements [first, first + n) of a buffer, read by the buffer's
// own index.
struct Window {
  const float* data;
  int64_t first;
  float operator[](int64_t i) const { return data[i - first]; }
};

// The elements `b` holds: its bytes over its dtype's width (1 where the
// dtype has none).
uint64_t Elements(const StepBuffer& b) {
  return b.nbytes / std::max(DTypeBytes(b.meta->dtype()), 1);
}

// The computed rows into output `b`, zeros elsewhere: elements [0, valid)
// of row j < sampled of `y` become those of row SampleRow(j, sampled, rows)
// of the output; rows are `row_len` apart in both. Made after the inputs
// are read: the output may be one of them (in place).
template <typename T>
void StoreRows(StepBuffer& b, const T* y, int64_t sampled, int64_t rows,
               int64_t row_len, int64_t valid) {
  Out out(b);
  for (int64_t j = 0; j < sampled; ++j) {
    const int64_t row = SampleRow(j, sampled, rows);
    for (int64_t i = 0; i < valid; ++i)
      out.Set(row * row_len + i, static_cast<float>(y[j * row_len + i]));
  }
}

void CopyFirstInput(const std::vector<StepBuffer>& ins,
                    std::vector<StepBuffer>& buffers,
                    const BufferRoles& roles) {
  if (roles.in.empty()) return;
  const std::string& src = *ins[roles.in[0]].bytes;
  if (src.empty()) return;
  for (int o : roles.out) {
    StepBuffer& b = buffers[o];
    // The input's bytes, zeros past them; where the input covers the
    // output (in place: the usual case), each byte is written once.
    if (src.size() >= b.nbytes) {
      AssignBytes(*b.bytes, std::string_view(src).substr(0, b.nbytes));
      continue;
    }
    AssignZeros(*b.bytes, b.nbytes);
    std::memcpy(b.bytes->data(), src.data(), src.size());
  }
}

// Each kernel returns false when the buffers do not fit its layout.

bool Gemm(const OpView& op, const std::vector<StepBuffer>& ins,
          std::vector<StepBuffer>& bufs, const BufferRoles& r) {
  if (r.in.size() < 2 || r.out.empty()) return false;
  const int64_t m = op.Param("M", 0), k = op.Param("K", 0),
                n = op.Param("N", 0);
  if (!Sane({m, k, n})) return false;
  In a(ins[r.in[0]]), b(ins[r.in[1]]);
  if (a.size() < static_cast<uint64_t>(m * k) ||
      b.size() < static_cast<uint64_t>(k * n))
    return false;
  if (Elements(bufs[r.out[0]]) < static_cast<uint64_t>(m * n)) {
    return false;
  }
  const bool b_col = op.Param("b_col_maj", 0) != 0,
             c_col = op.Param("c_col_maj", 0) != 0;
  const int64_t tk = std::clamp<int64_t>(op.Tunable("tile_k", 64), 1, k);
  const int64_t used = op.Extent("M", m);
  Out c(bufs[r.out[0]]);
  const int64_t rows = SampledRows(used, k * n, kMaxGemmRows);
  // All sampled rows advance together, so each row of B is decoded once;
  // every output element still sums its K chunk in ascending order.
  std::vector<int64_t> sample(rows);
  for (int64_t j = 0; j < rows; ++j) sample[j] = SampleRow(j, rows, used);
  std::vector<float> acc(rows * n, 0.0f), part(rows * n), brow(n);
  for (int64_t k0 = 0; k0 < k; k0 += tk) {
    std::fill(part.begin(), part.end(), 0.0f);
    const int64_t k1 = std::min(k, k0 + tk);
    for (int64_t kk = k0; kk < k1; ++kk) {
      for (int64_t col = 0; col < n; ++col) {
        brow[col] = b[b_col ? col * k + kk : kk * n + col];
      }
      for (int64_t j = 0; j < rows; ++j) {
        const float av = a[sample[j] * k + kk];
        float* __restrict p = part.data() + j * n;
        const float* __restrict bv = brow.data();
        for (int64_t col = 0; col < n; ++col) p[col] += av * bv[col];
      }
    }
    // The C tile is held at the output's precision between K chunks.
    for (int64_t e = 0; e < rows * n; ++e) acc[e] = c.Round(acc[e] + part[e]);
  }
  for (int64_t j = 0; j < rows; ++j) {
    const int64_t i = sample[j];
    for (int64_t col = 0; col < n; ++col) {
      c.Set(c_col ? col * m + i : i * n + col, acc[j * n + col]);
    }
  }
  return true;
}

bool Gemv(const OpView& op, const std::vector<StepBuffer>& ins,
          std::vector<StepBuffer>& bufs, const BufferRoles& r) {
  if (r.in.size() < 2 || r.out.empty()) return false;
  const int64_t m = op.Param("M", 0), k = op.Param("K", 0);
  if (!Sane({m, k, std::max<int64_t>(op.Param("num_batches", 1), 1)}))
    return false;
  In a(ins[r.in[0]]), x(ins[r.in[1]]);
  const uint64_t y_size = bufs[r.out[0]].nbytes /
                          std::max(DTypeBytes(bufs[r.out[0]].meta->dtype()), 1);
  if (a.size() < static_cast<uint64_t>(m * k) ||
      x.size() < static_cast<uint64_t>(k) ||
      y_size < static_cast<uint64_t>(m)) {
    return false;
  }
  int64_t batches = std::max<int64_t>(op.Param("num_batches", 1), 1);
  if (x.size() < static_cast<uint64_t>(batches * k) ||
      y_size < static_cast<uint64_t>(batches * m))
    batches = 1;
  const bool a_per_batch =
      static_cast<__int128>(a.size()) >= static_cast<__int128>(batches) * m * k;
  // IRON's width when none is given: the widest of 64, 32, 16 that K is a
  // multiple of at least twice over.
  int64_t widest = 16;
  for (int64_t w : {64, 32}) {
    if (k % w == 0 && k >= 2 * w) {
      widest = w;
      break;
    }
  }
  const int64_t v =
      std::clamp<int64_t>(op.Tunable("kernel_vector_size", widest), 1, k);
  const int64_t used = op.Extent("M", m);
  Out y(bufs[r.out[0]]);
  const int64_t rows = SampledRows(used, k * batches, used);
  std::vector<float> lanes(v), xs, row;
  for (int64_t bt = 0; bt < batches; ++bt) {
    const int64_t a_base = a_per_batch ? bt * m * k : 0;
    x.Load(bt * k, k, xs);
    for (int64_t j = 0; j < rows; ++j) {
      const int64_t i = SampleRow(j, rows, used);
      a.Load(a_base + i * k, k, row);
      std::fill(lanes.begin(), lanes.end(), 0.0f);
      // Lane l sums elements l, l + v, l + 2v, ... in that order.
      for (int64_t k0 = 0; k0 < k; k0 += v) {
        const int64_t width = std::min(v, k - k0);
        const float* __restrict rv = row.data() + k0;
        const float* __restrict xv = xs.data() + k0;
        float* __restrict lv = lanes.data();
        for (int64_t l = 0; l < width; ++l) lv[l] += rv[l] * xv[l];
      }
      for (int64_t stride = 1; stride < v; stride *= 2) {
        for (int64_t l = 0; l + stride < v; l += 2 * stride)
          lanes[l] += lanes[l + stride];
      }
      y.Set(bt * m + i, lanes[0]);
    }
  }
  return true;
}

// map(x[i], z[i]) for each i in [0, n), as floats; z is x where the map is
// not binary. Decoded a run at a time.
std::vector<float> MapEvery(const In& x, const In& z, bool binary,
                            const ElementMapper& map, uint64_t n) {
  constexpr uint64_t kRun = 1 << 14;
  std::vector<float> values(n), xs, zs;
  for (uint64_t begin = 0; begin < n; begin += kRun) {
    const uint64_t len = std::min(kRun, n - begin);
    x.Load(begin, len, xs);
    if (binary) z.Load(begin, len, zs);
    const std::vector<float>& second = binary ? zs : xs;
    for (uint64_t j = 0; j < len; ++j) {
      values[begin + j] = static_cast<float>(map(xs[j], second[j]));
    }
  }
  return values;
}

bool Elementwise(const OpView& op, const std::vector<StepBuffer>& ins,
                 std::vector<StepBuffer>& bufs, const BufferRoles& r) {
  const bool binary = IsBinaryElementwiseClass(op.class_name());
  if (r.in.size() < (binary ? 2u : 1u) || r.out.empty()) return false;
  In x(ins[r.in[0]]);
  In z(ins[r.in[binary ? 1 : 0]]);
  // RowwiseMul's row serves every row of x.
  const bool broadcast = BroadcastsSecond(op.class_name());
  if (broadcast && z.size() == 0) return false;
  uint64_t n = broadcast ? x.size() : std::min(x.size(), z.size());
  const uint64_t out_n = Elements(bufs[r.out[0]]);
  n = std::min(n, out_n);
  const int64_t count =
      SampledRows(static_cast<int64_t>(n), 1, static_cast<int64_t>(n));
  const ElementMapper map(op.op());
  if (broadcast) {
    std::vector<float> values(count);
    for (int64_t j = 0; j < count; ++j) {
      const uint64_t i = SampleRow(j, count, n);
      values[j] = static_cast<float>(map(x[i], z[i % z.size()]));
    }
    StoreRows(bufs[r.out[0]], values.data(), count, n, 1, 1);
    return true;
  }
  // Every element (the usual case): decoded and stored in runs, the same
  // values as one at a time. The inputs are all read before the output is
  // made: it may be one of them (in place).
  if (static_cast<uint64_t>(count) == n) {
    std::vector<float> values = MapEvery(x, z, binary, map, n);
    Out out(bufs[r.out[0]]);
    out.SetFirst(values);
    return true;
  }
  std::vector<float> values(count);
  for (int64_t j = 0; j < count; ++j) {
    const uint64_t i = SampleRow(j, count, n);
    values[j] = static_cast<float>(map(x[i], z[i]));
  }
  StoreRows(bufs[r.out[0]], values.data(), count, n, 1, 1);
  return true;
}

// Row-wise families: RMSNorm and Softmax over the input's last axis.
bool RowWise(const OpView& op, const std::vector<StepBuffer>& ins,
             std::vector<StepBuffer>& bufs, const BufferRoles& r) {
  const bool rms = op.class_name() == "RMSNorm";
  if (r.in.empty() || r.out.empty()) return false;
  const StepBuffer& xb = ins[r.in[0]];
  int64_t row_len = op.Param(rms ? "tile_size" : "cols", LastAxis(*xb.meta, 0));
  const bool weighted = rms && r.in.size() >= 2;
  if (weighted) row_len = LastAxis(*ins[r.in[1]].meta, row_len);
  In x(xb);
  const uint64_t out_n = Elements(bufs[r.out[0]]);
  if (!Sane({row_len}) || x.size() < static_cast<uint64_t>(row_len) ||
      out_n < x.size())
    return false;
  const int64_t total_rows = static_cast<int64_t>(x.size()) / row_len;
  const int64_t tile =
      std::clamp<int64_t>(op.Tunable("tile_size", row_len), 1, row_len);
  std::vector<float> w(weighted ? row_len : 0);
  if (weighted) {
    In wb(ins[r.in[1]]);
    if (wb.size() < static_cast<uint64_t>(row_len)) return false;
    for (int64_t i = 0; i < row_len; ++i) w[i] = wb[i];
  }
  const int64_t rows = SampledRows(total_rows, row_len, total_rows);
  std::vector<float> results(rows * row_len);
  for (int64_t j = 0; j < rows; ++j) {
    const int64_t base = SampleRow(j, rows, total_rows) * row_len;
    float* y = results.data() + j * row_len;
    if (rms) {
      float sum = 0;
      for (int64_t t0 = 0; t0 < row_len; t0 += tile) {  // per tile, then across
        float part = 0;
        for (int64_t i = t0; i < std::min(row_len, t0 + tile); ++i)
          part += x[base + i] * x[base + i];
        sum += part;
      }
      const float inv = 1.0f / std::sqrt(sum / static_cast<float>(row_len) +
                                         static_cast<float>(kRmsNormEps));
      for (int64_t i = 0; i < row_len; ++i)
        y[i] = x[base + i] * inv * (weighted ? w[i] : 1.0f);
    } else {
      float mx = -std::numeric_limits<float>::infinity();
      for (int64_t i = 0; i < row_len; ++i) mx = std::max(mx, x[base + i]);
      float sum = 0;
      for (int64_t i = 0; i < row_len; ++i)
        sum += (y[i] = std::exp(x[base + i] - mx));
      for (int64_t i = 0; i < row_len; ++i) y[i] /= sum;
    }
  }
  StoreRows(bufs[r.out[0]], results.data(), rows, total_rows, row_len, row_len);
  return true;
}

// RoPE against its angle table (iron/operators/rope.py): each angle row
// (cos, sin interleaved) serves rows / angle_rows consecutive rows; method 0
// rotates the row's two halves, 1 its interleaved pairs.
bool Rope(const OpView& op, const std::vector<StepBuffer>& ins,
          std::vector<StepBuffer>& bufs, const BufferRoles& r) {
  if (r.in.size() < 2 || r.out.empty()) return false;
  const int64_t rows = op.Param("rows", 0), cols = op.Param("cols", 0);
  const int64_t angle_rows = op.Param("angle_rows", rows);
  const bool halves = op.Param("method_type", 0) == 0;
  if (!Sane({rows, cols, angle_rows}) || !Sane({rows * cols}) ||
      cols % 2 != 0 || rows % angle_rows != 0)
    return false;
  In x(ins[r.in[0]]), ang(ins[r.in[1]]);
  const uint64_t out_n = Elements(bufs[r.out[0]]);
  if (x.size() < static_cast<uint64_t>(rows * cols) ||
      ang.size() < static_cast<uint64_t>(angle_rows * cols) ||
      out_n < static_cast<uint64_t>(rows * cols))
    return false;
  const int64_t used = op.Extent("rows", rows), per = rows / angle_rows;
  const int64_t sampled = SampledRows(used, cols, used);
  std::vector<float> y(sampled * cols);
  for (int64_t j = 0; j < sampled; ++j) {
    const int64_t row = SampleRow(j, sampled, used);
    RopeRow<float>(x, row * cols, ang, (row / per) * cols, cols, halves,
                   [&](int64_t i, float v) { y[j * cols + i] = v; });
  }
  StoreRows(bufs[r.out[0]], y.data(), sampled, used, cols, cols);
  return true;
}

bool Mha(const OpView& op, const std::vector<StepBuffer>& ins,
         std::vector<StepBuffer>& bufs, const BufferRoles& r) {
  if (r.in.size() < 3 || r.out.empty()) return false;
  const int64_t heads = op.Param("num_heads", 0),
                kv_heads = op.Param("num_KV_heads", 0), d = op.Param("d", 0),
                pad = op.Param("seq_pad", 0);
  if (!Sane({heads, kv_heads, d, pad}) || !Sane({kv_heads * pad})) return false;
  In q(ins[r.in[0]]), kc(ins[r.in[1]]), vc(ins[r.in[2]]);
  const uint64_t out_n = Elements(bufs[r.out[0]]);
  const uint64_t cache = static_cast<uint64_t>(kv_heads * pad * d);
  if (q.size() < static_cast<uint64_t>(heads * d) || kc.size() < cache ||
      vc.size() < cache || out_n < static_cast<uint64_t>(heads * d)) {
    return false;
  }
  const int64_t len = op.Extent("seq_pad", pad);
  const int64_t group = std::max<int64_t>(heads / kv_heads, 1);
  const int64_t sampled = SampledRows(heads, 2 * len * d, heads);
  std::vector<float> y(sampled * d), p(len);
  // The rows AttendRow reads, decoded once: q's row, and the K and V rows
  // of the head's KV group (reused while the group stays the same).
  std::vector<float> qs, ks, vs;
  int64_t decoded = -1;
  for (int64_t j = 0; j < sampled; ++j) {
    const int64_t h = SampleRow(j, sampled, heads);
    const int64_t base = std::min(h / group, kv_heads - 1) * pad * d;
    if (base != decoded) {
      kc.Load(base, len * d, ks);
      vc.Load(base, len * d, vs);
      decoded = base;
    }
    q.Load(h * d, d, qs);
    AttendRow(Window{qs.data(), h * d}, Window{ks.data(), base},
              Window{vs.data(), base}, h, base, len, d, p, &y[j * d]);
  }
  StoreRows(bufs[r.out[0]], y.data(), sampled, heads, d, d);
  return true;
}

bool Sample(const OpView& op, const std::vector<StepBuffer>& ins,
            std::vector<StepBuffer>& bufs, const BufferRoles& r) {
  if (r.in.empty() || r.out.empty()) return false;
  In logits(ins[r.in[0]]);
  const int64_t vocab = op.Param("vocab", LastAxis(*ins[r.in[0]].meta, 0));
  const uint64_t out_n = Elements(bufs[r.out[0]]);
  if (!Sane({vocab}) || logits.size() < static_cast<uint64_t>(vocab))
    return false;
  const int64_t total_rows = static_cast<int64_t>(logits.size()) / vocab;
  if (out_n < static_cast<uint64_t>(total_rows)) return false;
  const int64_t rows = SampledRows(total_rows, vocab, total_rows);
  std::vector<int64_t> best(rows, 0);
  for (int64_t j = 0; j < rows; ++j) {
    const int64_t base = SampleRow(j, rows, total_rows) * vocab;
    float top = logits[base];
    for (int64_t i = 1; i < vocab; ++i) {
      const float v = logits[base + i];
      if (v > top) {
        top = v;
        best[j] = i;
      }
    }
  }
  StoreRows(bufs[r.out[0]], best.data(), rows, total_rows, 1, 1);
  return true;
}

// Limbs and Magnitude: each row of the input's last axis mapped (RowMap),
// as the CPU reference maps it.
bool RowMapped(const OpView& op, const std::vector<StepBuffer>& ins,
               std::vector<StepBuffer>& bufs, const BufferRoles& r) {
  if (r.in.empty() || r.out.empty()) return false;
  const std::string& cls = op.class_name();
  In x(ins[r.in[0]]);
  const int64_t in_len = LastAxis(*ins[r.in[0]].meta, 0);
  const int64_t out_len = RowMapOutLength(cls, in_len);
  if (!Sane({in_len, out_len}) || x.size() % in_len != 0) return false;
  const int64_t total = static_cast<int64_t>(x.size()) / in_len;
  const uint64_t out_n = Elements(bufs[r.out[0]]);
  if (out_n < static_cast<uint64_t>(total * out_len)) return false;
  const int64_t used = std::clamp<int64_t>(op.Extent("rows", total), 0, total);
  const int64_t rows = SampledRows(used, in_len, used);
  std::vector<float> y(rows * out_len);
  for (int64_t j = 0; j < rows; ++j)
    RowMap(cls, x, SampleRow(j, rows, used) * in_len, in_len,
           y.data() + j * out_len);
  StoreRows(bufs[r.out[0]], y.data(), rows, used, out_len, out_len);
  return true;
}

// GQAScores and GQAContext (GqaRow), as the CPU reference computes them.
bool Gqa(const OpView& op, const std::vector<StepBuffer>& ins,
         std::vector<StepBuffer>& bufs, const BufferRoles& r) {
  if (r.in.size() < 2 || r.out.empty() || !IntParam(op.op(), "heads"))
    return false;
  const bool scores = op.class_name() == "GQAScores";
  const std::optional<GqaDims> dims = ReadGqaDims(op);
  if (!dims.has_value()) return false;
  const GqaDims& s = *dims;
  In a(ins[r.in[0]]), b(ins[r.in[1]]);
  const int64_t row_len = s.RowLength(scores);
  if (!s.Fits(scores, a.size(), b.size(), Elements(bufs[r.out[0]])))
    return false;
  const int64_t rows = SampledRows(s.heads, s.used * s.head_dim, s.heads);
  const int64_t valid = scores ? s.used : s.head_dim;
  std::vector<double> y(rows * row_len, 0.0);
  for (int64_t j = 0; j < rows; ++j)
    GqaRow(scores, a, b, s, SampleRow(j, rows, s.heads),
           y.data() + j * row_len);
  StoreRows(bufs[r.out[0]], y.data(), rows, s.heads, row_len, valid);
  return true;
}

}  // namespace

absl::Status ComputeStep(const OpView& op, std::vector<StepBuffer>& buffers) {
  if (static_cast<int>(buffers.size()) != op.op().buffers_size()) {
    return absl::InternalError(absl::StrCat("ComputeStep: ", buffers.size(),
                                            " buffers for an operator of ",
                                            op.op().buffers_size()));
  }
  for (const StepBuffer& b : buffers) {
    if (b.meta == nullptr || b.bytes == nullptr ||
        (!b.bytes->empty() && b.bytes->size() != b.nbytes)) {
      return absl::InternalError("ComputeStep: a buffer breaks its contract");
    }
  }
  const BufferRoles roles = FindRoles(op.op());
  bool any_written = false;
  for (int i : roles.in) any_written |= !buffers[i].bytes->empty();
  if (!any_written) return absl::OkStatus();
  // An INOUT buffer is read from a snapshot, as the output resets it.
  std::vector<StepBuffer> inputs = buffers;
  std::vector<std::string> snapshots(buffers.size());
  for (int i : roles.in) {
    if (std::find(roles.out.begin(), roles.out.end(), i) != roles.out.end()) {
      snapshots[i] = *buffers[i].bytes;
      inputs[i].bytes = &snapshots[i];
    }
  }
  bool typed = true;
  for (const StepBuffer& b : buffers) typed &= Supported(b.meta->dtype());

  const std::string& cls = op.class_name();
  using Kernel = bool (*)(const OpView&, const std::vector<StepBuffer>&,
                          std::vector<StepBuffer>&, const BufferRoles&);
  const Kernel kernel = ComputationOf<Kernel>(
      cls,
      {Gemm, Gemv, Elementwise, RowWise, Rope, Mha, Sample, RowMapped, Gqa});
  const bool done =
      typed && kernel != nullptr && kernel(op, inputs, buffers, roles);
  if (!done) CopyFirstInput(inputs, buffers, roles);
  return absl::OkStatus();
}

}  // namespace irontune::sim
