// FNV-1a 64 of bytes (see content_hash.h).
#include "ir/content_hash.h"

#include <fmt/format.h>

#include <cstdint>

namespace kiln {

std::string content_hash(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return fmt::format("{:016x}", h);
}

}  // namespace kiln
