// The catalogue's entries: IRON's operator classes at kIronCommit, one entry
// each. Sources: iron/operators/<class>.py and, for the elementwise classes,
// iron/common/elementwise.py (Elementwise, UnaryElementwise,
// BinaryElementwise, Rowwise). Read IRON, written here in irontune's words.
#include "common/families_table.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/value.h"

namespace irontune::catalogue {
namespace {

constexpr double kBf16Ulp = 1.0 / 128;

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
v1::Tolerance Ulps(int ulps) { return Close(ulps * kBf16Ulp, ulps * kBf16Ulp); }

// The elementwise template's tunables (iron/common/elementwise.py).
std::vector<TunableSpec> LineTunables() {
  return {T("num_aie_columns",
            "the most the shim budget allows that give "
            "every core whole lines"),
          T("num_channels", 1), T("tile_size", 256, "the line, at most 4096")};
}
const char* kLineRefusal =
    "size is not a multiple of tile_size * num_aie_columns * num_channels; "
    "tile_size above 4096; num_aie_columns above the device's columns";

Family Unary(std::string cls, std::string summary, std::vector<Dim> extra,
             std::string tolerance, v1::Tolerance gate) {
  Family f;
  f.class_name = std::move(cls);
  f.summary = std::move(summary);
  f.dims = {P("size")};
  for (Dim& d : extra) f.dims.push_back(std::move(d));
  f.tunable_specs = LineTunables();
  f.buffers = {In("x", "[size]"), Out("y", "[size]")};
  f.values = {
      {"count", "lines each core processes; derived from the bound", "size"}};
  f.tolerance = std::move(tolerance);
  f.gate = std::move(gate);
  f.refusals = kLineRefusal;
  f.source = absl::StrCat("iron/operators/", Snake(f.class_name),
                          ".py, on iron/common/elementwise.py");
  return f;
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
  Family f;
  f.class_name = std::move(cls);
  f.summary = std::move(summary);
  f.dims = {P("rows"), P("tile_size")};
  f.tunable_specs = {T("num_aie_columns", 1), T("num_channels", 1)};
  f.buffers = {In("x", "[rows, tile_size]"), Out("y", "[rows, tile_size]")};
  f.values = {
      {"count", "rows each core processes; derived from the bound", "rows"}};
  f.tolerance = "the kernel's contract: 1 bf16 ulp";
  f.gate = Ulps(1);
  f.refusals =
      "rows not a multiple of num_aie_columns * num_channels; tile_size (the "
      "row length) above 8192";
  f.source = absl::StrCat("iron/operators/", Snake(f.class_name),
                          ".py, on iron/common/elementwise.py Rowwise");
  return f;
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
  rms.gate = Ulps(2);
  rms.refusals += "; weighted with tile_size above 4096";
  out.push_back(std::move(rms));
  Family sm;
  sm.class_name = "Softmax";
  sm.summary = "softmax of each row of cols, masked to vector_size elements";
  sm.dims = {P("rows"), P("cols")};
  sm.tunable_specs = {T("num_aie_columns"), T("num_channels", 1)};
  sm.buffers = {In("x", "[rows, cols]"), Out("y", "[rows, cols]")};
  sm.values = {{"count", "rows each core processes; bounds rows", "rows"},
               {"vector_size", "valid elements per row (default cols)", ""}};
  sm.tolerance = "the kernel's contract: 2 bf16 ulps";
  sm.gate = Ulps(2);
  sm.refusals =
      "rows or cols not a multiple of 16; rows not a multiple of "
      "num_aie_columns * num_channels";
  sm.source = "iron/operators/softmax.py";
  out.push_back(std::move(sm));
}

}  // namespace

std::vector<Family> ElementwiseFamilies() {
  std::vector<Family> out;
  Elementwise(out);
  Norms(out);
  return out;
}

}  // namespace irontune::catalogue
