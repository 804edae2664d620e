// Reading and writing manifest.json (see manifest.h for the format's meaning).
//
// parse_manifest treats its input as hostile: every field is type- and range-checked, file
// names may not leave the bundle directory, and every symbol a shape uses must be declared.
// Checks fail by throwing a private Invalid (path + reason) that parse_manifest turns into
// an error Status "ORIGIN: PATH: reason"; nothing escapes the public functions.
#include "bundle/manifest.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "bundle/json_reader.h"

namespace kiln::bundle {

namespace {

using Json = nlohmann::json;
using json::fail;
using json::index_path;
using json::Invalid;
using json::key_path;
using json::Obj;
using json::read_integer;
using json::type_name;
using OrderedJson = nlohmann::ordered_json;

constexpr uintmax_t kMaxManifestBytes = uintmax_t{256} << 20;

// ---- writing ----

OrderedJson dim_json(const Dim& d) {
  return d.is_fixed() ? OrderedJson(d.value()) : OrderedJson(d.name());
}

OrderedJson dims_json(const std::vector<Dim>& dims) {
  OrderedJson a = OrderedJson::array();
  for (const Dim& d : dims) a.push_back(dim_json(d));
  return a;
}

OrderedJson image_json(const ArchImage& im) {
  return {{"arch", im.arch},
          {"ptx", im.ptx},
          {"cubin", im.cubin},
          {"registers", im.registers},
          {"spill_bytes", im.spill_bytes},
          {"shared_bytes", im.shared_bytes},
          {"ptx_hash", im.ptx_hash},
          {"cubin_hash", im.cubin_hash}};
}

OrderedJson variant_json(const Variant& v) {
  OrderedJson config = OrderedJson::object();
  for (const auto& [k, x] : v.config) config[k] = x;
  OrderedJson images = OrderedJson::array();
  for (const ArchImage& im : v.images) images.push_back(image_json(im));
  OrderedJson out = {{"id", v.id},
                     {"config", config},
                     {"is_default", v.is_default},
                     {"entry", v.entry},
                     {"geometry", v.geometry},
                     {"block_threads", v.block_threads},
                     {"elements_per_block", v.elements_per_block},
                     {"align_bytes", v.align_bytes},
                     {"aligned_params", v.aligned_params},
                     {"max_reduced", v.max_reduced},
                     {"images", images}};
  if (v.min_rows_per_sm > 0) out["min_rows_per_sm"] = v.min_rows_per_sm;
  if (v.split.phases > 0) {
    out["split"] = {{"phases", v.split.phases}, {"slots", v.split.slots}, {"chunk", v.split.chunk}};
    if (v.split.min_reduced > 0) out["split"]["min_reduced"] = v.split.min_reduced;
    if (v.split.lead_last) out["split"]["lead_last"] = true;
  }
  if (v.stage.bytes_per_element > 0) {
    out["stage"] = {{"bytes_per_element", v.stage.bytes_per_element},
                    {"rows_per_block", v.stage.rows_per_block},
                    {"vec", v.stage.vec}};
    if (v.stage.row_align > 0) out["stage"]["row_align"] = v.stage.row_align;
  }
  if (v.strided) out["strided"] = true;
  if (v.odd_rows >= 0) out["odd_rows"] = v.odd_rows;
  if (!v.general.entry.empty()) {
    out["general"] = {{"entry", v.general.entry}, {"row_multiple", v.general.row_multiple}};
  }
  if (v.tile.m > 0) {
    out["tile"] = {{"m", v.tile.m},
                   {"n", v.tile.n},
                   {"ctas_per_sm", v.tile.ctas_per_sm},
                   {"smem_bytes", v.tile.smem_bytes}};
    if (!v.tile.tensor_maps.empty()) {
      OrderedJson maps = OrderedJson::array();
      for (const TensorMapInfo& t : v.tile.tensor_maps) {
        maps.push_back({{"param", t.param}, {"box", t.box}});
        if (t.store) maps.back()["store"] = true;
      }
      out["tile"]["tensor_maps"] = maps;
      out["tile"]["map_fallback"] = v.tile.map_fallback;
    }
    if (v.tile.cluster > 1) out["tile"]["cluster"] = v.tile.cluster;
  }
  return out;
}

OrderedJson step_json(const Step& s) {
  OrderedJson variants = OrderedJson::array();
  for (const Variant& v : s.variants) variants.push_back(variant_json(v));
  OrderedJson out = {{"name", s.name},
                     {"kind", std::string(to_string(s.kind))},
                     {"space", dims_json(s.space)},
                     {"reduced", dims_json(s.reduced)}};
  if (s.approx_error > 0) out["approx_error"] = s.approx_error;
  if (!s.few_rows.empty()) {
    OrderedJson few = OrderedJson::array();
    for (const auto& [limit, variant] : s.few_rows) few.push_back({limit, variant});
    out["few_rows"] = few;
  }
  if (!s.tile_across.empty()) {
    out["tiles"] = {{"across", s.tile_across}, {"inner", s.tile_inner}};
    if (s.tile_elementwise) out["tiles"]["elementwise"] = true;
  }
  out["variants"] = variants;
  return out;
}

OrderedJson kernel_json(const KernelInfo& k) {
  OrderedJson params = OrderedJson::array();
  for (const ParamInfo& p : k.params) {
    params.push_back({{"name", p.name},
                      {"dtype", std::string(to_string(p.dtype))},
                      {"shape", dims_json(p.shape)},
                      {"output", p.output},
                      {"scalar", p.scalar}});
    if (p.strided) params.back()["strided"] = true;
  }
  OrderedJson buffers = OrderedJson::array();
  for (const ParamInfo& b : k.buffers) {
    buffers.push_back({{"name", b.name},
                       {"dtype", std::string(to_string(b.dtype))},
                       {"shape", dims_json(b.shape)}});
  }
  OrderedJson steps = OrderedJson::array();
  for (const Step& s : k.steps) steps.push_back(step_json(s));
  OrderedJson out = {{"name", k.name},   {"hash", k.hash},     {"ir", k.ir},
                     {"params", params}, {"buffers", buffers}, {"symbols", k.symbols},
                     {"steps", steps}};
  if (k.dependent_launch) out["dependent_launch"] = true;
  return out;
}

// ---- reading ----

constexpr int64_t kIntMax = std::numeric_limits<int>::max();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// A file name inside the bundle directory: no separators, no "..", no NUL.
std::string file_name(const Obj& o, std::string_view key, bool allow_empty) {
  std::string s = o.str(key);
  if (s.empty()) {
    if (allow_empty) return s;
    fail(o.at(key), "expected a file name");
  }
  if (s.find('/') != std::string::npos || s.find('\\') != std::string::npos ||
      s.find("..") != std::string::npos || s.find('\0') != std::string::npos || s == ".") {
    fail(o.at(key),
         fmt::format("file name \"{}\" must name a file inside the bundle directory", s));
  }
  return s;
}

// A content_hash (16 lowercase hex digits) of a file the image names; "" (and the field
// ignored) when it names none.
std::string content_hash_field(const Obj& o, std::string_view key, bool file_present) {
  std::string s = o.str(key);
  if (!file_present) return "";
  if (s.size() != 16 || s.find_first_not_of("0123456789abcdef") != std::string::npos) {
    fail(o.at(key), fmt::format("expected a content hash (16 hex digits), got \"{}\"", s));
  }
  return s;
}

Dim read_dim(const Json& j, const std::string& path, const std::vector<std::string>& symbols) {
  if (j.is_string()) {
    std::string s = j.get<std::string>();
    if (std::find(symbols.begin(), symbols.end(), s) == symbols.end()) {
      fail(path, fmt::format("symbol \"{}\" is not listed in the kernel's symbols", s));
    }
    return Dim::symbol(std::move(s));
  }
  if (!j.is_number_integer()) {
    fail(path,
         fmt::format("expected a dimension (an integer >= 1 or a symbol), got {}", type_name(j)));
  }
  return Dim::fixed(read_integer(j, path, 1, kInt64Max));
}

std::vector<Dim> read_dims(const Obj& o, std::string_view key,
                           const std::vector<std::string>& symbols) {
  const Json& a = o.array(key);
  std::vector<Dim> dims;
  for (size_t i = 0; i < a.size(); ++i)
    dims.push_back(read_dim(a[i], index_path(o.at(key), i), symbols));
  return dims;
}

bool parse_arch(std::string_view arch) {
  if (arch.substr(0, 3) != "sm_") return false;
  std::string_view digits = arch.substr(3);
  if (!digits.empty() && (digits.back() == 'a' || digits.back() == 'f')) digits.remove_suffix(1);
  if (digits.size() < 2 || digits.size() > 4) return false;
  return std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
}

ArchImage read_image(const Obj& o) {
  ArchImage im;
  im.arch = o.str("arch");
  if (!parse_arch(im.arch))
    fail(o.at("arch"), fmt::format("expected an architecture like \"sm_90\", got \"{}\"", im.arch));
  im.ptx = file_name(o, "ptx", false);
  im.cubin = file_name(o, "cubin", true);
  im.registers = static_cast<int>(o.integer("registers", 0, kIntMax));
  im.spill_bytes = static_cast<int>(o.integer("spill_bytes", 0, kIntMax));
  im.shared_bytes = static_cast<int>(o.integer("shared_bytes", 0, kIntMax));
  im.ptx_hash = content_hash_field(o, "ptx_hash", true);
  im.cubin_hash = content_hash_field(o, "cubin_hash", !im.cubin.empty());
  return im;
}

// A tensor map of a contraction variant: its parameter exists and has bf16, f16 or f32 elements
// (the tensor cores' operands, f32 ones read as tf32; a kernel's output may be one, read back by
// a later step), or is an output of 2 or 4 bytes an element that it stores; one box entry per
// dimension of it, each 1..256 (TMA's limit), the innermost one 128 bytes (the swizzle the
// kernels use).
TensorMapInfo read_tensor_map(const Obj& o, const KernelInfo& k) {
  TensorMapInfo t;
  const size_t np = k.params.size(), nb = k.buffers.size();
  t.param = static_cast<int>(o.integer("param", 0, static_cast<int64_t>(np + nb) - 1));
  const ParamInfo& p = static_cast<size_t>(t.param) < np
                           ? k.params[static_cast<size_t>(t.param)]
                           : k.buffers[static_cast<size_t>(t.param) - np];
  if (o.find("store")) t.store = o.boolean("store");  // version 12
  const bool output = static_cast<size_t>(t.param) < np && p.output;
  const bool element = size_of(p.dtype) == 2 || p.dtype == DType::f32;  // bf16, f16, f32
  if (!element || (t.store && !output)) {
    fail(o.at("param"),
         fmt::format("{} is {}{}: tensor maps read bf16, f16 or f32 tensors and store bf16, f16 "
                     "or f32 outputs",
                     p.name, t.store && !output ? "not an output, " : "", to_string(p.dtype)));
  }
  const Json& box = o.array("box");
  if (box.size() != p.shape.size() || box.size() > kMaxTensorMapRank) {
    fail(o.at("box"), fmt::format("expected one entry per dimension of {} ({}, at most {})", p.name,
                                  p.shape.size(), kMaxTensorMapRank));
  }
  for (size_t i = 0; i < box.size(); ++i) {
    t.box.push_back(read_integer(box[i], index_path(o.at("box"), i), 1, 256));
  }
  const auto bytes = static_cast<int64_t>(size_of(p.dtype));
  if (t.box[0] * bytes != kTensorMapSwizzleBytes) {
    fail(index_path(o.at("box"), 0),
         fmt::format("expected {} (the {}-byte swizzle), got {}", kTensorMapSwizzleBytes / bytes,
                     kTensorMapSwizzleBytes, t.box[0]));
  }
  return t;
}

Variant read_variant(const Obj& o, size_t index, const KernelInfo& k) {
  const size_t num_params = k.params.size() + k.buffers.size();
  Variant v;
  v.id = static_cast<int>(o.integer("id", 0, kIntMax));
  if (static_cast<size_t>(v.id) != index) {
    fail(o.at("id"), fmt::format("expected {} (a variant's id is its index), got {}", index, v.id));
  }
  const Json& config = o.get("config", "an object");
  Obj co(config, o.at("config"));
  for (const auto& [k, x] : config.items()) {
    v.config[k] = read_integer(x, co.at(k), std::numeric_limits<int64_t>::min(), kInt64Max);
  }
  v.is_default = o.boolean("is_default");
  v.strided = o.find("strided") && o.boolean("strided");  // absent before version 8
  v.entry = o.nonempty_str("entry");
  v.geometry = o.str("geometry");
  if (v.geometry != "flat") {
    fail(o.at("geometry"), fmt::format("unknown geometry \"{}\" (expected \"flat\")", v.geometry));
  }
  v.block_threads = static_cast<int>(o.integer("block_threads", 1, 1024));
  v.elements_per_block = o.integer("elements_per_block", 1, kInt64Max);
  v.align_bytes = static_cast<int>(o.integer("align_bytes", 1, 256));
  if ((v.align_bytes & (v.align_bytes - 1)) != 0) {
    fail(o.at("align_bytes"), "expected a power of two in 1..256");
  }
  const Json& aligned = o.array("aligned_params");
  for (size_t i = 0; i < aligned.size(); ++i) {
    int64_t p = read_integer(aligned[i], index_path(o.at("aligned_params"), i), 0,
                             static_cast<int64_t>(num_params) - 1);
    v.aligned_params.push_back(static_cast<int>(p));
  }
  if (o.find("max_reduced")) v.max_reduced = o.integer("max_reduced", 0, kInt64Max);
  if (o.find("min_rows_per_sm")) v.min_rows_per_sm = o.integer("min_rows_per_sm", 1, 1 << 20);
  if (o.find("odd_rows")) v.odd_rows = static_cast<int>(o.integer("odd_rows", 0, kIntMax));
  if (o.find("general")) {  // version 11
    Obj go(o.get("general", "an object"), o.at("general"));
    v.general.entry = go.nonempty_str("entry");
    v.general.row_multiple = go.integer("row_multiple", 0, 256);
    if (v.general.entry == v.entry) {
      fail(go.at("entry"),
           fmt::format("expected an entry other than the variant's own ({})", v.entry));
    }
  }
  if (o.find("split")) {
    Obj so(o.get("split", "an object"), o.at("split"));
    v.split.phases = static_cast<int>(so.integer("phases", 2, 64));
    v.split.slots = static_cast<int>(so.integer("slots", 1, 1024));
    v.split.chunk = so.integer("chunk", 1, kInt64Max);
    if (so.find("min_reduced")) v.split.min_reduced = so.integer("min_reduced", 1, kInt64Max);
    if (so.find("lead_last")) v.split.lead_last = so.boolean("lead_last");
  }
  if (o.find("stage")) {
    Obj so(o.get("stage", "an object"), o.at("stage"));
    v.stage.bytes_per_element = so.integer("bytes_per_element", 1, 1024);
    v.stage.rows_per_block = so.integer("rows_per_block", 1, 1024);
    v.stage.vec = so.integer("vec", 1, 256);
    if (so.find("row_align")) v.stage.row_align = so.integer("row_align", 1, 4096);  // version 9
  }
  if (o.find("tile")) {
    Obj to(o.get("tile", "an object"), o.at("tile"));
    v.tile.m = to.integer("m", 1, 1024);
    v.tile.n = to.integer("n", 1, 1024);
    v.tile.ctas_per_sm = static_cast<int>(to.integer("ctas_per_sm", 1, 32));
    v.tile.smem_bytes = to.integer("smem_bytes", 0, int64_t{1} << 20);
    if (to.find("tensor_maps")) {
      const Json& maps = to.array("tensor_maps");
      if (maps.size() > kMaxTensorMaps) {
        fail(to.at("tensor_maps"), fmt::format("expected at most {} maps", kMaxTensorMaps));
      }
      for (size_t i = 0; i < maps.size(); ++i) {
        v.tile.tensor_maps.push_back(
            read_tensor_map(Obj(maps[i], index_path(to.at("tensor_maps"), i)), k));
      }
      if (to.find("map_fallback"))
        v.tile.map_fallback = static_cast<int>(to.integer("map_fallback", -1, kIntMax));
    }
    if (to.find("cluster")) {  // version 10
      v.tile.cluster = static_cast<int>(to.integer("cluster", 1, kMaxClusterBlocks));
    }
    if (v.elements_per_block != v.tile.m * v.tile.n) {
      fail(o.at("elements_per_block"),
           fmt::format("expected tile.m * tile.n = {} for a contraction variant, got {}",
                       v.tile.m * v.tile.n, v.elements_per_block));
    }
  }
  const Json& images = o.array("images");
  if (images.empty()) fail(o.at("images"), "expected at least one image");
  for (size_t i = 0; i < images.size(); ++i) {
    v.images.push_back(read_image(Obj(images[i], index_path(o.at("images"), i))));
  }
  return v;
}

Step read_step(const Obj& o, const KernelInfo& k) {
  Step s;
  s.name = o.nonempty_str("name");
  const std::string kind = o.nonempty_str("kind");
  const std::optional<StepKind> parsed = parse_step_kind(kind);
  if (!parsed) {
    fail(o.at("kind"), fmt::format("unknown step kind \"{}\" (expected \"pointwise\", "
                                   "\"row_reduction\", \"outer_reduction\", \"contraction\" or "
                                   "\"scan\")",
                                   kind));
  }
  s.kind = *parsed;
  s.space = read_dims(o, "space", k.symbols);
  if (o.find("reduced")) {
    s.reduced = read_dims(o, "reduced", k.symbols);
    // A row or outer reduction over several indices lists their extents (R: the product).
    if (s.reduced.size() > 1 && s.kind != StepKind::row_reduction &&
        s.kind != StepKind::outer_reduction) {
      fail(o.at("reduced"), "expected at most one dimension");
    }
  }
  if (o.find("approx_error")) {
    s.approx_error = o.nonnegative("approx_error");
    if (s.approx_error >= 1) fail(o.at("approx_error"), "expected a number below 1");
  }
  const Json& variants = o.array("variants");
  if (variants.empty()) fail(o.at("variants"), "expected at least one variant");
  int defaults = 0;
  for (size_t i = 0; i < variants.size(); ++i) {
    s.variants.push_back(read_variant(Obj(variants[i], index_path(o.at("variants"), i)), i, k));
    defaults += s.variants.back().is_default;
    const Variant& v = s.variants.back();
    if (v.stage.bytes_per_element > 0 && v.split.phases > 0) {
      fail(index_path(o.at("variants"), i), "a variant that both stages and splits its rows");
    }
    if (v.stage.bytes_per_element > 0 && (s.kind != StepKind::row_reduction || s.reduced.empty())) {
      fail(index_path(o.at("variants"), i),
           fmt::format("a staging variant in a step of kind \"{}\" (only row_reduction steps "
                       "stage)",
                       to_string(s.kind)));
    }
    if (s.variants.back().split.phases > 0 &&
        (s.kind == StepKind::pointwise || s.reduced.empty())) {
      fail(index_path(o.at("variants"), i),
           fmt::format("a split variant in a step of kind \"{}\" (only reduction, scan and "
                       "contraction steps split)",
                       to_string(s.kind)));
    }
    if (v.split.lead_last && s.kind != StepKind::row_reduction) {
      fail(index_path(o.at("variants"), i),
           fmt::format("a split variant with lead_last in a step of kind \"{}\" (only "
                       "row_reduction steps run their last phase one block per row)",
                       to_string(s.kind)));
    }
    const bool tiled = v.tile.m > 0, contraction = s.kind == StepKind::contraction;
    if (tiled != contraction) {
      fail(index_path(o.at("variants"), i),
           tiled ? fmt::format("a tiled variant in a step of kind \"{}\" (only contraction "
                               "steps have tiles)",
                               to_string(s.kind))
                 : std::string("a contraction variant without \"tile\""));
    }
    if (contraction &&
        (s.space.size() < 2 || s.reduced.size() != 1 || v.stage.bytes_per_element > 0)) {
      fail(index_path(o.at("variants"), i),
           "a contraction step needs a space of two dimensions or more, one reduced "
           "dimension, and variants that do not stage");
    }
    // Split-K (format 13): a record of one f32 word per element of the tile, two phases on
    // one grid; not in clusters.
    if (contraction && v.split.phases > 0 &&
        (v.split.phases != 2 || v.split.slots != 1 || v.tile.cluster > 1)) {
      fail(index_path(o.at("variants"), i),
           "a split contraction variant has 2 phases, 1 slot and no cluster");
    }
  }
  if (defaults != 1) {
    fail(o.at("variants"),
         fmt::format("expected exactly one variant with is_default, found {}", defaults));
  }
  // Strided variants: in a kernel with strided inputs, align_bytes 1, neither split nor staged
  // but as a tile (stage.row_align, stage.vec 1), in a pointwise or reduction step; exactly
  // one without a row limit, and in row reduction steps others for rows of up to max_reduced
  // elements (bundle/rule.h strided_variant).
  const bool any_strided =
      std::any_of(k.params.begin(), k.params.end(), [](const ParamInfo& p) { return p.strided; });
  int unlimited = 0, strided = 0;
  for (size_t i = 0; i < s.variants.size(); ++i) {
    const Variant& v = s.variants[i];
    if (!v.strided) continue;
    ++strided;
    const std::string path = key_path(index_path(o.at("variants"), i), "strided");
    if (!any_strided) fail(path, "a strided variant in a kernel without strided parameters");
    const bool tile = v.stage.bytes_per_element > 0 && v.stage.row_align > 0 && v.stage.vec == 1;
    if (v.align_bytes > 1 || v.split.phases > 0 || (v.stage.bytes_per_element > 0 && !tile) ||
        v.tile.m > 0 || s.kind == StepKind::scan) {
      fail(path,
           "a strided variant is scalar (align_bytes 1), neither split nor staged but as a tile "
           "(stage.row_align, stage.vec 1), in a pointwise or reduction step");
    }
    if (v.max_reduced > 0 && s.kind != StepKind::row_reduction) {
      fail(path, "a strided variant with a row limit (max_reduced) outside a row reduction step");
    }
    if (v.max_reduced == 0 && ++unlimited > 1) {
      fail(path, "a step has at most one strided variant without a row limit (max_reduced)");
    }
  }
  if (strided > 0 && unlimited == 0) {
    fail(o.at("variants"), "strided variants without one for rows of any length (max_reduced 0)");
  }
  // An odd-row twin is another variant of a row reduction step, one that shifts its vectors.
  for (size_t i = 0; i < s.variants.size(); ++i) {
    const int t = s.variants[i].odd_rows;
    if (t < 0) continue;
    const Variant* twin = static_cast<size_t>(t) < s.variants.size() && static_cast<size_t>(t) != i
                              ? &s.variants[static_cast<size_t>(t)]
                              : nullptr;
    auto knob = [&](const char* name) {
      const auto it = twin->config.find(name);
      return it == twin->config.end() ? int64_t{0} : it->second;
    };
    const auto vec = s.variants[i].config.find("vec");
    if (s.kind != StepKind::row_reduction || !twin || knob("shift") != 1 || knob("vec") < 2 ||
        vec == s.variants[i].config.end() || vec->second != knob("vec") || twin->max_reduced > 0 ||
        twin->split.phases > 0 || twin->stage.bytes_per_element > 0) {
      fail(key_path(index_path(o.at("variants"), i), "odd_rows"),
           fmt::format("expected another variant of a row reduction step with config shift 1 "
                       "and this one's vec (> 1), neither a tier, split nor staged, got {}",
                       t));
    }
  }
  // Few-row tiers: ascending limits, each a tier's max_reduced, replaced by another variant of
  // a row reduction step that neither splits, stages, shifts nor reads strides.
  if (const Json* few = o.find("few_rows")) {
    if (!few->is_array())
      fail(o.at("few_rows"), fmt::format("expected an array, got {}", type_name(*few)));
    for (size_t i = 0; i < few->size(); ++i) {
      const std::string path = index_path(o.at("few_rows"), i);
      const Json& pair = (*few)[i];
      if (!pair.is_array() || pair.size() != 2) fail(path, "expected [limit, variant]");
      const int64_t limit = json::read_integer(pair[0], index_path(path, 0), 1, kIntMax);
      const auto variant = static_cast<int>(json::read_integer(
          pair[1], index_path(path, 1), 0, static_cast<int64_t>(s.variants.size()) - 1));
      const Variant& v = s.variants[static_cast<size_t>(variant)];
      const bool a_tier = std::any_of(s.variants.begin(), s.variants.end(), [&](const Variant& t) {
        return t.max_reduced == limit && !t.strided;
      });
      if (s.kind != StepKind::row_reduction || !a_tier || v.split.phases > 0 ||
          v.stage.bytes_per_element > 0 || v.strided || v.config.count("shift") > 0 ||
          (!s.few_rows.empty() && s.few_rows.back().first >= limit)) {
        fail(path,
             "expected a tier's limit (ascending) and a variant of a row reduction step "
             "that neither splits, stages, shifts nor reads strides");
      }
      s.few_rows.emplace_back(limit, variant);
    }
  }
  // Tiles: the across dimension's positions, then the innermost one's, each run consecutive,
  // the innermost ending the space, on a pointwise step.
  if (const Json* tiles = o.find("tiles")) {
    const Obj t(*tiles, o.at("tiles"));
    auto positions = [&](std::string_view key) {
      const Json& a = t.array(key);
      std::vector<int> out;
      for (size_t i = 0; i < a.size(); ++i) {
        out.push_back(static_cast<int>(json::read_integer(
            a[i], index_path(t.at(key), i), 0, static_cast<int64_t>(s.space.size()) - 1)));
        if (i > 0 && out[i] != out[i - 1] + 1) {
          fail(index_path(t.at(key), i), "expected consecutive positions");
        }
      }
      if (out.empty()) fail(t.at(key), "expected at least one position");
      return out;
    };
    s.tile_across = positions("across");
    s.tile_inner = positions("inner");
    s.tile_elementwise = t.find("elementwise") && t.boolean("elementwise");
    if (s.kind != StepKind::pointwise || s.tile_across.back() >= s.tile_inner.front() ||
        s.tile_inner.back() != static_cast<int>(s.space.size()) - 1) {
      fail(o.at("tiles"),
           "expected a pointwise step's across positions before its innermost ones, which end "
           "the space");
    }
  }
  // A general entry belongs to a pointwise variant that neither tiles nor reads strides, or
  // to an outer reduction variant that does not read strides, with any rows.
  for (size_t i = 0; i < s.variants.size(); ++i) {
    const Variant& v = s.variants[i];
    if (v.general.entry.empty()) continue;
    const bool pointwise =
        s.kind == StepKind::pointwise && !v.strided && v.config.count("tile_in") == 0;
    const bool outer =
        s.kind == StepKind::outer_reduction && !v.strided && v.general.row_multiple == 0;
    if (!pointwise && !outer) {
      fail(key_path(index_path(o.at("variants"), i), "general"),
           "expected a general entry only on a pointwise variant that neither tiles nor is "
           "strided, or on an outer reduction variant that is not strided, with any rows");
    }
  }
  // A map fallback is another variant of the step, one without maps.
  for (size_t i = 0; i < s.variants.size(); ++i) {
    const int f = s.variants[i].tile.map_fallback;
    if (f < 0) continue;
    if (static_cast<size_t>(f) >= s.variants.size() || static_cast<size_t>(f) == i ||
        !s.variants[static_cast<size_t>(f)].tile.tensor_maps.empty()) {
      fail(key_path(key_path(index_path(o.at("variants"), i), "tile"), "map_fallback"),
           fmt::format("expected another variant of the step without tensor maps, got {}", f));
    }
  }
  return s;
}

KernelInfo read_kernel(const Obj& o) {
  KernelInfo k;
  k.name = o.nonempty_str("name");
  k.hash = o.str("hash");
  k.ir = o.str("ir");
  k.dependent_launch = o.find("dependent_launch") && o.boolean("dependent_launch");
  const Json& symbols = o.array("symbols");
  for (size_t i = 0; i < symbols.size(); ++i) {
    std::string path = index_path(o.at("symbols"), i);
    if (!symbols[i].is_string() || symbols[i].get<std::string>().empty()) {
      fail(path, fmt::format("expected a symbol name, got {}", type_name(symbols[i])));
    }
    std::string s = symbols[i].get<std::string>();
    if (std::find(k.symbols.begin(), k.symbols.end(), s) != k.symbols.end()) {
      fail(path, fmt::format("symbol \"{}\" is listed twice", s));
    }
    k.symbols.push_back(std::move(s));
  }
  std::set<std::string> names;
  // A parameter or buffer: a name no other one has, a dtype and a shape of known symbols.
  auto read_tensor = [&](const Obj& po) {
    ParamInfo p;
    p.name = po.nonempty_str("name");
    if (!names.insert(p.name).second) {
      fail(po.at("name"), fmt::format("tensor \"{}\" is declared twice", p.name));
    }
    std::string dtype = po.str("dtype");
    std::optional<DType> t = parse_dtype(dtype);
    if (!t || *t == DType::boolean) {
      fail(po.at("dtype"),
           fmt::format("expected f32, f16, bf16, i32, i64 or u32, got \"{}\"", dtype));
    }
    p.dtype = *t;
    p.shape = read_dims(po, "shape", k.symbols);
    return p;
  };
  const Json& params = o.array("params");
  for (size_t i = 0; i < params.size(); ++i) {
    Obj po(params[i], index_path(o.at("params"), i));
    ParamInfo p = read_tensor(po);
    p.output = po.boolean("output");
    if (!p.output && !k.params.empty() && k.params.back().output) {
      fail(po.path(), "inputs must precede outputs");
    }
    p.scalar = po.find("scalar") && po.boolean("scalar");  // absent before version 7
    if (p.scalar && (p.output || !p.shape.empty())) {
      fail(po.at("scalar"), "a scalar parameter is an input of rank 0");
    }
    p.strided = po.find("strided") && po.boolean("strided");  // absent before version 8
    if (p.strided && (p.output || p.scalar || p.shape.empty())) {
      fail(po.at("strided"), "a strided parameter is a tensor input of rank 1 or more");
    }
    k.params.push_back(std::move(p));
  }
  if (o.find("buffers")) {  // absent in version 3
    const Json& buffers = o.array("buffers");
    for (size_t i = 0; i < buffers.size(); ++i) {
      k.buffers.push_back(read_tensor(Obj(buffers[i], index_path(o.at("buffers"), i))));
    }
  }
  const Json& steps = o.array("steps");
  if (steps.empty()) fail(o.at("steps"), "expected at least one step");
  for (size_t i = 0; i < steps.size(); ++i) {
    k.steps.push_back(read_step(Obj(steps[i], index_path(o.at("steps"), i)), k));
  }
  return k;
}

Manifest read_top(const Json& j) {
  Obj o(j, "");
  if (o.str("format") != "kiln-bundle") fail("format", "expected \"kiln-bundle\"");
  Manifest m;
  int64_t version = o.integer("version", 0, kInt64Max);
  if (version < kOldestFormatVersion || version > kFormatVersion) {
    fail("version",
         fmt::format("unsupported format version {} (this runtime reads versions {} to {}{})",
                     version, kOldestFormatVersion, kFormatVersion,
                     version < kOldestFormatVersion ? "; recompile the bundle" : ""));
  }
  m.version = kFormatVersion;
  m.kiln_version = o.str("kiln_version");
  m.llvm_version = o.str("llvm_version");
  const Json& kernels = o.array("kernels");
  for (size_t i = 0; i < kernels.size(); ++i) {
    std::string path = index_path("kernels", i);
    KernelInfo k = read_kernel(Obj(kernels[i], path));
    if (m.find(k.name) != nullptr) {
      fail(path + ".name", fmt::format("kernel \"{}\" is defined twice", k.name));
    }
    m.kernels.push_back(std::move(k));
  }
  return m;
}

}  // namespace

int64_t launch_elements(int64_t rows, int64_t reduced, int64_t workspace_bytes) {
  int64_t n = 0;
  if (__builtin_mul_overflow(rows, reduced, &n)) return std::numeric_limits<int64_t>::max();
  return std::max(n, workspace_bytes / 4);
}

std::optional<int64_t> split_workspace_bytes(int64_t blocks, int64_t elements_per_block,
                                             int slots) {
  int64_t record_bytes = 0, bytes = 0;
  if (__builtin_mul_overflow(elements_per_block, int64_t{slots} * 4, &record_bytes) ||
      __builtin_mul_overflow(blocks, record_bytes, &bytes)) {
    return std::nullopt;
  }
  return bytes;
}

bool runs_general(const GeneralForm& g, int64_t elements, int64_t inner) {
  if (g.entry.empty()) return false;
  return elements > std::numeric_limits<int32_t>::max() ||
         (g.row_multiple > 0 && inner % g.row_multiple != 0);
}

std::string_view to_string(StepKind k) {
  switch (k) {
    case StepKind::pointwise:
      return "pointwise";
    case StepKind::row_reduction:
      return "row_reduction";
    case StepKind::outer_reduction:
      return "outer_reduction";
    case StepKind::contraction:
      return "contraction";
    case StepKind::scan:
      return "scan";
  }
  return "?";
}

std::optional<StepKind> parse_step_kind(std::string_view s) {
  for (StepKind k : {StepKind::pointwise, StepKind::row_reduction, StepKind::outer_reduction,
                     StepKind::contraction, StepKind::scan}) {
    if (s == to_string(k)) return k;
  }
  return std::nullopt;
}

int64_t stage_bytes(const StageInfo& s, int64_t reduced, int64_t available) {
  if (s.bytes_per_element <= 0 || s.vec <= 0 || reduced <= 0 || reduced % s.vec != 0) return 0;
  int64_t row = 0, bytes = 0;
  if (__builtin_mul_overflow(reduced, s.bytes_per_element, &row)) return 0;
  if (s.row_align > 0) {
    if (row > INT64_MAX - s.row_align) return 0;
    row = (row + s.row_align - 1) / s.row_align * s.row_align;
  }
  if (__builtin_mul_overflow(row, s.rows_per_block, &bytes)) return 0;
  return bytes <= available ? bytes : 0;
}

const KernelInfo* Manifest::find(std::string_view name) const {
  for (const KernelInfo& k : kernels) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

std::string to_json(const Manifest& m) {
  OrderedJson kernels = OrderedJson::array();
  for (const KernelInfo& k : m.kernels) kernels.push_back(kernel_json(k));
  OrderedJson j = {{"format", "kiln-bundle"},
                   {"version", m.version},
                   {"kiln_version", m.kiln_version},
                   {"llvm_version", m.llvm_version},
                   {"kernels", kernels}};
  return j.dump(2) + "\n";
}

Result<Manifest> parse_manifest(std::string_view json, std::string_view origin) {
  return json::parse_document<Manifest>(json, origin, "manifest", read_top);
}

Result<Manifest> read_manifest(const std::string& bundle_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(bundle_dir, ec)) {
    return Status::error(fmt::format("{}: bundle directory not found", bundle_dir));
  }
  std::string path = (fs::path(bundle_dir) / "manifest.json").string();
  uintmax_t size = fs::file_size(path, ec);
  if (ec) return Status::error(fmt::format("{}: cannot read: {}", path, ec.message()));
  if (size > kMaxManifestBytes) {
    return Status::error(fmt::format("{}: too large ({} bytes)", path, size));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::error(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  std::string text(static_cast<size_t>(size), '\0');
  in.read(text.data(), static_cast<std::streamsize>(size));
  if (static_cast<uintmax_t>(in.gcount()) != size) {
    return Status::error(fmt::format("{}: read {} of {} bytes", path, in.gcount(), size));
  }
  return parse_manifest(text, path);
}

}  // namespace kiln::bundle
