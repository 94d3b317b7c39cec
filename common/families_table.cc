// The catalogue's entries: IRON's operator classes at kIronCommit, one entry
// each. Sources: iron/operators/<class>.py and, for the elementwise classes,
// iron/common/elementwise.py @ 607010e (Elementwise, UnaryElementwise,
// BinaryElementwise, Rowwise, their domain rules), iron/operators/
// elementwise_mul.py (RowwiseMul), iron/operators/softmax.py @ 607010e.
// Read IRON, written here in irontune's words.
#include "common/families_table.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/op_access.h"
#include "common/value.h"

namespace irontune::catalogue {
namespace {

// IRON's module of a class (iron/operators/__init__.py).
std::string Snake(const std::string& cls) {
  static const std::pair<const char*, const char*> kModules[] = {
      {"AXPY", "axpy"},
      {"ElementwiseAdd", "elementwise_add"},
      {"ElementwiseMul", "elementwise_mul"},
      {"Clamp", "clamp"},
      {"GELU", "gelu"},
      {"LeakyReLU", "leaky_relu"},
      {"ReLU", "relu"},
      {"Sigmoid", "sigmoid"},
      {"SiLU", "silu"},
      {"Tanh", "tanh"},
      {"LayerNorm", "layer_norm"},
      {"RMSNorm", "rms_norm"}};
  for (const auto& [name, module] : kModules) {
    if (cls == name) return module;
  }
  return absl::AsciiStrToLower(cls);
}

BufferSpec In(std::string name, std::string shape, std::string dtype = "bf16",
              std::string layout = "row-major") {
  return {std::move(name), v1::BUFFER_ROLE_IN, std::move(shape),
          std::move(dtype), std::move(layout)};
}
BufferSpec Out(std::string name, std::string shape, std::string dtype = "bf16",
               std::string layout = "row-major") {
  return {std::move(name), v1::BUFFER_ROLE_OUT, std::move(shape),
          std::move(dtype), std::move(layout)};
}
v1::Tolerance Ulps(int ulps) { return Bf16Ulps(ulps); }

// The elements of the class's output: its `size` param, else its first
// input's elements.
DomainBound OutputElements() {
  return ExprBound("size", [](const v1::Operator& op, const DomainDevice&) {
    return std::optional<int64_t>(
        IntParam(op, "size").value_or(FirstInputElements<int64_t>(op, 0)));
  });
}

// Elementwise.tile_size's rule (elementwise.py): Divisors(of=the output's
// elements, step=64, cap=tile_cap, span=3).
DomainRule LineRule(int64_t cap) {
  return DivisorsRule(OutputElements(), ConstBound(64), ConstBound(cap), 3);
}

Family Unary(std::string cls, std::string summary, std::vector<Dim> extra,
             std::string tolerance, v1::Tolerance gate) {
  std::string source = absl::StrCat("iron/operators/", Snake(cls),
                                    ".py, on iron/common/elementwise.py");
  Family f = Entry(std::move(cls), std::move(summary));
  f.dims = {P("size")};
  for (Dim& d : extra) f.dims.push_back(std::move(d));
  f.tunable_specs = LineTunables();
  f.buffers = {In("x", "[size]"), Out("y", "[size]")};
  f.values = {LineCount()};
  return Finish(std::move(f), {std::move(tolerance), std::move(gate)},
                kLineRefusal, std::move(source), kIronCommit);
}

Family Binary(std::string cls, std::string summary, std::vector<Dim> extra) {
  Family f = Unary(std::move(cls), std::move(summary), std::move(extra),
                   "the kernel's contract: 1 bf16 ulp", Ulps(1));
  f.buffers = {In("a", "[size]"), In("b", "[size]"), Out("y", "[size]")};
  return f;
}

void Elementwise(std::vector<Family>& out) {
  out.push_back(Binary("AXPY", "y = scalar_factor * a + b, rounded once",
                       {P("scalar_factor", DoubleValue(3.0))}));
  out.push_back(Binary("ElementwiseAdd", "y = a + b", {}));
  out.push_back(Binary("ElementwiseMul", "y = a * b", {}));
  Family clamp = Unary("Clamp", "y = min(max(x, low), high), bounds in bf16",
                       {P("low"), P("high")}, "exact", Exact());
  clamp.values.push_back({"low_bits", "low as its bf16 bits", ""});
  clamp.values.push_back({"high_bits", "high as its bf16 bits", ""});
  clamp.refusals += "; low above high; tile_size not a multiple of 32";
  out.push_back(std::move(clamp));
  out.push_back(Unary("GELU", "y = gelu(x), tanh approximation", {},
                      "the kernel's contract: 2 bf16 ulps", Ulps(2)));
  Family leaky = Unary("LeakyReLU", "y = x >= 0 ? x : alpha * x",
                       {P("alpha", DoubleValue(0.01))},
                       "the kernel's contract: 1 bf16 ulp", Ulps(1));
  leaky.refusals += "; tile_size below 64";
  out.push_back(std::move(leaky));
  out.push_back(Unary("ReLU", "y = max(x, 0)", {}, "exact", Exact()));
  out.push_back(Unary("Sigmoid", "y = 1 / (1 + e^-x)", {},
                      "the kernel's contract: 2 bf16 ulps", Ulps(2)));
  out.push_back(Unary("SiLU", "y = x / (1 + e^-x)", {},
                      "the kernel's contract: 2 bf16 ulps", Ulps(2)));
  out.push_back(Unary("Tanh", "y = tanh(x)", {},
                      "the kernel's contract: 2 bf16 ulps", Ulps(2)));
}

Family Rowwise(std::string cls, std::string summary) {
  std::string source =
      absl::StrCat("iron/operators/", Snake(cls),
                   ".py, on iron/common/elementwise.py Rowwise");
  Family f = Entry(std::move(cls), std::move(summary));
  f.dims = {P("rows"), P("tile_size")};
  f.tunable_specs = RowTunables();
  f.buffers = {In("x", "[rows, tile_size]"), Out("y", "[rows, tile_size]")};
  f.values = {RowCount()};
  return Finish(
      std::move(f), {"the kernel's contract: 1 bf16 ulp", Ulps(1)},
      "rows not a multiple of num_aie_columns * num_channels; tile_size (the "
      "row length) above 8192",
      std::move(source), kIronCommit);
}

// RowwiseMul (iron/operators/elementwise_mul.py): each row times one row
// every core holds; a line of at most 4096 (its tile_cap).
Family RowwiseMul() {
  Family f = Rowwise("RowwiseMul", "y = x * row: each row of x times one row");
  f.buffers = {In("x", "[rows, tile_size]"),
               In("row", "[tile_size]", "bf16",
                  "one row, every core holds it for the call"),
               Out("y", "[rows, tile_size]")};
  f.refusals =
      "rows not a multiple of num_aie_columns * num_channels; tile_size above "
      "4096";
  f.source =
      "iron/operators/elementwise_mul.py, on iron/common/elementwise.py "
      "Rowwise";
  f.commit = "";  // the index named no commit for this version of the file
  return f;
}

Family Softmax() {
  Family f = Entry(
      "Softmax",
      "softmax of each row of cols; a row held whole, or streamed in blocks "
      "read three times");
  f.dims = {P("rows"), P("cols")};
  f.tunable_specs = {
      R(T("num_aie_columns",
          "the most the shim budget allows that give every core whole rows"),
        PerWidth()),
      R(T("num_channels", 1), PerWidth()),
      R(T("block",
          "the row, or where it is longer than 4096 the longest multiple of "
          "32 up to 1024 that divides it"),
        DivisorsRule(ParamBound("cols"), ConstBound(32), ConstBound(4096))),
      R(T("streamed", "block < cols"),
        ChoicesRule({BoolValue(false), BoolValue(true)}))};
  f.buffers = {In("x", "[rows, cols]"), Out("y", "[rows, cols]")};
  f.values = {{"valid_cols", "valid elements per row; bounds cols", "cols"},
              {"blocks", "blocks per row when streamed (optional)", ""}};
  return Finish(
      std::move(f), {"the kernel's contract: 2 bf16 ulps", Ulps(2)},
      "rows or cols not a multiple of 16; rows not a multiple of "
      "num_aie_columns * num_channels; block not a multiple of 32 dividing "
      "cols; block other than cols unless streamed; streamed with more than "
      "48 rows a core",
      "iron/operators/softmax.py", kIronCommit);
}

void Norms(std::vector<Family>& out) {
  Family ln = Rowwise("LayerNorm",
                      "each row of tile_size normalised to zero mean and unit "
                      "variance, no affine");
  ln.tolerance = "rtol 0.1, atol 0.1";
  ln.gate = Close(0.1, 0.1);
  out.push_back(std::move(ln));
  Family rms = Rowwise("RMSNorm",
                       "x / sqrt(mean(x^2) + epsilon) per row of tile_size, "
                       "times weight when weighted");
  rms.dims.push_back(P("epsilon", DoubleValue(1e-5)));
  rms.dims.push_back(P("weighted", BoolValue(false)));
  rms.buffers.insert(rms.buffers.begin() + 1,
                     In("weight", "[tile_size]", "bf16",
                        "one row, shared by every row; present when weighted"));
  rms.tolerance =
      "the kernel's contract (1 bf16 ulp); weighted: bf16_ulps 2, atol 2^-126";
  // The weighted kernel's gate; atol is the smallest normal bf16, for the
  // device's flush of subnormals to zero.
  rms.gate = Bf16Ulps(2, 0x1p-126);
  rms.refusals += "; weighted with tile_size above 4096";
  out.push_back(std::move(rms));
  out.push_back(Softmax());
}

}  // namespace

std::vector<TunableSpec> LineTunables() {
  return {R(T("num_aie_columns",
              "the most the shim budget allows that give "
              "every core whole lines"),
            PerWidth()),
          R(T("num_channels", 1), PerWidth()),
          R(T("tile_size", 256, "the line, at most 4096"),
            LineRule(kElementwiseTileCap))};
}
const char kLineRefusal[] =
    "size is not a multiple of tile_size * num_aie_columns * num_channels; "
    "tile_size above 4096; num_aie_columns above the device's columns";

std::vector<TunableSpec> RowTunables() {
  return {R(T("num_aie_columns", 1), PerWidth()),
          R(T("num_channels", 1), PerWidth())};
}

Family Finish(Family f, Gate gate, std::string refusals, std::string source,
              std::string_view commit) {
  f.tolerance = std::move(gate.text);
  f.gate = std::move(gate.tolerance);
  f.refusals = std::move(refusals);
  f.source = std::move(source);
  f.commit = std::string(commit);
  return f;
}

DomainRule OwnRule(DomainRule rule) {
  rule.origin = absl::StrCat("irontune's: IRON @ ",
                             std::string(kIronBaseCommit.substr(0, 7)),
                             " declares no domain");
  return rule;
}

DomainRule OwnList(std::vector<int64_t> values) {
  std::vector<v1::Value> options;
  for (int64_t v : values) options.push_back(IntValue(v));
  return OwnRule(ChoicesRule(std::move(options)));
}

std::vector<Family> ElementwiseFamilies() {
  std::vector<Family> out;
  Elementwise(out);
  Norms(out);
  out.push_back(RowwiseMul());
  return out;
}

}  // namespace irontune::catalogue
