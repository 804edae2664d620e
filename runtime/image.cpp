// Reading and checking a bundle's image files (see image.h).
#include "runtime/image.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "ir/text.h"

namespace kiln::bundle {
namespace {

constexpr uintmax_t kMaxImageBytes = uintmax_t{1} << 30;

Result<std::string> read_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  uintmax_t size = fs::file_size(path, ec);
  if (ec) return Status::error(fmt::format("cannot read {}: {}", path, ec.message()));
  if (size == 0) return Status::error(fmt::format("{} is empty", path));
  if (size > kMaxImageBytes) return Status::error(fmt::format("{} is too large", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::error(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  std::string data(static_cast<size_t>(size), '\0');
  in.read(data.data(), static_cast<std::streamsize>(size));
  if (static_cast<uintmax_t>(in.gcount()) != size) {
    return Status::error(fmt::format("{}: read {} of {} bytes", path, in.gcount(), size));
  }
  return data;
}

template <class T>
T load_le(const std::string& d, size_t off) {
  T x;
  std::memcpy(&x, d.data() + off, sizeof(T));  // cubins are little-endian, like every host
  return x;
}

// The driver reads an image without being told its size, so a truncated cubin must be caught
// here: the ELF header, the program and section header tables and every section's contents
// must lie inside the file.
Status check_elf(const std::string& d, const std::string& path) {
  auto bad = [&](std::string_view why) {
    return Status::error(fmt::format("{} is not a valid cubin: {}", path, why));
  };
  if (d.size() < 64 ||
      std::memcmp(d.data(),
                  "\x7f"
                  "ELF",
                  4) != 0 ||
      d[4] != 2) {
    return bad("no 64-bit ELF header");
  }
  auto table_fits = [&](uint64_t off, uint64_t n, uint64_t entsize) {
    uint64_t bytes, end;
    return !__builtin_mul_overflow(n, entsize, &bytes) &&
           !__builtin_add_overflow(off, bytes, &end) && end <= d.size();
  };
  uint64_t phoff = load_le<uint64_t>(d, 0x20), shoff = load_le<uint64_t>(d, 0x28);
  uint16_t phentsize = load_le<uint16_t>(d, 0x36), phnum = load_le<uint16_t>(d, 0x38);
  uint16_t shentsize = load_le<uint16_t>(d, 0x3a), shnum = load_le<uint16_t>(d, 0x3c);
  if (!table_fits(phoff, phnum, phentsize) || !table_fits(shoff, shnum, shentsize)) {
    return bad(fmt::format("truncated ({} bytes; header tables extend past the end)", d.size()));
  }
  if (shnum > 0 && shentsize < 0x28) return bad("malformed section header table");
  for (uint16_t i = 0; i < shnum; ++i) {
    size_t sh = static_cast<size_t>(shoff) + size_t{i} * shentsize;
    uint32_t type = load_le<uint32_t>(d, sh + 4);
    if (type == 8 /* SHT_NOBITS */) continue;
    if (!table_fits(load_le<uint64_t>(d, sh + 0x18), 1, load_le<uint64_t>(d, sh + 0x20))) {
      return bad(fmt::format("truncated ({} bytes; section {} extends past the end)", d.size(), i));
    }
  }
  return Status::ok_status();
}

}  // namespace

Result<std::string> read_image(const std::string& bundle_dir, const ArchImage& im, bool cubin) {
  const std::string& file = cubin ? im.cubin : im.ptx;
  std::string path = (std::filesystem::path(bundle_dir) / file).string();
  Result<std::string> data = read_file(path);
  if (!data.ok()) return data;
  if (cubin) {
    if (Status s = check_elf(*data, path); !s.ok()) return s;
  }
  if (content_hash(*data) != (cubin ? im.cubin_hash : im.ptx_hash)) {
    return Status::error(fmt::format(
        "bundle image {} does not match the hash in its manifest: corrupted or edited after "
        "compile",
        path));
  }
  return data;
}

}  // namespace kiln::bundle
