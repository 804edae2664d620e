#!/usr/bin/env python3
"""libkiln_runtime.so exports nothing of the spec front end.

An application that only launches kernels links libkiln_runtime, which is made of the
objects of kiln_runtime, kiln_bundle and kiln_ir_core (runtime/CMakeLists.txt). The parser,
printer, verifier, interpreter and the expression/program IR live in kiln_ir and must not be
in it. Runs `nm -D --defined-only -C` on the library and fails, naming each symbol, if one of
them is exported.
Usage: check_runtime_symbols.py NM LIBRARY
"""
import re
import subprocess
import sys

FORBIDDEN = re.compile(
    r"\bkiln::(?:parse_program|print|verify|interpret|index_extents|loads_tensor"
    r"|make_[a-z]+|map_children|render_diagnostic)\("
    r"|\bkiln::content_hash\(kiln::KernelDef"
    r"|\bkiln::(?:Expr|Program|KernelDef|Stmt)\b"
    r"|\b(?:Parser|KernelVerifier|Interpreter)\b")


def main() -> int:
    nm, lib = sys.argv[1], sys.argv[2]
    out = subprocess.run([nm, "-D", "--defined-only", "-C", lib], check=True,
                         capture_output=True, text=True).stdout
    symbols = [line.split(" ", 2)[-1] for line in out.splitlines() if line.strip()]
    if not any("kiln::" in s for s in symbols):
        print(f"check_runtime_symbols: {lib} exports no kiln:: symbol; is it the runtime?")
        return 1
    bad = [s for s in symbols if FORBIDDEN.search(s)]
    for s in bad:
        print(f"{lib}: exports {s}")
    if bad:
        print(f"check_runtime_symbols: {len(bad)} symbol(s) of the parser, printer, verifier "
              "or interpreter in the runtime library")
        return 1
    print(f"check_runtime_symbols: {len(symbols)} exported symbols, none of the front end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
