"""The relay between ps8's rank sandboxes (ppedu/grading/relay.py), driven request by request as the ranks' drivers
drive it: it computes what it carries, refuses what ranks do not issue alike, makes a send wait for its receive,
counts what each rank sent, gives each rank only its own data, and ends a run's call on all its ranks together."""

import time

import pytest
import torch

from ppedu.grading import relay as relays
from ppedu.grading.relay import Relay, decode, encode
from ppedu.grading.service import Refused

SPEC = ["demo", 2, 0, 0]


def _data(spec, seed, rank):
    return {"x": torch.full((4,), float(rank + 1), dtype=torch.float64), "seed": torch.tensor([seed])}


def _begun(hold=False):
    relay = Relay([[SPEC]], _data, hold=lambda spec: hold)
    begun = [relay.handle(r, {"id": 0, "begin": SPEC}) for r in (0, 1)]
    return relay, begun


def _issue(relay, rank, message, box):
    return relay.handle(rank, {"id": len(box), **message}, box.append)


def test_each_rank_gets_its_own_data_from_a_seed_the_relay_keeps():
    relay, begun = _begun()
    assert [decode(b["data"]["x"]).tolist() for b in begun] == [[1.0] * 4, [2.0] * 4]
    seeds = {int(decode(b["data"]["seed"])[0]) for b in begun}
    assert seeds == {relay.observed(0)["seed"]}
    with pytest.raises(Refused, match="begun twice"):
        relay.handle(0, {"id": 1, "begin": SPEC})
    with pytest.raises(Refused, match="did not ask for"):
        relay.handle(2, {"id": 1, "begin": ["demo", 2, 0, 99]})
    idle = Relay([[SPEC]], _data).handle(3, {"id": 0, "begin": SPEC})
    assert idle == {"id": 0, "idle": True, "world": 2}  # a rank beyond the run's world takes no part


def test_collectives_are_computed_by_the_relay_and_counted():
    relay, _ = _begun()
    got = []
    for r in (0, 1):
        x = torch.arange(4, dtype=torch.float64) + 10 * r
        _issue(relay, r, {"op": "reduce-scatter", "reduce": "sum", "t": encode(x)}, got)
    assert [decode(g["t"]).tolist() for g in got] == [[10.0, 12.0], [14.0, 16.0]]
    got = []
    for r in (0, 1):
        _issue(relay, r, {"op": "all-gather", "t": encode(torch.full((2,), float(r), dtype=torch.float64))}, got)
    assert all(decode(g["t"]).tolist() == [0.0, 0.0, 1.0, 1.0] for g in got)
    seen = relay.observed(0)
    assert [(c["kind"], c["bytes"]) for c in seen["collectives"]] == [("reduce-scatter", 32), ("all-gather", 32)]
    assert seen["sent"] == [48, 48]


def test_ranks_that_issue_different_collectives_fail_the_run_on_every_rank():
    relay, _ = _begun()
    got = []
    _issue(relay, 0, {"op": "all-reduce", "reduce": "sum", "t": encode(torch.ones(4))}, got)
    with pytest.raises(Refused, match="every rank must issue the same collectives"):
        _issue(relay, 1, {"op": "all-reduce", "reduce": "sum", "t": encode(torch.ones(5))}, got)
    assert "refused" in got[0]  # rank 0, waiting, is told too
    with pytest.raises(Refused, match="already failed"):
        _issue(relay, 0, {"op": "barrier"}, got)


def test_a_send_waits_for_its_receive_and_each_message_is_counted():
    relay, _ = _begun()
    sent, received = [], []
    _issue(relay, 0, {"op": "send", "peer": 1, "tag": 3, "t": encode(torch.ones(3, dtype=torch.float64))}, sent)
    assert sent == []  # no receive posted yet: the send has not completed
    _issue(relay, 1, {"op": "recv", "peer": 0, "tag": 3, "like": {"dtype": "float64", "shape": [3]}}, received)
    assert sent == [{"id": 0}] and decode(received[0]["t"]).tolist() == [1.0, 1.0, 1.0]
    assert relay.observed(0)["messages"] == [[0, 1, 24, 3]]
    with pytest.raises(Refused, match="name another of the 2 ranks"):
        _issue(relay, 0, {"op": "send", "peer": 0, "tag": 0, "t": encode(torch.ones(1))}, sent)


@pytest.mark.parametrize("tag", [-1, 2 ** 31, 2 ** 200, 1.0, "0", True])
def test_a_tag_is_a_32_bit_non_negative_int_never_a_side_channel(tag):
    relay, _ = _begun()
    with pytest.raises(Refused, match="a tag is an int from 0 to 2147483647"):
        _issue(relay, 0, {"op": "send", "peer": 1, "tag": tag, "t": encode(torch.ones(1))}, [])
    _issue(relay, 1, {"op": "recv", "peer": 0, "tag": 2 ** 31 - 1, "like": {"dtype": "float32", "shape": [1]}}, [])


def test_a_call_ends_on_all_its_ranks_together_with_each_ranks_claim():
    relay, _ = _begun()
    ended = []
    assert relay.handle(0, {"id": 5, "end": {"mine": 0}}, ended.append) is None  # waits for rank 1
    assert relay.handle(1, {"id": 6, "end": {"mine": 1}}, ended.append) == {"id": 6}
    assert ended == [{"id": 5}] and relay.observed(0)["claims"] == [{"mine": 0}, {"mine": 1}]


def test_a_drivers_marks_cut_the_record_into_steps():
    relay, _ = _begun()
    got = []
    for step in range(2):
        for r in (0, 1):
            assert relay.handle(r, {"id": 100 + step, "mark": True}) == {"id": 100 + step}
            _issue(relay, r, {"op": "all-reduce", "reduce": "sum", "t": encode(torch.ones(2))}, got)
    seen = relay.observed(0)
    assert seen["marks"] == [[0, 1], [0, 1]]  # each step begins at the index of the collective it issues next
    assert [c["index"] for c in seen["collectives"]] == [0, 1]


def test_held_collectives_show_which_were_in_flight_together():
    relay, _ = _begun(hold=True)
    got = []
    for r in (0, 1):
        _issue(relay, r, {"op": "all-reduce", "reduce": "sum", "t": encode(torch.ones(2))}, got)
    assert got == []  # held until every rank has issued the next
    for r in (0, 1):
        _issue(relay, r, {"op": "all-reduce", "reduce": "sum", "t": encode(torch.ones(2))}, got)
    assert len(got) == 2  # the first, completed: both ranks had launched the second; the second waits its hold
    time.sleep(relays.HOLD_SECONDS + 0.05)
    relay.tick()
    assert len(got) == 4
    assert [c["in_flight"] for c in relay.observed(0)["collectives"]] == [[True, True], [False, False]]


def test_limits_on_what_a_rank_sends():
    with pytest.raises(RuntimeError, match="carries at most"):
        encode(torch.zeros(10_000_000, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="carries float32"):
        encode(torch.zeros(2, dtype=torch.bfloat16))
    with pytest.raises(Refused, match="not a tensor"):
        decode({"dtype": "float64", "shape": [2], "data": 5})
    with pytest.raises(Refused, match="do not match"):
        decode({"dtype": "float64", "shape": [3], "data": encode(torch.ones(2, dtype=torch.float64))["data"]})
