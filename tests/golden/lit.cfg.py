# lit configuration for Kiln's golden tests: spec -> PTX checked with FileCheck and assembled
# by ptxas, and diagnostics checked against the expected message. CTest runs one lit
# invocation per test file (tests/CMakeLists.txt) and passes the tool paths as parameters.
import os

import lit.formats

config.name = "kiln-golden"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".kiln", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = lit_config.params.get("exec_root", os.path.join(config.test_source_root, "out"))

def param(name):
    value = lit_config.params.get(name)
    if not value:
        lit_config.fatal(f"missing --param {name}=...")
    return value

llvm_bin = param("llvm_bin")
config.environment["PATH"] = os.pathsep.join([llvm_bin, os.environ.get("PATH", "")])
config.environment["KILN_CUDA_ROOT"] = param("cuda_root")
config.substitutions.append(("%kiln", param("kiln")))
config.substitutions.append(("%ptxas", os.path.join(param("cuda_root"), "bin", "ptxas")))
config.substitutions.append(("%examples", param("examples")))
config.substitutions.append(("FileCheck", "FileCheck --enable-var-scope"))
