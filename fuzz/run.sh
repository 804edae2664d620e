#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (-fsanitize=fuzzer,address,undefined) and runs each
# for SECONDS (default 600) on the seed corpus (the examples, a compiled manifest, a cache,
# compiled cubins).
#   fuzz/run.sh [SECONDS]            (needs clang and libclang-rt-dev; apt-get install clang)
# FUZZ_TARGETS picks the targets to build and run (default: "spec files image launch"), e.g.
#   FUZZ_TARGETS=image fuzz/run.sh 600
# KILN names the kiln binary that compiles the seed manifest and cubins (default:
# build/tools/kiln). Crashes are written to fuzz/out/<target>/crash-*; each one becomes a
# regression test.
set -euo pipefail
seconds=${1:-600}
targets=${FUZZ_TARGETS:-spec files image launch}
root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/fuzz/out"
mkdir -p "$out"
cxx=${CXX_FUZZ:-$(command -v clang++-14 || command -v clang++)}
flags=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
       -I"$root" -isystem /usr/local/cuda/include -DFMT_HEADER_ONLY)
ir=("$root"/ir/{dtype,shape,half,content_hash,diag,expr,program,parser,printer,verifier,interpreter}.cpp)
kiln=${KILN:-$root/build/tools/kiln}
for t in $targets; do
  echo "==> building fuzz_$t with $cxx"
  mkdir -p "$out/corpus_$t"
  case $t in
    spec)
      "$cxx" "${flags[@]}" "$root/fuzz/fuzz_spec.cpp" "${ir[@]}" "$root/compiler/schedule.cpp" \
        "$root/compiler/contraction.cpp" "$root/compiler/plan.cpp" "$root/bundle/manifest.cpp" \
        "$root/bundle/json_reader.cpp" "$root/bundle/atomic_file.cpp" -o "$out/fuzz_spec"
      # Seeds: every example and golden spec.
      cp "$root"/examples/*.kiln "$root"/tests/golden/diagnostics/*.kiln "$out/corpus_spec/"
      ;;
    files)
      "$cxx" "${flags[@]}" "$root/fuzz/fuzz_files.cpp" "${ir[@]}" "$root/bundle/manifest.cpp" \
        "$root/bundle/json_reader.cpp" "$root/bundle/atomic_file.cpp" "$root/bundle/cache.cpp" \
        -o "$out/fuzz_files"
      # Seeds: a manifest and a cache (byte 0 picks the reader).
      if [[ -x "$kiln" ]]; then
        rm -rf "$out/seed.bundle"
        "$kiln" compile "$root/examples/mixed.kiln" -o "$out/seed.bundle" --default-only > /dev/null
        { printf '\x01'; cat "$out/seed.bundle/manifest.json"; } > "$out/corpus_files/manifest"
        # and a row reduction's whole space: split and staging variants.
        rm -rf "$out/seed_rows.bundle"
        "$kiln" compile "$root/examples/softmax.kiln" -o "$out/seed_rows.bundle" --arch sm_90 \
          > /dev/null
        { printf '\x01'; cat "$out/seed_rows.bundle/manifest.json"; } \
          > "$out/corpus_files/manifest_rows"
      fi
      { printf '\x00'; cat "$root/bench/results/2026-11-21-h200-cache.json"; } \
        > "$out/corpus_files/cache"
      ;;
    image)
      "$cxx" "${flags[@]}" "$root/fuzz/fuzz_image.cpp" "$root/bundle/image.cpp" "${ir[@]}" \
        -o "$out/fuzz_image"
      # Seeds: the sm_90 cubins of a pointwise kernel, a row and an outer reduction, and two
      # cut short (the ELF header alone; the first half, without the header tables at the end).
      if [[ -x "$kiln" ]]; then
        for ex in add softmax colsum; do
          rm -rf "$out/seed_$ex.bundle"
          "$kiln" compile "$root/examples/$ex.kiln" -o "$out/seed_$ex.bundle" --default-only \
            > /dev/null
          cp "$out/seed_$ex.bundle"/*.sm_90.cubin "$out/corpus_image/"
        done
        add=$(ls "$out/seed_add.bundle"/*.sm_90.cubin | head -1)
        head -c 64 "$add" > "$out/corpus_image/cut-header"
        head -c $(($(stat -c %s "$add") / 2)) "$add" > "$out/corpus_image/cut-half"
      fi
      ;;
    launch)
      "$cxx" "${flags[@]}" -isystem /usr/local/cuda/include "$root/fuzz/fuzz_launch.cpp" \
        "$root/runtime/launch.cpp" "$root/bundle/manifest.cpp" "$root/bundle/json_reader.cpp" \
        "${ir[@]}" -o "$out/fuzz_launch"
      # The manifests it launches against (KILN_FUZZ_MANIFESTS): every kind of step, with
      # split, staging and buffered variants; the input's bytes drive the rest.
      mkdir -p "$out/launch_manifests"
      for ex in add mixed rowsum colsum softmax global_max_norm rowsum_colsum strided; do
        if [[ ! -f "$out/launch_manifests/$ex/manifest.json" ]]; then
          "$kiln" compile "$root/examples/$ex.kiln" -o "$out/launch_manifests/$ex" --arch sm_90 \
            > /dev/null
        fi
      done
      export KILN_FUZZ_MANIFESTS="$out/launch_manifests"
      head -c 64 /dev/urandom > "$out/corpus_launch/random"
      ;;
    *) echo "unknown fuzz target '$t' (spec, files, image, launch)" >&2; exit 2 ;;
  esac
done

for t in $targets; do
  echo "==> fuzz_$t for $seconds s"
  mkdir -p "$out/$t"
  (cd "$out/$t" && "$out/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
     -print_final_stats=1 "$out/corpus_$t" 2>&1 | tail -20)
done
