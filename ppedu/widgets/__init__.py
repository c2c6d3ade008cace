"""Interactive widgets for the course (ipywidgets 8: JupyterLab 4, Notebook 7).

Each widget keeps its state and its checks in plain Python (``.set``, ``.check``, ``.place``, …),
so tests and the autograder drive it without a browser; the browser only shows it.
"""

from ppedu.widgets.builder import ScheduleBuilder
from ppedu.widgets.collectives import CollectiveExplorer
from ppedu.widgets.exercise import SlotCountingExercise
from ppedu.widgets.explorer import ScheduleExplorer
from ppedu.widgets.player import TimelinePlayer

__all__ = ["CollectiveExplorer", "ScheduleBuilder", "ScheduleExplorer", "SlotCountingExercise", "TimelinePlayer"]
