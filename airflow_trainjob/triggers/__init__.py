"""The provider's trigger (:mod:`.training_job`), its shared stream, and what keeps the triggerer's loop free.

The triggerer imports this package on its event loop at the first training trigger: what the process holds then
is frozen out of the garbage collector's full collections (:mod:`.heap`).
"""

from airflow_trainjob.triggers import heap as _heap

if _heap.in_triggerer():
    _heap.freeze_long_lived()
