"""The `synclint` command: `check` (the default), `rules`, `rule CODE`, `verify`, `trace`, `server`.

Exit codes, as ruff: 0 no findings, 1 findings, 2 usage, configuration or internal error.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from synclint.arguments import SUBCOMMANDS, UsageError, build_parser

if TYPE_CHECKING:
    from synclint.runtime import RuntimeSite

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def entry_point() -> int:
    """The `synclint` command (and `python -m synclint`): `main`, then out without tearing the
    interpreter down. Freeing libcst's classes and the rules object by object, and a last
    collection over them, took a tenth of a pre-commit run (mypy leaves the same way). Every
    file synclint writes is closed by then; only the standard streams need flushing. Under a
    profiler or a tracer (cProfile, coverage), which write their results at exit, it returns."""
    code = main()
    if sys.getprofile() is not None or sys.gettrace() is not None:
        return code
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except OSError:  # a closed pipe (`synclint check | head`), a full disk
            code = code or EXIT_ERROR
    os._exit(code)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if not argv or (argv[0] not in SUBCOMMANDS and argv[0] not in ("-h", "--help", "--version")):
            _not_a_misspelt_command(argv[0] if argv else None)
            argv.insert(0, "check")  # `synclint models/` reads as `synclint check models/`
        program = None
        if argv[0] == "trace" and not {"-h", "--help"} & set(argv[: argv.index("--") if "--" in argv else None]):
            if "--" not in argv:
                raise UsageError("synclint trace needs `--` before the program: "
                                 "synclint trace [options] -- python script.py [args...]")
            argv, program = argv[: argv.index("--")], argv[argv.index("--") + 1:]
        args = build_parser().parse_args(argv)
        if args.command == "rules":
            return cmd_rules()
        if args.command == "rule":
            return cmd_rule(args.code)
        if args.command == "clean":
            return cmd_clean(args)
        if args.command == "verify":
            from synclint.verify.command import run

            return run(args)
        if args.command == "trace":
            from synclint.trace.command import run as run_trace

            return run_trace(args, program or [])
        if args.command == "server":
            return cmd_server(args)
        return cmd_check(args, argv)
    except UsageError as exc:
        print(f"synclint: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("synclint: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_ERROR


def _not_a_misspelt_command(first: str | None) -> None:
    """`synclint chek pkg`: a first word that is no subcommand is a path to check, unless no such
    path exists and it is a subcommand misspelt; then, as ruff and git do, say which one was meant."""
    import difflib

    if first is None or first.startswith("-") or os.path.lexists(first):
        return
    close = difflib.get_close_matches(first, SUBCOMMANDS, n=1, cutoff=0.6)
    if close:
        raise UsageError(f"unrecognized subcommand {first!r} (and no file or folder of that name); "
                         f"did you mean `synclint {close[0]}`?")


# The settings a flag of the same name sets (`--ignore-contexts` sets `ignore-contexts`).
SETTING_FLAGS = ("select", "extend_select", "ignore", "min_confidence", "output_format", "exclude", "extend_exclude",
                 "ignore_contexts", "allow_sync_contexts", "host_name_patterns", "device_name_patterns")


def _overrides(args: argparse.Namespace) -> dict:
    overrides: dict = {}
    for key in SETTING_FLAGS:
        value = getattr(args, key, None)
        if value is not None:
            overrides[key.replace("_", "-")] = value
    if args.per_file_ignores is not None:
        table: dict[str, list[str]] = {}
        for glob, chosen in args.per_file_ignores:
            table.setdefault(glob, []).extend(chosen)
        overrides["per-file-ignores"] = table
    if args.extend_rules is not None:  # folders named on the command line are where the user stands
        overrides["extend-rules"] = [os.fspath(Path(folder).absolute()) for folder in args.extend_rules]
    if args.no_respect_gitignore:
        overrides["respect-gitignore"] = False
    if args.unsafe_fixes is not None:
        overrides["unsafe-fixes"] = args.unsafe_fixes
    if args.no_project_analysis:
        overrides["project-analysis"] = False
    if args.include_tests is not None:
        overrides["include-tests"] = args.include_tests
    return overrides


def cmd_check(args: argparse.Namespace, argv: list[str] | None = None) -> int:
    # Starting a check (libcst's node classes, the rules) makes some hundred thousand objects
    # that live as long as the process: the cycle collector is off until then (`_started`), and
    # then never scans them again. Measured: 41 collections instead of 94 in a pre-commit run
    # (about 6 ms), and in the workers a pool forks from here, a quarter less time collecting
    # (60 model files: 2.81 -> 2.69 s).
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _cmd_check(args, argv)
    finally:
        gc.unfreeze()
        (gc.enable if was_enabled else gc.disable)()


def _started() -> None:
    """Startup is over: what it made is kept out of the cycle collector's scans, which resume
    (and forked workers share those objects' pages instead of copying them)."""
    gc.freeze()
    gc.enable()


def _cmd_check(args: argparse.Namespace, argv: list[str] | None) -> int:
    _check_usage(args)
    replays = _replays(args, argv)
    if replays is None:
        return _check(args)
    from synclint.cache.replay import Record, captured, inputs_of

    record = replays.load()
    if record is not None:
        return record.play()  # nothing it depends on changed since the run that printed this
    started = time.time_ns()
    read: tuple[set[str], set[str], dict] = (set(), set(), {})
    with captured() as copies:
        code = _check(args, read)
    if code != EXIT_ERROR:
        output_file = None
        if args.output_file is not None:
            try:
                output_file = (os.fspath(args.output_file), args.output_file.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError):
                return code
        replays.save(Record(inputs_of(*read), *copies(), output_file, code), started)
    return code


def _print_phases(run) -> None:
    """What the run did, phase by phase (`-v`), and how many analyses it made of how many files."""
    for phase in run.phases:
        counts = f"{phase.cached} from the cache, {phase.analysed} analysed" if phase.unit == "files" else ""
        print(f"synclint: {phase.seconds:8.2f} s  {phase.label}: {phase.files} {phase.unit}"
              + (f" ({counts})" if counts else ""), file=sys.stderr)
    analyses = sum(phase.analysed for phase in run.phases)
    print(f"synclint: {analyses} analyses; {len(run.analysed_files)} files indexed, {len(run.files)} checked",
          file=sys.stderr)


def _replays(args: argparse.Namespace, argv: list[str] | None):
    """Where this command's last output is kept (synclint.cache.replay), or None when it cannot be
    replayed: it reads standard input, writes files, or runs without a cache."""
    if (argv is None or args.no_cache or args.fix or args.add_noqa or args.write_baseline is not None
            or args.verbose or [str(p) for p in args.paths] == ["-"]):
        return None
    from synclint.cache.replay import Replays, command_key
    from synclint.config import ConfigError, project_root

    cwd = Path.cwd()
    try:
        root = project_root(cwd, args.config)
    except (ConfigError, OSError):
        return None  # the check reports it
    return Replays(_cache_dir(args, root), command_key(argv, cwd))


def _check_usage(args: argparse.Namespace) -> None:
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    if args.fix and args.diff:
        raise UsageError("--fix and --diff cannot be combined: --diff writes nothing")
    if args.add_noqa and (args.fix or args.diff):
        raise UsageError("--add-noqa cannot be combined with --fix or --diff")
    stdin = [str(p) for p in args.paths] == ["-"]
    if not stdin and Path("-") in args.paths:
        raise UsageError("`-` (standard input) cannot be combined with other paths")
    if args.stdin_filename is not None and not stdin:
        raise UsageError("--stdin-filename needs `-` as the path")
    if stdin and args.add_noqa:
        raise UsageError("--add-noqa needs files: it cannot edit standard input")


def _check(args: argparse.Namespace, read: tuple[set[str], set[str], dict] | None = None) -> int:
    """The check itself; the folders and files its output depends on are added to `read`, with
    the signatures the run already took of some of them."""
    from synclint.config import ConfigError, SettingsResolver
    from synclint.progress import Progress, display
    from synclint.runner import Mode, run_paths, run_stdin

    stdin = [str(p) for p in args.paths] == ["-"]
    cwd = Path.cwd()
    mode = Mode(fix=args.fix or args.diff, write=args.fix, unsafe=bool(args.unsafe_fixes), add_noqa=args.add_noqa,
                debug=args.debug)
    try:
        resolver = SettingsResolver(args.config, _overrides(args), cwd)
        settings = resolver.default()
        _started()
        if stdin:
            data = sys.stdin.buffer.read()
            run = run_stdin(data, args.stdin_filename, resolver, mode, cwd, _cache(args, settings))
        else:
            with Progress(display(quiet=args.quiet)) as progress:  # erased before anything else is printed
                run = run_paths(args.paths or [Path(".")], resolver, mode, jobs=args.jobs,
                                force_exclude=args.force_exclude, cwd=cwd, cache=_cache(args, settings),
                                progress=progress)
    except ConfigError as exc:
        print(f"synclint: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    if read is not None:
        folders, files = resolver.files_read()
        read[0].update(run.walked_folders, folders)
        read[1].update(run.read_files, files, (os.fspath(p) for p in (args.config, args.baseline, args.runtime_report) if p))
        read[2].update(run.signatures)
    for warning in run.warnings:
        print(f"synclint: warning: {warning}", file=sys.stderr)
    if args.verbose:
        _print_phases(run)
    no_files = not stdin and not run.files and not run.problems
    if no_files and not args.quiet:
        print("synclint: warning: No Python files found under the given paths", file=sys.stderr)  # as ruff
    if args.diff:
        return _report_diff(run, args)
    if stdin and args.fix:
        return _report_stdin_fix(run, data, args, settings)
    if args.add_noqa:
        return _report_add_noqa(run)
    findings = run.findings
    if args.write_baseline is not None:
        return _write_baseline(args.write_baseline, findings, run, cwd, _scope(run, args, cwd))
    baseline = args.baseline if args.baseline is not None else settings.baseline
    if baseline is not None:
        from synclint.baseline import Baseline, BaselineError

        try:
            findings, stale = Baseline.load(baseline).filter(findings, cwd, _scope(run, args, cwd))
        except BaselineError as exc:
            print(f"synclint: error: {exc}", file=sys.stderr)
            return EXIT_ERROR
        if stale:
            print(f"synclint: {stale} baseline entr{'ies' if stale != 1 else 'y'} no longer found (fixed or "
                  f"changed); shrink {_shown(baseline, cwd)} with --write-baseline", file=sys.stderr)
    missed: list[RuntimeSite] = []
    runtime_report = args.runtime_report
    if runtime_report is None and settings.runtime_report is not None:
        runtime_report = settings.runtime_report
        if not runtime_report.exists():  # configured before any run wrote it: nothing measured yet
            print(f"synclint: warning: runtime-report {runtime_report} does not exist (yet): no measured syncs",
                  file=sys.stderr)
            runtime_report = None
    if runtime_report is not None:
        from synclint.runtime import RuntimeReportError, confirm, load_sites

        try:
            findings, missed = confirm(findings, load_sites(runtime_report), cwd)
        except RuntimeReportError as exc:
            print(f"synclint: error: {exc}", file=sys.stderr)
            return EXIT_ERROR
    stream, close = sys.stdout, False
    if args.output_file is not None:
        try:
            stream, close = open(args.output_file, "w", encoding="utf-8"), True
        except OSError as exc:
            print(f"synclint: error: cannot write {args.output_file}: {exc.strerror}", file=sys.stderr)
            return EXIT_ERROR
    try:
        if args.statistics:
            from synclint.report.statistics import write_statistics

            write_statistics(findings, stream, run.hidden_tests, run.hidden_contexts, settings.output_format)
        else:
            from synclint.report import render
            from synclint.report.text import Outcome

            color = False if close else None
            outcome = Outcome(run.hidden_tests, len(run.problems), args.quiet, no_files, run.hidden_contexts)
            render(settings.output_format, findings, stream, color=color, rules=settings.enabled_rules(),
                   outcome=outcome)
    finally:
        if close:
            stream.close()
    if missed:
        from synclint.runtime import format_wait

        print(f"synclint: {len(missed)} sync site(s) seen at runtime that no rule found:", file=sys.stderr)
        for site in missed:
            waited = "" if site.wait_s is None else f", {format_wait(site.wait_s)} waited"
            print(f"  {site.shown(cwd)}: {site.op} ({site.count}x{waited})", file=sys.stderr)
    if args.fix and not args.quiet:
        _print_fix_summary(run, findings)
    for problem in run.problems:
        print(f"synclint: error: {problem}", file=sys.stderr)
    if run.problems:
        return EXIT_ERROR
    if args.fix and args.exit_non_zero_on_fix and sum(run.fixed.values()):
        return EXIT_FINDINGS
    if findings and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _report_diff(run, args) -> int:
    diffs = [item.diff for item in run.files if item.diff]
    for diff in diffs:
        sys.stdout.write(diff if diff.endswith("\n") else diff + "\n")
    fixed = sum(run.fixed.values())
    if not args.quiet:
        print(f"Would fix {fixed} finding{'s' if fixed != 1 else ''} in {len(diffs)} file{'s' if len(diffs) != 1 else ''}.",
              file=sys.stderr)
    for problem in run.problems:
        print(f"synclint: error: {problem}", file=sys.stderr)
    if run.problems:
        return EXIT_ERROR
    return EXIT_FINDINGS if diffs and not args.exit_zero else EXIT_CLEAN


def _report_stdin_fix(run, data: bytes, args, settings) -> int:
    """`synclint check --fix -`: the fixed source on stdout (as ruff does), findings left on stderr."""
    fixed = run.files[0].new_bytes
    sys.stdout.buffer.write(data if fixed is None else fixed)
    sys.stdout.flush()
    findings = run.findings
    if findings:
        from synclint.report import render

        render("concise", findings, sys.stderr, color=False, rules=settings.enabled_rules())
    for problem in run.problems:
        print(f"synclint: error: {problem}", file=sys.stderr)
    if run.problems:
        return EXIT_ERROR
    return EXIT_FINDINGS if findings and not args.exit_zero else EXIT_CLEAN


def _report_add_noqa(run) -> int:
    """What `--add-noqa` did; the findings no comment could silence (a line that cannot end in one)
    are reported as a check reports them, and make the exit code 1."""
    added = sum(run.noqa_added.values())
    files = run.noqa_files
    print(f"Added {added} noqa directive{'s' if added != 1 else ''} in {files} file{'s' if files != 1 else ''}.",
          file=sys.stderr)
    for problem in run.problems:
        print(f"synclint: error: {problem}", file=sys.stderr)
    if run.problems:
        return EXIT_ERROR
    left = [f for f in run.findings if f.code not in ("SYNC000", "SYNC001")]
    if left:
        print(f"synclint: {len(left)} finding{'s' if len(left) != 1 else ''} left without a `# noqa`: "
              "see the warnings above", file=sys.stderr)
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _scope(run, args: argparse.Namespace, cwd: Path):
    """The baseline entries this run may judge: those of the files it checked (synclint.baseline.Scope)."""
    from synclint.baseline import Scope

    return Scope.of([item.result.path for item in run.files], args.paths or [Path(".")], cwd)


def _shown(path: Path, cwd: Path) -> str:
    """A path as the messages show it: relative to the working directory when it is below it."""
    try:
        return os.fspath(path.relative_to(cwd)) if path.is_absolute() else os.fspath(path)
    except ValueError:
        return os.fspath(path)


def _write_baseline(path: Path, findings, run, cwd: Path, scope) -> int:
    from synclint.baseline import BaselineError, write_baseline

    try:
        count, kept = write_baseline(path, findings, cwd, scope)
    except BaselineError as exc:
        print(f"synclint: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    others = f" (and kept {kept} of files this run did not check)" if kept else ""
    print(f"Wrote {count} finding{'s' if count != 1 else ''} to {path}{others}.", file=sys.stderr)
    for problem in run.problems:
        print(f"synclint: error: {problem}", file=sys.stderr)
    return EXIT_ERROR if run.problems else EXIT_CLEAN


def _print_fix_summary(run, remaining) -> None:
    from synclint.model import Applicability

    fixed = run.fixed
    total = sum(fixed.values())
    per_rule = ", ".join(f"{code}: {n}" for code, n in sorted(fixed.items()))
    line = f"Fixed {total} finding{'s' if total != 1 else ''}" + (f" ({per_rule})" if per_rule else "") + "."
    unsafe = sum(1 for f in remaining if f.fix is not None and f.fix.applicability is Applicability.UNSAFE)
    if unsafe:
        line += f" {unsafe} more fixable with --unsafe-fixes."
    print(line, file=sys.stderr)


def _cache_dir(args: argparse.Namespace, root: Path) -> Path:
    from synclint.cache.store import DEFAULT_DIR

    if args.cache_dir is not None:
        return args.cache_dir
    return Path(os.environ.get("SYNCLINT_CACHE_DIR") or root / DEFAULT_DIR)


def _cache(args: argparse.Namespace, settings):
    if args.no_cache:
        return None
    from synclint.cache.store import Cache

    return Cache(_cache_dir(args, settings.root))


def cmd_clean(args: argparse.Namespace) -> int:
    from synclint.cache.store import clean
    from synclint.config import ConfigError, SettingsResolver

    try:
        root = SettingsResolver(None, {}, Path.cwd()).default().root
    except ConfigError:
        root = Path.cwd()
    directory = _cache_dir(args, root)
    try:
        removed = clean(directory)
    except OSError as exc:
        print(f"synclint: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    print(f"Removed {directory}." if removed else f"No cache at {directory}.", file=sys.stderr)
    return EXIT_CLEAN


def cmd_server(args: argparse.Namespace) -> int:
    from synclint.server import missing_extra

    problem = missing_extra()
    if problem is not None:
        print(f"synclint: error: {problem}", file=sys.stderr)
        return EXIT_ERROR
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    from synclint.server.app import serve

    return serve(args.cache_dir, args.jobs)


def cmd_rules() -> int:
    from synclint.docs import rule_table

    print(rule_table())
    return EXIT_CLEAN


def cmd_rule(code: str) -> int:
    from synclint.registry import all_rules

    rules = all_rules()
    wanted = code.upper()
    for rule in rules.values():
        if rule.code == wanted or rule.name == code:
            print(rule.markdown())
            return EXIT_CLEAN
    print(f"synclint: error: no rule {code!r} (see `synclint rules`)", file=sys.stderr)
    return EXIT_ERROR


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
