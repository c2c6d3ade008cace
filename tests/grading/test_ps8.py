"""ps8 graded end to end, as an instructor grades it: `ppedu grade` in a course of its own, each submission's
questions run across 2 to 4 rank sandboxes with the grader's relay between them (ppedu/grading/relay.py). The
solution, the release, a careless submission, one copied from what ships (the ring as one all-reduce, the lab's own
data parallelism, buckets and ZeRO-1 pasted from ppedu.ranks: it scores nothing), the red team's shortcuts (a ring
right only on 2 ranks, DDP's equal average, a flat all-reduce every step: nothing either) and hostile ones, each with
its exact points per cell: faking the relay's record, computing alone, patching torch.distributed, sending an oversized tensor
or extra traffic, mimicking the right collectives with nothing in them, reaching another rank's sandbox through files
or the loopback, and hanging a rank (which costs its question, not the grading). Also: the written answer waits for a
person, the feedback names each usual mistake and no hidden run, the check shows what a cell raised, the lab's
implementations are not what a rank's sandbox imports, and the key's rules are PyTorch's own — DDP's rebuilt buckets
and FSDP2's shard layout, run on gloo — as are the model answer's FSDP2 figures.

Runs in several minutes (eight submissions, each on four sandboxes; DDP and FSDP2 on 2–3 processes)."""

import re
import subprocess
import sys

import nbformat
import pytest

from conftest import ROOT, autograded_cells, make_course
from corpus import Case, _cell
from ps8_ranks import pytorch_ddp_buckets, pytorch_fsdp2_inputs
from test_autograde import _submit

POINTS = dict(autograded_cells(ROOT / "solutions" / "ps8" / "ps8.ipynb"))
#: Seconds a cell or a call may take: the hung rank's call is stopped after it.
TIMEOUT = 40


def _edit(gid: str, old: str, new: str):
    """An edit of the solution's cell ``gid``: ``old`` replaced by ``new`` (which must be there)."""
    def edit(nb):
        cell = _cell(nb, gid)
        assert old in cell.source, (gid, old)
        cell.source = cell.source.replace(old, new)
    return edit


def _both(*edits):
    return lambda nb: [e(nb) for e in edits]


LAUNCH = "launched.append((bucket, flat, dist.all_reduce(flat, async_op=True)))"
WRONG = Case("ps8", replace={
    "ring_answer": """
def ring_all_reduce(x):
    n, r = dist.get_world_size(), dist.get_rank()
    if r == 0:  # a star, not a ring: every rank sends rank 0 its vector, rank 0 sends back the sum
        total = x.clone()
        for src in range(1, n):
            got = torch.empty_like(x)
            dist.recv(got, src)
            total += got
        for dst in range(1, n):
            dist.send(total, dst)
        return total
    dist.send(x, 0)
    dist.recv(x, 0)
    return x
""",
    "data_parallel_answer": """
def data_parallel_step(model, x, y):
    cross_entropy(model(x), y, reduction="sum").backward()  # every example's gradient, summed
    for p in model.parameters():
        dist.all_reduce(p.grad)  # ... and never divided by how many there were
"""}, edit=_both(_edit("buckets_answer", LAUNCH, LAUNCH + "\n            launched[-1][2].wait()  # waited for at once"),
                 _edit("zero1_answer", "m.grad = g / n", "m.grad = g  # summed, never averaged")),
    # the star's sum is right, but its traffic is not the ring's: nothing; the sum over the examples is right, never
    # divided by their count; blocking buckets right but never in flight together; Adam on the summed gradients:
    # FSDP2's collectives and pieces, but the parameters it then gathers are not the model's
    lost={"ring": 4, "data_parallel": 0.9, "buckets": 0.8, "zero1": 1.8})

HOSTILE_A = Case("ps8", replace={
    "ring_answer": """
import ppedu.grading.relay as relay
relay.Relay.observed = lambda self, k: {"messages": [[0, 1, 8, 0]] * 99}  # this sandbox's copy: nobody reads it


def ring_all_reduce(x):
    print("sent 2(n - 1) messages")  # a claim nobody reads either
    return x * dist.get_world_size()
""",
    "data_parallel_answer": """
def data_parallel_step(model, x, y):
    real = dist.all_reduce
    dist.all_reduce = lambda tensor, *args, **kwargs: None  # patched: no communication at all
    try:
        cross_entropy(model(x), y).backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
    finally:
        dist.all_reduce = real
""",
    "buckets_answer": """
def ddp_buckets(model, cap, first_cap):
    def finish():
        dist.all_reduce(torch.zeros(10_000_000, dtype=torch.float64))  # 80 MB through the relay
    return finish
""",
    "zero1_answer": """
import ppedu.grading.relay as relay
relay.MOST_BYTES = 0  # this sandbox's copy of the limit


def zero1(model, lr):
    adam = torch.optim.Adam(model.parameters(), lr=lr)

    def step():
        adam.step()  # its own share's gradients only

    return step
"""}, lost=POINTS)

HOSTILE_B = Case("ps8", replace={
    "ring_answer": """
import time


def ring_all_reduce(x):
    if dist.get_rank() == 1 and len(x) == 1000:  # the first run's rank 1 hangs
        while True:
            time.sleep(1)
    return x
""",
    "data_parallel_answer": """
def data_parallel_step(model, x, y):
    n = dist.get_world_size()
    xs, ys = torch.empty((n, *x.shape), dtype=x.dtype), torch.empty((n, *y.shape), dtype=y.dtype)
    dist.all_gather_into_tensor(xs, x)  # everyone's data, then the whole batch alone
    dist.all_gather_into_tensor(ys, y)
    cross_entropy(model(xs.reshape(-1, *x.shape[1:])), ys.reshape(-1)).backward()
""",
    "zero1_answer": """
def zero1(model, lr):
    params = list(model.parameters())
    n = dist.get_world_size()
    k = sum(-(-p.shape[0] // n) * p[0].numel() for p in params)  # FSDP2's padded piece, to the element
    adam = torch.optim.Adam(params, lr=lr)

    def step():  # the right collectives of the right sizes, with nothing in them
        dist.reduce_scatter_single(torch.empty(k, dtype=torch.float64), torch.zeros(k * n, dtype=torch.float64))
        dist.all_gather_single(torch.empty(k * n, dtype=torch.float64), torch.zeros(k, dtype=torch.float64))
        adam.step()

    return step
"""}, edit=_edit("buckets_answer", "        launched.clear()",
                 "        launched.clear()\n        dist.all_reduce(torch.ones(1000, dtype=torch.float64))  # extra"),
    # the hung run and the unreduced ring lose it all; gathering the data is not data parallelism; the extra
    # all-reduce breaks DDP's steps, and without them its right parameters count for nothing; empty collectives earn
    # nothing
    lost={"ring": 4, "data_parallel": 3, "buckets": 4, "zero1": 4})

# the other ranks' sandboxes, through what a sandbox shares with its neighbours: nothing but the relay
HOSTILE_C = Case("ps8", replace={"ring_answer": """
import glob, os, time


def ring_all_reduce(x):
    n, r = dist.get_world_size(), dist.get_rank()
    total = x.clone()
    try:  # a store of its own on the loopback, rank 0 its server
        store = dist.TCPStore("127.0.0.1", 29517, n, r == 0, timeout=__import__("datetime").timedelta(seconds=2))
        store.set(f"x{r}", repr(x.tolist()))
        for other in range(n):
            if other != r:
                total += torch.tensor(eval(store.get(f"x{other}").decode()), dtype=x.dtype)
        return total
    except Exception:
        pass
    torch.save(x, f"/tmp/ring-{r}.pt")  # files, then
    time.sleep(2)
    for path in glob.glob("/tmp/ring-*.pt"):
        if path != f"/tmp/ring-{r}.pt":
            total += torch.load(path)
    return total
""", "zero1_answer": """
def zero1(model, lr):  # FSDP2's own copy-in op lays the shards out (and, on element numbers, inverts it)
    params = list(model.parameters())
    n, r = dist.get_world_size(), dist.get_rank()
    lay = lambda ts: torch._chunk_cat(list(ts), 0, n)
    sizes = [p.numel() for p in params]
    idx = torch.arange(1, sum(sizes) + 1, dtype=torch.float64).split(sizes)
    where = lay(i.view_as(p) for i, p in zip(idx, params)).reshape(-1).long()
    mine = torch.nn.Parameter(lay(p.detach() for p in params)[r].clone())
    adam = torch.optim.Adam([mine], lr=lr)

    def step():
        inp = lay(p.grad for p in params).reshape(-1)
        got = torch.empty(inp.numel() // n, dtype=inp.dtype)
        dist.reduce_scatter_single(got, inp)
        mine.grad = got / n
        adam.step()
        out = torch.empty(inp.numel(), dtype=inp.dtype)
        dist.all_gather_single(out, mine.detach())
        flat = torch.empty(sum(sizes), dtype=inp.dtype)
        keep = where > 0
        flat[where[keep] - 1] = out[keep]
        with torch.no_grad():
            for p, f in zip(params, flat.split(sizes)):
                p.copy_(f.view_as(p))

    return step
""", "data_parallel_answer": """
def data_parallel_step(model, x, y):  # right, not hostile: DDP's average kept, each rank's loss weighted n·n_r/N first
    n = dist.get_world_size()
    count = torch.tensor([float(len(y))], dtype=torch.float64)
    dist.all_reduce(count)
    (cross_entropy(model(x), y) * n * len(y) / count).backward()
    for p in model.parameters():
        dist.all_reduce(p.grad)
        p.grad /= n
"""}, lost={"ring": 4})  # its zero1, the red team's route through torch._chunk_cat, is accepted (instructor.md § 6)


def _source(obj):
    import inspect

    return inspect.getsource(obj)


def _copied():
    """Every answer one call or one paste of what ships: the ring as one all-reduce, and the lab's own
    ``allreduce_each``, ``Buckets`` and ``Zero1`` (with what they use) pasted from ``ppedu.ranks``."""
    from ppedu.ranks import data_parallel, sharding, workload

    head = "from collections.abc import Iterator, Sequence\nfrom typing import Any\n\n"
    return Case("ps8", replace={
        "ring_answer": "def ring_all_reduce(x):\n    dist.all_reduce(x)\n    return x\n",
        "data_parallel_answer": head + _source(data_parallel.allreduce_each) + """

def data_parallel_step(model, x, y):
    cross_entropy(model(x), y).backward()
    allreduce_each(model)
""",
        "buckets_answer": head + _source(data_parallel.bucket_plan) + "\n\n" + _source(data_parallel.Buckets) + """

def ddp_buckets(model, cap, first_cap):
    return Buckets(model, cap).finish
""",
        "zero1_answer": head + _source(workload.flat) + "\n\n" + _source(sharding.Zero1) + """

def zero1(model, lr):
    return Zero1(list(model.parameters()), lambda params: torch.optim.Adam(params, lr=lr)).step
"""},
        # the one call earns nothing; the equal-weight mean is the ranks' gradients, wrongly weighted, and its
        # traffic counts only with the right weights; the lab's buckets train right, but in the parameters' order
        # from the first step, not DDP's rebuild, so nothing counts; the flat ZeRO-1 is not FSDP2's
        lost=POINTS)


def _shortcuts():
    """The round-3 red team's routes, each right on 2 ranks or right in what it trains, and none the question's: the
    ring as every piece of every vector passed on ``n − 1`` times (on 2 ranks it is chapter 12's ring, which the
    check's 3-rank run tells); DDP's equal average written out (the question's own mistake); and the lab's
    ``allreduce_flat`` pasted, one flat all-reduce every step (its parameters right, DDP's buckets never)."""
    from ppedu.ranks import data_parallel, workload

    head = "from collections.abc import Iterator, Sequence\nfrom typing import Any\n\n"
    return Case("ps8", replace={
        "ring_answer": """
def ring_all_reduce(x):
    n, r = dist.get_world_size(), dist.get_rank()
    total = x.clone()
    travelling = list(torch.tensor_split(x.clone(), n))
    for _ in range(n - 1):  # every piece of every vector passed on round the ring, n - 1 times
        arrived = []
        for piece in travelling:
            buffer = torch.empty_like(piece)
            send = dist.isend(piece, (r + 1) % n)
            dist.recv(buffer, (r - 1) % n)
            send.wait()
            arrived.append(buffer)
        travelling = arrived
        total += torch.cat(arrived)
    return total
""",
        "data_parallel_answer": """
def data_parallel_step(model, x, y):
    cross_entropy(model(x), y).backward()
    params = list(model.parameters())
    flat = torch.cat([p.grad.reshape(-1) for p in params])
    dist.all_reduce(flat)
    flat /= dist.get_world_size()  # DDP's average: every rank's mean weighs the same
    at = 0
    for p in params:
        p.grad.copy_(flat[at:at + p.numel()].view_as(p))
        at += p.numel()
""",
        "buckets_answer": head + _source(workload.flat) + "\n\n" + _source(data_parallel.allreduce_flat) + """

def ddp_buckets(model, cap, first_cap):
    return lambda: allreduce_flat(model)
"""},
        # the naive ring's sum is right on every run, its count only on 2 ranks; the equal average's traffic is
        # right; the flat all-reduce's parameters and first step are: none of it counts without the question's skill
        lost={"ring": 4, "data_parallel": 3, "buckets": 4})


CASES = {"solved": Case("ps8"), "blank": Case("ps8", release=True, lost=POINTS), "wrong": WRONG,
         "hostile_a": HOSTILE_A, "hostile_b": HOSTILE_B, "hostile_c": HOSTILE_C, "copied": _copied(),
         "shortcuts": _shortcuts()}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    course = make_course(tmp_path_factory.mktemp("ps8-course"), ["ps8"])
    for student, case in CASES.items():
        _submit(course, student, case)
    run = subprocess.run([sys.executable, "-m", "ppedu", "grade", "ps8", "--jobs", "2", "--timeout", str(TIMEOUT)],
                         cwd=course, capture_output=True, text=True, timeout=1500)
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "ppedu") as gb:
        cells = {s: {g.name: g.auto_score if g.cell.cell_type == "markdown" else g.score
                     for nb in gb.find_submission("ps8", s).notebooks for g in nb.grades} for s in CASES}
    return course, run, cells


def test_ppedu_grade_grades_every_submission(graded):
    _, run, _ = graded
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.parametrize("student", CASES)
def test_each_submission_gets_exactly_its_points(graded, student):
    _, run, cells = graded
    want = {gid: pytest.approx(points - CASES[student].lost.get(gid, 0)) for gid, points in POINTS.items()}
    assert {gid: cells[student][gid] for gid in POINTS} == want, run.stdout


def test_the_written_answer_waits_for_a_person(graded):
    _, _, cells = graded
    assert cells["blank"]["measured_answer"] == 0  # left as released
    assert all(cells[s]["measured_answer"] is None for s in CASES if s != "blank")


def _feedback(course, student):
    nb = nbformat.read(course / "autograded" / student / "ps8" / "ps8.ipynb", as_version=4)
    return {c.metadata.nbgrader["grade_id"]: "\n".join(str(o.get("text", "")) + str(o.get("evalue", ""))
                                                       for o in c.outputs)
            for c in nb.cells if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")}


def _numbers(size):
    return [size] if isinstance(size, int) else list(size or [])


def test_feedback_says_why_and_never_names_a_hidden_run(graded):
    from grader.keys.ps8 import KEYS
    from ppedu.grading import my_values

    course, _, _ = graded
    said = _feedback(course, "hostile_b")
    assert "CellTimeout" in said["ring"] and "all-gather" in said["data_parallel"]
    assert "80000000 bytes" in _feedback(course, "hostile_a")["buckets"]
    careless = _feedback(course, "wrong")  # each usual mistake named for what it is, never its remedy
    assert "summed over its examples" in careless["data_parallel"]
    assert "not the whole batch's mean" in careless["zero1"] and "launched only after" in careless["buckets"]
    assert "(on 3 ranks): every rank ended with the sum, but" in _feedback(course, "shortcuts")["ring"]  # the check's
    copied = _feedback(course, "copied")
    assert "equal weight" in copied["data_parallel"] and "not the buckets DDP's rebuild makes" in copied["buckets"]
    assert str(_visible_sizes()) not in copied["buckets"]  # the right buckets' sizes are the question's to find
    remedies = ("all-reduce the count", "divide", "async_op", "lay the", "rows/n", "fill the buckets", "padded to")
    for student in CASES:
        text = "\n".join(_feedback(course, student).values())
        assert not [r for r in remedies if r in text], student
    for student in CASES:
        hidden = [spec for judge in KEYS.values() for spec in judge.hidden(my_values("ps8", student))]
        text = "\n".join(_feedback(course, student).values())
        assert "Traceback" not in text and "/work/" not in text
        named = [n for s in hidden for n in _numbers(s[2]) if n >= 100 and re.search(rf"\b{n}\b", text)]
        assert not named, student


@pytest.mark.parametrize("n", [2, 3, 4])
def test_a_right_sum_counts_only_as_chapter_12s_ring(n):
    """The judge on the relay's record of two runs that both end with the right sum: chapter 12's ring, and every
    piece of every vector passed on ``n − 1`` times. On 2 ranks their messages are the same; beyond, the naive pass
    earns nothing, its neighbours included."""
    import torch

    from ppedu.grading.assignments.ps8 import report, ring_inputs
    from ppedu.grading.relay import encode

    spec = ["ring", n, 1001, 7]
    pieces = [8 * len(p) for p in torch.tensor_split(torch.empty(1001), n)]
    ring = [[r, (r + 1) % n, pieces[(r - s) % n if s < n - 1 else (r + 1 - s) % n], 0]
            for s in range(2 * (n - 1)) for r in range(n)]  # the reduce-scatter's pieces, then the all-gather's
    naive = [[r, (r + 1) % n, size, 0] for _ in range(n - 1) for r in range(n) for size in pieces]
    right = encode(torch.stack(ring_inputs(spec, 7)).sum(0))

    def score(messages):
        seen = {"seed": 7, "world": n, "collectives": [], "messages": messages, "claims": [right] * n}
        return report("ring", [[spec, [{"rank": r} for r in range(n)], seen]], [spec], 4).score
    assert score(ring) == 4 and score(naive) == (4 if n == 2 else 0)
    turned = [[a, (a - 1) % n, size, tag] for a, _, size, tag in ring[:n]] + ring[n:]  # the first step the other way
    assert score(turned) == (4 if n == 2 else 3.2)  # the ring's count, not its one neighbour


def _data_parallel_record(spec, seed, reduced, final):
    """The relay's record of a data-parallel run that all-reduced ``reduced[s]`` in step ``s`` alone and ended with the
    parameters ``final`` on every rank."""
    import base64

    from ppedu.grading.relay import encode

    n = spec[1]
    collectives = [{"index": s, "kind": "all-reduce", "bytes": 8 * t.numel(), "dtype": "float64",
                    "result": base64.b64encode(t.numpy().tobytes()).decode()} for s, t in enumerate(reduced)]
    return {"seed": seed, "world": n, "collectives": collectives, "marks": [list(range(len(reduced)))] * n,
            "messages": [], "claims": [encode(final)] * n}


def test_the_whole_batchs_gradient_counts_at_any_scale_and_an_equal_average_earns_nothing():
    """The first step's all-reduce judged up to a constant factor: the mean, the sum over every digit, and ``n`` times
    the mean (the loss scaled by ``n·n_r/N``, then DDP's average) with the example count beside them all earn 3 of
    3; DDP's equal average, the question's own mistake, earns nothing, its traffic included."""
    import torch

    from ppedu.grading.assignments.ps8 import reference, rank_gradients, report, shares

    spec, seed = ["data_parallel", 3, 0, 4], 321
    ref, whole = reference(spec, seed), float(sum(shares(spec, seed)))
    count = torch.tensor([whole], dtype=torch.float64)

    def score(scale, first=None):
        reduced = [torch.cat([(first if s == 0 and first is not None else g) * scale, count]) for s, g in
                   enumerate(ref.grads)]
        seen = _data_parallel_record(spec, seed, reduced, ref.params[-1])
        return report("data_parallel", [[spec, [{"rank": r} for r in range(3)], seen]], [spec], 3).score
    assert [score(c) for c in (1.0, whole, 3.0, 0.25)] == [3, 3, 3, 3]
    equal = torch.stack(rank_gradients(spec, seed)).mean(0)
    assert score(1.0, equal) == score(3.0, equal) == 0


def _visible_sizes():
    """The elements of each of DDP's rebuilt buckets on the visible run."""
    from ppedu.grading.assignments.ps8 import QUESTIONS, VISIBLE, model

    sizes = [p.numel() for p in model(QUESTIONS["buckets"].visible_specs()[0]).parameters()]
    return [sum(sizes[i] for i in bucket) for bucket in VISIBLE["buckets"]["plan"]]


def test_the_check_shows_what_a_cell_raised_where_it_defines_an_answer(tmp_path):
    """A cell that raises while it defines its answer (an import missing) is named with its error, not only as
    'not defined'."""
    from ppedu.grading.verdict import check_notebook

    nb = nbformat.read(ROOT / "solutions" / "ps8" / "ps8.ipynb", as_version=4)
    _cell(nb, "buckets_answer").source = "def ddp_buckets(model, cap: Any, first_cap):\n    return None\n"
    nbformat.write(nb, tmp_path / "ps8.ipynb")
    said = {c.grade_id: c for c in check_notebook(tmp_path / "ps8.ipynb").cells}
    assert said["buckets"].score == 0 and "NameError: name 'Any' is not defined" in said["buckets"].message
    assert said["zero1"].score == 4


# ---- the key's rules against PyTorch's own DDP and FSDP2 -----------------------------------------------------------

def test_the_visible_runs_answers_are_what_the_key_writes():
    from grader.keys.ps8 import visible
    from ppedu.grading.assignments.ps8 import VISIBLE

    assert VISIBLE == visible(), "run `python -m grader.keys.ps8` and paste its output into VISIBLE"


def test_the_keys_buckets_are_pytorchs_own_ddps():
    from grader.keys import ps8 as key
    from ppedu.grading.assignments.ps8 import CAPS, QUESTIONS, model
    from ppedu.ranks import bucket_plan, run_ranks

    specs = [*QUESTIONS["buckets"].visible_specs(), *(["buckets", 2, caps, 11 + i] for i, caps in
                                                       enumerate([*CAPS, *key.HIDDEN_CAPS]))]
    for spec, steps in zip(specs, run_ranks(pytorch_ddp_buckets, 2, specs, timeout=600)[0]):
        assert steps[0] == [list(range(8))]  # the first step: every gradient in one bucket
        assert steps[1] == steps[2] == key.expected(spec)["plan"], spec  # then rebuilt, in the order they were ready
        nbytes = [p.numel() * p.element_size() for p in model(spec).parameters()]
        assert key.expected(spec)["plan"] != bucket_plan(nbytes, spec[2][0])  # nor the lab's buckets


@pytest.mark.parametrize("world,width", [(3, 34), (2, 33)])
def test_the_keys_shard_layout_is_pytorchs_own_fsdp2s(world, width):
    import torch

    from grader.keys.ps8 import expected, fsdp_runs
    from ppedu.grading.assignments.ps8 import _laid_out
    from ppedu.ranks import run_ranks

    spec = ["zero1", world, width, 5]
    runs = expected(spec)["runs"]
    ranks = run_ranks(pytorch_fsdp2_inputs, world, spec, timeout=600)
    for rank, (scattered, gathered, grads, params) in enumerate(ranks):
        want = _laid_out(grads, [run for piece in runs for run in piece])  # every rank's piece, rank by rank
        scale = float(want.abs().max() / scattered.abs().max())  # FSDP2 divides before it reduces (by a factor of its own)
        assert torch.allclose(scattered * scale, want, rtol=0, atol=1e-12)
        assert torch.equal(gathered, _laid_out(params, runs[rank]))
    shapes = [(5, 3), (10, 4), (1,), (7,)]  # chunks short and empty, beside torch's own layout op
    tensors = [torch.randn(shape, dtype=torch.float64) for shape in shapes]
    for n in (2, 3, 4, 8):
        flat = torch.cat([t.reshape(-1) for t in tensors])
        runs = [run for piece in fsdp_runs(shapes, n) for run in piece]
        assert torch.equal(_laid_out(flat, runs), torch._chunk_cat(tensors, dim=0, num_chunks=n).reshape(-1))


def test_the_model_answers_fsdp2_figures_are_the_layouts_and_the_runs():
    """Question 5 c)'s model answer: rank 0's elements and the padded collectives on 3 ranks, from the layout, and
    what the lab measures of them."""
    import math
    from fractions import Fraction

    from grader.keys.ps8 import fsdp_runs
    from ppedu.ranks import Workload, run_fsdp2

    shapes = [tuple(p.shape) for p in Workload().model().parameters()]
    psi = sum(math.prod(s) for s in shapes)
    held = [sum(length for start, length in piece if start >= 0) for piece in fsdp_runs(shapes, 3)]
    padded = 3 * sum(length for _, length in fsdp_runs(shapes, 3)[0])
    answer = _cell(nbformat.read(ROOT / "solutions" / "ps8" / "ps8.ipynb", as_version=4), "measured_answer").source
    excess_mb = (held[0] - psi / 3) * 32 / 1e6
    for figure in (f"{held[0]:,}", f"{psi:,}", f"{padded:,}", f"{padded - psi:,}", f"{min(held):,}",
                   f"{excess_mb:.4f} MB", f"{(padded - psi) / psi:.1%}".replace("%", " %")):
        assert figure in answer, figure
    more = Fraction(3 * held[0] - psi, 3)  # over Ψ/3
    assert held.index(min(held)) == 2 and f"{more.numerator // 3}{' ⅓⅔'[more.numerator % 3]}".strip() in answer
    run = run_fsdp2(3, Workload(steps=2, batch=48, optimizer="adam", dtype="float64"))
    state = next(iter(run.memory))
    assert state.measured_mb - state.model_mb == pytest.approx(excess_mb, abs=2e-4)  # the layout, exactly
    assert run.sharded.sent_mb / run.sharded.formula_mb == pytest.approx(padded / psi, rel=1e-3)


def test_a_rank_imports_none_of_the_labs_implementations():
    from ppedu.grading.assignments.ps8 import CODE
    from ppedu.grading.evaluate import ALWAYS, closure

    real = closure(ALWAYS, lazy=False) | closure(CODE.library.ppedu)
    assert "ppedu.grading.assignments.ps8" in real and not {m for m in real if m.startswith("ppedu.ranks")}
