"""`synclint trace`: run any program, or every rank of a job, under the runtime detector and rank its syncs by the host's wait.

- `command`: the subcommand (options, one process or a job, table, report, timeline, exit status);
- `program`: running `python script.py` / `python -m module` in this process, and stopping it; launchers;
- `session`: what watches a traced process (the detector, the timer, the pageable copies, the steps);
- `timing`: when the call that synced started (Python 3.12's `sys.monitoring`);
- `copies`: the non-blocking copies through pageable memory, waits the debug mode does not flag;
- `recording`: the events kept (after the warm-up, until a limit) and the report's sites;
- `job`: running a launcher with its ranks traced, stopping it, passing its output through;
- `rank`: tracing one rank, from a `sitecustomize`, into a file written as it runs;
- `processes`: one traced process read back, and the sites over all of them;
- `table`: the table a person reads, with the static finding of each site beside it;
- `timeline`: the Chrome trace (Perfetto) of the run.

Only `session`, `copies` and `command` (when a trace starts) import torch; the detector itself is `synclint.verify`'s.
"""
