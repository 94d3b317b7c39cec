// The catalogue's float32-limb and image classes: iron/operators/limbs.py
// @ 20ab08a, log.py and magnitude.py @ 279b5b8 (on iron/common/
// elementwise.py's UnaryElementwise and Rowwise), resample/op.py @ 19fadcd
// (Resample, ResampleTaps). Read IRON, written here in irontune's words.
#include <utility>

#include "common/families_table.h"
#include "common/op_access.h"
#include "common/value.h"

namespace irontune::catalogue {
namespace {

constexpr char kLimbsCommit[] = "20ab08ade6671c73f73f38b1421087b8d72c2360";
constexpr char kLogCommit[] = "279b5b83da09ab6dba4594f3e3db8a018a851197";
constexpr char kResampleCommit[] = "19fadcd92c885e15ef46c4f9bd3858edc3dc9a3a";

Family Limbs() {
  Family f = Entry(
      "Limbs",
      "each row of float32 as six planes of its bf16 limbs [hi, mid, hi, lo, "
      "mid, hi], for a float32-exact GEMM against [hi, hi, mid, hi, mid, lo]");
  f.dims = {P("rows"), P("line"), Pf("tile_size", "6 * line")};
  f.tunable_specs = RowTunables();
  f.buffers = {{"x", v1::BUFFER_ROLE_IN, "[rows, line]", "f32", "row-major"},
               {"y", v1::BUFFER_ROLE_OUT, "[rows, tile_size]", "bf16",
                "per row: the six planes of line limbs, in order"}};
  f.values = {RowCount()};
  return Finish(
      std::move(f),
      {"exact (each residual is exact, and so is each limb of it)", Exact()},
      "line not a multiple of 32; tile_size other than 6 * line or above "
      "8192; rows not a multiple of num_aie_columns * num_channels",
      "iron/operators/limbs.py, on iron/common/elementwise.py Rowwise",
      kLimbsCommit);
}

Family Log() {
  Family f =
      Entry("Log", "y = log(x + offset) of float32, rounded once to bf16");
  f.dims = {P("size"), P("offset", DoubleValue(0.0))};
  // The template's tunables, the line a Divisors of the size param.
  f.tunable_specs = LineTunables();
  f.tunable_specs[2].domain =
      DivisorsRule(ParamBound("size"), ConstBound(64), ConstBound(4096), 3);
  f.buffers = {{"x", v1::BUFFER_ROLE_IN, "[size]", "f32", "flat"},
               {"y", v1::BUFFER_ROLE_OUT, "[size]", "bf16", "flat"}};
  f.values = {LineCount()};
  return Finish(
      std::move(f),
      {"the kernel's contract: 1 bf16 ulp (float32 to 7.5e-9)", Bf16Ulps(1)},
      kLineRefusal, "iron/operators/log.py, on iron/common/elementwise.py",
      kLogCommit);
}

Family Magnitude() {
  Family f = Entry(
      "Magnitude",
      "sqrt(re^2 + im^2) of each row of complex float32 held as [re | im]: "
      "width floats in, width / 2 out");
  f.dims = {P("rows"), P("width"), Pf("tile_size", "width / 2")};
  f.tunable_specs = RowTunables();
  f.buffers = {
      {"x", v1::BUFFER_ROLE_IN, "[rows, width]", "f32",
       "per row: width / 2 real parts, then the imaginary"},
      {"y", v1::BUFFER_ROLE_OUT, "[rows, tile_size]", "f32", "row-major"}};
  f.values = {RowCount()};
  return Finish(
      std::move(f),
      {"relative 2e-7 (measured 1.43e-7 for magnitudes 1e-15 to 1e15)",
       Close(0, 2e-7)},
      "width not a multiple of 64; tile_size other than width / 2 or above "
      "8192; rows not a multiple of num_aie_columns * num_channels",
      "iron/operators/magnitude.py, on iron/common/elementwise.py Rowwise",
      kLogCommit);
}

Family ResampleTaps() {
  Family f = Entry(
      "ResampleTaps",
      "torch's int16 antialiased-bicubic filter table and precision for one "
      "axis, in_size samples to out_size, in chunks of words int32");
  f.dims = {P("in_size"), P("out_size"), P("words", IntValue(256)),
            Pf("slots", "as many as the window lets fit"),
            Pf("chunks", "enough for out_size, a multiple of 16")};
  f.tunable_specs = {R(T("num_aie_columns",
                         "the most the shim budget allows that divide chunks"),
                       PerWidth()),
                     R(T("num_channels", 2), PerWidth())};
  f.buffers = {{"table", v1::BUFFER_ROLE_OUT, "[chunks, words]", "i32",
                "per chunk: [precision, window, first, outputs], then each "
                "output's [start, count] and int16 weights"}};
  f.values = {
      {"count", "chunks per core", ""},
      {"in_length", "input samples (in_size unless bound)", "in_size"},
      {"out_length", "output samples (out_size unless bound)", "out_size"}};
  return Finish(
      std::move(f), {"exact", Exact()},
      "in_size or out_size below 1; chunks not a multiple of num_aie_columns "
      "* num_channels; chunks of words that do not hold out_size outputs of "
      "the window",
      "iron/operators/resample/op.py", kResampleCommit);
}

Family Resample() {
  Family f = Entry(
      "Resample",
      "a uint8 image resized as torchvision's antialiased bicubic resize, "
      "written as the vision tower's 16x16 bf16 patches");
  f.dims = {P("height"),
            P("width"),
            P("out_height"),
            P("out_width"),
            P("chunk", IntValue(4096)),
            P("words", IntValue(356)),
            P("patch_columns", IntValue(8)),
            Pf("image_chunks", "height * ceil(3 * width / chunk)"),
            Pf("width_chunks", "16 * ceil(out_width / 256)"),
            Pf("height_chunks", "16 * ceil(out_height / 256)"),
            Pf("patch_rows", "out_height / 16 * 16 * (out_width / 256 + 1)")};
  f.tunable_specs = {
      R(T("num_aie_columns",
          "the most the shim budget allows that divide patch_rows"),
        PerWidth()),
      R(T("num_channels", 2), PerWidth())};
  f.buffers = {
      {"image", v1::BUFFER_ROLE_IN, "[image_chunks, chunk]", "u8",
       "(height, width, 3) rows, each padded to whole chunks"},
      {"taps_w", v1::BUFFER_ROLE_IN, "[width_chunks, words]", "i32",
       "a ResampleTaps table, 16 outputs to a chunk"},
      {"taps_h", v1::BUFFER_ROLE_IN, "[height_chunks, words]", "i32",
       "a ResampleTaps table, 16 outputs to a chunk"},
      {"patches", v1::BUFFER_ROLE_OUT, "[patch_rows, 768]", "bf16",
       "patch (py, px) at row py * pad + px: 16x16 pixels, channels last"}};
  f.values = {{"src_rows", "rows of the image", "height"},
              {"src_columns", "columns of the image", "width"},
              {"dst_rows", "rows resized to", "out_height"},
              {"dst_columns", "columns resized to", "out_width"},
              {"image_count", "image chunks a call moves (optional)", ""},
              {"width_count", "width chunks (optional)", ""},
              {"height_count", "height chunks (optional)", ""},
              {"patch_count", "patches per core (optional)", ""}};
  return Finish(
      std::move(f),
      {"exact (bit for bit as torch computes it on the CPU)", Exact()},
      "a size below 1; out_height or out_width not whole 16-pixel patches; "
      "a filter window wider than words-word chunks hold; more patch "
      "columns a core than patch_columns; image_chunks, width_chunks, "
      "height_chunks or patch_rows short of what the image needs",
      "iron/operators/resample/op.py", kResampleCommit);
}

}  // namespace

std::vector<Family> SignalFamilies() {
  return {Limbs(), Log(), Magnitude(), Resample(), ResampleTaps()};
}

}  // namespace irontune::catalogue
