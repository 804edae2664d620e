// Unit tests of read_image (bundle/image.h): the host-side checks every bundle image passes
// before Bundle::load hands it to the driver. Nothing here needs a GPU or calls the driver.
#include <catch2/catch.hpp>
#include <cstring>
#include <string>

#include "bundle/image.h"
#include "ir/text.h"
#include "tests/unit/cache_fixtures.h"

namespace {

using namespace kiln;
using namespace kiln::bundle;
using kiln::cache::testing::TempDir;
using kiln::cache::testing::write_text;

// An ELF64 file of `contents` in one section, with a section header table that the
// structural check accepts: what a cubin looks like to anything but the driver.
std::string elf_with_section(const std::string& contents) {
  auto put = [](std::string& s, size_t off, uint64_t v, size_t n) { std::memcpy(&s[off], &v, n); };
  const size_t shoff = 64 + contents.size();
  std::string f(shoff + 2 * 64, '\0');
  const char ident[] = {0x7f, 'E', 'L', 'F', 2 /* 64-bit */, 1 /* little-endian */, 1};
  std::memcpy(f.data(), ident, sizeof ident);
  put(f, 0x12, 190, 2);    // e_machine: EM_CUDA
  put(f, 0x28, shoff, 8);  // e_shoff
  put(f, 0x3a, 64, 2);     // e_shentsize
  put(f, 0x3c, 2, 2);      // e_shnum: the null section and ours
  f.replace(64, contents.size(), contents);
  const size_t sh = shoff + 64;
  put(f, sh + 4, 1, 4);                   // SHT_PROGBITS
  put(f, sh + 0x18, 64, 8);               // sh_offset
  put(f, sh + 0x20, contents.size(), 8);  // sh_size
  return f;
}

// The sm_90 image of PTX `ptx` and cubin `cubin` as the compiler records it.
ArchImage image(const std::string& ptx, const std::string& cubin) {
  ArchImage im;
  im.arch = "sm_90";
  im.ptx = "k.sm_90.ptx";
  im.cubin = "k.sm_90.cubin";
  im.ptx_hash = content_hash(ptx);
  im.cubin_hash = content_hash(cubin);
  return im;
}

}  // namespace

TEST_CASE("read_image returns an image whose bytes match the manifest's hash", "[runtime]") {
  TempDir dir;
  const std::string ptx = ".version 8.0\n.target sm_90\n.entry k_s0_v0() { ret; }\n";
  const std::string cubin = elf_with_section(std::string(256, '\x5a'));
  write_text(dir.file("k.sm_90.ptx"), ptx);
  write_text(dir.file("k.sm_90.cubin"), cubin);
  ArchImage im = image(ptx, cubin);

  Result<std::string> p = read_image(dir.path(), im, false);
  REQUIRE(p.ok());
  CHECK(*p == ptx);
  Result<std::string> c = read_image(dir.path(), im, true);
  REQUIRE(c.ok());
  CHECK(*c == cubin);
}

TEST_CASE("read_image refuses an image changed after compile, before any driver call",
          "[runtime]") {
  TempDir dir;
  const std::string ptx = ".version 8.0\n.target sm_90\n.entry k_s0_v0() { ret; }\n";
  const std::string cubin = elf_with_section(std::string(256, '\x5a'));
  ArchImage im = image(ptx, cubin);
  const std::string ptx_path = dir.file("k.sm_90.ptx"), cubin_path = dir.file("k.sm_90.cubin");
  auto mismatch = [](const std::string& path) {
    return "bundle image " + path +
           " does not match the hash in its manifest: corrupted or edited after compile";
  };

  SECTION("one flipped bit in the machine code of a well-formed ELF") {
    // The case that crashed cuModuleLoadDataEx: the structure is intact, the contents not.
    std::string bad = cubin;
    bad[64 + 100] ^= 0x01;
    write_text(cubin_path, bad);
    Result<std::string> r = read_image(dir.path(), im, true);
    REQUIRE_FALSE(r.ok());
    CHECK(r.message() == mismatch(cubin_path));
  }
  SECTION("one changed byte of PTX") {
    std::string bad = ptx;
    bad[bad.find("ret")] = 'R';
    write_text(ptx_path, bad);
    Result<std::string> r = read_image(dir.path(), im, false);
    REQUIRE_FALSE(r.ok());
    CHECK(r.message() == mismatch(ptx_path));
  }
  SECTION("a cubin and its hash from another variant") {
    write_text(cubin_path, cubin);
    ArchImage other = im;
    other.cubin_hash = content_hash(elf_with_section(std::string(256, '\x5b')));
    CHECK(read_image(dir.path(), other, true).message() == mismatch(cubin_path));
  }
  SECTION("structural problems are named first, as before") {
    write_text(cubin_path, cubin.substr(0, cubin.size() / 2));
    CHECK_THAT(read_image(dir.path(), im, true).message(),
               Catch::StartsWith(cubin_path + " is not a valid cubin: truncated ("));
    write_text(cubin_path, "");
    CHECK(read_image(dir.path(), im, true).message() == cubin_path + " is empty");
    CHECK(read_image(dir.path(), im, false).message() ==
          "cannot read " + ptx_path + ": No such file or directory");
  }
}

TEST_CASE("check_image checks bytes in memory with read_image's messages", "[runtime]") {
  const std::string cubin = elf_with_section(std::string(256, '\x5a'));
  ArchImage im = image("", cubin);
  CHECK(check_image(cubin, "b/k.cubin", im, true).ok());
  std::string flipped = cubin;
  flipped[64 + 100] ^= 0x01;
  CHECK(check_image(flipped, "b/k.cubin", im, true).message() ==
        "bundle image b/k.cubin does not match the hash in its manifest: corrupted or edited "
        "after compile");
  CHECK_THAT(check_image(cubin.substr(0, cubin.size() / 2), "b/k.cubin", im, true).message(),
             Catch::StartsWith("b/k.cubin is not a valid cubin: truncated ("));
  CHECK(check_image("", "b/k.ptx", im, false).ok());  // PTX: the hash alone (of "" here)
  for (auto [offset, byte] : {std::pair{5, '\x02'} /* big-endian */, {0x12, '\x3e'} /* x86-64 */}) {
    std::string other = cubin;
    other[offset] = byte;
    CHECK(check_image(other, "b/k.cubin", im, true).message() ==
          "b/k.cubin is not a valid cubin: not a little-endian CUDA ELF (another machine's "
          "object file?)");
  }
}

namespace {

// An ELF64 file with a section-name table and the given named sections, as the structural
// check accepts it.
std::string elf_with_sections(const std::vector<std::pair<std::string, std::string>>& secs) {
  auto put = [](std::string& s, size_t off, uint64_t v, size_t n) { std::memcpy(&s[off], &v, n); };
  std::string names(1, '\0'), body;
  std::vector<std::pair<size_t, size_t>> at;  // name offset, contents offset
  for (const auto& [name, contents] : secs) {
    at.push_back({names.size(), 64 + body.size()});
    names += name + '\0';
    body += contents;
  }
  const size_t names_off = 64 + body.size(), shoff = names_off + names.size();
  const size_t n = secs.size() + 2;  // null, names, ours
  std::string f = std::string(64, '\0') + body + names + std::string(n * 64, '\0');
  const char ident[] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
  std::memcpy(f.data(), ident, sizeof ident);
  put(f, 0x12, 190, 2);  // EM_CUDA
  put(f, 0x28, shoff, 8);
  put(f, 0x3a, 64, 2);
  put(f, 0x3c, n, 2);
  put(f, 0x3e, 1, 2);  // e_shstrndx
  auto header = [&](size_t i, size_t name, size_t off, size_t size) {
    const size_t sh = shoff + i * 64;
    put(f, sh, name, 4);
    put(f, sh + 4, 1, 4);
    put(f, sh + 0x18, off, 8);
    put(f, sh + 0x20, size, 8);
  };
  header(1, 0, names_off, names.size());
  for (size_t i = 0; i < secs.size(); ++i) {
    header(i + 2, at[i].first, at[i].second, secs[i].second.size());
  }
  return f;
}

std::string attr(uint8_t format, uint8_t attribute, uint16_t value, const std::string& extra = "") {
  std::string a = {static_cast<char>(format), static_cast<char>(attribute), 0, 0};
  std::memcpy(&a[2], &value, 2);
  return a + extra;
}

}  // namespace

TEST_CASE("cubin_param_bytes reads each entry's parameter bytes from its .nv.info section",
          "[runtime]") {
  // The layout ptxas 12 writes (seen in a Kiln cubin): an SVAL attribute, EIATTR_PARAM_CBANK
  // (SVAL: symbol, offset, size), EIATTR_CBANK_PARAM_SIZE (HVAL), then per-parameter info.
  std::string cbank(8, '\0');
  cbank[6] = 0x20;  // 32 bytes
  std::string add_info = attr(4, 0x36, 4, std::string(4, '\0')) + attr(4, 0x0a, 8, cbank) +
                         attr(3, 0x19, 32) + attr(4, 0x17, 12, std::string(12, '\0'));
  std::string other_info = attr(4, 0x0a, 8, std::string(6, '\0') + std::string("\x18\0", 2));
  std::map<std::string, int64_t> got = cubin_param_bytes(
      elf_with_sections({{".nv.info", attr(4, 0x2f, 8, std::string(8, '\0'))},
                         {".nv.info.add_s0_v0", add_info},
                         {".nv.info.other", other_info},  // no CBANK_PARAM_SIZE: PARAM_CBANK's size
                         {".text.add_s0_v0", "code"}}));
  CHECK(got == std::map<std::string, int64_t>{{"add_s0_v0", 32}, {"other", 24}});

  SECTION("what is not understood is left out, never read past") {
    std::string truncated = attr(4, 0x0a, 200, cbank);  // claims 200 bytes of value
    std::string unknown = attr(9, 0x19, 32);            // no such format
    CHECK(cubin_param_bytes(elf_with_sections({{".nv.info.k", truncated}})).empty());
    CHECK(cubin_param_bytes(elf_with_sections({{".nv.info.k", unknown}})).empty());
    CHECK(cubin_param_bytes(elf_with_sections({{".nv.info.k", "ab"}})).empty());
    CHECK(cubin_param_bytes("not an ELF").empty());
  }
}
