"""Ranks: one operating-system process per rank of a process group, started and cleaned up here.

:func:`run_ranks` starts ``world`` fresh processes (forked from a server that has run nothing, :func:`_context`:
nothing of the caller is inherited, so a notebook's kernel can start them), joins them into one process group over a
file in a private temporary folder (no port to pick or to collide on) and runs ``task(rank, world, *args)`` on each;
it gives back what each returned, in rank order. The backend is :func:`backend_for`'s: gloo between CPU processes,
NCCL where every rank has a GPU of its own. A task that raises, a process that dies and a run past ``timeout`` end
every process of the run and raise :class:`RanksFailed`, naming the rank and its error. A task is a function of an
importable module (each rank imports it), such as this package's.
"""

from __future__ import annotations

import datetime
import multiprocessing
import os
import pickle
import queue as queues
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ppedu.validate import whole


class RanksFailed(RuntimeError):
    """A run across ranks that did not finish: which rank failed first, and why."""


@dataclass(frozen=True)
class Where:
    """Where ``world`` ranks run on this machine: the backend, each rank's device kind and why."""

    world: int
    backend: str
    device: str
    why: str

    def __str__(self) -> str:
        return f"{self.world} ranks on {self.device} over {self.backend}: {self.why}"


def backend_for(world: int) -> Where:
    """NCCL when this machine has a GPU per rank (one process per GPU, as NCCL wants), gloo between CPU
    processes otherwise — every laptop.

    >>> backend_for(2).backend in ("gloo", "nccl")
    True
    """
    import torch
    import torch.distributed as dist

    whole("world", world)
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if gpus >= world and dist.is_nccl_available():
        return Where(world, "nccl", "cuda", f"{gpus} GPUs, one per rank")
    cores = os.cpu_count() or 1
    why = (f"no GPU here; {cores} CPU cores shared by the ranks" if not gpus else
           f"{gpus} GPU(s) for {world} ranks: NCCL wants a GPU of its own per rank")
    return Where(world, "gloo", "cpu", why)


def run_ranks(task: Callable[..., Any], world: int = 2, *args: Any, timeout: float = 300.0,
              backend: str | None = None) -> list[Any]:
    """``task(rank, world, *args)`` on each of ``world`` new processes in one process group; their results, by
    rank (see the module's docstring). ``backend`` ("gloo" or "nccl") overrides :func:`backend_for`'s choice."""
    whole("world", world)
    if not 0 < timeout:
        raise ValueError(f"timeout is a number of seconds above 0 (got {timeout})")
    chosen = backend or backend_for(world).backend
    if chosen not in ("gloo", "nccl"):
        raise ValueError(f"backend is gloo or nccl (got {chosen!r})")
    context = _context()
    results: Any = context.Queue()
    with tempfile.TemporaryDirectory(prefix="ppedu-ranks-") as folder:
        settings = (chosen, os.path.join(folder, "rendezvous"), timeout, task, args)
        workers = [context.Process(target=_entry, args=(rank, world, settings, results), daemon=True)
                   for rank in range(world)]
        got: dict[int, tuple[bool, Any]] = {}
        try:
            for worker in workers:
                worker.start()
            deadline = time.monotonic() + timeout
            while len(got) < world and time.monotonic() < deadline:
                try:
                    rank, ok, value = results.get(timeout=0.5)
                    got[rank] = (ok, value)
                    if not ok:
                        break
                except queues.Empty:
                    if not all(w.is_alive() for w in workers) and results.empty():
                        time.sleep(0.5)  # a result put just before its process ended is still on its way
                        if results.empty():
                            break
        finally:  # also when the caller interrupts: no process outlives the run
            for worker in workers:
                worker.join(timeout=0 if len(got) < world else 10)
                if worker.is_alive():
                    worker.kill()
                    worker.join()
    return _results(got, world, timeout)


#: What a rank's server process imports once, before it forks any rank: torch, what the lab's tasks use of it, and
#: torch._dynamo (with sympy), which an optimizer's first step imports — most of a rank's start otherwise.
PRELOAD = ("torch", "torch._dynamo", "torch.distributed", "torch.distributed.fsdp", "torch.nn.parallel",
           "ppedu.ranks.launch")


def _context() -> Any:
    """How ranks start: forked from a server process that imported :data:`PRELOAD` once and ran nothing else
    (``forkserver``), so a rank is fresh but imports none of it again (several seconds a rank, and the lab starts a
    dozen); ``spawn`` where a system has no forkserver (Windows)."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(PRELOAD))
    return context


def _results(got: dict[int, tuple[bool, Any]], world: int, timeout: float) -> list[Any]:
    failed = sorted((rank, value) for rank, (ok, value) in got.items() if not ok)
    if failed:
        raise RanksFailed(f"rank {failed[0][0]}: {failed[0][1]}")
    missing = [rank for rank in range(world) if rank not in got]
    if missing:
        raise RanksFailed(f"rank {missing[0]} gave no result (it died, or the run passed its {timeout:g} s)")
    return [pickle.loads(got[rank][1]) for rank in range(world)]


def _entry(rank: int, world: int, settings: tuple, results: Any) -> None:
    """One rank: join the group, run the task, report."""
    backend, rendezvous, timeout, task, args = settings
    try:
        import torch
        import torch.distributed as dist

        if backend == "nccl":
            torch.cuda.set_device(rank)
        else:
            torch.set_num_threads(1)  # the ranks share the machine's cores
        dist.init_process_group(backend, init_method=f"file://{rendezvous}", rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=timeout))
        try:
            # by value (plain pickle): torch would share a tensor's memory with the parent through this process,
            # which ends right after
            results.put((rank, True, pickle.dumps(task(rank, world, *args))))
        finally:
            dist.destroy_process_group()
    except BaseException as error:  # noqa: B036 (whatever ended the rank is its report)
        results.put((rank, False, f"{type(error).__name__}: {error}"[:500]))


def device(rank: int) -> Any:
    """The device rank ``rank`` computes on in the current group: its GPU under NCCL, else the CPU."""
    import torch
    import torch.distributed as dist

    return torch.device("cuda", rank) if dist.get_backend() == "nccl" else torch.device("cpu")

