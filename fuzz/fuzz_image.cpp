// libFuzzer target: a bundle's cubin as the runtime checks it before any driver call
// (bundle/image.h). The input is the cubin's bytes: through check_image (the ELF structure,
// then the hash, once matching and once not) and through cubin_param_bytes, on every input,
// accepted or not, since that parser keeps its own bounds. Nothing may crash or read outside
// the input; a structural error must come before a hash mismatch, and what is accepted with
// the right hash must be refused with a wrong one.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "bundle/image.h"
#include "ir/text.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kiln;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const std::string path = "fuzz/k.sm_90.cubin";
  bundle::ArchImage im;
  im.arch = "sm_90";
  im.cubin = "k.sm_90.cubin";
  im.cubin_hash = content_hash(bytes);
  const Status right = bundle::check_image(bytes, path, im, true);

  bundle::ArchImage other = im;  // another variant's hash
  other.cubin_hash.back() = other.cubin_hash.back() == '0' ? '1' : '0';
  const Status wrong = bundle::check_image(bytes, path, other, true);
  const std::string mismatch = "bundle image " + path +
                               " does not match the hash in its manifest: corrupted or edited "
                               "after compile";
  if (wrong.ok()) __builtin_trap();
  if (right.ok() ? wrong.message() != mismatch : wrong.message() != right.message()) {
    __builtin_trap();
  }

  // Every entry found is walked: a name without NUL, a value that is a u16 of the section.
  for (const auto& [name, param_bytes] : bundle::cubin_param_bytes(bytes)) {
    if (name.find('\0') != std::string::npos || param_bytes < 0 || param_bytes > 0xffff) {
      __builtin_trap();
    }
  }
  return 0;
}
