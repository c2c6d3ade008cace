"""Animations for slides: frames follow the grid step by step; the GIF has one image per frame."""

import shutil

import pytest
from PIL import Image

from ppedu import Costs, schedules, simulate
from ppedu.animate import frames, save_animation
from ppedu.grid import grid


def test_frames_step_through_the_grid_and_count_finished_ops():
    t = simulate(schedules.one_f_one_b(4, 4))
    fs = frames(t)
    assert len(fs) == 15 and fs[0].done == 0 and fs[-1].done == len(t.events)
    assert fs[6].running == ("", "", "B0", "F1")  # GPU 0 first: the README's grid at t6
    assert all(a.done <= b.done for a, b in zip(fs, fs[1:]))
    assert [f.running for f in fs[1:]] == [tuple(grid(t).labels()[:, s]) for s in range(14)]


def test_frames_follow_the_grid_resolution_under_uneven_costs():
    t = simulate(schedules.gpipe(2, 2), Costs(f=0.5, b=1))
    fs = frames(t)
    assert fs[1].time == 0.5 and len(fs) == grid(t).shape[1] + 1


def test_a_gif_has_one_image_per_frame(tmp_path):
    t = simulate(schedules.gpipe(2, 2))
    path = save_animation(t, tmp_path / "gpipe.gif", fps=4)
    with Image.open(path) as gif:
        assert gif.n_frames == len(frames(t)) == 7


def test_unsupported_outputs_are_refused_with_a_reason(tmp_path):
    t = simulate(schedules.gpipe(2, 2))
    with pytest.raises(ValueError, match=r"\.gif or \.mp4"):
        save_animation(t, tmp_path / "x.avi")
    with pytest.raises(ValueError, match="fps"):
        save_animation(t, tmp_path / "x.gif", fps=0)
    if shutil.which("ffmpeg") is None:
        with pytest.raises(ValueError, match="needs ffmpeg"):
            save_animation(t, tmp_path / "x.mp4")
