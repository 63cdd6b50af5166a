#!/usr/bin/env python3
"""How fast `synclint server` answers an editor, on vLLM 0.33.0's tree: it plays the editor over stdio.

What it measures, with pygls's LSP client talking to `PYTHON -m synclint server --cache-dir DIR`
started in the tree's parent folder (the workspace folder), each time from the message sent to the
`textDocument/publishDiagnostics` received for it:

  cold, first open          didOpen of --file, the package never indexed (DIR empty): the file's own findings
  cold, cross-file          the same open until the findings with the package's facts arrive (the server
                            indexes the package in the background, shown as $/progress: its begin and end too)
  warm, edit                didChange of the open file, the index warm (--edits times, alternately adding and
                            removing a line with a sync, so the findings change): median, 90th percentile, max;
                            the server waits DEBOUNCE_S for typing to pause, which is counted
  warm, open another file   didOpen of --other with the index warm
  warm start, first open    a new server on the same cache (the editor restarted): didOpen of --file, with the
                            cross-file findings at once (no index run)

Nothing is written in the tree (it may be read-only): the cache lives in DIR, edits stay in the
buffer. Reproducible measurements, not tests: it prints a table and asserts nothing.

Usage:
    python bench/lsp_latency.py --tree /work/vllm-src/vllm/0.33.0/vllm
    python bench/lsp_latency.py --tree TREE --edits 30 --cache-dir /tmp/lsp-cache --keep-cache   # warm rows only, on a kept cache
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

# A line that makes the host wait (SYNC101 at medium confidence: a tensor parameter of a module's
# method used as a bool), inserted in the body of the first `def forward(` of the file that takes
# `hidden_states` (else a module-level one at the end), and removed again.
SYNC_LINE = "{indent}assert hidden_states.isfinite().all()\n"


class Editor:
    """The editor's side: one server process, its notifications kept with their arrival times."""

    def __init__(self, python: str, workspace: Path, cache_dir: Path, stderr_log: Path) -> None:
        self.python, self.workspace, self.cache_dir, self.stderr_log = python, workspace, cache_dir, stderr_log
        self.client = LanguageClient("lsp-latency-bench", "1")
        self.published: list[tuple[float, types.PublishDiagnosticsParams]] = []
        self.progress: list[tuple[float, str, str]] = []  # (time, kind, title or message)
        self.arrived = asyncio.Event()
        self.versions: dict[str, int] = {}

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def publish(params: types.PublishDiagnosticsParams) -> None:
            self.published.append((time.perf_counter(), params))
            self.arrived.set()

        @self.client.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
        def create(params: types.WorkDoneProgressCreateParams) -> None:
            return None

        @self.client.feature(types.PROGRESS)
        def progress(params: types.ProgressParams) -> None:
            value = params.value if isinstance(params.value, dict) else {}
            self.progress.append((time.perf_counter(), value.get("kind", ""), value.get("title") or value.get("message", "")))

        @self.client.feature(types.WINDOW_SHOW_MESSAGE)
        def show(params: types.ShowMessageParams) -> None:
            print(f"server says: {params.message}", file=sys.stderr)

        @self.client.feature(types.CLIENT_REGISTER_CAPABILITY)
        def register(params: types.RegistrationParams) -> None:
            return None

    async def start(self) -> None:
        await self.client.start_io(self.python, "-m", "synclint", "server", "--cache-dir", str(self.cache_dir))
        self._drain = asyncio.ensure_future(self._keep_stderr())
        capabilities = types.ClientCapabilities(
            window=types.WindowClientCapabilities(work_done_progress=True),
            text_document=types.TextDocumentClientCapabilities(
                synchronization=types.TextDocumentSyncClientCapabilities(did_save=True),
                publish_diagnostics=types.PublishDiagnosticsClientCapabilities(version_support=True)),
        )
        uri = self.workspace.as_uri()
        await self.client.initialize_async(types.InitializeParams(
            capabilities=capabilities, process_id=os.getpid(), root_uri=uri,
            workspace_folders=[types.WorkspaceFolder(uri=uri, name=self.workspace.name)]))
        self.client.initialized(types.InitializedParams())

    async def _keep_stderr(self) -> None:
        server = self.client._server
        with open(self.stderr_log, "ab") as log:
            while server is not None and server.stderr is not None and (line := await server.stderr.readline()):
                log.write(line)

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        if self.client._server is not None:
            await self.client._server.wait()
        self._drain.cancel()
        await self.client.stop()

    async def next_publish(self, uri: str, after: int, version: int | None = None,
                           timeout: float = 1800) -> tuple[float, types.PublishDiagnosticsParams, int]:
        """The first diagnostics for `uri` (at `version`, if given) among those published after
        the first `after`: when they came, what they were, and how many came up to them."""

        async def wait():
            while True:
                for i, (when, params) in enumerate(self.published[after:], after):
                    if params.uri == uri and (version is None or params.version == version):
                        return when, params, i + 1
                self.arrived.clear()
                await self.arrived.wait()

        return await asyncio.wait_for(wait(), timeout)

    def open(self, path: Path, text: str) -> tuple[str, float, int]:
        uri = path.as_uri()
        self.versions[uri] = 1
        mark = len(self.published)
        sent = time.perf_counter()
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
        return uri, sent, mark

    def change(self, uri: str, text: str) -> tuple[int, float, int]:
        self.versions[uri] += 1
        mark = len(self.published)
        sent = time.perf_counter()
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
            [types.TextDocumentContentChangeWholeDocument(text=text)]))
        return self.versions[uri], sent, mark


def with_sync_line(text: str) -> str:
    """The text with SYNC_LINE as the first statement of the body of the first `def forward(`
    that takes `hidden_states`."""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.lstrip().startswith("def forward("):
            j = i
            while not lines[j].rstrip().endswith(":"):  # the signature may span lines
                j += 1
            if "hidden_states" not in "".join(lines[i:j + 1]):
                continue
            body = lines[j + 1]
            indent = body[: len(body) - len(body.lstrip())]
            return "".join([*lines[: j + 1], SYNC_LINE.format(indent=indent), *lines[j + 1:]])
    # No such method: a module-level line (SYNC101 at high confidence) at the end of the file.
    return text + ("" if text.endswith("\n") else "\n") + 'assert torch.ones(1, device="cuda").all()\n'


def codes(params: types.PublishDiagnosticsParams) -> str:
    found: dict[str, int] = {}
    for d in params.diagnostics:
        found[str(d.code)] = found.get(str(d.code), 0) + 1
    return ", ".join(f"{code} x{n}" for code, n in sorted(found.items())) or "none"


async def measure(args: argparse.Namespace) -> list[tuple[str, str, str]]:
    tree = args.tree.resolve()
    workspace = tree.parent
    target = tree / args.file
    other = tree / args.other
    text = target.read_text(encoding="utf-8")
    cache_dir = args.cache_dir
    rows: list[tuple[str, str, str]] = []
    log = Path(tempfile.gettempdir()) / "lsp_latency_server.log"
    log.write_bytes(b"")

    editor = Editor(args.python, workspace, cache_dir, log)
    await editor.start()
    if not args.keep_cache:
        uri, sent, mark = editor.open(target, text)
        when, first, seen = await editor.next_publish(uri, mark)
        rows.append(("cold, first open (the file's own findings)", f"{when - sent:.2f} s", codes(first)))
        when, second, _ = await editor.next_publish(uri, seen)
        begin = next((t for t, kind, _ in editor.progress if kind == "begin"), None)
        end = next((t for t, kind, _ in editor.progress if kind == "end"), None)
        rows.append(("cold, cross-file findings (package indexed)", f"{when - sent:.1f} s", codes(second)))
        if begin is not None and end is not None:
            rows.append(("  $/progress begin -> end (the index run)", f"{begin - sent:.2f} s -> {end - sent:.1f} s",
                         next(message for _, kind, message in editor.progress if kind == "end")))
    else:
        uri, sent, mark = editor.open(target, text)
        when, first, _ = await editor.next_publish(uri, mark)
        rows.append(("warm start, first open (kept cache)", f"{when - sent:.2f} s", codes(first)))

    latencies = []
    edited = with_sync_line(text)
    with_line = None
    for n in range(args.edits):
        await asyncio.sleep(args.pause)
        version, sent, mark = editor.change(uri, edited if n % 2 == 0 else text)
        when, params, _ = await editor.next_publish(uri, mark, version)
        latencies.append(when - sent)
        with_line = params if n % 2 == 0 else with_line
    if latencies and with_line is not None:
        latencies.sort()
        p90 = latencies[min(len(latencies) - 1, int(0.9 * len(latencies)))]
        rows.append((f"warm, edit -> diagnostics ({len(latencies)} edits)",
                     f"median {statistics.median(latencies):.3f} s, p90 {p90:.3f} s, max {latencies[-1]:.3f} s",
                     f"with the added line: {codes(with_line)}"))

    other_uri, sent, mark = editor.open(other, other.read_text(encoding="utf-8"))
    when, params, _ = await editor.next_publish(other_uri, mark)
    rows.append((f"warm, open another file ({args.other})", f"{when - sent:.2f} s", codes(params)))
    await editor.stop()

    restarted = Editor(args.python, workspace, cache_dir, log)
    await restarted.start()
    uri, sent, mark = restarted.open(target, text)
    when, params, _ = await restarted.next_publish(uri, mark)
    rows.append(("warm start, first open (a new server, the cache warm)", f"{when - sent:.2f} s", codes(params)))
    await asyncio.sleep(1.0)
    rows.append(("  index runs started by the new server", str(sum(1 for _, k, _ in restarted.progress if k == "begin")), ""))
    await restarted.stop()
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", type=Path, default=Path("/work/vllm-src/vllm/0.33.0/vllm"), help="the package (default: %(default)s)")
    parser.add_argument("--file", default="model_executor/models/llama.py", help="the file edited, under the tree (default: %(default)s)")
    parser.add_argument("--other", default="model_executor/models/qwen2.py", help="a second file opened (default: %(default)s)")
    parser.add_argument("--edits", type=int, default=20, help="edits timed (default: %(default)s)")
    parser.add_argument("--pause", type=float, default=0.5, help="seconds between edits (default: %(default)s)")
    parser.add_argument("--cache-dir", type=Path, help="the server's cache (default: a new temporary folder)")
    parser.add_argument("--keep-cache", action="store_true", help="use --cache-dir as it is: no cold rows")
    parser.add_argument("--python", default=sys.executable, help="the interpreter that has synclint[server] (default: this one)")
    args = parser.parse_args()
    temporary = None
    if args.cache_dir is None:
        if args.keep_cache:
            parser.error("--keep-cache needs --cache-dir")
        temporary = args.cache_dir = Path(tempfile.mkdtemp(prefix="synclint-lsp-bench-"))
    elif not args.keep_cache and args.cache_dir.exists():
        shutil.rmtree(args.cache_dir)
    args.cache_dir = args.cache_dir.resolve()
    started = time.time()
    load = os.getloadavg()
    try:
        rows = asyncio.run(measure(args))
    finally:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)
    n_files = sum(1 for _ in args.tree.rglob("*.py"))
    print(f"synclint server on {args.tree} ({n_files} .py files); edited file: {args.file} "
          f"({len((args.tree / args.file).read_text(encoding='utf-8').splitlines())} lines)")
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"load average {load[0]:.2f} at the start and {os.getloadavg()[0]:.2f} at the end (1 min); "
          f"{time.time() - started:.0f} s in all")
    print()
    print("| step | time | diagnostics |")
    print("|---|---|---|")
    for step, when, what in rows:
        print(f"| {step} | {when} | {what} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
