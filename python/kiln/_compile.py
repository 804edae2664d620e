"""`kiln compile` and `kiln tune` from Python, with a bundle cache keyed by content.

compile_bundle() hashes (SHA-256) the spec text, the target architectures, the flags and the
kiln binary's identity (path, size, mtime), and keeps the bundle at
CACHE_DIR/bundles/<hash>; CACHE_DIR is $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else
~/.cache/kiln. A bundle is compiled into a temporary directory beside its final place and
renamed into it, so a reader never sees half a bundle and two processes compiling the same
spec both end with one complete bundle (the loser of the rename drops its copy).

The kiln binary is $KILN_BIN, else `kiln` on PATH, else the build tree of the repository this
package sits in (build/tools/kiln)."""
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from .errors import KilnError, KilnValueError

PathLike = Union[str, "os.PathLike[str]"]


def kiln_binary() -> Path:
    """The `kiln` executable: $KILN_BIN, else PATH, else the repository's build tree."""
    tried = []
    env = os.environ.get("KILN_BIN")
    if env:
        if os.access(env, os.X_OK):
            return Path(env)
        tried.append(f"KILN_BIN={env} (not an executable)")
    found = shutil.which("kiln")
    if found:
        return Path(found)
    tried.append("kiln on PATH (none)")
    repo = Path(__file__).resolve().parent.parent.parent
    builds = ("build", "build-release", "build-asan")
    if not (repo / "CMakeLists.txt").is_file():  # an installed package: no build tree
        builds = ()
    for build in builds:
        p = repo / build / "tools" / "kiln"
        if os.access(p, os.X_OK):
            return p
        tried.append(f"{p} (not there)")
    raise KilnError("cannot find the kiln binary; tried: " + "; ".join(tried) +
                    ". Set KILN_BIN to its path")


def cache_dir() -> Path:
    """Where compiled bundles are kept: $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else
    ~/.cache/kiln."""
    env = os.environ.get("KILN_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "kiln"


def _spec_text(spec: Union[str, PathLike]) -> str:
    """The spec's text: `spec` itself when it reads like a spec (has 'kernel' and a '{'),
    else the file it names."""
    if isinstance(spec, str) and "kernel" in spec and "{" in spec:
        return spec
    p = Path(spec)
    try:
        return p.read_text()
    except OSError as e:
        raise KilnError(f"{p}: cannot read the spec ({e.strerror or e})") from None


def _run(cmd: List[str], what: str, env: Optional[Mapping[str, str]] = None
         ) -> subprocess.CompletedProcess:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    except OSError as e:
        raise KilnError(f"{what}: cannot run {cmd[0]}: {e}") from None
    if r.returncode != 0:
        lines = (r.stderr.strip() or r.stdout.strip()).splitlines()
        # kiln ends every error in a one-line reason; keep the located diagnostics above it.
        raise KilnError(f"{what} failed (exit {r.returncode}): " +
                        ("\n".join(lines[-8:]) if lines else "no output"))
    return r


def compile_bundle(spec: Union[str, PathLike], archs: Optional[Sequence[str]] = None, *,
                   default_only: bool = False, jobs: Optional[int] = None,
                   force: bool = False) -> Path:
    """Compiles a spec (its text, or a path to a .kiln file) into a bundle in the cache and
    returns the bundle's directory; a bundle already there for the same text, archs, flags
    and kiln binary is returned without running kiln (force=True compiles again)."""
    text = _spec_text(spec)
    if isinstance(archs, str):
        archs = [a for a in archs.split(",") if a]
    archs = list(archs) if archs else []
    for a in archs:
        if not a.startswith("sm_"):
            raise KilnValueError(f"archs: expected architectures like sm_90, got {a!r}")
    kiln = kiln_binary()
    st = kiln.stat()
    key = hashlib.sha256(json.dumps({
        "spec": text, "archs": archs, "default_only": default_only,
        "kiln": [str(kiln.resolve()), st.st_size, st.st_mtime_ns]}, sort_keys=True).encode())
    digest = key.hexdigest()[:32]
    root = cache_dir() / "bundles"
    final = root / digest
    if (final / "manifest.json").is_file() and not force:
        return final
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{digest}.", dir=root))
    try:
        (tmp / "spec.kiln").write_text(text)
        cmd = [str(kiln), "compile", str(tmp / "spec.kiln"), "-o", str(tmp / "bundle")]
        if archs:
            cmd += ["--arch", ",".join(archs)]
        if default_only:
            cmd.append("--default-only")
        if jobs:
            cmd += ["-j", str(jobs)]
        _run(cmd, "kiln compile")
        # The spec beside the manifest, for people reading the cache.
        shutil.copyfile(tmp / "spec.kiln", tmp / "bundle" / "spec.kiln")
        if force and final.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{digest}.old.", dir=root))
            os.rename(final, old / "b")
            shutil.rmtree(old, ignore_errors=True)
        try:
            os.rename(tmp / "bundle", final)
        except OSError:
            if not (final / "manifest.json").is_file():  # not another process's bundle
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def compile(spec: Union[str, PathLike], archs: Optional[Sequence[str]] = None, *,
            device: int = 0, default_only: bool = False, jobs: Optional[int] = None,
            force: bool = False):
    """Compiles a spec (its text, or a path to a .kiln file) with the kiln binary, caching the
    bundle by content (see compile_bundle), and loads it onto `device`: returns a Bundle whose
    kernels are callables."""
    from ._bundle import load
    return load(compile_bundle(spec, archs, default_only=default_only, jobs=jobs, force=force),
                device)


def _shape_text(shape: Union[str, Mapping[str, int]]) -> str:
    if isinstance(shape, str):
        return shape
    return ",".join(f"{k}={int(v)}" for k, v in shape.items())


def tune(bundle: Union["PathLike", Any], shapes: Iterable[Union[str, Mapping[str, int]]],
         cache: Optional[PathLike] = None, *, kernel: Optional[str] = None,
         deterministic: bool = False, force: bool = False, no_descent: bool = False,
         device: Optional[int] = None) -> "TuneCache":
    """Runs `kiln tune` on a bundle (a directory or a loaded Bundle) for each shape
    ({"M": 4096, "N": 1024} or "M=4096,N=1024") and returns the autotune cache it wrote
    (`cache`, default CACHE_DIR/autotune.json). `device` sets CUDA_VISIBLE_DEVICES for the
    tuner. Attach the winners to a loaded bundle with `bundle.use_cache(result.path)`."""
    path = getattr(bundle, "path", bundle)
    shapes = list(shapes)
    if not shapes:
        raise KilnValueError("tune: give at least one shape")
    cache = Path(cache) if cache is not None else cache_dir() / "autotune.json"
    cache.parent.mkdir(parents=True, exist_ok=True)
    cmd = [str(kiln_binary()), "tune", str(path), "-c", str(cache), "-q"]
    for s in shapes:
        cmd += ["--shape", _shape_text(s)]
    if kernel:
        cmd += ["--kernel", kernel]
    if deterministic:
        cmd.append("--deterministic")
    if force:
        cmd.append("--force")
    if no_descent:
        cmd.append("--no-descent")
    env = None
    if device is not None:
        env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(device))
    r = _run(cmd, "kiln tune", env)
    result = read_cache(cache)
    result.log = r.stdout
    return result


class TuneCache:
    """An autotune cache file (docs/autotune.md), read as JSON: `.data` is the whole document,
    `.entries` its list of tuned entries (empty when the file has none)."""

    def __init__(self, path: Path, data: Any):
        self.path = path
        self.data = data
        self.log = ""

    @property
    def entries(self) -> List[Dict[str, Any]]:
        d = self.data
        if isinstance(d, dict):
            e = d.get("entries")
            if isinstance(e, list):
                return e
            if isinstance(e, dict):
                return list(e.values())
        return []

    def __repr__(self) -> str:
        return f"<kiln.TuneCache {self.path}: {len(self.entries)} entries>"


def read_cache(path: PathLike) -> TuneCache:
    """Reads an autotune cache file (`kiln tune -c PATH`)."""
    p = Path(path)
    try:
        return TuneCache(p, json.loads(p.read_text()))
    except FileNotFoundError:
        raise KilnError(f"{p}: no such cache file") from None
    except (OSError, ValueError) as e:
        raise KilnError(f"{p}: not an autotune cache ({e})") from None
