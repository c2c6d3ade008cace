"""Chapters 1–7 (the pipeline part of the course), their speaker notes, the README and the errata modules: each
statement a simulation decides, pinned beside that simulation over a range of costs, not only at f = b = w.
If the library's numbers move, the prose around them must be read again (chapters 8–14: tests/test_prose.py)."""

import inspect
import itertools
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppedu import Costs, schedules, simulate
from ppedu.costs import EQUAL
from ppedu.design import inner_gaps
from ppedu.ops import Op, Schedule
from ppedu.search import one_chunk_bound, stage_orders

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS, NOTES = ROOT / "notebooks", ROOT / "docs" / "speaker-notes"
quarters = st.integers(1, 12).map(lambda k: k / 4)  # costs from 0.25 to 3 in quarters: exact in binary


def source(chapter: str, cell_id: str) -> str:
    cells = json.loads((NOTEBOOKS / f"{chapter}.ipynb").read_text())["cells"]
    return "".join(next(c for c in cells if c["id"] == cell_id)["source"])


def notes(chapter: str) -> str:
    return (NOTES / f"{chapter}.md").read_text()


@pytest.mark.parametrize("p, m", [(2, 2), (3, 2), (2, 3)])
def test_ch1_no_order_with_one_chunk_per_gpu_in_one_direction_beats_2_m_plus_p_minus_1(p, m):
    # every order of every GPU, one step per pass: the textbook's 11 steps at p = m = 4 cannot be
    best = float("inf")
    orders = [list(stage_orders([Op(k, mb, s) for mb in range(m) for k in "FB"])) for s in range(p)]
    for stages in itertools.product(*orders):
        try:
            best = min(best, simulate(Schedule(stages, "any", (tuple(range(p)),), m), Costs(f=1, b=1)).makespan)
        except ValueError:  # an order that waits on itself
            pass
    assert best == 2 * (m + p - 1)
    text = source("01-bubble-problem", "01-34")
    assert "one model chunk per GPU and every micro-batch going the same way" in text and "plus the ramp" not in text


def test_ch1_with_those_conditions_given_up_a_schedule_fits_in_11_steps_or_fewer():
    unit = Costs(f=1, b=1)
    assert simulate(schedules.build("chimera", 4, 4), unit).makespan < 11  # both ways, two copies of the model
    assert simulate(schedules.build("zb-v", 4, 4), unit.per_chunk(2)).makespan == 11  # two chunks per GPU
    assert "a schedule can be shorter: chapter 10" in source("01-bubble-problem", "01-34")


def test_ch2_the_frameworks_weight_the_micro_batches_where_the_text_says():
    from torch.distributed.pipelining import schedules as torch_schedules
    from torch.distributed.pipelining import stage

    # PyTorch: the schedule hands m to the stage, which divides the accumulated gradients by it
    assert "perform_reduce_grad(self._n_microbatches if self.scale_grads else 1)" in inspect.getsource(torch_schedules)
    assert "self.scale_grads(grad_scale_factor)" in inspect.getsource(stage)
    assert inspect.signature(torch_schedules.Schedule1F1B).parameters["scale_grads"].default is True
    text = source("02-gpipe", "02-12f")
    assert "`scale_grads`, `torch/distributed/pipelining/stage.py`" in text
    assert "megatron/core/pipeline_parallel/schedules.py" in text
    assert "what every framework's loss computes" not in source("02-gpipe", "02-12d")
    assert "the synchronous schedules of this course only reorder exact work" in source("02-gpipe", "02-15")
    # Megatron-LM's per-token loss is not divided in schedules.py: finalize_model_grads scales the gradients
    assert "`megatron/core/distributed/finalize_model_grads.py`" in text and "counting tokens, by" not in text
    # weight gradients do cross GPUs where one weight has two copies (tied embeddings, DualPipe, data parallelism)
    assert "never leaves the GPU" not in source("02-gpipe", "02-12c")
    assert "DualPipe's two copies" in source("02-gpipe", "02-12c")


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 6), st.integers(3, 12), quarters, quarters, st.sampled_from([0.05, 0.1, 0.5, 1.0]))
def test_ch3_a_hand_over_latency_makes_1f1b_the_slower_and_gpipe_pays_it_2_p_minus_1_times(p, m, f, b, comm):
    free, late = Costs(f=f, b=b), Costs(f=f, b=b, comm=comm)
    gpipe, one = (simulate(make(p, m), late).makespan for make in (schedules.gpipe, schedules.one_f_one_b))
    assert simulate(schedules.gpipe(p, m), free).makespan == simulate(schedules.one_f_one_b(p, m), free).makespan
    assert gpipe - simulate(schedules.gpipe(p, m), free).makespan == pytest.approx(2 * (p - 1) * comm)
    assert one > gpipe + 1e-9


def test_ch3_the_tie_is_stated_with_its_conditions_and_breaks_both_ways():
    free, late = Costs(f=1, b=2), Costs(f=1, b=2, comm=0.1)
    paid = [round((simulate(schedules.one_f_one_b(4, m), late).makespan
                   - simulate(schedules.one_f_one_b(4, m), free).makespan) / 0.1) for m in (4, 8, 16, 32)]
    assert paid == sorted(set(paid)) and paid[0] > 2 * 3  # more the larger m, always more than GPipe's 2(p − 1)
    slow = Costs(f=(1, 1.5, 1, 1), b=(2, 3, 2, 2))
    gpipe, one = (simulate(make(4, 8), slow) for make in (schedules.gpipe, schedules.one_f_one_b))
    assert one.makespan < gpipe.makespan and inner_gaps(one)[1] < inner_gaps(gpipe)[1]
    last = Costs(f=(1, 1, 1, 1.5), b=(2, 2, 2, 3))  # a slow last GPU leaves them tied, as the note says
    assert simulate(schedules.gpipe(4, 8), last).makespan == simulate(schedules.one_f_one_b(4, 8), last).makespan
    assert "Under equal costs" not in source("03-1f1b", "03-17")
    assert "every stage equally fast and free hand-overs" in source("03-1f1b", "03-17")
    assert "from *m* = 3 on, 1F1B becomes the slower" in source("03-1f1b", "03-18a")
    assert "a slow last GPU leaves them tied" in notes("03-1f1b")
    assert "chapter 4, where they differ" not in notes("03-1f1b")
    assert "Not to the step, on equally fast stages with free hand-overs" in source("03-1f1b", "03-21")
    readme = (ROOT / "README.md").read_text()
    assert "not time — on equally fast stages with free\nhand-overs" in readme


def test_ch3_interleaving_keeps_the_parameter_copies_and_dualpipe_doubles_them():
    from ppedu.lesson import parameter_copies

    assert parameter_copies(schedules.interleaved_1f1b(4, 8, 2)) == parameter_copies(schedules.one_f_one_b(4, 8)) == 1
    assert parameter_copies(schedules.dualpipe(4, 8)) == parameter_copies(schedules.chimera(4, 8)) == 2
    assert "the parameter copies first differ in chapter 6" in notes("03-1f1b") and "Chimera's two" in notes("03-1f1b")


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 5), st.integers(0, 2 * 5), quarters, quarters, quarters)
def test_ch5_zb_h2s_zero_and_its_shortest_step_hold_exactly_in_the_region_the_text_gives(p, extra, f, b, w):
    m, costs = 2 * p - 1 + extra, Costs(f=f, b=b, w=w)
    t = simulate(schedules.zero_bubble_h2(p, m), costs)
    assert (max(inner_gaps(t)) < 1e-9) == (b <= f and b <= w and f + b <= 2 * w)
    assert (t.makespan == pytest.approx(one_chunk_bound(p, m, costs))) == (b <= 2 * f and b <= 2 * w)
    assert one_chunk_bound(p, m, costs) == (p - 1) * f + m * (f + b + w)


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 6), st.integers(0, 6), quarters, quarters, quarters)
def test_ch5_zb_h1_idles_p_minus_1_times_f_plus_b_minus_w_exactly_when_each_w_fits_its_gap(p, extra, f, b, w):
    t = simulate(schedules.zero_bubble_h1(p, p + extra), Costs(f=f, b=b, w=w))
    idle = max(t.makespan - busy for busy in t.busy_per_stage)
    assert (idle == pytest.approx((p - 1) * (f + b - w))) == (w <= f and w <= b)


@pytest.mark.parametrize("p", [3, 4, 6])
def test_ch5_zb_h1_needs_m_at_least_p_for_its_formula(p):
    costs = Costs(f=1, b=1, w=1)
    below = simulate(schedules.zero_bubble_h1(p, p - 1), costs)
    assert below.makespan - min(below.busy_per_stage) > (p - 1) * (1 + 1 - 1)
    assert "(from *m* = *p* on)" in source("05-zero-bubble", "05-06")


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 6), quarters, quarters, quarters)
def test_ch5_at_m_2p_minus_1_a_w_under_half_of_b_keeps_every_order_above_the_bound(p, f, b, w):
    # the last GPU's last B ends no earlier than (p-1)f + m(f+b); p-1 more B's down, then that micro-batch's W
    m, costs = 2 * p - 1, Costs(f=f, b=b, w=w)
    floor = (p - 1) * (f + b) + m * (f + b) + w
    assert (floor > one_chunk_bound(p, m, costs)) == (b > 2 * w)
    if b <= 2 * f:  # and ZB-H2 meets the larger of the two floors: it is the best order there
        assert simulate(schedules.zero_bubble_h2(p, m), costs).makespan == pytest.approx(
            max(floor, one_chunk_bound(p, m, costs)))
    text = source("05-zero-bubble", "05-07w")
    assert "the bound no order with one chunk per GPU can beat" in text and "shortest step any order" not in text


def test_ch5_states_the_regions_not_equal_costs_alone():
    text = source("05-zero-bubble", "05-06")
    assert "to about $(p-1)(f+b-w)$" not in text and "$w \\le f$ and $w \\le b$" in text
    region = source("05-zero-bubble", "05-07w")
    assert "$b \\le f$, $b \\le w$ and $f + b \\le 2w$" in region and "$b \\le 2f$ and $b \\le 2w$" in region
    assert "needs equal costs" not in notes("05-zero-bubble")
    from ppedu.vendor import claims

    assert "at f = b = w and m ≥ 2p−1" in claims()[6].computed


def test_ch6_dualpipe_idles_least_of_the_six_rows_but_zb_v_idles_less_with_one_copy():
    from ppedu import sheet
    from ppedu.lesson import parameter_copies

    for row in sheet.as_m_grows(8, (16, 64, 256)):
        shares = {k: float(v.split()[0]) for k, v in vars(row).items() if k != "m"}
        assert min(shares, key=shares.get) == "DualPipe"
    for m in (16, 64, 256):
        zb_v, dual = schedules.zero_bubble_v(8, m), schedules.dualpipe(8, m)
        assert simulate(zb_v, EQUAL.per_chunk(2)).idle_slots < simulate(dual, EQUAL).idle_slots
    assert parameter_copies(schedules.zero_bubble_v(8, 64)) == 1
    assert "not smaller than every schedule's" in source("06-dualpipe", "06-29c")


def test_ch6b_a_pair_at_least_f_plus_w_is_needed_not_enough():
    from ppedu.errata import deepseek_table

    costs = Costs(f=2, b=1, w=1, fb=3)
    assert costs.pair(0) >= costs.forward(0) + costs.weight(0)
    dual = deepseek_table(8, 20, costs)[2]
    assert dual.simulated_bubble != dual.formula_bubble
    assert "(*f* = 2*b*" in source("06b-dualpipe-bubble", "06-26b")
    assert "(and W ≤ B) at f = b" not in notes("06b-dualpipe-bubble")


def test_the_vendor_module_states_its_node_size_as_an_assumption():
    import ppedu.vendor as vendor

    assert "the brief gives no" in vendor.__doc__ and "as in the brief's own" not in vendor.__doc__
    claim = vendor.claims()[7]  # "1F1B schedule bubble elimination"
    assert not claim.holds and "with balanced stages and free hand-overs" in claim.computed


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 6), st.integers(0, 12), st.sampled_from([2, 3]), quarters, quarters,
       st.sampled_from([0, 0.25, 1]))
def test_ch4_interleaving_divides_the_idle_time_by_v_whatever_f_b_w_while_hand_overs_are_free(p, extra, v, f, b, w):
    m, costs = p + extra, Costs(f=f, b=b, w=w)
    plain = simulate(schedules.one_f_one_b(p, m), costs)
    inter = simulate(schedules.interleaved_1f1b(p, m, v), costs.per_chunk(v))
    assert inter.idle_slots * v == pytest.approx(plain.idle_slots)


def test_ch4_a_hand_over_latency_moves_the_ratio_off_one_over_v():
    late = Costs(f=1, b=1, comm=0.1)
    plain = simulate(schedules.one_f_one_b(4, 8), late)
    inter = simulate(schedules.interleaved_1f1b(4, 8, 2), late.per_chunk(2))
    assert inter.idle_slots * 2 > plain.idle_slots
    text = source("04-interleaved", "04-15")
    assert "so long as the stages are equally fast, *m* ≥ *p* and hand-overs are free" in text


@pytest.mark.parametrize("p, m, costs", [(4, 2, Costs(f=1, b=1)), (4, 3, Costs(f=1, b=2, w=1)),
                                         (4, 8, Costs(f=(1, 2, 1, 1), b=(2, 4, 2, 2))),
                                         (2, 4, Costs(f=(1.5, 1), b=(3, 2)))])
def test_ch4_with_m_below_p_or_a_slow_stage_the_idle_time_is_not_divided_by_v(p, m, costs):
    plain = simulate(schedules.one_f_one_b(p, m), costs)
    inter = simulate(schedules.interleaved_1f1b(p, m, 2), costs.per_chunk(2))
    assert inter.idle_slots * 2 != pytest.approx(plain.idle_slots)
