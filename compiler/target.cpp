// See target.h.
#include "compiler/target.h"

namespace kiln {

const TargetFacts& target_facts(std::string_view arch) {
  // Compute capabilities 8.0, 8.7 and 9.0 keep 2048 threads on an SM, 8.6 and 8.9 1536; the
  // shared memory an SM has: 164 KiB (8.0, 8.7), 100 KiB (8.6, 8.9), 228 KiB (9.0).
  static const TargetFacts sm80{32, 65536, 256, 255, 1024, 2048, 164 * 1024};
  static const TargetFacts sm86{32, 65536, 256, 255, 1024, 1536, 100 * 1024};
  static const TargetFacts sm87{32, 65536, 256, 255, 1024, 2048, 164 * 1024};
  static const TargetFacts sm90{32, 65536, 256, 255, 1024, 2048, 228 * 1024};
  if (arch == "sm_86" || arch == "sm_89") return sm86;
  if (arch == "sm_87") return sm87;
  if (arch == "sm_90" || arch == "sm_90a") return sm90;
  return sm80;
}

}  // namespace kiln
