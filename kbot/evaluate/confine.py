"""The operating-system sandbox around a candidate's process, from Linux namespaces.

The judge starts each candidate under util-linux's `unshare` (a new user, PID, network, IPC,
UTS and mount namespace; `--kill-child`), and the candidate's process, before it imports torch,
calls `enter(plan)`: a fresh tmpfs root holding read-only binds of the Python environment, the
system libraries and the GPU's device nodes, plus its own private folder read-write; then
`pivot_root` into it (the old root is detached, so no path leads back), every capability dropped
and `no_new_privs` set, so it cannot mount, remount or chroot its way out. No network (a
network namespace with nothing in it), no view of other processes (its own /proc), no home
folder, no /etc beyond the dynamic loader's files, an environment built from an allowlist.

Where namespaces cannot be set up (a container that forbids them, a non-Linux machine),
`probe()` says why, and the evaluator says so loudly and refuses to run candidates while a
credential is in kbot's environment unless the user opted out (`--allow-unsandboxed`).
"""

from __future__ import annotations

import ctypes
import glob
import json
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

from kbot.evaluate.credentials import is_secret_name

UNSHARE_FLAGS = (
    "--user",
    "--map-root-user",
    "--pid",
    "--fork",
    "--kill-child",
    "--mount-proc",
    "--mount",
    "--net",
    "--ipc",
    "--uts",
)
# The system folders a Python process with torch, Triton and the CUDA driver needs (Triton's
# compiler runs ptxas and a C compiler from them); /etc is left out but for the loader's files.
_SYSTEM_PATHS = ("/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/opt/nvidia")
_ETC_PATHS = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives")
_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
_GPU_DEVICE_GLOBS = ("/dev/nvidia*", "/dev/nvidia-caps/*")
# Variables a candidate's process may inherit (after the credential filter); everything else
# is dropped. The multicast switches stay set on shared GPU hosts.
_ENV_NAMES = {"PATH", "LD_LIBRARY_PATH", "LANG", "LC_ALL", "CC", "CXX", "OMP_NUM_THREADS"}
_ENV_PREFIXES = ("CUDA_", "NVIDIA_", "NCCL_", "NVSHMEM_", "TORCH_SYMM_MEM_")
# Triton's variables by name: those that say how a kernel compiles and runs here. Not the
# prefix: Triton also reads a remote cache's host, port and credentials (TRITON_REDIS_*), and a
# user's own TRITON_* names may hold anything (red-team round eleven planted a password in one).
_TRITON_NAMES = {
    "TRITON_INTERPRET",
    "TRITON_HOME",
    "TRITON_LIBDEVICE_PATH",
    "TRITON_LIBCUDA_PATH",
    "TRITON_PTXAS_PATH",
    "TRITON_PTXAS_BLACKWELL_PATH",
    "TRITON_CUOBJDUMP_PATH",
    "TRITON_NVDISASM_PATH",
    "TRITON_CUDACRT_PATH",
    "TRITON_CUDART_PATH",
    "TRITON_F32_DEFAULT",
    "TRITON_DEFAULT_FP_FUSION",
    "TRITON_DISABLE_LINE_INFO",
    "TRITON_DEBUG",
    "TRITON_ALWAYS_COMPILE",
    "TRITON_OVERRIDE_ARCH",
    "TRITON_MAX_TENSOR_NUMEL",
    "TRITON_DEFAULT_BACKEND",
}
# A candidate writing without bound would fill the judge's disk; its outputs travel as files,
# so the limit sits above any output a problem here produces.
_FILE_SIZE_LIMIT = 32 << 30
_OPEN_FILES_LIMIT = 4096


@dataclass(frozen=True)
class Plan:
    """What the candidate's root holds: `root` (an empty folder to mount the new root on),
    read-only paths, device nodes, and the read-write private folder."""

    root: str
    readonly: tuple[str, ...]
    devices: tuple[str, ...]
    private: str

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Plan:
        data = json.loads(text)
        return cls(data["root"], tuple(data["readonly"]), tuple(data["devices"]), data["private"])


@dataclass(frozen=True)
class Sandbox:
    """How the judge starts candidates' processes: confined in namespaces, or plainly."""

    confined: bool
    why_not: str = ""


@dataclass(frozen=True)
class Probe:
    available: bool
    why: str  # what failed, when it did


def plan_for(private: Path, root: Path, package_dir: Path) -> Plan:
    """The read-only view a candidate gets: the interpreter, its packages, kbot, the system."""
    python = {sys.prefix, sys.base_prefix, sys.exec_prefix, str(Path(sys.executable).parent)}
    # Only the interpreter's own package folders: sys.path also holds the judge's working
    # folder, which holds the other candidates' private folders.
    python |= {
        p
        for p in sys.path
        if p and os.path.isdir(p) and ("-packages" in p or p.startswith(tuple(python)))
    }
    python.add(str(package_dir))
    # The compilers Triton runs may live outside /usr (a toolchain under /opt): their trees too.
    from kbot.evaluate.audit import programs_for_triton

    for program in programs_for_triton():
        folder = os.path.dirname(program)
        python.add(os.path.dirname(folder) if os.path.basename(folder) == "bin" else folder)
    readonly = set()
    for path in python | set(_SYSTEM_PATHS) | set(_ETC_PATHS):
        if os.path.lexists(path):
            readonly.add(os.path.abspath(path))
            real = os.path.realpath(path)
            if real != os.path.abspath(path) and os.path.exists(real):
                readonly.add(real)
    devices = [d for d in _DEVICES if os.path.exists(d)]
    for pattern in _GPU_DEVICE_GLOBS:
        devices += [d for d in sorted(glob.glob(pattern)) if not os.path.isdir(d)]
    # Paths inside the private folder are bound with it; a folder inside another is bound once.
    kept = sorted(readonly)
    kept = [p for p in kept if not any(p.startswith(q.rstrip("/") + "/") for q in kept if q != p)]
    return Plan(str(root), tuple(kept), tuple(devices), str(private))


def command(python_args: list[str]) -> list[str]:
    unshare = shutil.which("unshare") or "/usr/bin/unshare"
    return [unshare, *UNSHARE_FLAGS, "--", sys.executable, *python_args]


# A URL with a user part carries a password (`redis://user:pw@host`); a variable naming a remote
# service (Triton's remote cache) may hold one in any form. Neither goes to a candidate.
_URL_WITH_USER = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/\s]*@")
_REMOTE_NAME_PARTS = ("URL", "URI", "ENDPOINT", "REMOTE", "HOST", "SERVER", "ADDR")


def _may_hold_credentials(name: str, value: str) -> bool:
    return bool(_URL_WITH_USER.search(value)) or any(
        part in name.upper() for part in _REMOTE_NAME_PARTS
    )


def candidate_environment(environ: dict[str, str], private: Path, package_root: str) -> dict:
    """The environment a candidate's process starts with: an allowlist, never a credential."""
    env = {
        name: value
        for name, value in environ.items()
        if (name in _ENV_NAMES or name in _TRITON_NAMES or name.startswith(_ENV_PREFIXES))
        and not is_secret_name(name)
        and not _may_hold_credentials(name, value)
    }
    env.update(
        HOME=str(private / "home"),
        TMPDIR=str(private / "tmp"),
        USER="kbot-candidate",
        LOGNAME="kbot-candidate",
        TRITON_CACHE_DIR=str(private / "triton-cache"),
        PYTHONPATH=package_root,
        PYTHONNOUSERSITE="1",
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONUNBUFFERED="1",
        PYTHONHASHSEED="random",
    )
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    return env


@lru_cache(maxsize=1)
def probe() -> Probe:
    """Whether a candidate can be confined here: runs the real setup once, on an empty plan."""
    if platform.system() != "Linux":
        return Probe(False, f"Linux namespaces are not available on {platform.system()}")
    if shutil.which("unshare") is None:
        return Probe(False, "util-linux's unshare is not installed")
    import tempfile

    with tempfile.TemporaryDirectory(prefix="kbot-confine-probe-") as folder:
        private, root = Path(folder) / "private", Path(folder) / "root"
        private.mkdir()
        root.mkdir()
        plan = plan_for(private, root, Path(__file__).resolve().parents[1])
        sentinel = Path(folder) / "outside.txt"
        sentinel.write_text("outside")
        script = (
            "import sys, os; from kbot.evaluate.confine import Plan, enter; "
            "enter(Plan.from_json(sys.argv[1])); "
            "assert not os.path.exists(sys.argv[2]), 'a file outside the sandbox is visible'; "
            "print('ok')"
        )
        try:
            done = subprocess.run(
                command(["-c", script, plan.to_json(), str(sentinel)]),
                capture_output=True,
                text=True,
                timeout=60,
                env={
                    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                    "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
                },
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return Probe(False, f"unshare could not run: {exc}")
    if done.returncode != 0 or done.stdout.strip() != "ok":
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return Probe(False, f"setting up the namespaces failed: {last[:200]}")
    return Probe(True, "")


# --- inside the new namespaces, before any candidate code ------------------------------------

_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 32, 4096, 16384, 1 << 18
_MS_NOATIME, _MS_NODIRATIME, _MS_RELATIME = 1024, 2048, 1 << 21
_ST_TO_MS = {
    2: _MS_NOSUID,
    4: _MS_NODEV,
    8: _MS_NOEXEC,
    1024: _MS_NOATIME,
    2048: _MS_NODIRATIME,
    4096: _MS_RELATIME,
}
_MNT_DETACH = 2
_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}
_PR_SET_NO_NEW_PRIVS, _PR_CAPBSET_DROP, _PR_CAP_AMBIENT = 38, 24, 47


class ConfineError(RuntimeError):
    pass


def enter(plan: Plan) -> None:
    """Builds the candidate's root, moves into it and drops every capability. Run as the
    mapped root of a fresh user + mount namespace (what `command` starts)."""
    libc = ctypes.CDLL(None, use_errno=True)

    def call(what: str, result: int) -> None:
        if result != 0:
            errno = ctypes.get_errno()
            raise ConfineError(f"{what}: {os.strerror(errno)}")

    def mount(source, target, fstype, flags, data=None) -> None:
        call(
            f"mount {source} on {target}",
            libc.mount(_b(source), _b(target), _b(fstype), ctypes.c_ulong(flags), _b(data)),
        )

    root = plan.root
    mount(None, "/", None, _MS_REC | _MS_PRIVATE)
    mount("tmpfs", root, "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=0755")
    # Scratch folders first: the private folder usually lies inside /tmp and is bound over it.
    for folder in ("/tmp", "/dev/shm"):
        os.makedirs(root + folder, exist_ok=True)
        mount("tmpfs", root + folder, "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=1777")
    for path in plan.readonly:
        _bind(mount, path, root + path, readonly=True)
    _bind(mount, plan.private, root + plan.private, readonly=False)
    for device in plan.devices:
        _bind(mount, device, root + device, readonly=False, keep_dev=True)
    for folder, fstype in (("/proc", None), ("/sys", None)):
        if os.path.isdir(folder):
            os.makedirs(root + folder, exist_ok=True)
            mount(folder, root + folder, fstype, _MS_BIND | _MS_REC)
    old = root + "/.old-root"
    os.makedirs(old, exist_ok=True)
    number = _PIVOT_ROOT.get(platform.machine())
    if number is None:
        raise ConfineError(f"pivot_root is not known on {platform.machine()}")
    call("pivot_root", libc.syscall(number, _b(root), _b(old)))
    os.chdir("/")
    call("umount the old root", libc.umount2(_b("/.old-root"), _MNT_DETACH))
    os.rmdir("/.old-root")
    mount(None, "/", None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _MS_NOSUID | _MS_NODEV)
    _drop_privileges(libc, call)
    for limit, value in (
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_NOFILE, _OPEN_FILES_LIMIT),
        (resource.RLIMIT_FSIZE, _FILE_SIZE_LIMIT),
    ):
        resource.setrlimit(limit, (value, value))


def _bind(mount, source: str, target: str, readonly: bool, keep_dev: bool = False) -> None:
    if os.path.islink(source):
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if not os.path.lexists(target):
            os.symlink(os.readlink(source), target)
        return
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if not os.path.exists(target):
            open(target, "a").close()
    mount(source, target, None, _MS_BIND | _MS_REC)
    if readonly:
        # A remount must keep the flags the original mount has locked (nosuid, nodev ...).
        flags = os.statvfs(target).f_flag
        kept = sum(ms for st, ms in _ST_TO_MS.items() if flags & st)
        if not keep_dev:
            kept |= _MS_NOSUID
        mount(None, target, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | kept)


def _drop_privileges(libc, call) -> None:
    call("no_new_privs", libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
    for capability in range(64):
        if libc.prctl(_PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            break  # past the last capability this kernel knows
    libc.prctl(_PR_CAP_AMBIENT, 4, 0, 0, 0)  # clear all ambient capabilities

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [
            ("effective", ctypes.c_uint32),
            ("permitted", ctypes.c_uint32),
            ("inheritable", ctypes.c_uint32),
        ]

    header = Header(0x20080522, 0)
    data = (Data * 2)()
    call("capset", libc.capset(ctypes.byref(header), ctypes.byref(data)))


def _b(value: str | None):
    return None if value is None else value.encode()
