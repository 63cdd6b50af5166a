"""`synclint trace`: run any program under the runtime detector and rank its syncs by the host's wait.

- `command`: the subcommand (options, detector, table, report, exit status);
- `program`: running `python script.py` / `python -m module` in this process, and stopping it;
- `recording`: the events kept (after the warm-up, until a limit) and the report's sites;
- `table`: the table a person reads, with the static finding of each site beside it.

Only `command` imports torch, when a trace starts; the detector itself is `synclint.verify`'s.
"""
