"""ppedu: pipeline-parallel training, taught by simulation.

>>> from ppedu import Costs, schedules, simulate
>>> simulate(schedules.one_f_one_b(4, 4), Costs(f=1, b=1)).bubble_ratio
0.42857142857142855
"""

from ppedu import schedules
from ppedu.costs import Costs, PerChunk
from ppedu.ops import Op, Schedule
from ppedu.partition import Partition, partition
from ppedu.rounding import show_rounded_in_ipython
from ppedu.simulate import Event, Timeline, simulate

__all__ = ["Costs", "Event", "Op", "Partition", "PerChunk", "Schedule", "Timeline", "partition", "schedules",
           "simulate"]

# Every chapter imports ppedu first: from then on its outputs show floats rounded (the values stay exact).
show_rounded_in_ipython()
