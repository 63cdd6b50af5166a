"""The language server: LSP messages in, checks of one buffer at a time on a thread, LSP out.

Flow. An opened file is checked at once; a changed one after a short pause in typing
(`DEBOUNCE_S`), on its unsaved text; a saved one at once. A check runs on the one checking
thread (`Session`); its result is published only if the buffer is still at the version it
checked. A file in a package is checked against the facts the last run over that package left
in the cache; where there are none yet, it is checked alone and the package is indexed by a
`synclint check` run in the background (`indexer`, shown as `$/progress`), after which the open
files of the package are checked again with the cross-file facts. A save (or a change on disk
the client reports) re-indexes the package once the file is older than `SETTLE_S`, and the
open files whose view of the facts changed are checked again. A changed configuration file
reloads the settings and checks every open file again.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from synclint import __version__
from synclint.config import ConfigError
from synclint.server import convert
from synclint.server.indexer import Runs
from synclint.server.session import Checked, Package, Session

logger = logging.getLogger("synclint.server")

DEBOUNCE_S = 0.05  # a pause in typing this long checks the buffer (a check of a large model file takes 0.2-0.3 s)
SETTLE_S = 2.1  # replay.RACY_NS: a run keeps no package state while one of its files is younger than 2 s
INDEX_RETRIES = 2  # runs after which a package with no state in the cache is checked file by file
# Files whose change reloads the settings (a ruff configuration gives the line length of fixes).
CONFIG_NAMES = ("pyproject.toml", "synclint.toml", "ruff.toml", ".ruff.toml")
PARENT_POLL_S = 5.0


class IndexJob:
    """An index run of one package, with the wait before it."""

    task: asyncio.Future[None]

    def __init__(self) -> None:
        self.waiting = True  # still waiting for its files to settle: a new request restarts the wait
        self.again = False  # asked for again while running: run once more at its end


class SynclintServer(LanguageServer):
    def __init__(self, cache_dir: Path | None = None, jobs: int | None = None) -> None:
        super().__init__("synclint", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Full)
        self.cache_dir = cache_dir
        self.jobs = jobs or max(os.cpu_count() or 1, 1)
        self.session: Session | None = None
        self.checker = ThreadPoolExecutor(1, thread_name_prefix="synclint-check")
        self.checked: dict[str, Checked] = {}  # uri -> the check its diagnostics came from
        self.debounced: dict[str, asyncio.Task] = {}
        self.indexing: dict[str, IndexJob] = {}  # package root -> its index run (with the wait before it)
        self.runs = Runs()
        self.reported: set[str] = set()  # configuration errors shown once each, until the next reload
        self.shutting_down = False
        self.tokens = itertools.count(1)

    # ---- the checking thread -----------------------------------------------------------

    async def on_checker(self, fn, *args):
        return await asyncio.get_running_loop().run_in_executor(self.checker, fn, *args)

    # ---- checks and diagnostics ----------------------------------------------------------

    def path_of(self, uri: str) -> Path | None:
        path = to_fs_path(uri)
        if path is None or not uri.startswith("file:"):
            return None
        return Path(path)

    async def check(self, uri: str) -> None:
        """Check the buffer as it is now and publish its diagnostics, unless it changed meanwhile."""
        document = self.workspace.text_documents.get(uri)
        path = self.path_of(uri)
        if document is None or path is None or self.session is None:
            return
        version, text = document.version, document.source
        try:
            checked, package = await self.on_checker(self.session.check, path, text, version)
        except ConfigError as exc:
            self.config_error(exc)
            self.checked.pop(uri, None)
            self.publish(uri, version, [])
            return
        except Exception:  # a bug of synclint's outside a rule (those are SYNC001): in the log, and go on
            logger.exception("checking %s failed", path)
            return
        current = self.workspace.text_documents.get(uri)
        if current is None or current.version != version:
            return  # a newer check of it is on its way
        self.checked[uri] = checked
        if checked.result.internal_error:
            logger.warning("%s", checked.result.internal_error)
        self.publish_checked(uri, checked)
        if package is not None and package.state is None and not package.index_asked:
            package.index_asked = True
            self.index(package, wait=0.0)

    def publish_checked(self, uri: str, checked: Checked) -> None:
        lines = convert.Lines(checked.text, self.position_codec(uri))
        rules = {rule.code: rule for rule in checked.settings.rules}
        diagnostics = [convert.diagnostic(f, lines, checked.version, rules) for f in checked.result.findings]
        self.publish(uri, checked.version, diagnostics)

    def publish(self, uri: str, version: int | None, diagnostics: list[types.Diagnostic]) -> None:
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, version=version, diagnostics=diagnostics))

    def position_codec(self, uri: str):
        return self.workspace.get_text_document(uri).position_codec

    def schedule(self, uri: str, delay: float) -> None:
        """Check the buffer after `delay` seconds, instead of any check of it still waiting."""
        waiting = self.debounced.pop(uri, None)
        if waiting is not None:
            waiting.cancel()

        async def later() -> None:
            if delay:
                await asyncio.sleep(delay)
            self.debounced.pop(uri, None)
            await self.check(uri)

        self.debounced[uri] = asyncio.ensure_future(later())

    def config_error(self, exc: ConfigError) -> None:
        text = f"synclint: {exc}"
        if text not in self.reported:
            self.reported.add(text)
            self.window_show_message(types.ShowMessageParams(type=types.MessageType.Error, message=text))
        logger.error("%s", exc)

    # ---- packages: indexing and refreshing -------------------------------------------------

    def index(self, package: Package, wait: float) -> None:
        """Index the package after `wait` seconds (a wait already running starts over; a run
        already running is followed by another), then check again the open files of it whose
        view of the facts changed."""
        key = os.fspath(package.root)
        job = self.indexing.get(key)
        if job is not None and not job.task.done():
            if not job.waiting:
                job.again = True
                return
            job.task.cancel()
        job = self.indexing[key] = IndexJob()
        job.task = asyncio.ensure_future(self._index(package, wait, job))

    async def _index(self, package: Package, wait: float, job: IndexJob) -> None:
        if wait:
            await asyncio.sleep(wait)
        job.waiting = False
        session = self.session
        if session is None:
            return
        try:
            cache_dir = session.cache().directory
        except ConfigError as exc:
            self.config_error(exc)
            return
        token = await self.progress_begin(f"synclint: indexing {package.root.name}",
                                          "cross-file facts: properties and helpers that sync")
        found = False
        try:
            for attempt in range(INDEX_RETRIES):
                if attempt:
                    await asyncio.sleep(SETTLE_S)  # a file was too young for the run to keep its state
                await self.runs.run(package.root, session.cwd, cache_dir, self.jobs)
                found = await self.on_checker(session.refresh, package)
                if found or self.session is not session:
                    break
        finally:
            self.progress_end(token, "cross-file facts ready" if found else "no cross-file facts (see the log)")
        if not found:
            logger.warning("the run over %s left no package state in %s", package.root, cache_dir)
        if self.session is session:
            await self.refresh_open_files(package)
        if self.indexing.get(os.fspath(package.root)) is job:
            del self.indexing[os.fspath(package.root)]
            if job.again:
                self.index(package, wait=0.0)

    async def refresh_open_files(self, package: Package) -> None:
        for uri, checked in list(self.checked.items()):
            if checked.path.is_relative_to(package.root) and Session.sees_new_facts(checked, package):
                await self.check(uri)

    def package_of(self, path: Path) -> Package | None:
        if self.session is None:
            return None
        for package in list(self.session.packages.values()):  # (the checking thread adds to it)
            if path.is_relative_to(package.root) and package.looked:
                return package
        return None

    def file_changed_on_disk(self, path: Path) -> None:
        """A Python file was saved or changed on disk: index its package again once it settles."""
        package = self.package_of(path)
        if package is not None:
            self.index(package, wait=SETTLE_S)

    async def reload(self) -> None:
        """A configuration file changed: new settings, packages indexed anew, every open file checked again."""
        if self.session is None:
            return
        for job in self.indexing.values():
            if job.waiting:
                job.task.cancel()
        self.indexing.clear()
        self.runs.stop()  # a run in flight ends, and finds the session it ran for gone
        await self.on_checker(self.session.reload)
        self.reported.clear()
        for uri in list(self.workspace.text_documents):
            self.schedule(uri, 0.0)

    # ---- progress ----------------------------------------------------------------------

    async def progress_begin(self, title: str, message: str) -> str | None:
        capabilities = self.client_capabilities.window
        if capabilities is None or not capabilities.work_done_progress:
            logger.info("%s", title)
            return None
        token = f"synclint-index-{next(self.tokens)}"
        try:
            await self.work_done_progress.create_async(token)
        except Exception as exc:  # the client refused: go on without a progress bar
            logger.info("no progress bar: %s", exc)
            return None
        self.work_done_progress.begin(token, types.WorkDoneProgressBegin(title=title, message=message))
        return token

    def progress_end(self, token: str | None, message: str) -> None:
        if token is not None:
            self.work_done_progress.end(token, types.WorkDoneProgressEnd(message=message))

    # ---- code actions ------------------------------------------------------------------

    def current(self, uri: str) -> Checked | None:
        """The last check of the buffer, if the buffer has not changed since."""
        checked = self.checked.get(uri)
        document = self.workspace.text_documents.get(uri)
        if checked is None or document is None or document.version != checked.version:
            return None
        return checked

    def resolves_edits(self) -> bool:
        """Whether the client asks for a code action's edit only when it is chosen (codeAction/resolve)."""
        action = self.client_capabilities.text_document and self.client_capabilities.text_document.code_action
        support = action.resolve_support if action else None
        return bool(support and "edit" in support.properties)


def create_server(cache_dir: Path | None = None, jobs: int | None = None) -> SynclintServer:
    server = SynclintServer(cache_dir, jobs)

    @server.feature(types.INITIALIZE)
    def initialize(ls: SynclintServer, params: types.InitializeParams) -> None:
        root = None
        if params.workspace_folders:
            root = to_fs_path(params.workspace_folders[0].uri)
        elif params.root_uri:
            root = to_fs_path(params.root_uri)
        elif params.root_path:
            root = params.root_path
        cwd = Path(root or os.getcwd()).absolute()
        try:
            # As `synclint check` run from the workspace folder: a package state names the folders
            # its run walked relative to it (cache.PackageState.is_current lists them).
            os.chdir(cwd)
        except OSError as exc:
            logger.warning("cannot work from %s: %s", cwd, exc)
        ls.session = Session(cwd, cache_dir)
        if params.process_id:
            asyncio.ensure_future(watch_parent(ls, params.process_id))

    @server.feature(types.INITIALIZED)
    async def initialized(ls: SynclintServer, params: types.InitializedParams) -> None:
        workspace = ls.client_capabilities.workspace
        watched = workspace.did_change_watched_files if workspace else None
        if watched is None or not watched.dynamic_registration:
            return
        watchers = [types.FileSystemWatcher(glob_pattern=f"**/{name}") for name in (*CONFIG_NAMES, "*.py")]
        try:
            await ls.client_register_capability_async(types.RegistrationParams(registrations=[types.Registration(
                id="synclint-watched-files", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=watchers))]))
        except Exception as exc:  # the client said no: saves in the editor still refresh
            logger.info("no file watching: %s", exc)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: SynclintServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, 0.0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    async def did_change(ls: SynclintServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, DEBOUNCE_S)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    async def did_save(ls: SynclintServer, params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        path = ls.path_of(uri)
        if path is not None and path.name in CONFIG_NAMES:
            await ls.reload()
            return
        ls.schedule(uri, 0.0)
        if path is not None:
            ls.file_changed_on_disk(path)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    async def did_close(ls: SynclintServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        waiting = ls.debounced.pop(uri, None)
        if waiting is not None:
            waiting.cancel()
        ls.checked.pop(uri, None)
        ls.publish(uri, None, [])

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    async def did_change_watched_files(ls: SynclintServer, params: types.DidChangeWatchedFilesParams) -> None:
        paths = [path for change in params.changes if (path := ls.path_of(change.uri)) is not None]
        if any(path.name in CONFIG_NAMES for path in paths):
            await ls.reload()
            return
        for path in paths:
            if path.suffix in (".py", ".pyi"):
                ls.file_changed_on_disk(path)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: SynclintServer, params: types.HoverParams) -> types.Hover | None:
        checked = ls.current(params.text_document.uri)
        if checked is None:
            return None
        lines = convert.Lines(checked.text, ls.position_codec(params.text_document.uri))
        point = lines.location(params.position)
        rules = {rule.code: rule for rule in checked.settings.rules}
        found = [f for f in checked.result.findings
                 if f.code in rules and convert.contains(f.location, f.end_location, point)]
        if not found:
            return None
        shown = list({f.code: rules[f.code] for f in found}.values())
        measured = None
        if checked.settings.runtime_report is not None:
            from synclint.runtime import measured_note

            measured = measured_note(checked.settings.runtime_report, checked.path, found[0])
        return types.Hover(
            contents=types.MarkupContent(kind=types.MarkupKind.Markdown,
                                         value=convert.hover_markdown(shown, measured)),
            range=lines.range(found[0].location, found[0].end_location),
        )

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, convert.FIX_ALL_KIND], resolve_provider=True))
    async def code_action(ls: SynclintServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
        from synclint.server.actions import code_actions

        return await code_actions(ls, params)

    @server.feature(types.CODE_ACTION_RESOLVE)
    async def code_action_resolve(ls: SynclintServer, action: types.CodeAction) -> types.CodeAction:
        from synclint.server.actions import resolve

        return await resolve(ls, action)

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: SynclintServer, params: Any) -> None:
        ls.shutting_down = True
        ls.runs.stop()

    @server.feature(types.EXIT)
    def exit_(ls: SynclintServer, params: Any) -> None:
        leave(ls, 0 if ls.shutting_down else 1)

    return server


def leave(server: SynclintServer, code: int) -> None:
    """End the process now: index runs stopped, and no wait for the thread that reads the
    client's stream (the client may keep it open after `exit`) or a check in progress."""
    server.runs.stop()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    logging.shutdown()
    os._exit(code)


async def watch_parent(server: SynclintServer, pid: int) -> None:
    """End the server when the editor that started it is gone (LSP's `processId`), even if it
    left the server's input open."""
    while True:
        await asyncio.sleep(PARENT_POLL_S)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            logger.info("the client (process %s) is gone", pid)
            leave(server, 1)
        except (PermissionError, OSError):
            pass  # it exists (another user's), or this platform cannot tell


class ClientInput:
    """The client's stream, whose end ends the server at once (`leave`): left to asyncio, the
    end cancels every task and waits for them, and a task cancelled while it starts an index
    run can wait for ever (for the run's exit, which the closing loop no longer hears of)."""

    def __init__(self, stream, server: SynclintServer) -> None:
        self.stream = stream
        self.server = server

    def readline(self) -> bytes:
        return self._ended_if_empty(self.stream.readline())

    def read(self, n: int) -> bytes:
        return self._ended_if_empty(self.stream.read(n))

    def _ended_if_empty(self, data: bytes) -> bytes:
        if not data:
            logger.info("the client closed the connection")
            leave(self.server, 0 if self.server.shutting_down else 1)
        return data


def serve(cache_dir: Path | None = None, jobs: int | None = None) -> int:
    """Serve LSP over standard input and output until the client leaves."""
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="synclint server: %(levelname)s: %(message)s")
    logging.getLogger("pygls").setLevel(logging.WARNING)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print must not break the protocol's stream
    server = create_server(cache_dir, jobs)
    server.start_io(ClientInput(stdin, server), stdout)  # type: ignore[arg-type]
    leave(server, 0 if server.shutting_down else 1)
    return 0
