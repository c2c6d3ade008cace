"""The widgets driven as a student would, without a browser: controls change, state and hints follow."""

import asyncio
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppedu import Costs, schedules, simulate
from ppedu.grid import grid
from ppedu.schedules import SCHEDULES, VIRTUAL
from ppedu.widgets import ScheduleBuilder, ScheduleExplorer, SlotCountingExercise, TimelinePlayer
from ppedu.rounding import UNROUNDED

from drawn import blocks

from ppedu.widgets._parts import EnterChecks, GridKeys


# -- ScheduleExplorer ---------------------------------------------------------------------------
def test_the_explorer_shows_what_the_simulator_computes():
    x = ScheduleExplorer("1f1b", p=4, m=8)
    t = simulate(schedules.one_f_one_b(4, 8))
    assert x.metrics()["makespan"] == t.makespan and x.metrics()["peak_activations"] == t.peak_activations
    assert x.metrics()["bubble_over_ideal"] == pytest.approx(3 / 8)
    assert "<svg" in x.diagram.value and "22" in x.table.value  # makespan of 1F1B, p=4, m=8
    assert {"ppedu-explorer"} <= set(x._dom_classes) and "ppedu-diagram" in x.diagram._dom_classes
    assert "ppedu-metrics" in x.table._dom_classes


def test_moving_a_slider_redraws_the_diagram_and_the_metrics():
    x = ScheduleExplorer("gpipe", p=4, m=4)
    before, svg = x.metrics(), x.diagram.value
    x.sliders["m"].value = 8
    assert x.metrics()["makespan"] == simulate(schedules.gpipe(4, 8)).makespan != before["makespan"]
    assert x.diagram.value != svg
    x.sliders["comm"].value = 0.5
    assert x.timeline.costs.comm == 0.5 and x.metrics()["makespan"] > simulate(schedules.gpipe(4, 8)).makespan
    x.picker.value = "1f1b"
    assert x.timeline.schedule.name == "1f1b"


def test_interleaving_pays_until_hand_overs_cost_too_much():
    x = ScheduleExplorer("1f1b", p=4, m=8)
    plain = x.metrics()
    x.set(schedule="interleaved", v=2)  # the same model: each of two chunks takes half a stage's costs
    assert x.metrics()["handovers"] == plain["handovers"] * (4 * 2 - 1) // (4 - 1)  # p·v-1 crossings, not p-1
    assert x.metrics()["makespan"] < plain["makespan"]
    x.set(comm=1.0)
    assert x.metrics()["makespan"] >= x.set(schedule="1f1b").metrics()["makespan"]


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_switching_schedules_keeps_the_work_per_gpu_and_says_what_a_chunk_costs(name):
    x = ScheduleExplorer(name, p=4, m=8, v=2, f=1, b=2, w=1)
    t = x.timeline
    assert sum(t.busy_per_stage) == pytest.approx(4 * 8 * (1 + 2 + 1))  # every schedule: the same model, 4 GPUs
    v = t.schedule.virtual
    assert (f"{v} chunks per GPU, each 1/{v} of f, b, w" in x.message.value) == (v > 1)


def test_every_schedule_in_the_picker_draws():
    x = ScheduleExplorer(p=4, m=8)
    assert list(x.picker.options) == list(SCHEDULES)
    for name in SCHEDULES:
        x.set(schedule=name, v=2 if name in VIRTUAL else 1)
        assert x.error is None and x.timeline.schedule.name == name


def test_an_impossible_combination_shows_one_line_not_a_traceback():
    x = ScheduleExplorer("dualpipe", p=4, m=8)
    diagram, table = x.diagram.value, x.table.value
    x.set(m=6)
    assert x.timeline is None and x.metrics() == {}
    # The last diagram and table stay, dimmed and hidden from screen readers, so the widget keeps its layout.
    assert diagram in x.diagram.value and table in x.table.value
    assert 'aria-hidden="true"' in x.diagram.value and 'aria-hidden="true"' in x.table.value
    assert "m ≥ 2p" in x.message.value and "\n" not in x.error
    assert x.nearest_m == 8 and x.fix.description == "use m = 8" and x.fix.layout.visibility == "visible"
    x.fix.click()
    assert x.error is None and x.message.value == "" and x.values["m"] == 8 and x.fix.layout.visibility == "hidden"
    assert x.timeline.schedule.name == "dualpipe"


def test_interleaving_has_no_invalid_m():
    x = ScheduleExplorer("interleaved", p=4, m=8, v=2)
    for m in range(1, 13):
        x.set(m=m)
        assert x.error is None and x.timeline.schedule.virtual == 2


def test_v_is_only_for_interleaved():
    x = ScheduleExplorer("1f1b", p=4, m=8, v=2)
    assert x.sliders["v"].disabled and x.timeline.schedule.virtual == 1 and x.error is None
    x.set(schedule="interleaved")
    assert not x.sliders["v"].disabled and x.timeline.schedule.virtual == 2


def test_set_rejects_unknown_controls_and_values_no_slider_takes():
    x = ScheduleExplorer()
    with pytest.raises(ValueError, match="unknown control 'q'"):
        x.set(q=3)
    with pytest.raises(ValueError, match=r"p \(stages\) must be a whole number"):
        x.set(p=0)
    with pytest.raises(ValueError, match="non-negative"):
        x.set(f=float("nan"))
    with pytest.raises(ValueError, match="unknown schedule"):
        ScheduleExplorer("pipedream")
    assert x.set(m=64).metrics()["makespan"] == simulate(schedules.one_f_one_b(4, 64)).makespan  # widens the slider


@settings(max_examples=15, deadline=None)
@given(name=st.sampled_from(["gpipe", "1f1b", "zb-h1"]), p=st.integers(1, 8), m=st.integers(1, 32),
       f=st.sampled_from([0.5, 1.0, 2.0]), b=st.sampled_from([1.0, 2.0]))
def test_the_explorer_agrees_with_the_simulator_everywhere(name, p, m, f, b):
    x = ScheduleExplorer(name, p=p, m=m, f=f, b=b, w=1.0)
    t = simulate(schedules.build(name, p, m), Costs(f=f, b=b, w=1.0))  # one chunk per GPU: costs as given
    assert x.metrics()["idle_slots"] == pytest.approx(t.idle_slots, rel=1e-5)
    assert x.metrics()["bubble_ratio"] == pytest.approx(t.bubble_ratio, rel=1e-5)  # six significant digits


def test_the_explorer_shows_no_float_noise():
    # A hand-over of 0.05 makes the simulator's sums inexact (19.700000000000003); the table and metrics() round them.
    x = ScheduleExplorer("interleaved", p=4, m=8, v=2, comm=0.05)
    t = simulate(schedules.interleaved_1f1b(4, 8, v=2), Costs(f=0.5, b=0.5, comm=0.05))
    assert UNROUNDED.search(repr(t.makespan) + repr(t.idle_causes().totals()))  # there is noise to hide
    assert not UNROUNDED.search(repr(x.metrics()) + x.table.value)
    assert x.metrics()["makespan"] == pytest.approx(t.makespan, rel=1e-5)
    assert x.metrics()["idle_causes"].keys() == t.idle_causes().totals().keys()


# -- SlotCountingExercise -------------------------------------------------------------------------
def test_the_exercise_answers_each_attempt_with_a_specific_hint():
    x = SlotCountingExercise("gpipe", p=4, m=4)
    assert not x.check(total=16).correct and "not the number of micro-batches" in x.feedback.value
    assert "you counted the busy slots" in str(x.check(total=56, idle=32, ratio="3/7"))
    feedback = x.check(idle=24)  # the total and the ratio stay in their fields
    assert feedback.correct and "correct" in x.feedback.value and x.fields["total slots"].value == "56"


def test_the_check_button_reads_the_fields():
    x = SlotCountingExercise(simulate(schedules.one_f_one_b(4, 4)))
    for name, value in {"total slots": "56", "idle slots": "24", "bubble ratio": "42.86%"}.items():
        x.fields[name].value = value
    x.button.click()
    assert "solid #1B7F3B" in x.feedback.value and "ppedu-feedback" in x.feedback._dom_classes
    x.fields["bubble ratio"].value = "0.75"
    x.button.click()
    assert "Megatron-LM" in x.feedback.value


def test_hidden_steps_are_covered_but_still_counted():
    x = SlotCountingExercise(schedules.gpipe(4, 4), hide=0.5)
    assert x.hidden.sum() == 4 * 7 and x.hidden[:, -1].all() and not x.hidden[:, 0].any()
    assert x.picture.value.count('class="ppedu-hidden"') == 28
    assert x.check(total=56, idle=24, ratio=24 / 56).correct


def test_mark_mode_checks_the_cells_clicked():
    x = SlotCountingExercise("1f1b", p=2, m=2, mode="mark")
    idle = {(int(s), int(t)) for s, t in zip(*grid(x.timeline).idle_mask.nonzero())}
    for s, t in idle:
        x.picture.cells[s, t].click()
    assert x.marked == idle and x.check_marking().correct
    busy = next(cell for cell in x.picture.cells if cell not in idle)
    x.toggle(*busy)
    assert "runs an operation" in str(x.check_marking()) and "ppedu-marked" in x.picture.cells[busy]._dom_classes
    x.toggle(*busy)
    assert x.check_marking().correct
    with pytest.raises(ValueError, match="not a cell"):
        x.toggle(5, 0)


def test_mark_mode_does_not_reveal_hidden_cells():
    x = SlotCountingExercise("gpipe", p=2, m=2, mode="mark", hide=0.5)
    x.toggle(0, 5)  # hidden, and busy (B1 on GPU 0)
    assert x.picture.cells[0, 5].description == "✗?" and "hidden cells you marked is busy" in str(x.check_marking())
    assert x.picture.cells[0, 5].tooltip == "GPU 0, t6: hidden, marked idle"


def test_a_verdict_goes_when_the_answer_it_judged_changes():
    x = SlotCountingExercise("1f1b", p=2, m=2, mode="mark")
    idle = [(int(s), int(t)) for s, t in zip(*grid(x.timeline).idle_mask.nonzero())]
    for cell in idle:
        x.toggle(*cell)
    assert x.check_marking().correct and "correct" in x.feedback.value
    x.toggle(*idle[0])  # unmarked: "all idle cells marked" would be stale
    assert x.feedback.value == ""
    counting = SlotCountingExercise("gpipe", p=2, m=2)
    counting.check(total=12, idle=4)
    counting.fields["idle slots"].value = "5"
    assert counting.feedback.value == ""


def test_a_marked_busy_cell_keeps_its_label_and_every_cell_names_gpu_step_and_op():
    x = SlotCountingExercise("gpipe", p=2, m=1, mode="mark")
    assert x.picture.cells[0, 0].tooltip == "GPU 0, t1: F0" and x.picture.cells[1, 0].tooltip == "GPU 1, t1: empty"
    x.toggle(0, 0)
    assert x.picture.cells[0, 0].description == "✗F0" and x.picture.cells[0, 0].tooltip == "GPU 0, t1: F0, marked idle"
    keys = [c for c in x.picture.children if isinstance(c, GridKeys)]
    assert len(keys) == 1 and keys[0].toggles and keys[0].stages == 2 and keys[0].steps == 4


def test_count_fields_send_what_was_typed_when_left_and_enter_checks():
    x = SlotCountingExercise("gpipe", p=2, m=2)
    assert not any(field.continuous_update for field in x.fields.values())
    assert any(isinstance(c, EnterChecks) for c in x.children) and "ppedu-check" in x.button._dom_classes


def test_the_exercise_rejects_nonsense_settings():
    with pytest.raises(ValueError, match="mode"):
        SlotCountingExercise("gpipe", mode="paint")
    with pytest.raises(ValueError, match="fraction"):
        SlotCountingExercise("gpipe", hide=2)
    with pytest.raises(ValueError, match="at most 64 time steps"):
        SlotCountingExercise(simulate(schedules.gpipe(4, 8), Costs(comm=0.1)), mode="mark")


# -- ScheduleBuilder -----------------------------------------------------------------------------
def test_the_builder_reports_a_violation_as_it_happens():
    b = ScheduleBuilder(p=2, m=2)
    b.place(0, 0, "F0")
    b.place(1, 0, "F0")
    [v] = b.violations()
    assert v.kind == "dependency" and "F0 from GPU 0" in b.feedback.value
    assert "ppedu-violation" in b.cells.cells[1, 0]._dom_classes and not b.complete
    assert b.cells.cells[1, 0].layout.border.startswith("2px")
    b.remove(1, 0)
    assert b.violations() == [] and "ppedu-violation" not in b.cells.cells[1, 0]._dom_classes


def test_building_1f1b_by_clicking_completes_it():
    b = ScheduleBuilder(p=2, m=2)
    for e in simulate(schedules.one_f_one_b(2, 2)).events:
        b.picker.value = f"{e.op.kind}{e.op.microbatch}"
        b.cells.cells[e.stage, round(e.start)].click()
    assert b.complete and b.check().correct and "takes 6 time steps" in b.feedback.value
    assert b.timeline().makespan == 6 and b.schedule().stages == schedules.one_f_one_b(2, 2).stages
    b.cells.cells[0, 0].click()  # a click on a filled cell takes its op off
    assert not b.complete and "still needs F0" in str(b.check())


def test_the_builder_refuses_a_second_op_in_a_cell_and_unknown_labels():
    b = ScheduleBuilder(p=2, m=2, v=2)
    b.place(0, 0, "F0c0")
    with pytest.raises(ValueError, match="already holds F0c0"):
        b.place(0, 0, "F1c0")
    with pytest.raises(ValueError, match="needs its chunk"):
        b.place(0, 1, "F1")
    b.place(0, 1, "F1c1")
    assert [v.kind for v in b.violations()] == ["wrong-gpu"]
    with pytest.raises(ValueError, match="not complete"):
        b.timeline()


# -- TimelinePlayer ------------------------------------------------------------------------------
def test_the_player_steps_through_time():
    t = simulate(schedules.one_f_one_b(4, 4))
    player = TimelinePlayer(t)
    assert player.steps == 14 and blocks(player.diagram.value) == 0
    player.slider.value = 6
    assert player.running() == ("", "", "B0", "F1")  # GPU 0 first; the README's grid at t6
    drawn = blocks(player.diagram.value)
    assert drawn == sum(1 for e in t.events if e.start < 6) and "ppedu-now" in player.diagram.value
    assert blocks(player.seek(14).diagram.value) == len(t.events)
    with pytest.raises(ValueError, match="between 0 and 14"):
        player.seek(15)
    assert "ppedu-player" in player._dom_classes and player.slider.max == 14


def test_the_player_plays_to_the_end_and_its_button_says_what_it_does():
    player = TimelinePlayer(simulate(schedules.gpipe(2, 1)), interval_ms=1)
    assert player.play.description == "▶ play"

    async def play() -> None:
        player.play.value = True
        assert player.play.description == "❚❚ pause"
        while player.play.value:
            await asyncio.sleep(0.005)

    asyncio.run(play())
    assert player.step == player.steps and player.play.description == "▶ play"
    assert "GPU 0: B0" in player.caption.value


# -- still pictures for places without a widget renderer -------------------------------------------
def test_each_widget_carries_a_still_picture_beside_its_live_view():
    t = simulate(schedules.gpipe(2, 2))
    for widget in (ScheduleExplorer("gpipe", p=2, m=2), SlotCountingExercise(t), TimelinePlayer(t)):
        bundle = widget._repr_mimebundle_()
        assert "application/vnd.jupyter.widget-view+json" in bundle and "<svg" in bundle["text/html"]
    assert "place 4 operations" in ScheduleBuilder(p=2, m=1)._repr_mimebundle_()["text/html"]


def test_the_builders_challenge_is_the_searchs_best_order_on_the_same_grid():
    b = ScheduleBuilder(p=2, m=2, challenge=True)
    assert b.target() == 6  # 1F1B's 6 steps: nothing on this grid is faster
    for stage, step, op in [(0, 0, "F0"), (0, 1, "F1"), (1, 1, "F0"), (1, 2, "B0"), (1, 3, "F1"), (1, 4, "B1"),
                            (0, 3, "B0"), (0, 5, "B1")]:
        b.place(stage, step, op)
    assert b.check().messages[-1] == ("That is the fewest steps possible: no order of these operations takes fewer "
                                      "than 6 (the search tried them all).")
    b.remove(0, 5)
    b.place(0, 7, "B1")  # a valid but slower order
    assert "The search found an order in 6 steps: can you beat it?" in b.check().messages[-1]


def test_the_challenge_invites_a_better_order_only_where_one_may_exist():
    b = ScheduleBuilder(p=2, m=2, challenge=True)
    b._found = replace(b._search(), exact=False, lower_bound=5.0)  # a search that proved nothing
    assert b._verdict(6) == "That ties the search's best order (6 steps). Can you beat it?"
    assert ScheduleBuilder(p=2, m=2).check().messages[-1].find("search") == -1  # no challenge unless asked
