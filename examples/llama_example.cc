#include "examples/llama_example.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/contexts.h"
#include "common/families.h"
#include "common/recording.h"
#include "common/status_macros.h"
#include "common/value.h"
#include "google/protobuf/util/message_differencer.h"

namespace irontune::examples {
namespace {

using google::protobuf::util::MessageDifferencer;

constexpr int64_t kKvDim = kKvHeads * kHeadDim;  // 512

// The decode step is recorded at the first point's context, 256: position
// 255. The prompt chunk is recorded as the prompt's first chunk, rows 0..255
// (start 0).
constexpr int64_t kDecodePosition = 255;

// ---------------------------------------------------------------------------
// Values and expressions

v1::Expression Named(std::string name) {
  v1::Expression out;
  out.set_value(std::move(name));
  return out;
}

v1::Expression Constant(int64_t c) {
  v1::Expression out;
  out.set_constant(c);
  return out;
}

v1::Expression Plus(v1::Expression lhs, v1::Expression rhs) {
  v1::Expression out;
  v1::Expression::Binary* add = out.mutable_binary();
  add->set_op(v1::Expression::OP_ADD);
  *add->mutable_lhs() = std::move(lhs);
  *add->mutable_rhs() = std::move(rhs);
  return out;
}

// ---------------------------------------------------------------------------
// Operators

uint64_t ElementBytes(v1::DType dtype) {
  switch (dtype) {
    case v1::DTYPE_BF16:
      return 2;
    case v1::DTYPE_F32:
    case v1::DTYPE_I32:
      return 4;
    default:
      return 0;  // the example uses no other
  }
}

uint64_t BufferBytes(const v1::Buffer& buffer) {
  uint64_t n = ElementBytes(buffer.dtype());
  for (uint64_t extent : buffer.shape()) n *= extent;
  return n;
}

// Accuracy gates. bf16 keeps 8 significant bits, so one unit in the last
// place is at most 2^-7 of a value; a reordered reduction may move a result
// by a few.
constexpr double kBf16Ulp = 1.0 / 128;

v1::Tolerance Close(double atol, double rtol) {
  v1::Tolerance out;
  out.mutable_close()->set_atol(atol);
  out.mutable_close()->set_rtol(rtol);
  return out;
}

// Elementwise ops round once, whatever the tiling.
v1::Tolerance ElementwiseGate() { return Close(kBf16Ulp, kBf16Ulp); }
// Reductions (matrix products, norms, attention) are reordered by tiling.
v1::Tolerance ReductionGate() { return Close(4 * kBf16Ulp, 2 * kBf16Ulp); }

v1::Tolerance Exact() {
  v1::Tolerance out;
  out.mutable_exact();
  return out;
}

// Tunable domains the example records for npu2 (8 columns, docs/npu-facts.md
// "Devices"): fixed lists, kept so the example's figures stay comparable
// from one change to the next. IRON's recorder writes the catalogue's domain
// rules evaluated for each shape instead (common/families_domain.h;
// `autotune_bench spaces` shows both). They may hold values a shape's
// constraints refuse; pruning those is the tuner's job.
const std::vector<int64_t> kColumns = {1, 2, 4, 8};
const std::vector<int64_t> kGemmTileMN = {32, 64, 128};
const std::vector<int64_t> kGemmTileK = {32, 64, 128, 256};
const std::vector<int64_t> kGemvTileInput = {1, 2, 4};
const std::vector<int64_t> kGemvTileOutput = {32, 64, 128, 256, 512};
const std::vector<int64_t> kTileSizes = {256, 512, 1024, 2048, 4096};
const std::vector<int64_t> kChannels = {1, 2};
const std::vector<int64_t> kPipelines = {1, 2, 4, 8};

// Builds one v1::Operator of a known class.
class OperatorBuilder {
 public:
  explicit OperatorBuilder(std::string class_name)
      : family_(FindFamily(class_name)) {
    op_.set_class_name(std::move(class_name));
  }

  // Adds param `name`, with the family's default where it has one.
  OperatorBuilder& Param(const std::string& name, v1::Value value) {
    v1::Param* param = op_.add_params();
    param->set_name(name);
    *param->mutable_value() = std::move(value);
    if (family_ != nullptr) {
      for (const Dim& dim : family_->dims) {
        if (dim.name == name &&
            dim.default_value.kind_case() != v1::Value::KIND_NOT_SET) {
          *param->mutable_default_value() = dim.default_value;
        }
      }
    }
    return *this;
  }

  OperatorBuilder& Tunable(const std::string& name, int64_t recorded,
                           const std::vector<int64_t>& domain) {
    v1::Tunable* tunable = op_.add_tunables();
    tunable->set_name(name);
    *tunable->mutable_value() = IntValue(recorded);
    for (int64_t v : domain) *tunable->add_domain() = IntValue(v);
    return *this;
  }

  // A buffer the host fills before a call. `extents[i]`, when not empty,
  // names the param axis i spans.
  OperatorBuilder& In(const std::string& name, v1::DType dtype,
                      const std::vector<int64_t>& shape,
                      const std::vector<std::string>& extents) {
    AddBuffer(name, v1::BUFFER_ROLE_IN, dtype, shape, extents);
    return *this;
  }

  // A buffer the operator reads and writes in place.
  OperatorBuilder& InOut(const std::string& name, v1::DType dtype,
                         const std::vector<int64_t>& shape,
                         const std::vector<std::string>& extents) {
    AddBuffer(name, v1::BUFFER_ROLE_INOUT, dtype, shape, extents);
    return *this;
  }

  // A buffer the operator writes and the host reads after a call.
  OperatorBuilder& Out(const std::string& name, v1::DType dtype,
                       const std::vector<int64_t>& shape,
                       const std::vector<std::string>& extents) {
    AddBuffer(name, v1::BUFFER_ROLE_OUT, dtype, shape, extents);
    return *this;
  }

  OperatorBuilder& Value(const std::string& name, const std::string& symbol,
                         const std::string& bounds) {
    v1::CallValue* value = op_.add_values();
    value->set_name(name);
    value->set_symbol(symbol);
    value->set_bounds(bounds);
    return *this;
  }

  OperatorBuilder& Gate(v1::Tolerance tolerance) {
    *op_.mutable_tolerance() = std::move(tolerance);
    return *this;
  }

  v1::Operator Build() { return std::move(op_); }

 private:
  void AddBuffer(const std::string& name, v1::BufferRole role, v1::DType dtype,
                 const std::vector<int64_t>& shape,
                 const std::vector<std::string>& extents) {
    v1::Buffer* buffer = op_.add_buffers();
    buffer->set_name(name);
    buffer->set_role(role);
    buffer->set_dtype(dtype);
    for (int64_t extent : shape) buffer->add_shape(extent);
    buffer->set_fills(role != v1::BUFFER_ROLE_OUT);
    buffer->set_drains(role != v1::BUFFER_ROLE_IN);
    for (size_t axis = 0; axis < extents.size(); ++axis) {
      if (extents[axis].empty()) continue;
      v1::ExtentAxis* extent = buffer->add_extents();
      extent->set_extent(extents[axis]);
      extent->set_axis(static_cast<uint32_t>(axis));
    }
  }

  const Family* family_;  // nullptr for a class irontune does not know
  v1::Operator op_;
};

constexpr v1::DType kBf16 = v1::DTYPE_BF16;

// `rows` rows, each `width` wide (IRON's tile_size, the row length),
// normalised and times a weight row.
v1::Operator RmsNorm(int64_t width, int64_t rows) {
  return OperatorBuilder("RMSNorm")
      .Param("rows", IntValue(rows))
      .Param("tile_size", IntValue(width))
      .Param("weighted", BoolValue(true))
      // A core takes whole rows: one row decoding, 8 columns prompting.
      .Tunable("num_aie_columns", rows >= 8 ? 8 : 1, kColumns)
      .Tunable("num_channels", 1, kChannels)
      .In("x", kBf16, {rows, width}, {"rows", "tile_size"})
      .In("weight", kBf16, {width}, {"tile_size"})
      .Out("y", kBf16, {rows, width}, {"rows", "tile_size"})
      .Gate(ReductionGate())
      .Build();
}

struct GemvTiles {
  int64_t columns;
  int64_t tile_input;
  int64_t tile_output;
};

GemvTiles GemvTilesFor(int64_t m, int64_t k) {
  if (m == 2048 && k == 8192) return {8, 1, 256};  // profiles/npu2.json
  if (m == kVocab) return {8, 2, 32};  // 128256 / 8 columns = 501 * 32
  return {8, 2, std::min<int64_t>(256, m / 8)};
}

// y[M] = A[M, K] x[K]: A is a weight in PyTorch's [out, in] layout.
v1::Operator Gemv(int64_t m, int64_t k) {
  const GemvTiles t = GemvTilesFor(m, k);
  return OperatorBuilder("GEMV")
      .Param("M", IntValue(m))
      .Param("K", IntValue(k))
      .Param("num_batches", IntValue(1))
      .Tunable("num_aie_columns", t.columns, kColumns)
      .Tunable("tile_size_input", t.tile_input, kGemvTileInput)
      .Tunable("tile_size_output", t.tile_output, kGemvTileOutput)
      .In("A", kBf16, {m, k}, {"M", "K"})
      .In("B", kBf16, {k}, {"K"})
      .Out("C", kBf16, {m}, {"M"})
      .Gate(ReductionGate())
      .Build();
}

struct GemmTiles {
  int64_t m = 64;
  int64_t k = 64;
  int64_t n = 64;
  int64_t columns = 8;
};

// The up/gate and down projections run at the settings profiles/npu2.json
// gives them; each fits the 64 KiB L1 (2 A + 2 B + 2 C bf16 tiles + stack).
GemmTiles GemmTilesFor(int64_t k, int64_t n) {
  GemmTiles t;
  if (k == 2048 && n == 8192) {
    t.m = 32;
    t.n = 128;
  }
  if (k == 8192 && n == 2048) {
    t.m = 32;
    t.k = 128;
    t.n = 32;
  }
  return t;
}

// C[M, N] = A[M, K] B: B is the weight in PyTorch's [out, in] = [N, K]
// layout, i.e. column-major, so the prompt chunk shares the decode step's
// weights. The chunk's rows actually used bound M.
v1::Operator Gemm(int64_t m, int64_t k, int64_t n) {
  const GemmTiles t = GemmTilesFor(k, n);
  return OperatorBuilder("GEMM")
      .Param("M", IntValue(m))
      .Param("K", IntValue(k))
      .Param("N", IntValue(n))
      .Param("b_col_maj", BoolValue(true))
      .Param("c_col_maj", BoolValue(false))
      .Tunable("tile_m", t.m, kGemmTileMN)
      .Tunable("tile_k", t.k, kGemmTileK)
      .Tunable("tile_n", t.n, kGemmTileMN)
      .Tunable("num_aie_columns", t.columns, kColumns)
      .In("A", kBf16, {m, k}, {"M", "K"})
      .In("B", kBf16, {n, k}, {"N", "K"})
      .Out("C", kBf16, {m, n}, {"M", "N"})
      .Value("rows", "rows", "M")
      .Gate(ReductionGate())
      .Build();
}

struct SizedTiles {
  int64_t tile_size;
  int64_t columns;
};

SizedTiles SizedTilesFor(int64_t size) {
  if (size == 2048) return {512, 4};  // profiles/npu2.json: ElementwiseAdd
  if (size <= 8192) return {size / 8, 8};
  return {4096, 8};
}

// out = a + b or a * b, `size` elements.
v1::Operator Elementwise(const std::string& class_name, int64_t size) {
  const SizedTiles t = SizedTilesFor(size);
  return OperatorBuilder(class_name)
      .Param("size", IntValue(size))
      .Tunable("num_aie_columns", t.columns, kColumns)
      .Tunable("num_channels", 1, kChannels)
      .Tunable("tile_size", t.tile_size, kTileSizes)
      .In("a", kBf16, {size}, {"size"})
      .In("b", kBf16, {size}, {"size"})
      .Out("y", kBf16, {size}, {"size"})
      .Gate(ElementwiseGate())
      .Build();
}

v1::Operator Silu(int64_t size) {
  const SizedTiles t = SizedTilesFor(size);
  return OperatorBuilder("SiLU")
      .Param("size", IntValue(size))
      .Tunable("num_aie_columns", t.columns, kColumns)
      .Tunable("num_channels", 1, kChannels)
      .Tunable("tile_size", t.tile_size, kTileSizes)
      .In("x", kBf16, {size}, {"size"})
      .Out("y", kBf16, {size}, {"size"})
      .Gate(ElementwiseGate())
      .Build();
}

// Rotates `rows` positions of `num_heads` heads: IRON's rows are the
// heads' rows (rows * num_heads of head_dim), one angle row per position,
// read from the per-call value `row` (the first position) on.
v1::Operator Rope(int64_t rows, int64_t num_heads) {
  const int64_t head_rows = rows * num_heads;
  return OperatorBuilder("RoPE")
      .Param("rows", IntValue(head_rows))
      .Param("cols", IntValue(kHeadDim))
      .Param("angle_rows", IntValue(rows))
      .Param("method_type", IntValue(0))
      // Columns divide both rows and angle rows: one decoding.
      .Tunable("num_aie_columns", rows >= 8 ? 8 : 1, kColumns)
      .In("x", kBf16, {head_rows, kHeadDim}, {"rows", "cols"})
      // cos, sin of each rotation interleaved, one row per position.
      .In("angles", kBf16, {rows, kHeadDim}, {"angle_rows", "cols"})
      .Out("y", kBf16, {head_rows, kHeadDim}, {"rows", "cols"})
      .Value("row", "row_offset", "")
      .Gate(ElementwiseGate())
      .Build();
}

// Grouped-query attention of `q_rows` query rows over the first `kv_len`
// rows of a layer's KV cache (`seq_pad` rows long).
v1::Operator Mha(int64_t q_rows) {
  return OperatorBuilder("MHA")
      .Param("num_heads", IntValue(kHeads))
      .Param("num_KV_heads", IntValue(kKvHeads))
      .Param("seq_pad", IntValue(kContext))
      .Param("d", IntValue(kHeadDim))
      .Tunable("num_pipelines", 8, kPipelines)  // profiles/npu2.json
      .In("q", kBf16, {q_rows, kHeads, kHeadDim}, {"", "num_heads", "d"})
      .In("k", kBf16, {kContext, kKvHeads, kHeadDim},
          {"seq_pad", "num_KV_heads", "d"})
      .In("v", kBf16, {kContext, kKvHeads, kHeadDim},
          {"seq_pad", "num_KV_heads", "d"})
      .Out("out", kBf16, {q_rows, kHeads, kHeadDim}, {"", "num_heads", "d"})
      .Value("kv_len", "kv_len", "seq_pad")
      .Gate(ReductionGate())
      .Build();
}

// Draws a token from the logits at the draw row's temperature and top-k.
v1::Operator Sample() {
  return OperatorBuilder("Sample")
      .Param("vocab", IntValue(kVocab))
      .Param("k_max", IntValue(kTopK))
      .Param("steps", IntValue(1))
      .Tunable("cores", 4, kColumns)
      .In("logits", kBf16, {kVocab}, {"vocab"})
      .In("draws", v1::DTYPE_I32, {1, 4}, {"steps", ""})
      .InOut("tokens", v1::DTYPE_I32, {1}, {"steps"})
      .Out("token", v1::DTYPE_I32, {1}, {""})
      .Gate(Exact())
      .Build();
}

// ---------------------------------------------------------------------------
// Graphs

// A step's use of a graph buffer: the whole of it, or, from `offset` bytes,
// as many bytes as the operator's buffer holds.
struct Ref {
  std::string buffer;
  std::optional<uint64_t> offset;
};

Ref Whole(std::string buffer) { return Ref{std::move(buffer), std::nullopt}; }
Ref At(std::string buffer, uint64_t offset) {
  return Ref{std::move(buffer), offset};
}

// Builds one Recording, interning its operators into `calls`. Every
// CallValue of an operator a step runs is bound, once, to the expression
// `expressions` gives its name. The first inconsistency (a bug in this
// file) is kept in status() and later steps are not added. `calls` and
// `recording` must outlive the builder.
class GraphBuilder {
 public:
  GraphBuilder(v1::Calls& calls, v1::Recording& recording,
               std::map<std::string, v1::Expression> expressions)
      : calls_(calls),
        recording_(recording),
        expressions_(std::move(expressions)) {}

  void Buffer(const std::string& name, v1::DType dtype, int64_t elements) {
    const uint64_t nbytes = ElementBytes(dtype) * elements;
    v1::GraphBuffer* buffer = recording_.add_buffers();
    buffer->set_name(name);
    buffer->set_nbytes(nbytes);
    if (!sizes_.emplace(name, nbytes).second) {
      Fail(absl::StrCat("graph buffer ", name, " added twice"));
    }
  }

  void Run(const v1::Operator& op, const std::vector<Ref>& refs) {
    if (!status_.ok()) return;
    if (static_cast<int>(refs.size()) != op.buffers_size()) {
      return Fail(absl::StrCat(op.class_name(), ": ", refs.size(), " refs for ",
                               op.buffers_size(), " buffers"));
    }
    const uint32_t index = Intern(op);
    v1::Step* step = recording_.add_steps();
    step->set_op(index);
    for (size_t i = 0; i < refs.size(); ++i) {
      AddRef(*step, op.buffers(static_cast<int>(i)), refs[i]);
    }
    for (const v1::CallValue& value : op.values()) Bind(index, value.name());
  }

  absl::Status status() const { return status_; }

 private:
  uint32_t Intern(const v1::Operator& op) {
    for (int i = 0; i < calls_.operators_size(); ++i) {
      if (MessageDifferencer::Equals(calls_.operators(i), op)) return i;
    }
    *calls_.add_operators() = op;
    return calls_.operators_size() - 1;
  }

  void AddRef(v1::Step& step, const v1::Buffer& buffer, const Ref& ref) {
    auto size = sizes_.find(ref.buffer);
    if (size == sizes_.end()) {
      return Fail(absl::StrCat("no graph buffer ", ref.buffer));
    }
    const uint64_t want = BufferBytes(buffer);
    v1::BufferRef* out = step.add_refs();
    out->set_buffer(ref.buffer);
    if (!ref.offset.has_value()) {
      if (want != size->second) {
        Fail(absl::StrCat(ref.buffer, " holds ", size->second, " bytes, ",
                          buffer.name(), " ", want));
      }
      return;
    }
    if (*ref.offset + want > size->second) {
      Fail(absl::StrCat(ref.buffer, " holds ", size->second, " bytes, not ",
                        *ref.offset, " + ", want));
    }
    out->set_offset(*ref.offset);
    out->set_length(want);
  }

  void Bind(uint32_t op, const std::string& member) {
    if (!bound_.emplace(op, member).second) return;
    auto expression = expressions_.find(member);
    if (expression == expressions_.end()) {
      return Fail(absl::StrCat("no expression for ", member));
    }
    v1::Binding* binding = recording_.add_bindings();
    binding->set_op(op);
    binding->set_member(member);
    *binding->mutable_expression() = expression->second;
  }

  void Fail(std::string message) {
    if (status_.ok()) {
      status_ = absl::InternalError(
          absl::StrCat("recording ", recording_.name(), ": ", message));
    }
  }

  v1::Calls& calls_;
  v1::Recording& recording_;
  const std::map<std::string, v1::Expression> expressions_;
  std::map<std::string, uint64_t> sizes_;
  std::set<std::pair<uint32_t, std::string>> bound_;
  absl::Status status_;
};

// What differs between the decode step and a prompt chunk.
struct Chunk {
  int64_t rows;       // token rows the call runs: 1 decoding, kChunk prompting
  int64_t cache_row;  // the first KV-cache row it writes, at the call's values
};

std::string Layer(int layer, const std::string& what) {
  return absl::StrCat("layers.", layer, ".", what);
}

void AddBuffers(GraphBuilder& g, const Chunk& c) {
  for (int layer = 0; layer < kLayers; ++layer) {
    g.Buffer(Layer(layer, "attn_norm"), kBf16, kHidden);
    g.Buffer(Layer(layer, "q_proj"), kBf16, kHidden * kHidden);
    g.Buffer(Layer(layer, "k_proj"), kBf16, kKvDim * kHidden);
    g.Buffer(Layer(layer, "v_proj"), kBf16, kKvDim * kHidden);
    g.Buffer(Layer(layer, "o_proj"), kBf16, kHidden * kHidden);
    g.Buffer(Layer(layer, "mlp_norm"), kBf16, kHidden);
    g.Buffer(Layer(layer, "gate_proj"), kBf16, kIntermediate * kHidden);
    g.Buffer(Layer(layer, "up_proj"), kBf16, kIntermediate * kHidden);
    g.Buffer(Layer(layer, "down_proj"), kBf16, kHidden * kIntermediate);
    g.Buffer(Layer(layer, "k_cache"), kBf16, kContext * kKvDim);
    g.Buffer(Layer(layer, "v_cache"), kBf16, kContext * kKvDim);
  }
  g.Buffer("norm", kBf16, kHidden);
  // Tied embeddings: the lm head is the embedding table.
  g.Buffer("embed", kBf16, kVocab * kHidden);
  g.Buffer("rope_angles", kBf16, kContext * kHeadDim);
  // Activations, shared by every layer.
  for (const char* name : {"hidden", "resid", "normed", "q", "q_rope", "attn",
                           "attn_out", "down"}) {
    g.Buffer(name, kBf16, c.rows * kHidden);
  }
  g.Buffer("k", kBf16, c.rows * kKvDim);
  for (const char* name : {"gate", "up", "act", "mlp"}) {
    g.Buffer(name, kBf16, c.rows * kIntermediate);
  }
  g.Buffer("logits", kBf16, kVocab);
  g.Buffer("draws", v1::DTYPE_I32, 4);
  g.Buffer("tokens", v1::DTYPE_I32, 1);
  g.Buffer("token", v1::DTYPE_I32, 1);
}

// out = x W^T for x [rows, in] and W [out_features, in]: a GEMV decoding,
// a GEMM prompting.
void Project(GraphBuilder& g, const Chunk& c, int64_t out_features,
             int64_t in_features, const std::string& x,
             const std::string& weight, Ref out) {
  if (c.rows == 1) {
    g.Run(Gemv(out_features, in_features), {Whole(weight), Whole(x), out});
  } else {
    g.Run(Gemm(c.rows, in_features, out_features),
          {Whole(x), Whole(weight), out});
  }
}

void Norm(GraphBuilder& g, const Chunk& c, const std::string& x,
          const std::string& weight, const std::string& y) {
  g.Run(RmsNorm(kHidden, c.rows), {Whole(x), Whole(weight), Whole(y)});
}

void AddLayer(GraphBuilder& g, const Chunk& c, int layer) {
  const uint64_t cache_offset =
      static_cast<uint64_t>(c.cache_row * kKvDim) * ElementBytes(kBf16);
  const std::string k_cache = Layer(layer, "k_cache");
  const std::string v_cache = Layer(layer, "v_cache");
  const int64_t hidden = c.rows * kHidden;
  const int64_t intermediate = c.rows * kIntermediate;

  // Attention.
  Norm(g, c, "hidden", Layer(layer, "attn_norm"), "normed");
  Project(g, c, kHidden, kHidden, "normed", Layer(layer, "q_proj"), Whole("q"));
  Project(g, c, kKvDim, kHidden, "normed", Layer(layer, "k_proj"), Whole("k"));
  Project(g, c, kKvDim, kHidden, "normed", Layer(layer, "v_proj"),
          At(v_cache, cache_offset));
  // The angle rows of this chunk's positions.
  const uint64_t angles_offset =
      static_cast<uint64_t>(c.cache_row * kHeadDim) * ElementBytes(kBf16);
  g.Run(Rope(c.rows, kHeads),
        {Whole("q"), At("rope_angles", angles_offset), Whole("q_rope")});
  g.Run(Rope(c.rows, kKvHeads), {Whole("k"), At("rope_angles", angles_offset),
                                 At(k_cache, cache_offset)});
  g.Run(Mha(c.rows),
        {Whole("q_rope"), Whole(k_cache), Whole(v_cache), Whole("attn")});
  Project(g, c, kHidden, kHidden, "attn", Layer(layer, "o_proj"),
          Whole("attn_out"));
  g.Run(Elementwise("ElementwiseAdd", hidden),
        {Whole("hidden"), Whole("attn_out"), Whole("resid")});

  // MLP.
  Norm(g, c, "resid", Layer(layer, "mlp_norm"), "normed");
  Project(g, c, kIntermediate, kHidden, "normed", Layer(layer, "gate_proj"),
          Whole("gate"));
  Project(g, c, kIntermediate, kHidden, "normed", Layer(layer, "up_proj"),
          Whole("up"));
  g.Run(Silu(intermediate), {Whole("gate"), Whole("act")});
  g.Run(Elementwise("ElementwiseMul", intermediate),
        {Whole("act"), Whole("up"), Whole("mlp")});
  Project(g, c, kHidden, kIntermediate, "mlp", Layer(layer, "down_proj"),
          Whole("down"));
  g.Run(Elementwise("ElementwiseAdd", hidden),
        {Whole("resid"), Whole("down"), Whole("hidden")});
}

// The final norm, the lm head on the last row only, and sampling.
void AddTail(GraphBuilder& g, const Chunk& c) {
  Norm(g, c, "hidden", "norm", "normed");
  const uint64_t last_row =
      static_cast<uint64_t>((c.rows - 1) * kHidden) * ElementBytes(kBf16);
  g.Run(Gemv(kVocab, kHidden),
        {Whole("embed"), At("normed", last_row), Whole("logits")});
  g.Run(Sample(),
        {Whole("logits"), Whole("draws"), Whole("tokens"), Whole("token")});
}

// The draw row Sample is timed at, as IRON lays it out: temperature 0.6
// (f32 bits), top-k 64, and a 53-bit uniform (low word, high word), each a
// little-endian 32-bit word.
std::string DrawRow() {
  const uint64_t uniform = 0x000A5A5A5A5A5A5Aull;
  const uint32_t words[] = {std::bit_cast<uint32_t>(0.6f),
                            static_cast<uint32_t>(kTopK),
                            static_cast<uint32_t>(uniform & 0xffffffffu),
                            static_cast<uint32_t>(uniform >> 32)};
  std::string out;
  for (uint32_t bits : words) {
    for (int shift = 0; shift < 32; shift += 8) {
      out.push_back(static_cast<char>((bits >> shift) & 0xff));
    }
  }
  return out;
}

// Records one call's graph into `timed` and gives it its values and draws.
absl::Status Record(v1::Calls& calls, v1::Timed& timed, const std::string& name,
                    const std::vector<std::pair<std::string, int64_t>>& values,
                    const std::map<std::string, v1::Expression>& expressions,
                    const Chunk& chunk) {
  v1::Recording& recording = *timed.mutable_recording();
  recording.set_name(name);
  for (const auto& [value, call_value] : values) {
    recording.add_values(value);
    (*timed.mutable_values())[value] = call_value;
  }
  GraphBuilder g(calls, recording, expressions);
  AddBuffers(g, chunk);
  for (int layer = 0; layer < kLayers; ++layer) AddLayer(g, chunk, layer);
  AddTail(g, chunk);
  RETURN_IF_ERROR(g.status());
  recording.add_inputs("hidden");
  recording.add_inputs("draws");
  recording.add_outputs("token");
  v1::Content* draws = timed.add_contents();
  draws->set_buffer("draws");
  draws->set_data(DrawRow());
  return absl::OkStatus();
}

v1::Point* AddPoint(v1::Timed& timed, double weight) {
  v1::Point* point = timed.add_points();
  point->set_weight(weight);
  return point;
}

absl::Status AddDecode(v1::Calls& calls) {
  v1::Timed& timed = *calls.add_calls();
  RETURN_IF_ERROR(Record(calls, timed, "decode",
                         {{"position", kDecodePosition}, {"token", 0}},
                         {{"row", Named("position")},
                          {"kv_len", Plus(Named("position"), Constant(1))}},
                         Chunk{1, kDecodePosition}));
  ASSIGN_OR_RETURN(auto contexts, Contexts(kContext, kPoints, 1));
  for (const WeightedContext& c : contexts) {
    auto& values = *AddPoint(timed, c.weight)->mutable_values();
    values["position"] = c.context - 1;
    values["token"] = 0;
  }
  return absl::OkStatus();
}

absl::Status AddPrefill(v1::Calls& calls) {
  v1::Timed& timed = *calls.add_calls();
  RETURN_IF_ERROR(Record(calls, timed, "prefill",
                         {{"position", kChunk - 1},
                          {"token", 0},
                          {"start", 0},
                          {"rows", kChunk},
                          {"rope_start", 0}},
                         {{"row", Named("rope_start")},
                          {"kv_len", Plus(Named("start"), Named("rows"))},
                          {"rows", Named("rows")}},
                         Chunk{kChunk, 0}));
  ASSIGN_OR_RETURN(auto contexts, Contexts(kContext, kPoints, kChunk));
  for (const WeightedContext& c : contexts) {
    auto& values = *AddPoint(timed, c.weight)->mutable_values();
    values["position"] = c.context - 1;
    values["token"] = 0;
    values["start"] = c.context - kChunk;
    values["rows"] = kChunk;
    values["rope_start"] = c.context - kChunk;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<v1::Calls> MakeLlamaCalls() {
  v1::Calls calls;
  RETURN_IF_ERROR(AddDecode(calls));
  RETURN_IF_ERROR(AddPrefill(calls));
  SealRecording(calls);
  return calls;
}

}  // namespace irontune::examples
