"""A real multi-node Ray cluster on this machine, started and stopped with Ray's own commands
(``ray start --head`` and ``ray start --address``, one process group per node): what the
2-node test and ``benchmarks/speed/ray_scaling.py`` run on, and a way to try ``--engine ray
--address`` without a cluster.

The head is addressed as ``127.0.0.1:<port>``; Ray itself maps a loopback address to the
machine's own IP (``resolve_ip_for_localhost``) and refuses worker nodes in its loopback-only
mode, so the nodes talk over that address, which never leaves the machine."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from phrasekit.pipeline.engines import token_auth_env

logger = logging.getLogger(__name__)

HOST = "127.0.0.1"
#: The ports each node is given (Ray would otherwise pick fixed defaults that two nodes share).
NODE_PORTS = ("--node-manager-port", "--object-manager-port", "--dashboard-agent-listen-port",
              "--metrics-export-port", "--runtime-env-agent-port")


def free_ports(n: int) -> list[int]:
    """``n`` distinct TCP ports nobody listens on now (the sockets are held open together,
    so the system cannot hand out one port twice)."""
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(n)]
        for s in socks:
            s.bind((HOST, 0))
        return [int(s.getsockname()[1]) for s in socks]


def _ray_command() -> list[str]:
    """``ray`` of this interpreter's environment."""
    exe = Path(sys.executable).with_name("ray")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "ray.scripts.scripts"]


class LocalCluster:
    """``len(cpus)`` Ray nodes on 127.0.0.1, node ``i`` with ``cpus[i]`` CPUs; node 0 is the
    head. Use as a context manager; ``address`` is what ``--address`` takes.

    Every node runs ``ray start ... --block`` in its own process group, so ``kill_node``
    takes a node down at once (raylet, object store and workers) as a crashed machine would,
    and ``stop`` ends each group (SIGTERM, then SIGKILL after ``timeout`` seconds).
    """

    def __init__(self, cpus: Sequence[int] = (1, 1), timeout: float = 180.0) -> None:
        if not cpus or min(cpus) < 1:
            raise ValueError(f"give at least one node with >= 1 CPU, got {list(cpus)}")
        self.cpus = list(cpus)
        self.timeout = float(timeout)
        # the head's GCS port, then five per node; drawn at once so that no two coincide
        self.port, *self._ports = free_ports(1 + len(NODE_PORTS) * len(self.cpus))
        self.address = f"{HOST}:{self.port}"
        self.temp_dir = tempfile.mkdtemp(prefix="pk-ray-")
        self.procs: list[subprocess.Popen | None] = []

    def _node_args(self, i: int) -> list[str]:
        mine = self._ports[len(NODE_PORTS) * i:len(NODE_PORTS) * (i + 1)]
        ports = [arg for flag, port in zip(NODE_PORTS, mine, strict=True)
                 for arg in (flag, str(port))]
        common = ["--num-cpus", str(self.cpus[i]), "--disable-usage-stats", "--block", *ports]
        if i == 0:
            return ["start", "--head", "--port", str(self.port), "--include-dashboard",
                    "false", "--temp-dir", self.temp_dir, *common]
        return ["start", "--address", self.address, *common]

    def start(self) -> LocalCluster:
        """Start the head, then the other nodes; wait until all of them have joined."""
        log = Path(self.temp_dir) / "nodes.log"
        with log.open("ab") as out:
            for i in range(len(self.cpus)):
                # the head writes a token on first start; the other nodes then present it
                env = {**self.driver_env(), "RAY_USAGE_STATS_ENABLED": "0"}
                self.procs.append(subprocess.Popen(
                    _ray_command() + self._node_args(i), stdout=out, stderr=out, env=env,
                    start_new_session=True))
                self.wait_for_nodes(i + 1)
        logger.info("ray cluster at %s: %d nodes, CPUs %s", self.address, len(self.cpus),
                    self.cpus)
        return self

    def driver_env(self) -> dict[str, str]:
        """The environment for a driver process of this cluster (Ray's token mode on)."""
        return {**os.environ, **token_auth_env()}

    def head_listening(self) -> bool:
        """Whether the head's GCS port accepts connections. A driver that connects earlier
        waits minutes for it (Ray retries well past our timeout), so probes start after."""
        with contextlib.suppress(OSError), socket.create_connection((HOST, self.port), 1.0):
            return True
        return False

    def alive_nodes(self, timeout: float) -> int:
        """Nodes the head reports alive (asked from a short-lived driver process, given at
        most ``timeout`` seconds)."""
        code = (f"import ray; ray.init(address={self.address!r}, logging_level='ERROR', "
                "log_to_driver=False); print(sum(bool(n['Alive']) for n in ray.nodes()))")
        try:
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                 timeout=timeout, check=False, env=self.driver_env())
        except subprocess.TimeoutExpired:
            return 0
        lines = out.stdout.strip().splitlines()
        return int(lines[-1]) if out.returncode == 0 and lines and lines[-1].isdigit() else 0

    def wait_for_nodes(self, n: int) -> None:
        """Wait (at most ``timeout`` seconds) until ``n`` nodes are alive: first for the
        head's port, then asking the head, each probe bounded by the time left."""
        deadline = time.monotonic() + self.timeout
        while (left := deadline - time.monotonic()) > 0:
            if any(p is not None and p.poll() is not None for p in self.procs):
                raise RuntimeError(f"a ray node exited while starting; {self._log_tail()}")
            if self.head_listening() and self.alive_nodes(min(left, 30.0)) >= n:
                return
            time.sleep(1.0)
        raise TimeoutError(f"the ray cluster at {self.address} did not reach {n} nodes in "
                           f"{self.timeout:.0f}s; {self._log_tail()}")

    def _log_tail(self, lines: int = 15) -> str:
        """The last lines the nodes printed, for an error message (CI shows nothing else)."""
        log = Path(self.temp_dir) / "nodes.log"
        text = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""
        tail = "\n".join(text.strip().splitlines()[-lines:])
        return f"see {self.temp_dir}; the nodes printed:\n{tail}" if tail else \
            f"see {self.temp_dir}"

    def kill_node(self, i: int) -> None:
        """Kill node ``i`` (not the head) and everything it runs, without warning."""
        if i == 0:
            raise ValueError("node 0 is the head; killing it ends the cluster")
        proc = self.procs[i]
        if proc is not None:
            _kill_group(proc, signal.SIGKILL, self.timeout)
            self.procs[i] = None

    def stop(self, grace: float = 5.0) -> None:
        """Stop every node, workers first: SIGTERM, then SIGKILL after ``grace`` seconds (a
        node drains for up to 30 s otherwise; nothing of a throwaway cluster is worth it)."""
        for i in reversed(range(len(self.procs))):
            proc = self.procs[i]
            if proc is not None:
                _kill_group(proc, signal.SIGTERM, grace)
                self.procs[i] = None

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _kill_group(proc: subprocess.Popen, sig: int, timeout: float) -> None:
    """Send ``sig`` to ``proc``'s process group; SIGKILL it if it is not gone in time."""
    try:
        os.killpg(proc.pid, sig)
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=timeout)
    except ProcessLookupError:
        pass
    # children that outlived the group leader (raylet, workers) go too
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
