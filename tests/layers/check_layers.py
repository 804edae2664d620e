#!/usr/bin/env python3
"""The layering of Kiln's folders, stated and checked (docs/architecture.md, "Layers").

Every `#include "folder/..."` in a library folder must point at a layer that the including
layer may use. The layers form a DAG, lowest first:

    ir_core   ir/dtype.h, shape.h, half.h, content_hash.h (library kiln_ir_core): what the
              bundle and the runtime share with the IR
    ir        the rest of ir/ (kiln_ir): expressions, programs, parser, printer, verifier,
              interpreter
    bundle    manifest, image checks, JSON reading, atomic files, the autotune cache file
    runtime   the launcher (never LLVM, never the parser)
    compiler  scheduler, plans, code generation, the bundle writer
    autotune  harness, search, `kiln tune`
    tools     the `kiln` CLI

tests/, bench/ and fuzz/ may include anything and are not scanned.
Usage: check_layers.py SOURCE_DIR. Prints file:line for every edge the DAG does not allow
and exits 1 if there is one.
"""
import pathlib
import re
import sys

IR_CORE = {"ir/dtype.h", "ir/shape.h", "ir/half.h", "ir/content_hash.h"}

# layer -> the layers it may include (itself included).
ALLOWED = {
    "ir_core": {"ir_core"},
    "ir": {"ir_core", "ir"},
    "bundle": {"ir_core", "bundle"},
    "runtime": {"ir_core", "bundle", "runtime"},
    "compiler": {"ir_core", "ir", "bundle", "compiler"},
    "autotune": {"ir_core", "ir", "bundle", "runtime", "compiler", "autotune"},
    "tools": {"ir_core", "ir", "bundle", "runtime", "compiler", "autotune", "tools"},
}
FOLDERS = ["ir", "bundle", "runtime", "compiler", "autotune", "tools"]
SOURCE_SUFFIXES = {".h", ".hpp", ".cpp", ".cc", ".c"}


def layer_of(path: str) -> str:
    """The layer of a file named by its path from the source root ("ir/dtype.cpp")."""
    folder = path.split("/", 1)[0]
    if folder == "ir":
        stem = path.rsplit(".", 1)[0]
        return "ir_core" if stem + ".h" in IR_CORE else "ir"
    return folder


def strip_strings_and_comments(text: str) -> str:
    """Blanks out raw string literals and comments, keeping every newline (so line numbers
    hold): compiler/header.cpp writes `#include "runtime/runtime.h"` into a generated file."""
    def blank(m):
        return re.sub(r"[^\n]", " ", m.group(0))
    text = re.sub(r'R"([^(\s]*)\((?:.|\n)*?\)\1"', blank, text)
    text = re.sub(r"/\*(?:.|\n)*?\*/", blank, text)
    return re.sub(r"//[^\n]*", blank, text)


INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)


def violations(root: pathlib.Path):
    for folder in FOLDERS:
        for f in sorted((root / folder).rglob("*")):
            if f.suffix not in SOURCE_SUFFIXES or not f.is_file():
                continue
            rel = f.relative_to(root).as_posix()
            src_layer = layer_of(rel)
            text = strip_strings_and_comments(f.read_text(encoding="utf-8", errors="replace"))
            for m in INCLUDE.finditer(text):
                target = m.group(1)
                if "/" not in target:
                    continue  # a file beside it, or a generated one
                if target.split("/", 1)[0] not in ALLOWED:
                    continue  # a third-party header ("llvm/...", "nlohmann/...")
                dst_layer = layer_of(target)
                if dst_layer not in ALLOWED[src_layer]:
                    line = text.count("\n", 0, m.start()) + 1
                    yield f"{rel}:{line}: {src_layer} may not include \"{target}\" ({dst_layer})"


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    missing = [f for f in FOLDERS if not (root / f).is_dir()]
    if missing:
        print(f"check_layers: {root} has no {', '.join(missing)}", file=sys.stderr)
        return 2
    bad = list(violations(root))
    for b in bad:
        print(b)
    if bad:
        print(f"check_layers: {len(bad)} include(s) against the layering "
              "(tests/layers/check_layers.py states it)")
        return 1
    print("check_layers: every include follows the layering")
    return 0


if __name__ == "__main__":
    sys.exit(main())
