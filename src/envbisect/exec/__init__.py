"""Executors: where probe tasks run. One interface; a local pool is the default.

``Executor.submit(task)`` returns a ``concurrent.futures.Future`` of the task's
``ProbeRecord``; ``cancel_all()`` stops every task in flight (their process groups are
killed, nothing half-seen comes back) and drops the queued ones. A worker touches no store:
the controller (the session) records what comes back. Each executor is declared in
exec/kinds/ (its name, options and settings) and implemented beside it:

    local     threads in this process (the default): no pickling, live probe groups killed
              directly on Ctrl-C
    process   a pool of worker processes: every task and record crosses a pickle, as it
              would to another machine
    ray       a Ray cluster (exec/ray.py, the ``ray`` extra): one Ray task per probe, on the
              node Ray picks, with its GPUs pinned
    slurm     a Slurm cluster (exec/slurm.py): one batch job per probe, through the results
              folder the nodes share; ``scancel`` on Ctrl-C
"""
