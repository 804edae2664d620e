// Reading and checking a bundle's image files (see image.h).
#include "bundle/image.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "ir/content_hash.h"

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
  if (d[5] != 1 || load_le<uint16_t>(d, 0x12) != 190 /* EM_CUDA */) {
    return bad("not a little-endian CUDA ELF (another machine's object file?)");
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

// One `.nv.info.NAME` section: 4-byte attribute headers {format, attribute, u16}; format 4
// (EIFMT_SVAL) carries u16 bytes of value after the header, formats 1..3 none. Returns the
// parameter bytes, or -1.
int64_t param_bytes_of(std::string_view info) {
  constexpr uint8_t kSval = 4, kHval = 3, kParamCbank = 0x0a, kCbankParamSize = 0x19;
  int64_t from_cbank = -1;
  for (size_t pos = 0; pos + 4 <= info.size();) {
    const auto format = static_cast<uint8_t>(info[pos]);
    const auto attr = static_cast<uint8_t>(info[pos + 1]);
    uint16_t value;
    std::memcpy(&value, info.data() + pos + 2, 2);
    if (format == kHval && attr == kCbankParamSize) return value;
    if (format == kSval) {
      if (pos + 4 + value > info.size()) return -1;
      if (attr == kParamCbank && value >= 8) {
        uint16_t size;
        std::memcpy(&size, info.data() + pos + 4 + 6, 2);
        from_cbank = size;
      }
      pos += 4 + value;
    } else if (format >= 1 && format <= 3) {
      pos += 4;
    } else {
      return -1;  // a format not understood: the rest cannot be walked
    }
  }
  return from_cbank;
}

}  // namespace

std::map<std::string, int64_t> cubin_param_bytes(const std::string& d) {
  std::map<std::string, int64_t> out;
  if (d.size() < 64) return out;
  const uint64_t shoff = load_le<uint64_t>(d, 0x28);
  const uint16_t shentsize = load_le<uint16_t>(d, 0x3a), shnum = load_le<uint16_t>(d, 0x3c);
  const uint16_t shstrndx = load_le<uint16_t>(d, 0x3e);
  uint64_t table_end;
  if (shstrndx >= shnum || shentsize < 0x28 ||
      __builtin_add_overflow(shoff, uint64_t{shnum} * shentsize, &table_end) ||
      table_end > d.size()) {
    return out;
  }
  auto section = [&](uint16_t i) {  // its contents, or nothing when they are not in the file
    const size_t sh = static_cast<size_t>(shoff) + size_t{i} * shentsize;
    const uint64_t off = load_le<uint64_t>(d, sh + 0x18), size = load_le<uint64_t>(d, sh + 0x20);
    if (load_le<uint32_t>(d, sh + 4) == 8 /* SHT_NOBITS */ || off > d.size() ||
        size > d.size() - off) {
      return std::string_view();
    }
    return std::string_view(d).substr(static_cast<size_t>(off), static_cast<size_t>(size));
  };
  const std::string_view names = section(shstrndx);
  const std::string_view prefix = ".nv.info.";
  for (uint16_t i = 0; i < shnum; ++i) {
    const uint32_t name_at =
        load_le<uint32_t>(d, static_cast<size_t>(shoff) + size_t{i} * shentsize);
    if (name_at >= names.size()) continue;
    std::string_view name = names.substr(name_at);
    name = name.substr(0, name.find('\0'));
    if (name.substr(0, prefix.size()) != prefix) continue;
    if (int64_t bytes = param_bytes_of(section(i)); bytes >= 0) {
      out[std::string(name.substr(prefix.size()))] = bytes;
    }
  }
  return out;
}

Status check_image(const std::string& bytes, const std::string& path, const ArchImage& im,
                   bool cubin) {
  if (cubin) {
    if (Status s = check_elf(bytes, path); !s.ok()) return s;
  }
  if (content_hash(bytes) != (cubin ? im.cubin_hash : im.ptx_hash)) {
    return Status::error(fmt::format(
        "bundle image {} does not match the hash in its manifest: corrupted or edited after "
        "compile",
        path));
  }
  return Status::ok_status();
}

Result<std::string> read_image(const std::string& bundle_dir, const ArchImage& im, bool cubin) {
  const std::string& file = cubin ? im.cubin : im.ptx;
  std::string path = (std::filesystem::path(bundle_dir) / file).string();
  Result<std::string> data = read_file(path);
  if (!data.ok()) return data;
  if (Status s = check_image(*data, path, im, cubin); !s.ok()) return s;
  return data;
}

}  // namespace kiln::bundle
