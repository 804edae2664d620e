#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (-fsanitize=fuzzer,address,undefined) and runs each
# for SECONDS (default 600) on the seed corpus (the examples, a compiled manifest, a cache).
#   fuzz/run.sh [SECONDS]            (needs clang and libclang-rt-dev; apt-get install clang)
# KILN names the kiln binary that compiles the seed manifest (default: build/tools/kiln).
# Crashes are written to fuzz/out/<target>/crash-*; each one becomes a regression test.
set -euo pipefail
seconds=${1:-600}
root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/fuzz/out"
mkdir -p "$out"
cxx=${CXX_FUZZ:-$(command -v clang++-14 || command -v clang++)}
flags=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
       -I"$root" -isystem /usr/local/cuda/include -DFMT_HEADER_ONLY)
ir=("$root"/ir/{dtype,diag,expr,program,parser,printer,verifier,interpreter,half}.cpp)
echo "==> building with $cxx"
"$cxx" "${flags[@]}" "$root/fuzz/fuzz_spec.cpp" "${ir[@]}" "$root/compiler/schedule.cpp" -o "$out/fuzz_spec"
"$cxx" "${flags[@]}" "$root/fuzz/fuzz_files.cpp" "${ir[@]}" "$root/runtime/manifest.cpp" \
  "$root/runtime/json_reader.cpp" "$root/runtime/atomic_file.cpp" "$root/autotune/cache.cpp" \
  -o "$out/fuzz_files"

# Seed corpora: every example and golden spec; a manifest and a cache (byte 0 picks the reader).
mkdir -p "$out/corpus_spec" "$out/corpus_files"
cp "$root"/examples/*.kiln "$root"/tests/golden/diagnostics/*.kiln "$out/corpus_spec/"
kiln=${KILN:-$root/build/tools/kiln}
if [[ -x "$kiln" ]]; then
  rm -rf "$out/seed.bundle"
  "$kiln" compile "$root/examples/mixed.kiln" -o "$out/seed.bundle" --default-only > /dev/null
  { printf '\x01'; cat "$out/seed.bundle/manifest.json"; } > "$out/corpus_files/manifest"
fi
{ printf '\x00'; cat "$root/bench/results/2026-11-21-h200-cache.json"; } > "$out/corpus_files/cache"

for t in spec files; do
  echo "==> fuzz_$t for $seconds s"
  mkdir -p "$out/$t"
  (cd "$out/$t" && "$out/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
     -print_final_stats=1 "$out/corpus_$t" 2>&1 | tail -20)
done
