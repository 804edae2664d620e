#!/usr/bin/env bash
# Regenerates the expected kernel plans (`kiln compile --emit=plan`) of every example, and a
# lit test per example that compares the plan with it. Run after a deliberate change to a
# plan, then read the diff: each changed line is a changed decision.
#   tests/golden/plan/update.sh [path/to/kiln]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$here/../../.."
kiln="${1:-$root/build/tools/kiln}"
rm -f "$here"/*.plan "$here"/*.test
for spec in "$root"/examples/*.kiln; do
  name="$(basename "$spec" .kiln)"
  "$kiln" compile "$spec" --emit=plan >"$here/$name.plan"
  cat >"$here/$name.test" <<TEST
# The kernel plan of examples/$name.kiln: steps, analysis, variants and the rule that picks
# one. Expected text: $name.plan (regenerate with tests/golden/plan/update.sh).
# RUN: %kiln compile %examples/$name.kiln --emit=plan | diff -u %S/$name.plan -
TEST
done
echo "wrote $(ls "$here"/*.plan | wc -l) plans to $here"
