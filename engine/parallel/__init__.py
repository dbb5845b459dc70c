"""Running independent tasks in this process or on Ray (``tasks``), joining a Ray cluster (``ray_cluster``),
and stopping the local Ray runtimes a killed placelab left behind (``ray_runtimes``).

No placer lives here: sweeps, reproductions and rollout workers hand their tasks to :class:`ParallelMap
<engine.parallel.tasks.ParallelMap>`. Ray is imported only when a task runs on it.
"""
