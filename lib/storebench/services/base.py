"""Lifecycle of one locally run server: install check, config, start, readiness, stop, wipe.

Layout under a work dir (e.g. ``<repo>/work/services``, git-ignored)::

    <workdir>/<system>/<system>-<port>.pid      JSON: the server's processes (pid + start time)
    <workdir>/<system>/<system>-<port>.log      the server's stdout/stderr (appended per start)
    <workdir>/<system>/credentials.json         generated secrets (mode 0600), per work dir
    <workdir>/<system>/data-<port>/             data dir for location "disk"
    /dev/shm/storebench-<uid>/services-<hash>/<system>-<port>/   data dir for location "memory"

Servers run in their own sessions (process groups), bound to 127.0.0.1, or to the address
``host`` inside a network namespace ``netns`` that the caller created (storebench.testbed.netns: the
breakdown experiment's network hop). A server started by
this Python process is stopped when the process exits (atexit), on SIGTERM, and (Linux,
started from the main thread) when the process dies (PR_SET_PDEATHSIG), unless it was started
with ``start(detach=True)`` (what ``python -m storebench.services start`` does).
"""
from __future__ import annotations

import atexit
import ctypes
import hashlib
import json
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
import warnings
from pathlib import Path

import psutil

from storebench.paths import LOCATIONS, ROOT, cache_dir, memory_dir

log = logging.getLogger("storebench.services")


def install_hint(system_script: str) -> str:
    return f"run `bash {ROOT / 'env' / 'servers' / system_script}`"


def render_template(path: Path, values: dict[str, object]) -> str:
    """Fill the ``@NAME@`` placeholders of a config template; all must be given."""
    text = path.read_text()
    for key, value in values.items():
        text = text.replace(f"@{key}@", str(value))
    code = "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("#"))
    left = sorted(set(re.findall(r"@([A-Z][A-Z0-9_]*)@", code)))
    if left:
        raise ValueError(f"{path}: placeholders without a value: {', '.join(left)}")
    return text


def load_options_file(path: Path) -> list[str]:
    """JVM options file: one option per line (a line may hold 'flag value'), '#' comments."""
    import shlex

    args: list[str] = []
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            args.extend(shlex.split(line))
    return args


def port_offset() -> int:
    """``STOREBENCH_PORT_OFFSET`` added to every default port (0): a second suite (a pipeline beside
    a test run) then runs its servers beside the first one's instead of failing on a busy port."""
    value = os.environ.get("STOREBENCH_PORT_OFFSET", "0")
    if not value.isdigit() or int(value) > 30000:
        raise ValueError(f"STOREBENCH_PORT_OFFSET must be an integer in 0..30000, got {value!r}")
    return int(value)


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return True
    return False


def port_owner(port: int) -> str:
    """'PID 123 (redis-server)' of the process listening on ``port``, if it can be seen."""
    try:
        for c in psutil.net_connections(kind="tcp"):
            if c.laddr and c.laddr.port == port and c.status == psutil.CONN_LISTEN and c.pid:
                try:
                    return f"PID {c.pid} ({psutil.Process(c.pid).name()})"
                except psutil.Error:
                    return f"PID {c.pid}"
    except (psutil.Error, OSError):
        pass
    return "an unknown process"


def tcp_open(port: int, host: str = "127.0.0.1", timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def tail(path: Path, lines: int = 20, offset: int = 0) -> str:
    """Last ``lines`` lines of ``path`` from byte ``offset`` on ('' if absent)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            start = max(offset, size - 64 * 1024)
            f.seek(start)
            data = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(data.splitlines()[-lines:])


# ------------------------------------------------------------------------------ errors

class ServiceError(RuntimeError):
    """A local server could not be installed, started, reached or stopped.

    The message names the system, the log file and its last lines, and a fix hint.
    """

    def __init__(self, system: str, problem: str, log_file: Path | None = None,
                 hint: str | None = None, log_offset: int = 0, log_lines: int = 20):
        self.system = system
        self.problem = problem
        self.log_file = log_file
        self.hint = hint
        parts = [f"{system}: {problem}"]
        if log_file is not None:
            parts.append(f"log file: {log_file}")
            text = tail(log_file, log_lines, log_offset)
            if text:
                parts.append("last log lines:\n" + "\n".join("    " + ln for ln in text.splitlines()))
            else:
                parts.append("(nothing in the log from this start)")
        if hint:
            parts.append(f"fix: {hint}")
        super().__init__("\n".join(parts))


# ------------------------------------------------------------------------------ cleanup

_running: "set[LocalService]" = set()  # started here, not detached: stopped at exit
_handlers_installed = False
_lock = threading.Lock()


def _stop_all_started() -> None:
    # A forked child (a DataLoader worker) inherits this set and the handlers: it must not stop
    # the servers of the process that started them when it exits or is terminated.
    for svc in [s for s in _running if s.started_by == os.getpid()]:
        try:
            svc.stop()
        except Exception as exc:  # noqa: BLE001 - best effort at exit
            log.warning("stopping %s at exit failed: %s", svc.system, exc)


def _on_signal(signum, frame):  # noqa: ARG001
    _stop_all_started()
    previous = _previous_handlers.get(signum)
    if callable(previous):
        previous(signum, frame)
        return
    # default action: restore it and re-deliver, so the exit status says "killed by signal"
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


_previous_handlers: dict[int, object] = {}


def _install_cleanup_handlers() -> None:
    """atexit + SIGTERM (+ SIGHUP, + SIGINT if it would kill without an exception)."""
    global _handlers_installed
    with _lock:
        if _handlers_installed:
            return
        _handlers_installed = True
        atexit.register(_stop_all_started)
        if threading.current_thread() is not threading.main_thread():
            return  # signal handlers can only be set from the main thread; atexit still works
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            current = signal.getsignal(sig)
            if sig == signal.SIGINT and current is signal.default_int_handler:
                continue  # KeyboardInterrupt unwinds through __exit__ and atexit already
            if current is signal.SIG_IGN:
                continue
            _previous_handlers[sig] = current
            signal.signal(sig, _on_signal)


_PR_SET_PDEATHSIG = 1
try:
    _prctl = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):  # not Linux
    _prctl = None


def set_parent_death_signal() -> None:
    """SIGTERM this process when its parent dies (a Popen preexec_fn: runs in the child between fork and exec)."""
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def dies_with_parent():
    """The ``preexec_fn`` for a helper process that must not outlive this one, or None where it cannot
    apply: the signal comes when the *thread* that started the child exits, so only the main thread's
    children get it."""
    if _prctl is None or threading.current_thread() is not threading.main_thread():
        return None
    return set_parent_death_signal


# ------------------------------------------------------------------------------ service

class LocalService:
    """One server run locally. Subclasses set the class attributes and implement
    ``_check_installed``, ``_launch``, ``_probe``, ``version`` and ``endpoint``."""

    system: str = ""
    default_port: int = 0
    install_script: str = ""          # e.g. "install-redis.sh"
    ready_timeout: float = 60.0       # seconds from launch to a successful real request
    stop_timeout: float = 30.0        # seconds between SIGTERM and SIGKILL
    probe_interval: float = 0.1

    def __init__(self, workdir: Path | str, location: str = "disk", port: int | None = None,
                 host: str = "127.0.0.1", netns: str | None = None):
        if location.startswith("disk"):  # accept storebench's "disk-warm"/"disk-cold" too
            location = "disk"
        if location not in LOCATIONS:
            raise ValueError(f"unknown location {location!r}; valid: {', '.join(LOCATIONS)}")
        self.workdir = Path(workdir).resolve()
        self.location = location
        self.port = int(port) if port is not None else self.default_port + port_offset()
        self.host = host    # the address the server binds and clients connect to
        self.netns = netns  # a network namespace to run the server processes in (None: this one)
        self.dir = self.workdir / self.system
        self.name = f"{self.system}-{self.port}"
        self.pidfile = self.dir / f"{self.name}.pid"
        self.log_file = self.dir / f"{self.name}.log"
        self.startup_seconds: float = float("nan")
        self._procs: list[tuple[str, subprocess.Popen, Path]] = []
        self._log_offsets: dict[Path, int] = {}
        self._detached = False
        self.extra_args: list[str] = []   # appended to the main server command (tests, tuning)
        self.started_by: int | None = None  # PID of the process that started it

    # -- paths --------------------------------------------------------------------------

    @property
    def data_dir(self) -> Path:
        if self.location == "memory":
            key = hashlib.sha1(str(self.workdir).encode()).hexdigest()[:8]
            return memory_dir() / f"services-{key}" / self.name
        return self.dir / f"data-{self.port}"

    def credentials(self) -> dict:
        """Secrets of this work dir (generated on first use by ``_new_credentials``)."""
        path = self.dir / "credentials.json"
        if path.exists():
            return json.loads(path.read_text())
        creds = self._new_credentials()
        self.dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(creds, f, indent=1)
        return creds

    def _new_credentials(self) -> dict:
        return {}

    # -- to implement -------------------------------------------------------------------

    def _check_installed(self) -> None:
        """Raise ServiceError (naming the install script) if binaries are missing."""

    def _after_crash(self) -> None:
        """Called by start() after a stale pidfile (the last run crashed) was removed."""

    def _ports(self) -> list[int]:
        """All TCP ports the server will listen on (checked free before start)."""
        return [self.port]

    def _launch(self) -> None:
        """Write configs, start the process(es) with ``_spawn``; may wait for steps."""
        raise NotImplementedError

    def _probe(self) -> bool:
        """One real request; True when it succeeded. Exceptions count as 'not yet'."""
        raise NotImplementedError

    def version(self) -> str:
        raise NotImplementedError

    def endpoint(self) -> dict:
        raise NotImplementedError

    # -- helpers for subclasses -----------------------------------------------------------

    def _error(self, problem: str, hint: str | None = None, log_file: Path | None = None) -> ServiceError:
        lf = log_file or self.log_file
        return ServiceError(self.system, problem, lf, hint, self._log_offsets.get(lf, 0))

    def _built_binary(self, name: str) -> str:
        """A server binary the install script built into the cache (else one on PATH)."""
        path = cache_dir() / "bin" / name
        if path.exists():
            return str(path)
        found = shutil.which(name)
        if not found:
            raise self._missing(f"{path}")
        return found

    def _missing(self, what: str) -> ServiceError:
        return ServiceError(self.system, f"{what} not found: the server is not installed",
                            hint=install_hint(self.install_script))

    def _open_log(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        f = open(path, "ab")
        if path not in self._log_offsets:
            self._log_offsets[path] = f.tell()
        f.write(f"==== storebench: starting {self.name} ({self.location}) at "
                f"{time.strftime('%Y-%m-%d %H:%M:%S')} ====\n".encode())
        f.flush()
        return f

    def _spawn(self, label: str, cmd: list[str], env: dict | None = None,
               log_file: Path | None = None, cwd: Path | None = None) -> subprocess.Popen:
        """Start a long-running server process in its own session, output to its log."""
        log_file = log_file or self.log_file
        full_env = dict(os.environ)
        full_env.update(env or {})
        with self._open_log(log_file) as out:
            out.write(("$ " + " ".join(cmd) + "\n").encode())
            out.flush()
            cmd = self._in_netns(cmd)
            try:
                proc = subprocess.Popen(
                    cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                    env=full_env, cwd=str(cwd or self.dir), start_new_session=True,
                    preexec_fn=None if self._detached else dies_with_parent(),
                )
            except OSError as exc:
                raise self._error(f"could not run {cmd[0]}: {exc}",
                                  install_hint(self.install_script), log_file) from exc
        self._procs.append((label, proc, log_file))
        self._write_pidfile()
        return proc

    def _in_netns(self, cmd: list[str]) -> list[str]:
        """``cmd`` run in the server's network namespace (``ip netns exec`` execs it: same PID)."""
        return ["ip", "netns", "exec", self.netns, *cmd] if self.netns else cmd

    def _run(self, cmd: list[str], timeout: float = 60, env: dict | None = None,
             check: bool = True, input: bytes | None = None,
             quiet: bool = False) -> subprocess.CompletedProcess:
        """Run a short helper command (its output appended to the log unless ``quiet`` and
        successful); ServiceError on failure."""
        full_env = dict(os.environ)
        full_env.update(env or {})
        try:
            res = subprocess.run(cmd, input=input, capture_output=True, timeout=timeout,
                                 env=full_env, cwd=str(self.dir))
        except subprocess.TimeoutExpired as exc:
            self._append_log(f"$ {' '.join(cmd)}\n(timed out after {timeout} s)\n")
            raise self._error(f"`{' '.join(cmd)}` timed out after {timeout} s") from exc
        except OSError as exc:
            raise self._error(f"could not run {cmd[0]}: {exc}", install_hint(self.install_script)) from exc
        out = (res.stdout or b"").decode("utf-8", "replace") + (res.stderr or b"").decode("utf-8", "replace")
        if not quiet or res.returncode != 0:
            self._append_log(f"$ {' '.join(cmd)}\n{out}" + ("" if out.endswith("\n") or not out else "\n"))
        if check and res.returncode != 0:
            raise self._error(f"`{' '.join(cmd)}` failed with exit code {res.returncode}")
        return res

    def _append_log(self, text: str) -> None:
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_file, "a") as f:
            f.write(text)

    def _check_alive(self) -> None:
        """ServiceError at once if a process started by this object has exited."""
        for label, proc, log_file in self._procs:
            rc = proc.poll()
            if rc is not None:
                how = f"was killed by signal {-rc}" if rc < 0 else f"exited with code {rc}"
                raise self._error(f"{label} {how} during startup", self._fix_hint(), log_file)

    def _fix_hint(self) -> str:
        return (f"read the log above; `python -m storebench.services stop {self.system} --port {self.port}` "
                f"stops leftovers, and wipe() (or deleting {self.data_dir}) starts from empty data")

    def _wait_until(self, what: str, predicate, timeout: float, interval: float | None = None) -> None:
        """Poll ``predicate`` (exceptions = not yet) until True; fail fast if a process died."""
        deadline = time.monotonic() + timeout
        last_exc: BaseException | None = None
        while True:
            self._check_alive()
            try:
                if predicate():
                    return
            except Exception as exc:  # noqa: BLE001 - not ready yet (a dead process is caught above)
                last_exc = exc
            if time.monotonic() > deadline:
                detail = f" (last error: {type(last_exc).__name__}: {last_exc})" if last_exc else ""
                raise self._error(f"not {what} after {timeout:.0f} s{detail}", self._fix_hint())
            time.sleep(interval or self.probe_interval)

    # -- pidfile --------------------------------------------------------------------------

    def _write_pidfile(self) -> None:
        procs = []
        for label, proc, _ in self._procs:
            try:
                ct = psutil.Process(proc.pid).create_time()
            except psutil.Error:
                ct = 0.0
            procs.append({"label": label, "pid": proc.pid, "create_time": ct})
        state = {"system": self.system, "port": self.port, "location": self.location,
                 "data_dir": str(self.data_dir), "owner_pid": os.getpid(),
                 "detached": self._detached, "processes": procs}
        tmp = self.pidfile.with_suffix(".pid.tmp")
        tmp.write_text(json.dumps(state, indent=1))
        tmp.replace(self.pidfile)

    def _read_pidfile(self) -> dict | None:
        try:
            return json.loads(self.pidfile.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return {"processes": [], "corrupt": True}

    @staticmethod
    def _live_process(entry: dict) -> psutil.Process | None:
        try:
            p = psutil.Process(int(entry["pid"]))
            if entry.get("create_time") and abs(p.create_time() - float(entry["create_time"])) > 1.0:
                return None  # PID reused by an unrelated process
            if p.status() == psutil.STATUS_ZOMBIE:
                return None
            return p
        except (psutil.Error, KeyError, ValueError, TypeError):
            return None

    def _live_from_pidfile(self) -> list[psutil.Process]:
        state = self._read_pidfile()
        if not state:
            return []
        return [p for p in (self._live_process(e) for e in state.get("processes", [])) if p]

    def pids(self) -> list[int]:
        """PIDs of the server's running processes (from this object, else the pidfile)."""
        own = [proc.pid for _, proc, _ in self._procs if proc.poll() is None]
        if own:
            return own
        return [p.pid for p in self._live_from_pidfile()]

    def is_running(self) -> bool:
        return bool(self.pids())

    def rss_bytes(self) -> int:
        """Resident memory of the server: sum over its processes and their children."""
        total = 0
        for pid in self.pids():
            try:
                p = psutil.Process(pid)
                for q in [p, *p.children(recursive=True)]:
                    total += q.memory_info().rss
            except psutil.Error:
                pass
        return total

    # -- lifecycle ------------------------------------------------------------------------

    def start(self, *, detach: bool = False) -> "LocalService":
        """Start the server and wait until a real request succeeds.

        ``detach=True`` leaves it running after this Python process exits (CLI ``start``);
        stop it with ``stop()`` or ``python -m storebench.services stop SYSTEM``.
        """
        if self._procs and any(p.poll() is None for _, p, _ in self._procs):
            return self  # already started by this object
        self._check_installed()
        self.dir.mkdir(parents=True, exist_ok=True)
        state = self._read_pidfile()
        if state is not None:
            live = self._live_from_pidfile()
            if live:
                raise ServiceError(
                    self.system,
                    f"a server from an earlier run is still running (PID {', '.join(str(p.pid) for p in live)}, "
                    f"pidfile {self.pidfile}, location {state.get('location')})",
                    hint=(f"stop it with `python -m storebench.services stop {self.system} --port {self.port}"
                          f" --workdir {self.workdir}` (or kill {' '.join(str(p.pid) for p in live)})"))
            msg = f"{self.system}: stale pidfile from a crashed run, removed ({self.pidfile})"
            warnings.warn(msg, RuntimeWarning, stacklevel=2)
            log.warning(msg)
            self.pidfile.unlink(missing_ok=True)
            self._after_crash()
        for port in self._ports() if self.netns is None else ():  # a new namespace has no listeners
            if port_in_use(port, self.host):
                size = self.log_file.stat().st_size if self.log_file.exists() else 0
                raise ServiceError(
                    self.system, f"port {port} on {self.host} is already in use by {port_owner(port)}",
                    self.log_file, hint="stop that process, or choose another port (port=... / --port)",
                    log_offset=size)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._procs = []
        self._log_offsets = {}
        self._detached = detach
        self.started_by = os.getpid()
        if not detach:
            _install_cleanup_handlers()
            _running.add(self)
        t0 = time.monotonic()
        try:
            self._launch()
            self._wait_until("ready", self._probe, self.ready_timeout)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - t0
        self._write_pidfile()
        log.info("%s ready in %.2f s (%s, data %s)", self.name, self.startup_seconds, self.location, self.data_dir)
        return self

    # Labels of processes stopped one after the other first (e.g. Ceph: osd, mgr, mon);
    # the remaining processes are stopped together afterwards.
    stop_order: tuple[str, ...] = ()

    def stop(self) -> None:
        """SIGTERM the server's processes (and their children), SIGKILL after
        ``stop_timeout``; remove the pidfile. Idempotent."""
        procs: list[tuple[str, psutil.Process]] = []
        seen = set()
        for label, proc, _ in self._procs:
            if proc.poll() is None:
                try:
                    procs.append((label, psutil.Process(proc.pid)))
                    seen.add(proc.pid)
                except psutil.Error:
                    pass
        state = self._read_pidfile() or {}
        for entry in state.get("processes", []):
            p = self._live_process(entry)
            if p and p.pid not in seen:
                procs.append((entry.get("label", ""), p))
                seen.add(p.pid)
        for label in self.stop_order:
            self._terminate([p for lb, p in procs if lb == label])
        self._terminate([p for lb, p in procs if lb not in self.stop_order])
        for _, proc, _ in self._procs:
            try:
                proc.wait(timeout=1)
            except subprocess.TimeoutExpired:
                pass
        self._procs = []
        self.pidfile.unlink(missing_ok=True)
        _running.discard(self)

    def _terminate(self, procs: list[psutil.Process]) -> None:
        if not procs:
            return
        everything: list[psutil.Process] = []
        for p in procs:
            try:
                everything.extend([p, *p.children(recursive=True)])
            except psutil.Error:
                pass
        for p in everything:
            try:
                p.terminate()
            except psutil.Error:
                pass
        _, alive = psutil.wait_procs(everything, timeout=self.stop_timeout)
        if alive:
            log.warning("%s: %s did not stop within %.0f s of SIGTERM: SIGKILL", self.name,
                        [p.pid for p in alive], self.stop_timeout)
            for p in alive:
                try:
                    p.kill()
                except psutil.Error:
                    pass
            psutil.wait_procs(alive, timeout=10)

    def wipe(self) -> None:
        """Stop the server if it runs, then delete its data dir."""
        self.stop()
        shutil.rmtree(self.data_dir, ignore_errors=True)
        if self.location == "memory":
            try:
                self.data_dir.parent.rmdir()   # services-<hash>/ once its last server is wiped
            except OSError:
                pass

    def __enter__(self) -> "LocalService":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} {self.location} pids={self.pids()}>"
