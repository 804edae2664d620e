#!/usr/bin/env bash
# Session 24, device call 4: tests/gpu/tune_shapes.sh (now also one kiln tune of two rowsum
# shapes whose defaults differ, a tier then the split) with this session's kiln, then with the
# kiln before it (272af69, .carry/kiln_old.xz). Call 3 showed the recorded shapes alone do not
# catch the old tuner's fault (each recorded kernel had one shape, or compiled variants on the
# fly, which reloads the bundle); the two-shape tune should: expected to pass with the new kiln
# and to fail that one check with the old.
set -uo pipefail
W=/tmp/w4
source bench/device_setup.sh
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" \
  .carry/kiln_old.xz /tmp/kiln_old && chmod +x /tmp/kiln_old
python3 -c "import lzma,sys,tarfile,io; tarfile.open(fileobj=io.BytesIO(lzma.open(sys.argv[1]).read())).extractall('.')" \
  .carry/tests.tar.xz
for which in new old; do
  k=$K
  [[ $which == old ]] && k=/tmp/kiln_old
  t0=$(date +%s)
  KILN_REQUIRE_GPU=1 tests/gpu/tune_shapes.sh $k build/tests/kiln_gpu_runtime_tests /tmp/ts_$which \
    > $W/tune_shapes_$which.txt 2>&1
  echo "== $which kiln: exit $? ($(( $(date +%s) - t0 )) s)"
  grep -E "^ok|^FAILED|tune_shapes.sh:|default" $W/tune_shapes_$which.txt | cut -c1-600
  cp /tmp/ts_$which/tune_two.txt $W/tune_two_$which.txt 2>/dev/null
done
tar czf $OUT/call4.tgz -C $W .
