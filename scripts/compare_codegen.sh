#!/usr/bin/env bash
# Compiles every example and golden spec (a bundle for sm_90 and --emit=llvm) into OUT, and with
# a second argument REF diffs OUT against REF: the PTX of every bundle and every .ll must match
# byte for byte. For refactors of the code generator that must not change what it emits:
#   scripts/compare_codegen.sh /tmp/ref             # before the change
#   scripts/compare_codegen.sh /tmp/new /tmp/ref    # after it
# Usage: scripts/compare_codegen.sh OUT [REF]   (KILN=path/to/kiln, default build/tools/kiln)
# The emitted code is deterministic: two runs of one binary give the same bytes (until
# 2026-11-23, ReductionLowering::rematerialize walked an unordered_map keyed by node address
# and the held scalar variants of row kernels could differ from run to run; compare a build
# from before that fix with a build patched the same way).
set -u
out=${1:?usage: compare_codegen.sh OUT [REF]}
ref=${2:-}
kiln=${KILN:-build/tools/kiln}
rm -rf "$out" && mkdir -p "$out"
for spec in examples/*.kiln $(find tests/golden -name '*.kiln' | sort); do
  name=$(echo "${spec%.kiln}" | tr '/' '_')
  if "$kiln" compile "$spec" -o "$out/$name.bundle" --arch sm_90 -j 2 >/dev/null 2>"$out/$name.err"; then
    "$kiln" compile "$spec" --emit=llvm --arch sm_90 >"$out/$name.ll" 2>>"$out/$name.err"
  else
    rm -rf "$out/$name.bundle"  # a spec that does not compile (an error test): none to compare
  fi
done
echo "compiled: $(ls -d "$out"/*.bundle 2>/dev/null | wc -l) bundles, $(ls "$out"/*.ll 2>/dev/null | wc -l) .ll"
[ -z "$ref" ] && exit 0
status=0
if ! diff -r -q -x '*.cubin' -x '*.err' "$ref" "$out"; then status=1; fi
echo "ptx files compared: $(find "$out" -name '*.ptx' | wc -l)"
[ $status -eq 0 ] && echo "identical" || echo "DIFFERENT"
exit $status
