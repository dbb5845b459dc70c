"""Real execution of placed graphs on this machine's devices, and its calibration (issue #14).

Entry points: :func:`execute` (next to :func:`engine.sim.simulator.simulate`, same result type),
:class:`Executor` for many runs with the same workers, :func:`scale_graph` for graphs whose
step is too long or too short to measure, and :mod:`engine.executor.calibration` for the
``placelab.cluster/1`` file that predicts this executor. torch is imported only inside the
worker processes and calibration, so ``import engine.executor`` does not need it.
"""

from engine.executor.plan import scale_graph
from engine.executor.pool import ExecutionError, Executor, Measurement, check_executable, execute

__all__ = ["ExecutionError", "Executor", "Measurement", "check_executable", "execute", "scale_graph"]
