"""How many threads phrasekit computes on: chosen by measuring the cores free now, not by
counting them.

torch, scikit-learn's OpenMP and the BLAS library each start one thread per core and make
those threads wait for each other at every step. When another process holds a core, the
thread sharing it falls behind and the rest spin while they wait: on a 2-core machine with
one core busy elsewhere, 2 threads ran 4x slower than 1. So the default (``"auto"``) is:

- the CPUs this process may run on (``os.sched_getaffinity``, a cgroup CPU quota), one per
  physical core, **minus the CPUs other processes keep busy now** (the run queue of
  ``/proc/loadavg``, sampled a few times, less this process's own running threads);
- one thread for a small job (a few short texts), where threads cost more than they give;
- the same count for torch, ONNX Runtime, scikit-learn's OpenMP and BLAS (``threadpoolctl``),
  never more, so that they do not multiply; spaCy workers run one BLAS thread each;
- OpenMP threads that spin only briefly before they sleep while they wait
  (``GOMP_SPINCOUNT=10000`` instead of GNU OpenMP's 300,000, ``KMP_BLOCKTIME=0``; set when
  phrasekit is imported unless the user set them or ``OMP_WAIT_POLICY``: they take effect only
  if phrasekit is imported before torch and scikit-learn). On an idle 2-core machine this is
  as fast as full spinning and 10% faster than sleeping at once; beside a busy core it loses
  far less than full spinning.

``PHRASEKIT_THREADS`` (or ``--threads``) sets the count: a whole number >= 1, or ``auto``.
``OMP_NUM_THREADS``, when set, is taken as the user's count too.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import statistics
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

logger = logging.getLogger(__name__)

ENV = "PHRASEKIT_THREADS"
#: Jobs of at most this many characters of text run on one thread (a query, a few phrases).
SMALL_JOB_CHARS = 500
#: Run-queue samples taken (``RUNQUEUE_INTERVAL`` seconds apart) to count the busy CPUs.
RUNQUEUE_SAMPLES = 5
RUNQUEUE_INTERVAL = 0.01
#: OpenMP spins briefly, then sleeps, while it waits (set on import unless the user set them or
#: ``OMP_WAIT_POLICY``); ``benchmarks/speed/threads_busy.py`` measured the choice.
OPENMP_ENV = {"GOMP_SPINCOUNT": "10000", "KMP_BLOCKTIME": "0"}
#: ``OMP_NUM_THREADS`` as the user set it (phrasekit's own setting is not a request).
_USER_OMP = os.environ.get("OMP_NUM_THREADS")


class ThreadsError(ValueError):
    """A thread count that is not a whole number >= 1 or ``auto``."""


def prepare_openmp(environ: dict[str, str] | None = None) -> None:
    """Make OpenMP threads spin briefly while they wait (``OPENMP_ENV``), unless the user set
    a wait setting of their own."""
    env = os.environ if environ is None else environ
    if "OMP_WAIT_POLICY" in env:  # the user's policy, with OpenMP's own spin counts
        return
    for key, value in OPENMP_ENV.items():
        env.setdefault(key, value)


def parse_threads(value: str | int | None, source: str = ENV) -> int | None:
    """A thread count from ``value``: None for ``auto``, empty or None; else a whole number
    >= 1 (``ThreadsError`` naming ``source`` otherwise)."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "auto")):
        return None
    text = str(value).strip()
    if isinstance(value, bool) or not text.isdigit() or int(text) < 1 or int(text) > 1024:
        raise ThreadsError(f"{source} must be a whole number from 1 to 1024 or 'auto', "
                           f"got {value!r}")
    return int(text)


def requested_threads(environ: Mapping[str, str] | None = None) -> int | None:
    """The count the user set: ``PHRASEKIT_THREADS``, else ``OMP_NUM_THREADS`` (None: auto)."""
    env = os.environ if environ is None else environ
    n = parse_threads(env.get(ENV), ENV)
    omp = (_USER_OMP if environ is None else env.get("OMP_NUM_THREADS")) or ""
    if n is None and omp.strip().isdigit():
        n = max(1, int(omp))
    return n


def usable_cpus() -> int:
    """CPUs this process may run on: its affinity, capped by a cgroup CPU quota and by one
    per physical core."""
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)
    n = min(len(cpus), _physical_cores(cpus) or len(cpus))
    quota = _cgroup_quota()
    return max(1, min(n, math.ceil(quota)) if quota else n)


def compute_threads() -> int:
    """The thread count phrasekit computes on now, for libraries it drives itself (rapidfuzz,
    thread pools): torch's setting once torch is in use (``set_threads`` sets it), else the
    user's, else the usable CPUs."""
    torch = sys.modules.get("torch")
    if torch is not None:
        return max(1, int(torch.get_num_threads()))
    return requested_threads() or usable_cpus()


def _physical_cores(cpus: list[int]) -> int:
    """Distinct (package, core) pairs among ``cpus`` (0 where the topology is unreadable)."""
    cores = set()
    for cpu in cpus:
        topo = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology")
        try:
            cores.add(((topo / "physical_package_id").read_text().strip(),
                       (topo / "core_id").read_text().strip()))
        except OSError:
            return 0
    return len(cores)


def _cgroup_quota() -> float | None:
    """CPUs allowed by a cgroup v2 quota (``cpu.max``), None without one."""
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
    except (OSError, ValueError):
        return None
    return None if quota == "max" else max(1.0, int(quota) / int(period))


def _runnable_now() -> int | None:
    """Runnable threads on the machine now (``/proc/loadavg``'s 4th field), None if unknown."""
    try:
        return int(Path("/proc/loadavg").read_text().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return None


def _own_running() -> int:
    """This process's threads that are running or runnable now (at least this one)."""
    running = 0
    for stat in Path("/proc/self/task").glob("*/stat"):
        with contextlib.suppress(OSError, IndexError):
            running += stat.read_text().rsplit(")", 1)[1].split()[0] == "R"
    return max(1, running)


def busy_cpus(samples: int = RUNQUEUE_SAMPLES, interval: float = RUNQUEUE_INTERVAL) -> float:
    """CPUs other processes keep busy now: the median over ``samples`` run-queue readings of
    the runnable threads that are not this process's; where there is no ``/proc``, the
    1-minute load average (0 where that is unknown too)."""
    seen = []
    for i in range(samples):
        runnable = _runnable_now()
        if runnable is None:
            break
        seen.append(max(0, runnable - _own_running()))
        if i + 1 < samples:
            time.sleep(interval)
    if seen:
        return float(statistics.median(seen))
    try:
        return float(os.getloadavg()[0])
    except (AttributeError, OSError):
        return 0.0


def auto_threads(cpus: int | None = None, busy: float | None = None) -> int:
    """The cores free now: ``cpus`` (``usable_cpus()``) less ``busy`` (``busy_cpus()``),
    at least 1."""
    cpus = usable_cpus() if cpus is None else cpus
    busy = busy_cpus() if busy is None else busy
    n = max(1, min(cpus, cpus - math.floor(busy + 0.5)))
    logger.debug("threads auto -> %d (%d CPUs, %g busy elsewhere)", n, cpus, busy)
    return n


def choose_threads(threads: int | str | None = "auto", chars: int | None = None,
                   environ: Mapping[str, str] | None = None) -> int:
    """The thread count of a job: ``threads`` when a number; else the user's
    (:func:`requested_threads`); else one for a small job (``chars`` of text at most
    ``SMALL_JOB_CHARS``); else the cores free now (:func:`auto_threads`)."""
    n = parse_threads(threads, "threads") if threads is not None else None
    if n is None:
        n = requested_threads(environ)
    if n is None:
        n = 1 if chars is not None and chars <= SMALL_JOB_CHARS else auto_threads()
    return n


def set_threads(n: int) -> None:
    """Compute on ``n`` threads from now on, in this process and the processes it starts:
    torch, ONNX Runtime (sessions opened later), scikit-learn's OpenMP and BLAS."""
    for key in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[key] = str(n)  # libraries loaded later start with it
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(n)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - a dependency of scikit-learn
        return
    threadpool_limits(n)  # libraries already loaded


@contextlib.contextmanager
def limited_threads(n: int | None) -> Iterator[None]:
    """Compute on ``n`` threads inside a block (torch, OpenMP, BLAS), then restore (None: as
    is)."""
    if not n:
        yield
        return
    from threadpoolctl import threadpool_limits

    torch = sys.modules.get("torch")
    before = torch.get_num_threads() if torch is not None else None
    if torch is not None:
        torch.set_num_threads(int(n))
    try:
        with threadpool_limits(int(n)):
            yield
    finally:
        if torch is not None:
            torch.set_num_threads(before)

