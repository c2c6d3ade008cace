"""The spacetime diagram stepped through time, as frames and as a GIF (or MP4) for slides
that run without a kernel.

>>> from ppedu import schedules, simulate
>>> [f.running for f in frames(simulate(schedules.gpipe(2, 1)))]
[('', ''), ('F0', ''), ('', 'F0'), ('', 'B0'), ('B0', '')]
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from matplotlib.animation import FFMpegWriter, FuncAnimation, PillowWriter
from matplotlib.patches import Rectangle

from ppedu.grid import grid
from ppedu.plot import TEXT_PT, plot_timeline
from ppedu.simulate import Timeline
from ppedu.validate import whole


@dataclass(frozen=True)
class Frame:
    """The diagram at the end of time step ``step`` (0: before anything runs): the time that is,
    what each GPU ran in that step (GPU 0 first, ``""`` where idle) and how many ops are done."""

    step: int
    time: float
    running: tuple[str, ...]
    done: int


def frames(timeline: Timeline, dt: float | None = None) -> tuple[Frame, ...]:
    """One frame per time step of ``timeline``'s grid, plus the empty frame 0."""
    g = grid(timeline, dt)
    labels = g.labels()
    ends = sorted(e.end for e in timeline.events)
    out = [Frame(0, 0.0, ("",) * timeline.p, 0)]
    done = 0
    for step in range(1, g.shape[1] + 1):
        time = step * g.dt
        while done < len(ends) and ends[done] <= time + 1e-9:
            done += 1
        out.append(Frame(step, time, tuple(str(x) for x in labels[:, step - 1]), done))
    return tuple(out)


def save_animation(timeline: Timeline, path: str | Path, fps: int = 2, dpi: int = 100) -> Path:
    """Write the diagram revealed step by step to ``path``: a ``.gif`` (Pillow, always available)
    or an ``.mp4`` (only where an ``ffmpeg`` is installed). Returns the path written."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".gif", ".mp4"):
        raise ValueError(f"an animation is saved as .gif or .mp4 (got {path.name!r})")
    if suffix == ".mp4" and shutil.which("ffmpeg") is None:
        raise ValueError("writing .mp4 needs ffmpeg, which is not installed here; save a .gif instead")
    whole("fps", fps, "frames per second")
    steps = frames(timeline)
    fig = plot_timeline(timeline)
    ax = fig.axes[0]
    end = timeline.makespan or 1.0
    # The future is covered, and a line marks "now", so the diagram fills in as time passes.
    cover = Rectangle((0, -0.6), end, timeline.p + 0.2, facecolor="white", edgecolor="none", alpha=0.92, zorder=3)
    ax.add_patch(cover)
    now = ax.axvline(0, color="#D55E00", linewidth=2, zorder=4)
    title = ax.get_title()

    def caption(frame: Frame) -> str:
        doing = ", ".join(f"GPU {s}: {x}" for s, x in enumerate(frame.running) if x)
        return f"{title}\n" + (f"t{frame.step}  {doing}" if frame.step else "t0: nothing has run yet")

    # The caption is the title's second line; the layout is fixed for its longest text, so frames do not jitter.
    ax.set_title(max((caption(f) for f in steps), key=len), fontsize=TEXT_PT)
    fig.draw_without_rendering()
    fig.set_layout_engine("none")

    def draw(frame: Frame) -> tuple:
        cover.set_x(frame.time)
        cover.set_width(max(end - frame.time, 0.0))
        now.set_xdata([frame.time, frame.time])
        ax.set_title(caption(frame), fontsize=TEXT_PT)
        return cover, now

    writer = PillowWriter(fps=fps) if suffix == ".gif" else FFMpegWriter(fps=fps)
    FuncAnimation(fig, draw, frames=steps, blit=False, repeat=False).save(str(path), writer=writer, dpi=dpi)
    return path
