"""Find, or build once, the kube-apiserver and kube-controller-manager binaries of the local cluster.

No binary package of Debian 12 carries kube-apiserver, but its source package ``kubernetes`` builds it offline
with Debian's own Go. The binaries are cached outside the repository, keyed by the Debian source version and
by :data:`RECIPE`, the revision of this recipe::

    ${AIRFLOW_TRAINJOB_CACHE:-${XDG_CACHE_HOME:-~/.cache}/airflow-trainjob}/kubernetes-<version>/bin-r<RECIPE>/

A new recipe revision therefore builds once more into a new directory, while clusters already running keep
their binaries from the old one (revision 1 used ``kubernetes-<version>/bin/``; it can be deleted by hand).

:func:`ensure_binaries` returns them from the cache when present (offline, well under a second). Otherwise it
runs the whole recipe of ``shared/notes/local-kubernetes.md`` under a file lock, saying on stderr what it does:

1. ``apt-get install`` the Debian packages that are missing (Go, etcd, the two replacement Go libraries, ...);
2. write ``deb-src`` entries derived from the machine's own ``/etc/apt/sources.list.d/debian.sources`` into a
   private apt directory under the cache, so the system's apt configuration is left untouched;
3. ``apt-get source kubernetes``; replace two vendored Go libraries that crash under Go >= 1.18
   (:data:`VENDOR_SWAPS`) and apply the exact source patches of :data:`SOURCE_PATCHES` (each must find its
   expected text exactly once, else the build stops: another source version is never patched blindly);
4. ``make WHAT="cmd/kube-apiserver cmd/kube-controller-manager"`` offline (``GOPROXY=off``, vendored modules);
5. copy the two binaries into the cache (atomically) and delete the build tree.

The patch (since recipe 2): the CRD validator (``vendor/k8s.io/kube-openapi/pkg/validation/validate/type.go``)
took any value equal to its type's zero value *as a reflect.Value* for null; under Go >= 1.16 that holds for
``""``, so every ``""`` in a typed string field of a custom resource (an env ``value: ""``, a condition's
``message: ""``) was refused with 422 ``must be of type string: "null"`` while ``0`` and ``false`` passed. The
patched line treats only ``nil`` as null, which is Kubernetes 1.21's fix.

The first build takes about 5 minutes on 2 cores; every later call finds the cached binaries.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

#: The Debian source package that carries kube-apiserver.
SOURCE_PACKAGE = "kubernetes"
#: The binaries built from it, as named in its ``_output/bin/``.
BINARIES = ("kube-apiserver", "kube-controller-manager")
#: Debian packages the build and the cluster need. Not ``kubernetes-client``: a ``kubectl`` from another
#: package may already be installed and the two conflict; the cluster does not need kubectl anyway.
DEBIAN_PACKAGES = (
    "golang-go",
    "rsync",
    "dpkg-dev",
    "etcd-server",
    "golang-github-modern-go-reflect2-dev",
    "golang-github-json-iterator-go-dev",
)
#: Vendored Go libraries replaced by the copies Debian's ``-dev`` packages install under ``GOCODE``:
#: reflect2 1.0.1 (with json-iterator 1.1.10 that pins it) faults under Go >= 1.18 on the first custom-object
#: create (``reflect2.(*UnsafeMapType).UnsafeIterate``); Debian's 1.0.2 and 1.1.12 work.
VENDOR_SWAPS = ("github.com/modern-go/reflect2", "github.com/json-iterator/go")
GOCODE = Path("/usr/share/gocode/src")


@dataclass(frozen=True)
class SourcePatch:
    """One exact text replacement in the unpacked source tree.

    :param path: the file, relative to the tree's root.
    :param old: the text expected exactly once in that file (whole lines, tabs included).
    :param new: its replacement.
    :param reason: why, for the build log and the error message.
    """

    path: str
    old: str
    new: str
    reason: str


#: Patches applied after the vendor swaps. The CRD validator of 1.20 (kube-openapi's fork of go-openapi's
#: ``validate``) takes a value for null when ``reflect.DeepEqual(reflect.Zero(T), reflect.ValueOf(data))``;
#: since Go 1.16 both sides point at the runtime's shared zero value for ``""``, so every ``""`` in a typed
#: string field of a custom resource was refused with 422 ``must be of type string: "null"``. Kubernetes 1.21
#: fixed it by checking ``data == nil`` only (kubernetes/kube-openapi pull request 230, kubernetes issue
#: 99804); this is that fix. The vendored ``github.com/go-openapi/validate`` has the same line but is not
#: compiled into either binary (only a test imports it), so it is left alone.
SOURCE_PATCHES = (
    SourcePatch(
        path="vendor/k8s.io/kube-openapi/pkg/validation/validate/type.go",
        old="\tif data == nil || reflect.DeepEqual(reflect.Zero(reflect.TypeOf(data)), reflect.ValueOf(data)) {\n",
        new="\tif data == nil {\n",
        reason='the CRD validator refuses "" as null under Go >= 1.16 (fixed upstream in Kubernetes 1.21)',
    ),
)
#: Revision of this recipe, part of the binaries' cache directory: raise it whenever the recipe changes what
#: is built (a patch, a swap), so every machine builds the new binaries once. 2: the ``""`` patch above.
RECIPE = 2
#: The machine's apt source list whose ``deb`` entries the ``deb-src`` entries are derived from.
SYSTEM_SOURCES = Path("/etc/apt/sources.list.d/debian.sources")
#: Fallback, one-line format (older images).
SYSTEM_SOURCES_LIST = Path("/etc/apt/sources.list")

_PREFIX = "airflow-trainjob-local"


class BuildError(RuntimeError):
    """The binaries are missing and could not be installed or built; the message says which step failed."""


@dataclass(frozen=True)
class KubernetesBinaries:
    """Paths of the executables the local cluster runs.

    :param version: the Debian source version they were built from, e.g. ``1.20.5+really1.20.2-1.1+deb12u1``.
    """

    version: str
    kube_apiserver: Path
    kube_controller_manager: Path
    etcd: Path


def cache_dir() -> Path:
    """The cache root: ``$AIRFLOW_TRAINJOB_CACHE``, else ``${XDG_CACHE_HOME:-~/.cache}/airflow-trainjob``."""
    explicit = os.environ.get("AIRFLOW_TRAINJOB_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg).expanduser() / "airflow-trainjob"


def binaries_dir(cache: Path, version: str) -> Path:
    """Where the binaries of one Debian source version, built by this :data:`RECIPE`, live in the cache."""
    return cache / f"kubernetes-{version}" / f"bin-r{RECIPE}"


def apply_source_patches(tree: Path, patches: tuple[SourcePatch, ...] = SOURCE_PATCHES) -> None:
    """Apply each patch to the unpacked source ``tree``, checking every one before writing any.

    :param tree: root of the unpacked source (the directory holding ``vendor/``).
    :param patches: the replacements, default :data:`SOURCE_PATCHES`.
    :raises BuildError: a patched file is missing, or its expected text is absent or is there more than once
        (another source version: it must be looked at, not patched blindly); nothing is written then.
    """
    patched: dict[Path, str] = {}
    for patch in patches:
        path = tree / patch.path
        if path not in patched and not path.is_file():
            raise BuildError(f"cannot patch {patch.path}: no such file in {tree} ({patch.reason})")
        text = patched[path] if path in patched else path.read_text()
        found = text.count(patch.old)
        if found != 1:
            raise BuildError(
                f"cannot patch {patch.path}: expected the line {patch.old.strip()!r} exactly once, found it "
                f"{found} times; this recipe does not know this source version ({patch.reason})"
            )
        patched[path] = text.replace(patch.old, patch.new)
    for path, text in patched.items():
        path.write_text(text)


def find_binaries(cache: Path | None = None) -> KubernetesBinaries | None:
    """Return the cached binaries without installing, downloading or building anything, or ``None``.

    The version is the candidate of the private apt lists (read offline); ``None`` also when those lists or
    the binaries for that version or ``etcd`` are missing.
    """
    cache = cache or cache_dir()
    version = _source_version(cache)
    if version is None:
        return None
    return _complete(cache, version)


def ensure_binaries(cache: Path | None = None, *, keep_build_tree: bool = False) -> KubernetesBinaries:
    """Return the cluster's binaries, installing and building them first when they are missing.

    Safe to call concurrently (one build at a time under ``<cache>/build.lock``; the others wait and then find
    its result). Needs root only when Debian packages are missing.

    :param cache: cache root, default :func:`cache_dir`.
    :param keep_build_tree: keep ``<cache>/build/`` (source tree and Go cache, about 2 GB) after a build.
    :raises BuildError: a package is missing and this is not root, or apt, the download or the build failed.
    """
    cache = cache or cache_dir()
    found = find_binaries(cache)
    if found is not None:
        return found
    if shutil.which("apt-get") is None or shutil.which("dpkg-query") is None:
        raise BuildError(
            "kube-apiserver is built from Debian's source package, which needs apt-get and dpkg (Debian 12); "
            f"no cached binaries were found under {cache}"
        )
    cache.mkdir(parents=True, exist_ok=True)
    with _file_lock(cache / "build.lock"):
        # Another process may have finished the build while this one waited for the lock.
        found = find_binaries(cache)
        if found is not None:
            return found
        log_path = cache / "build.log"
        with log_path.open("a") as log:
            _install_packages(log)
            _refresh_source_lists(cache, log)
            version = _source_version(cache)
            if version is None:
                raise BuildError(
                    f"apt found no source package {SOURCE_PACKAGE!r} in the deb-src entries derived from "
                    f"{SYSTEM_SOURCES}; see {log_path}"
                )
            found = _complete(cache, version)
            if found is not None:
                return found
            _build(cache, version, log, log_path, keep_build_tree=keep_build_tree)
        found = _complete(cache, version)
        if found is None:  # pragma: no cover - _build raises before this can happen
            raise BuildError(f"build finished but {binaries_dir(cache, version)} is incomplete")
        return found


def deb_src_entries(sources_text: str) -> str:
    """Turn the ``deb`` stanzas of a deb822 ``.sources`` file into ``deb-src`` stanzas with the same URIs.

    Suites, components, ``Signed-By`` and every other field are kept as they are; comments, disabled stanzas
    (``Enabled: no``) and stanzas without ``deb`` are dropped.

    :param sources_text: the content of a deb822 file such as ``/etc/apt/sources.list.d/debian.sources``.
    :returns: deb822 text, stanzas separated by a blank line; empty when there is no ``deb`` stanza.
    """
    out = []
    for stanza in _deb822_stanzas(sources_text):
        fields = {key.lower(): value for key, value in stanza}
        if "deb" not in fields.get("types", "").split():
            continue
        if fields.get("enabled", "yes").strip().lower() == "no":
            continue
        lines = ["Types: deb-src"]
        lines += [f"{key}:{value}" for key, value in stanza if key.lower() not in ("types", "enabled")]
        out.append("\n".join(lines))
    return "\n\n".join(out) + ("\n" if out else "")


def deb_src_lines(sources_list_text: str) -> str:
    """Turn the ``deb`` lines of a one-line-format ``sources.list`` into ``deb-src`` lines (fallback format)."""
    out = [
        "deb-src" + line.strip()[len("deb") :]
        for line in sources_list_text.splitlines()
        if line.strip().startswith("deb ") or line.strip().startswith("deb\t")
    ]
    return "\n".join(out) + ("\n" if out else "")


# --- steps -----------------------------------------------------------------------------------------------


def _complete(cache: Path, version: str) -> KubernetesBinaries | None:
    bin_dir = binaries_dir(cache, version)
    paths = [bin_dir / name for name in BINARIES]
    etcd = shutil.which("etcd")
    if etcd is None or not all(p.is_file() and os.access(p, os.X_OK) for p in paths):
        return None
    return KubernetesBinaries(version, paths[0], paths[1], Path(etcd))


def _install_packages(log) -> None:
    missing = [p for p in DEBIAN_PACKAGES if not _installed(p)]
    if not missing:
        return
    if os.geteuid() != 0:
        raise BuildError(
            "missing Debian packages " + " ".join(missing) + "; install them as root with "
            "`apt-get install -y --no-install-recommends " + " ".join(missing) + "` and run again"
        )
    _say(f"installing Debian packages: {' '.join(missing)} (apt-get, about a minute)")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    # The system lists may be empty (fresh image) or stale; install fails on either, so refresh them first.
    _run(["apt-get", "update", "-q"], log, env=env, what="apt-get update")
    _run(
        ["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing],
        log,
        env=env,
        what="apt-get install",
    )


def _installed(package: str) -> bool:
    result = subprocess.run(
        ["dpkg-query", "-W", "-f=${db:Status-Status}", package],
        capture_output=True,
        text=True,
        check=False,
    )
    return result.returncode == 0 and result.stdout.strip() == "installed"


def _apt_dir(cache: Path) -> Path:
    return cache / "apt"


def _apt_options(cache: Path) -> list[str]:
    """apt options that read and write only the private source parts and lists under the cache."""
    apt = _apt_dir(cache)
    options = {
        "Dir::Etc::SourceParts": str(apt / "sources.list.d"),
        "Dir::Etc::SourceList": "/dev/null",
        "Dir::State::Lists": str(apt / "lists"),
        # No binary caches in /var/cache/apt: they would describe only these private lists.
        "Dir::Cache::pkgcache": "",
        "Dir::Cache::srcpkgcache": "",
    }
    if os.geteuid() == 0:
        # apt drops to the _apt user for downloads, which cannot write into root's cache directory.
        options["APT::Sandbox::User"] = "root"
    return [arg for key, value in options.items() for arg in ("-o", f"{key}={value}")]


def _refresh_source_lists(cache: Path, log) -> None:
    parts = _apt_dir(cache) / "sources.list.d"
    (_apt_dir(cache) / "lists" / "partial").mkdir(parents=True, exist_ok=True)
    parts.mkdir(parents=True, exist_ok=True)
    for old in parts.iterdir():
        old.unlink()
    if SYSTEM_SOURCES.is_file():
        text, name = deb_src_entries(SYSTEM_SOURCES.read_text()), "src.sources"
    elif SYSTEM_SOURCES_LIST.is_file():
        text, name = deb_src_lines(SYSTEM_SOURCES_LIST.read_text()), "src.list"
    else:
        text, name = "", ""
    if not text:
        raise BuildError(f"no 'deb' entries in {SYSTEM_SOURCES} or {SYSTEM_SOURCES_LIST} to derive deb-src from")
    (parts / name).write_text(text)
    _say(f"reading Debian source package lists into {_apt_dir(cache)} (private apt lists)")
    _run(["apt-get", *_apt_options(cache), "update", "-q"], log, what="apt-get update (deb-src)")


def _source_version(cache: Path) -> str | None:
    """The version ``apt-get source`` would fetch, from the private lists, offline; ``None`` without lists."""
    if not (_apt_dir(cache) / "lists").is_dir() or shutil.which("apt-get") is None:
        return None
    result = subprocess.run(
        ["apt-get", *_apt_options(cache), "source", "--print-uris", "-q", SOURCE_PACKAGE],
        capture_output=True,
        text=True,
        check=False,
        cwd=cache,
    )
    # One line per file: 'URI' <name>_<version>.dsc <size> <hash>; the .dsc name carries the version
    # without epoch, which is also what makes it safe as a directory name.
    match = re.search(rf"\s{re.escape(SOURCE_PACKAGE)}_(\S+)\.dsc\s", result.stdout)
    return match.group(1) if result.returncode == 0 and match else None


def _build(cache: Path, version: str, log, log_path: Path, *, keep_build_tree: bool) -> None:
    work = cache / "build"
    _rmtree(work)
    src = work / "src"
    src.mkdir(parents=True)
    started = time.monotonic()
    _say(
        f"building kube-apiserver and kube-controller-manager {version} from Debian's source package; "
        f"the first build takes about 5 minutes on 2 cores (log: {log_path})"
    )
    _say(f"downloading source package {SOURCE_PACKAGE} {version} (about 35 MB)")
    _run(
        ["apt-get", *_apt_options(cache), "source", "-q", f"{SOURCE_PACKAGE}={version}"],
        log,
        cwd=src,
        what="apt-get source",
    )
    trees = [p for p in src.iterdir() if p.is_dir()]
    if len(trees) != 1:
        raise BuildError(f"expected one unpacked source tree in {src}, found {[p.name for p in trees]}")
    tree = trees[0]
    for lib in VENDOR_SWAPS:
        replacement = GOCODE / lib
        if not replacement.is_dir():
            raise BuildError(f"{replacement} is missing (its golang-*-dev package is not installed)")
        shutil.rmtree(tree / "vendor" / lib)
        shutil.copytree(replacement, tree / "vendor" / lib, symlinks=True)
    apply_source_patches(tree)
    for patch in SOURCE_PATCHES:
        log.write(f"\npatched {patch.path}: {patch.reason}\n")
    env = dict(
        os.environ,
        GOPROXY="off",
        CGO_ENABLED="0",
        GOFLAGS="-mod=vendor",
        GOCACHE=str(work / "gocache"),
        HOME=str(work / "home"),
    )
    (work / "home").mkdir()
    _say("compiling (go build, offline)")
    _run(["make", "WHAT=" + " ".join(f"cmd/{b}" for b in BINARIES)], log, cwd=tree, env=env, what="make", heartbeat=60)
    # Copy next to the final directory, then rename: a reader never sees half a binary.
    final = binaries_dir(cache, version)
    staging = final.with_name(f"{final.name}.tmp-{os.getpid()}")
    _rmtree(staging)
    staging.mkdir(parents=True)
    for name in BINARIES:
        shutil.copy2(tree / "_output" / "bin" / name, staging / name)
    _rmtree(final)
    staging.rename(final)
    _say(f"built in {time.monotonic() - started:.0f} s; binaries cached in {final}")
    if not keep_build_tree:
        _rmtree(work)


# --- helpers ---------------------------------------------------------------------------------------------


def _deb822_stanzas(text: str) -> Iterator[list[tuple[str, str]]]:
    """Yield each stanza as ``[(field, raw value including continuation lines)]``; comments dropped."""
    stanza: list[tuple[str, str]] = []
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        if not line.strip():
            if stanza:
                yield stanza
            stanza = []
        elif line[0] in " \t" and stanza:
            key, value = stanza[-1]
            stanza[-1] = (key, value + "\n" + line)
        elif ":" in line:
            key, value = line.split(":", 1)
            stanza.append((key.strip(), value))
    if stanza:
        yield stanza


def _run(argv: list[str], log, *, what: str, env=None, cwd=None, heartbeat: float | None = None) -> None:
    """Run ``argv`` with its output appended to ``log``; raise :class:`BuildError` with the log's tail on failure."""
    log.write(f"\n$ {' '.join(argv)}\n")
    log.flush()
    started = time.monotonic()
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, cwd=cwd)
    while True:
        try:
            code = proc.wait(timeout=heartbeat)
            break
        except subprocess.TimeoutExpired:
            _say(f"... {what} still running ({time.monotonic() - started:.0f} s)")
    if code != 0:
        log.flush()
        raise BuildError(f"{what} failed with exit code {code}; last lines of {log.name}:\n{_tail(Path(log.name))}")


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(log unreadable)"


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            _say(f"another process is installing or building (lock {path}); waiting for it")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _rmtree(path: Path) -> None:
    def _make_writable(func, failed, _exc):
        # Go marks some cache and module files read-only; make the parent writable and retry once.
        os.chmod(os.path.dirname(failed), stat.S_IRWXU)
        func(failed)

    if not path.exists():
        return
    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=_make_writable)
    else:
        shutil.rmtree(path, onerror=_make_writable)


def _say(message: str) -> None:
    print(f"{_PREFIX}: {message}", file=sys.stderr, flush=True)


if __name__ == "__main__":  # pragma: no cover - manual use: python -m airflow_trainjob_local.build
    print(ensure_binaries())
