// libFuzzer target: spec text -> parser + verifier -> scheduler, and the printer round trip.
// Any input may be rejected with a UserError; nothing may crash, hang, trip a sanitizer, or
// print a program that parses back to something else. The seeds (fuzz/run.sh) are the examples
// and the golden diagnostics, so every production of the grammar is in the corpus: scalars,
// rank-0 tensors, `strided` inputs (examples/strided.kiln) and `strided` where it is refused
// (tests/golden/diagnostics/strided_*.kiln).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "compiler/schedule.h"
#include "ir/text.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  kiln::Program p;
  try {
    p = kiln::parse_program(text);
  } catch (const kiln::UserError&) {
    return 0;
  }
  if (!(kiln::parse_program(kiln::print(p)) == p)) __builtin_trap();  // round trip
  for (const kiln::KernelDef& k : p.kernels) {
    try {
      kiln::Schedule s = kiln::schedule_kernel(k);
      (void)kiln::print_schedule(s);
      (void)kiln::explain_schedule(s);
    } catch (const kiln::UserError&) {
    }
  }
  return 0;
}
