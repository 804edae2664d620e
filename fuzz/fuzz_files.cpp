// libFuzzer target: the files Kiln reads from disk that tools and users write — a bundle's
// manifest.json and an autotune cache. Input byte 0 picks the reader. Any input may be
// rejected with an error Status; nothing may crash, and what is accepted must survive a
// write/read round trip unchanged.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "bundle/cache.h"
#include "bundle/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] & 1) {
    auto m = kiln::bundle::parse_manifest(text, "fuzz/manifest.json");
    if (!m.ok()) return 0;
    auto again = kiln::bundle::parse_manifest(kiln::bundle::to_json(m.value()), "again");
    if (!again.ok() || !(again.value() == m.value())) __builtin_trap();
  } else {
    auto c = kiln::cache::parse(text, "fuzz/cache.json");
    if (!c.ok()) return 0;
    auto again = kiln::cache::parse(kiln::cache::to_json(c.value()), "again");
    if (!again.ok() || !(again.value() == c.value())) __builtin_trap();
    (void)kiln::cache::format_table(c.value());
  }
  return 0;
}
