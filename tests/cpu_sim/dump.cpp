// Prints the LLVM IR (unoptimized, NVPTX intrinsics and all) of one variant of step 0 of a
// kernel of a spec, for tests/cpu_sim/run.sh, scan.sh, rows.sh and outer.sh; on stderr, "block
// elements_per_block tiled" (pointwise), "block elements_per_block split_phases split_slots"
// (scans) or "block elements_per_block split_phases split_slots split_lead_last" (reductions).
//   kiln_cpu_sim_dump SPEC KERNEL VARIANT      (VARIANT -1: print the number of variants;
//                                               -2: the strided variant and the default)
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <fstream>
#include <iostream>
#include <sstream>

#include "compiler/codegen.h"
#include "compiler/kernel_plan.h"
#include "compiler/lower_reduction.h"
#include "compiler/lower_scan.h"
#include "ir/text.h"

using namespace kiln;

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: kiln_cpu_sim_dump SPEC KERNEL VARIANT\n";
    return 2;
  }
  std::ifstream f(argv[1]);
  std::stringstream text;
  text << f.rdbuf();
  Program p = parse_program(text.str());
  for (const KernelDef& k : p.kernels) {
    if (k.name != argv[2]) continue;
    std::unique_ptr<KernelPlan> plan = plan_kernel(k);
    const StepPlan& st = plan->steps.at(0);
    const int v = std::atoi(argv[3]);
    if (v == -2) {  // the step's strided variant and its default
      std::cout << st.strided_variant << " " << st.default_variant << "\n";
      return 0;
    }
    if (v < 0) {
      std::cout << st.variants.size() << "\n";
      return 0;
    }
    const PlannedVariant& pv = st.variants.at(static_cast<size_t>(v));
    llvm::LLVMContext ctx;
    llvm::Module m("sim", ctx);
    VariantLayout layout;
    if (const auto* sc = std::get_if<ScanConfig>(&pv.config)) {
      lower_scan(m, *st.abi, *st.sk, *sc, "kern", &layout);
      std::cerr << pv.block_threads << " " << pv.elements_per_block << " " << pv.split.phases << " "
                << pv.split.slots << "\n";
      std::cout << module_text(m);
      return 0;
    }
    if (const auto* rc = std::get_if<ReductionConfig>(&pv.config)) {
      lower_reduction(m, *st.abi, *st.sk, *rc, "kern", &layout);
      std::cerr << pv.block_threads << " " << pv.elements_per_block << " " << pv.split.phases << " "
                << pv.split.slots << " " << pv.split.lead_last << "\n";
      std::cout << module_text(m);
      return 0;
    }
    lower_pointwise(m, *st.abi, st.pointwise, std::get<PointwiseConfig>(pv.config), "kern",
                    &layout);
    std::cerr << pv.block_threads << " " << pv.elements_per_block << " "
              << std::get<PointwiseConfig>(pv.config).tiled() << "\n";
    std::cout << module_text(m);
    return 0;
  }
  std::cerr << "no kernel " << argv[2] << "\n";
  return 1;
}
