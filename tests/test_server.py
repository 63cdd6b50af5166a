"""`synclint server` end to end: the real server in its own process, driven over stdin/stdout by
pytest-lsp's client (pygls), with the capabilities real editors announce. Nothing is mocked: each
test writes a small project, opens, edits and saves its files as an editor does, and asserts the
exact diagnostics, edits, hovers and messages that come back."""

from __future__ import annotations

import asyncio
import inspect
import os
import sys
import time
from pathlib import Path

import pytest
import pytest_lsp
from conftest import REPO, run_cli
from lsprotocol import types
from pygls.protocol import default_converter
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

from synclint.registry import all_rules

pytestmark = pytest.mark.asyncio

# Only so that a broken server fails the test instead of hanging it; no speed is tested.
WAIT_S = float(os.environ.get("SYNCLINT_LSP_TEST_WAIT", "120"))

MODEL = """\
import torch


def step(x: torch.Tensor, offset: float = 1000) -> torch.Tensor:
    if x.isinf().any() or x.isnan().any():
        clamp_value = torch.finfo(x.dtype).max - offset
        x = torch.clamp(x, min=-clamp_value, max=clamp_value)
    return x


def ids_on_gpu(ids: list[int]) -> torch.Tensor:
    return torch.tensor(ids).to("cuda")
"""
META = """\
import torch


class Metadata:
    def __init__(self, n: int) -> None:
        self.seq_lens = torch.zeros(n, device="cuda")

    @property
    def seq_lens_cpu(self) -> torch.Tensor:
        return self.seq_lens.to("cpu")
"""
USER = """\
import torch

from app.meta import Metadata


def plan(meta: Metadata) -> torch.Tensor:
    lens = meta.seq_lens_cpu
    return lens
"""
SYNC101_MESSAGE = ("`{}` is a tensor, likely on the GPU, used as a Python bool; the host waits for the GPU\n"
                   "because: x is annotated torch.Tensor (medium confidence)")
SYNC103_MESSAGE = ("`torch.tensor(ids).to(\"cuda\")` copies a tensor just built from host data to the GPU without "
                   "`non_blocking=True`; the host waits for the GPU queue to drain\n"
                   "because: moved by .to(\"cuda\") (high confidence)")
SYNC105_MESSAGE = ("`meta.seq_lens_cpu` reads the property `Metadata.seq_lens_cpu` (app/meta.py:9), whose getter makes "
                   "the host wait for the GPU: `self.seq_lens.to(\"cpu\")` at app/meta.py:10\n"
                   "because: Metadata.seq_lens_cpu is a property defined at app/meta.py:9 (high confidence)")
CLAMP_FIX = "Clamp unconditionally (for float16 this also clamps finite values beyond the bound)"
PINNED_FIX = "Build the tensor in pinned memory and copy it with `non_blocking=True`"


# ---- the client --------------------------------------------------------------------------------


class Client(LanguageClient):
    """pytest-lsp's client, keeping every publishDiagnostics in order (its own keeps the last per file)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.published: list[types.PublishDiagnosticsParams] = []
        self.arrived = asyncio.Event()
        self.versions: dict[str, int] = {}
        self.texts: dict[str, str] = {}
        self.registrations: list[types.Registration] = []

    def mark(self) -> int:
        """Where the publications from now on start (for `published_after`)."""
        return len(self.published)

    async def published_after(self, mark: int, uri: str) -> types.PublishDiagnosticsParams:
        """The first diagnostics published for `uri` after `mark`, for the buffer's version now
        (the server may publish for an older one, checked before the change reached it)."""
        version = self.versions.get(uri)

        async def wait() -> types.PublishDiagnosticsParams:
            while True:
                for params in self.published[mark:]:
                    if params.uri == uri and params.version == version:
                        return params
                self.arrived.clear()
                await self.arrived.wait()

        return await asyncio.wait_for(wait(), WAIT_S)

    async def published_by_now(self, uri: str, mark: int) -> list[types.PublishDiagnosticsParams]:
        """What was published for `uri` after `mark`, up to the answer to a request sent now (the
        server handles one client's messages in order)."""
        await self.text_document_hover_async(types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(0, 0)))
        return [p for p in self.published[mark:] if p.uri == uri]

    # -- editing as an editor does -------------------------------------------------------------

    def open(self, path: Path, text: str | None = None) -> str:
        uri = path.as_uri()
        text = path.read_text(encoding="utf-8") if text is None else text
        self.versions[uri] = 1
        self.texts[uri] = text
        self.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
        return uri

    def change(self, uri: str, text: str) -> int:
        self.versions[uri] += 1
        self.texts[uri] = text
        self.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
            [types.TextDocumentContentChangeWholeDocument(text=text)]))
        return self.versions[uri]

    def save(self, uri: str) -> None:
        Path(uri.removeprefix("file://")).write_text(self.texts[uri], encoding="utf-8")
        self.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri=uri)))

    def apply(self, edit: types.WorkspaceEdit) -> tuple[str, str]:
        """Apply a workspace edit to the buffer it names (as the editor does): (uri, new text)."""
        if edit.document_changes is not None:
            [change] = edit.document_changes
            uri, edits = change.text_document.uri, change.edits
            assert change.text_document.version == self.versions[uri]
        else:
            [(uri, edits)] = edit.changes.items()
        return uri, apply_text_edits(self.texts[uri], edits)


def apply_text_edits(text: str, edits) -> str:
    """Text edits applied as an editor applies them (positions in UTF-16 code units)."""
    lines = text.splitlines(keepends=True) or [""]

    def offset(position: types.Position) -> int:
        before = sum(len(line) for line in lines[: position.line])
        line = lines[position.line] if position.line < len(lines) else ""
        units, column = 0, 0
        while column < len(line) and units < position.character:
            units += 2 if ord(line[column]) > 0xFFFF else 1
            column += 1
        return before + column

    spans = sorted(((offset(e.range.start), offset(e.range.end), e.new_text) for e in edits), reverse=True)
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text


def make_client() -> Client:
    client = Client(converter_factory=default_converter)

    def publish(client: Client, params: types.PublishDiagnosticsParams) -> None:
        client.diagnostics[params.uri] = params.diagnostics
        client.published.append(params)
        client.arrived.set()

    def register(client: Client, params: types.RegistrationParams) -> None:
        client.registrations.extend(params.registrations)

    register_lsp_features(client, {**DEFAULT_CLIENT_FEATURES, types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS: publish,
                                   types.CLIENT_REGISTER_CAPABILITY: register})
    return client


SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "synclint", "server"], client_factory=make_client)


async def start(client: Client, project: Path, editor: str = "visual-studio-code") -> None:
    await client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities(editor), root_uri=project.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=project.as_uri(), name=project.name)]))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project with a package: model code with findings, and a property another file reads."""
    # Lines long enough that a fix's edit stays within its line (tests/test_fix_layout.py breaks them).
    (tmp_path / "pyproject.toml").write_text("[tool.synclint]\nline-length = 120\n", encoding="utf-8")
    app = tmp_path / "app"
    app.mkdir()
    (app / "__init__.py").write_text("", encoding="utf-8")
    (app / "model.py").write_text(MODEL, encoding="utf-8")
    (app / "meta.py").write_text(META, encoding="utf-8")
    (app / "user.py").write_text(USER, encoding="utf-8")
    written_long_ago(tmp_path)
    return tmp_path


def written_long_ago(folder: Path) -> None:
    """Date the files an hour back, as a checkout's are: a run keeps no package state while a
    file is younger than two seconds (replay.RACY_NS)."""
    past = time.time() - 3600
    for path in [folder, *folder.rglob("*")]:
        os.utime(path, (past, past))


@pytest.fixture
def indexed(project: Path) -> Path:
    """The project after a `synclint check` run over it (as pre-commit leaves it): the server
    finds its package's facts in the cache, and starts no index run that would check the open
    files again."""
    assert run_cli("check", "--exit-zero", "app", cwd=project).returncode == 0
    return project


@pytest_lsp.fixture(config=SERVER)
async def client(lsp_client: Client, indexed: Path):
    await start(lsp_client, indexed)
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=SERVER)
async def cold(lsp_client: Client, project: Path):
    """A server on a project no run has indexed."""
    await start(lsp_client, project)
    yield
    await lsp_client.shutdown_session()


def summary(diagnostics) -> list[tuple]:
    return [(d.code, d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character)
            for d in diagnostics]


def rng(line: int, start: int, end_line: int, end: int) -> types.Range:
    return types.Range(types.Position(line, start), types.Position(end_line, end))


# ---- diagnostics ---------------------------------------------------------------------------------


async def test_open_publishes_each_finding_with_its_range_code_severity_message_and_docs(client: Client, project: Path):
    mark = client.mark()
    uri = client.open(project / "app" / "model.py")
    published = await client.published_after(mark, uri)
    assert published.version == 1
    first, second, third = published.diagnostics
    assert first.range == rng(4, 7, 4, 22)
    assert first.code == "SYNC101"
    assert first.message == SYNC101_MESSAGE.format("x.isinf().any()")
    assert first.severity == types.DiagnosticSeverity.Information  # medium confidence
    assert first.source == "synclint"
    rule_file = Path(inspect.getsourcefile(all_rules()["SYNC101"])).resolve()
    assert first.code_description.href.startswith(rule_file.as_uri() + "#L")
    line = int(first.code_description.href.rsplit("#L", 1)[1])
    assert rule_file.read_text(encoding="utf-8").splitlines()[line - 1] == "class SyncInCondition(Rule):"
    assert first.data["version"] == 1 and first.data["row"] == 5
    assert first.data["fix"]["applicability"] == "unsafe" and first.data["fix"]["message"] == CLAMP_FIX
    assert (second.code, second.range, second.message) == ("SYNC101", rng(4, 26, 4, 41), SYNC101_MESSAGE.format("x.isnan().any()"))
    assert (third.code, third.range, third.message) == ("SYNC103", rng(11, 11, 11, 39), SYNC103_MESSAGE)
    assert third.severity == types.DiagnosticSeverity.Warning  # high confidence
    assert third.data["fix"] == {
        "applicability": "safe", "message": PINNED_FIX, "imports": [],
        "edits": [[12, 12, 12, 40, 'torch.tensor(ids, pin_memory=torch.cuda.is_available()).to("cuda", non_blocking=True)']],
    }


async def test_change_checks_the_unsaved_buffer(client: Client, project: Path):
    mark = client.mark()
    uri = client.open(project / "app" / "model.py")
    await client.published_after(mark, uri)
    mark = client.mark()
    version = client.change(uri, MODEL.replace('.to("cuda")', '.to("cuda", non_blocking=True)'))
    published = await client.published_after(mark, uri)
    assert published.version == version
    assert summary(published.diagnostics) == [("SYNC101", 4, 7, 4, 22), ("SYNC101", 4, 26, 4, 41)]
    assert (project / "app" / "model.py").read_text(encoding="utf-8") == MODEL  # nothing written


async def test_a_burst_of_changes_publishes_the_last_version_only(client: Client, project: Path):
    mark = client.mark()
    uri = client.open(project / "app" / "model.py")
    await client.published_after(mark, uri)
    mark = client.mark()
    for n in range(5):
        client.change(uri, MODEL + f"\n# edit {n}\n")
    last = client.change(uri, MODEL.replace("    return torch.tensor(ids).to(\"cuda\")\n", "    return ids\n"))
    published = await client.published_after(mark, uri)
    assert summary(published.diagnostics) == [("SYNC101", 4, 7, 4, 22), ("SYNC101", 4, 26, 4, 41)]
    # Nothing for the versions typed past (the package's index may publish the last one again).
    assert {p.version for p in await client.published_by_now(uri, mark)} == {last}


async def test_positions_count_utf16_code_units(client: Client, project: Path):
    # `s = "𝔘é"; ` is 10 characters and 11 UTF-16 code units: 𝔘 lies beyond the BMP, é inside it.
    text = MODEL.replace('    return torch.tensor(ids).to("cuda")', '    s = "𝔘é"; return torch.tensor(ids).to("cuda")')
    mark = client.mark()
    uri = client.open(project / "app" / "model.py", text)
    published = await client.published_after(mark, uri)
    assert summary(published.diagnostics)[-1] == ("SYNC103", 11, 11 + 11, 11, 39 + 11)


async def test_a_buffer_that_does_not_parse_gives_one_sync000_and_the_server_goes_on(client: Client, project: Path):
    mark = client.mark()
    uri = client.open(project / "app" / "model.py")
    await client.published_after(mark, uri)
    mark = client.mark()
    client.change(uri, MODEL.replace("    return x\n", "    return x +\n"))
    published = await client.published_after(mark, uri)
    [problem] = published.diagnostics
    assert problem.code == "SYNC000"
    assert problem.message == "syntax error: invalid syntax"
    assert problem.range == rng(7, 14, 7, 14)  # where Python points: after the `+` that ends the line
    assert problem.severity == types.DiagnosticSeverity.Error
    mark = client.mark()
    client.change(uri, MODEL)
    published = await client.published_after(mark, uri)
    assert [d.code for d in published.diagnostics] == ["SYNC101", "SYNC101", "SYNC103"]


async def test_save_checks_and_close_clears(client: Client, project: Path):
    mark = client.mark()
    uri = client.open(project / "app" / "model.py")
    await client.published_after(mark, uri)
    client.change(uri, MODEL.replace("        x = torch.clamp", "        x = x * 2\n        x = torch.clamp"))
    mark = client.mark()
    client.save(uri)
    published = await client.published_after(mark, uri)
    assert summary(published.diagnostics) == [("SYNC101", 4, 7, 4, 22), ("SYNC101", 4, 26, 4, 41),
                                              ("SYNC103", 12, 11, 12, 39)]
    mark = client.mark()
    client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)))
    del client.versions[uri]
    published = await client.published_after(mark, uri)
    assert list(published.diagnostics) == []


# ---- code actions ----------------------------------------------------------------------------------


async def opened(client: Client, path: Path, text: str | None = None) -> tuple[str, list[types.Diagnostic]]:
    mark = client.mark()
    uri = client.open(path, text)
    return uri, list((await client.published_after(mark, uri)).diagnostics)


async def applied(client: Client, edit: types.WorkspaceEdit) -> tuple[str, types.PublishDiagnosticsParams]:
    """Apply `edit` to its buffer as the editor does, send the change, and wait for the
    diagnostics of the new text: (the new text, what was published for it)."""
    uri, text = client.apply(edit)
    mark = client.mark()
    client.change(uri, text)
    return text, await client.published_after(mark, uri)


async def actions_for(client: Client, uri: str, diagnostic: types.Diagnostic | None, only=None) -> list[types.CodeAction]:
    where = diagnostic.range if diagnostic is not None else rng(0, 0, 0, 0)
    context = types.CodeActionContext(diagnostics=[diagnostic] if diagnostic is not None else [], only=only)
    found = await client.text_document_code_action_async(
        types.CodeActionParams(types.TextDocumentIdentifier(uri), where, context))
    return list(found or [])


FIXED_SYNC103 = MODEL.replace('torch.tensor(ids).to("cuda")',
                              'torch.tensor(ids, pin_memory=torch.cuda.is_available()).to("cuda", non_blocking=True)')
UNCONDITIONAL_CLAMP = MODEL.replace("""    if x.isinf().any() or x.isnan().any():
        clamp_value = torch.finfo(x.dtype).max - offset
        x = torch.clamp(x, min=-clamp_value, max=clamp_value)
""", """    clamp_value = torch.finfo(x.dtype).max - offset
    x = torch.clamp(x, min=-clamp_value, max=clamp_value)
""")


async def test_quick_fix_is_listed_resolved_applied_and_rechecked(client: Client, project: Path):
    uri, diagnostics = await opened(client, project / "app" / "model.py")
    sync103 = diagnostics[2]
    actions = await actions_for(client, uri, sync103)
    assert [(a.title, a.kind, a.is_preferred) for a in actions] == [
        (PINNED_FIX, types.CodeActionKind.QuickFix, True),
        ("Add `# noqa: SYNC103`", types.CodeActionKind.QuickFix, None),
        ("Fix all safe syncs in this file", "source.fixAll.synclint", None),
    ]
    assert [a.edit for a in actions] == [None, None, None]  # VS Code resolves the chosen one
    assert list(actions[0].diagnostics) == [sync103]
    fix = await client.code_action_resolve_async(actions[0])
    [change] = fix.edit.document_changes
    assert change.text_document == types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=1)
    assert list(change.edits) == [types.TextEdit(rng(11, 27, 11, 38),
                                           ', pin_memory=torch.cuda.is_available()).to("cuda", non_blocking=True')]
    text, published = await applied(client, fix.edit)
    assert text == FIXED_SYNC103
    assert [d.code for d in published.diagnostics] == ["SYNC101", "SYNC101"]
    # No safe fix is left: fixing all again changes nothing.
    assert await actions_for(client, uri, None, only=[types.CodeActionKind.SourceFixAll]) == []


async def test_unsafe_fix_is_labelled_and_applied_only_when_chosen(client: Client, project: Path):
    uri, diagnostics = await opened(client, project / "app" / "model.py")
    actions = await actions_for(client, uri, diagnostics[0])
    assert (actions[0].title, actions[0].is_preferred) == (CLAMP_FIX + " (unsafe)", False)
    fix = await client.code_action_resolve_async(actions[0])
    text, published = await applied(client, fix.edit)
    assert text == UNCONDITIONAL_CLAMP
    assert summary(published.diagnostics) == [("SYNC103", 10, 11, 10, 39)]  # one line less above it


async def test_fix_all_applies_the_safe_fixes_as_check_fix_does(client: Client, project: Path):
    uri, _ = await opened(client, project / "app" / "model.py")
    [fix_all] = await actions_for(client, uri, None, only=[types.CodeActionKind.SourceFixAll])
    assert (fix_all.title, fix_all.kind) == ("Fix all safe syncs in this file", "source.fixAll.synclint")
    resolved = await client.code_action_resolve_async(fix_all)
    text, published = await applied(client, resolved.edit)
    cli = run_cli("check", "--fix", "--stdin-filename", "app/model.py", "-", cwd=project, stdin=MODEL)
    assert text == cli.stdout == FIXED_SYNC103  # the unsafe SYNC101 fixes are not applied
    assert [d.code for d in published.diagnostics] == ["SYNC101", "SYNC101"]
    assert await actions_for(client, uri, None, only=[types.CodeActionKind.SourceFixAll]) == []


async def test_noqa_action_silences_the_line(client: Client, project: Path):
    uri, diagnostics = await opened(client, project / "app" / "model.py")
    noqa = (await actions_for(client, uri, diagnostics[2]))[1]
    resolved = await client.code_action_resolve_async(noqa)
    [change] = resolved.edit.document_changes
    assert list(change.edits) == [types.TextEdit(rng(11, 39, 11, 39), "  # noqa: SYNC103")]
    text, published = await applied(client, resolved.edit)
    assert [d.code for d in published.diagnostics] == ["SYNC101", "SYNC101"]


async def test_actions_for_an_older_version_of_the_buffer_offer_nothing(client: Client, project: Path):
    uri, diagnostics = await opened(client, project / "app" / "model.py")
    listed = await actions_for(client, uri, diagnostics[2])
    mark = client.mark()
    client.change(uri, "# a line above\n" + MODEL)
    await client.published_after(mark, uri)
    assert await actions_for(client, uri, diagnostics[2], only=[types.CodeActionKind.QuickFix]) == []
    assert (await client.code_action_resolve_async(listed[0])).edit is None


async def test_a_fix_whose_result_would_not_parse_is_not_applied(client: Client, project: Path):
    uri, diagnostics = await opened(client, project / "app" / "model.py")
    [action, *_] = await actions_for(client, uri, diagnostics[2])
    action.data["fix"]["edits"][0][4] = "torch.tensor(ids"  # as a buggy fix would: an unclosed bracket
    assert (await client.code_action_resolve_async(action)).edit is None


# ---- hover ---------------------------------------------------------------------------------------


async def test_hover_on_a_finding_shows_its_rule_documentation(client: Client, project: Path):
    uri, diagnostics = await opened(client, project / "app" / "model.py")
    hover = await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(11, 20)))
    assert hover.range == diagnostics[2].range
    assert hover.contents.kind == types.MarkupKind.Markdown
    assert hover.contents.value + "\n" == run_cli("rule", "SYNC103").stdout
    assert "## What it does" in hover.contents.value and "## Use instead" in hover.contents.value
    nothing = await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(3, 2)))
    assert nothing is None


async def test_hover_shows_the_wait_a_configured_runtime_report_measured(client: Client, project: Path):
    import json

    (project / "syncs.json").write_text(json.dumps({
        "schema": "synclint-sync-report", "version": 2, "tool": "trace", "simulated": False, "device": "cuda",
        "root": str(project), "allowed": 0, "wall_s": 1.0, "wait_s": 0.06,
        "sites": [{"kind": "sync", "file": "app/model.py", "line": 12, "op": "CUDA sync", "count": 3, "wait_s": 0.06}]}))
    (project / "pyproject.toml").write_text('[tool.synclint]\nruntime-report = "syncs.json"\n', encoding="utf-8")
    uri, diagnostics = await opened(client, project / "app" / "model.py")
    hover = await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(11, 20)))
    measured, docs = hover.contents.value.split("\n\n---\n\n", 1)
    assert measured == ("**Measured** (`runtime-report`): a run saw 3 syncs here; the host waited 60.0 ms in all, "
                        "20.0 ms each")
    assert docs + "\n" == run_cli("rule", "SYNC103").stdout


# ---- other editors ---------------------------------------------------------------------------------


@pytest_lsp.fixture(config=SERVER)
async def emacs(lsp_client: Client, indexed: Path):
    await start(lsp_client, indexed, "emacs")  # no codeAction/resolve; positions in UTF-32
    yield
    await lsp_client.shutdown_session()


async def test_a_client_without_resolve_gets_the_edits_with_the_actions(emacs: Client, project: Path):
    text = MODEL.replace('    return torch.tensor(ids).to("cuda")', '    s = "𝔘é"; return torch.tensor(ids).to("cuda")')
    uri, diagnostics = await opened(emacs, project / "app" / "model.py", text)
    assert summary(diagnostics)[-1] == ("SYNC103", 11, 11 + 10, 11, 39 + 10)  # code points
    fix, _noqa, fix_all = await actions_for(emacs, uri, diagnostics[2])
    [change] = fix.edit.document_changes
    assert list(change.edits) == [types.TextEdit(rng(11, 27 + 10, 11, 38 + 10),
                                           ', pin_memory=torch.cuda.is_available()).to("cuda", non_blocking=True')]
    [change] = fix_all.edit.document_changes
    assert list(change.edits) == list(fix.edit.document_changes[0].edits)


@pytest_lsp.fixture(config=SERVER)
async def neovim(lsp_client: Client, indexed: Path):
    await start(lsp_client, indexed, "neovim@v0.11.0")  # positions in UTF-8; plain `changes` edits
    yield
    await lsp_client.shutdown_session()


async def test_positions_in_utf8_for_a_client_that_asks(neovim: Client, project: Path):
    text = MODEL.replace('    return torch.tensor(ids).to("cuda")', '    s = "𝔘é"; return torch.tensor(ids).to("cuda")')
    uri, diagnostics = await opened(neovim, project / "app" / "model.py", text)
    assert summary(diagnostics)[-1] == ("SYNC103", 11, 11 + 14, 11, 39 + 14)  # 𝔘: 4 bytes, é: 2
    fix = await neovim.code_action_resolve_async((await actions_for(neovim, uri, diagnostics[2]))[0])
    assert fix.edit.changes[uri][0].range == rng(11, 27 + 14, 11, 38 + 14)


# ---- the project: configuration, index, cache ------------------------------------------------------


def watched_change(client: Client, path: Path) -> None:
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
        [types.FileEvent(uri=path.as_uri(), type=types.FileChangeType.Changed)]))


async def test_the_server_watches_configuration_and_python_files(client: Client, project: Path):
    await opened(client, project / "app" / "model.py")  # after `initialized`
    [registration] = client.registrations
    assert registration.method == "workspace/didChangeWatchedFiles"
    globs = [w["globPattern"] for w in registration.register_options["watchers"]]
    assert globs == ["**/pyproject.toml", "**/synclint.toml", "**/ruff.toml", "**/.ruff.toml", "**/*.py"]


async def test_a_changed_configuration_reloads_and_rechecks(client: Client, project: Path):
    uri, diagnostics = await opened(client, project / "app" / "model.py")
    assert [d.code for d in diagnostics] == ["SYNC101", "SYNC101", "SYNC103"]
    (project / "pyproject.toml").write_text('[tool.synclint]\nignore = ["SYNC101"]\n', encoding="utf-8")
    mark = client.mark()
    watched_change(client, project / "pyproject.toml")
    published = await client.published_after(mark, uri)
    assert summary(published.diagnostics) == [("SYNC103", 11, 11, 11, 39)]


async def test_a_baseline_hides_what_check_hides(client: Client, project: Path):
    # As `synclint check` from the workspace folder: the baselined findings are not shown, a new one is.
    assert run_cli("check", "--write-baseline", "base.json", "app/model.py", cwd=project).returncode == 0
    (project / "pyproject.toml").write_text('[tool.synclint]\nbaseline = "base.json"\n', encoding="utf-8")
    assert run_cli("check", "app/model.py", cwd=project).returncode == 0
    uri, diagnostics = await opened(client, project / "app" / "model.py")
    assert diagnostics == []
    mark = client.mark()
    client.change(uri, MODEL.replace("    return x\n", "    return x if x.any() else -x\n"))
    published = await client.published_after(mark, uri)
    assert summary(published.diagnostics) == [("SYNC101", 7, 16, 7, 23)]
    # A baseline that cannot be read is an error, as `synclint check` exits 2 with it.
    (project / "base.json").write_text("{not json", encoding="utf-8")
    mark = client.mark()
    watched_change(client, project / "pyproject.toml")
    assert list((await client.published_after(mark, uri)).diagnostics) == []
    [message] = client.messages
    assert message.type == types.MessageType.Error
    assert message.message.startswith(f"synclint: {project / 'base.json'}: not a synclint baseline (invalid JSON")


async def test_a_broken_configuration_is_a_message_and_the_server_goes_on(client: Client, project: Path):
    uri, _ = await opened(client, project / "app" / "model.py")
    config = project / "pyproject.toml"
    config.write_text('[tool.synclint]\nselect = "SYNC101"\n', encoding="utf-8")
    mark = client.mark()
    watched_change(client, config)
    published = await client.published_after(mark, uri)
    assert list(published.diagnostics) == []  # as `synclint check`: an error, no findings
    [message] = client.messages
    assert message.type == types.MessageType.Error
    assert message.message == f"synclint: {config}: `select` must be a list, not a string"
    # Edits under the broken configuration: no second message, no crash.
    mark = client.mark()
    client.change(uri, MODEL + "\n")
    assert list((await client.published_after(mark, uri)).diagnostics) == []
    assert len(client.messages) == 1
    config.write_text('[tool.synclint]\nselect = ["SYNC103"]\n', encoding="utf-8")
    mark = client.mark()
    watched_change(client, config)
    published = await client.published_after(mark, uri)
    assert [d.code for d in published.diagnostics] == ["SYNC103"]


async def test_a_file_opened_under_a_broken_configuration(client: Client, project: Path):
    config = project / "pyproject.toml"
    config.write_text("[tool.synclint\n", encoding="utf-8")
    _, diagnostics = await opened(client, project / "app" / "model.py")
    assert diagnostics == []
    [message] = client.messages
    assert message.message.startswith(f"synclint: {config}: not valid TOML: ")
    assert "Traceback" not in message.message


CRASHING_RULE = '''\
from synclint.rule import Invalid, Rule

DOCS = "\\n".join(f"## {heading}\\ntext\\n" for heading in
                 ("What it does", "Why is this bad?", "Example", "Use instead", "Fix safety"))


class Crashes(Rule):
    code = "SYNC901"
    name = "crashes"
    summary = "A rule with a bug"
    docs = DOCS
    prefilter = ("CRASH_HERE",)
    INVALID = [Invalid("CRASH_HERE = 1")]

    def visit_Name(self, node):
        raise RuntimeError("a bug in a rule")
'''


async def test_a_rule_crash_is_sync001_on_that_file_only(client: Client, project: Path):
    (project / "own_rules").mkdir()
    (project / "own_rules" / "crashes.py").write_text(CRASHING_RULE, encoding="utf-8")
    (project / "pyproject.toml").write_text('[tool.synclint]\nextend-rules = ["own_rules"]\n', encoding="utf-8")
    _, diagnostics = await opened(client, project / "app" / "model.py", MODEL + "CRASH_HERE = 1\n")
    [problem] = diagnostics
    assert problem.code == "SYNC001"
    assert problem.message == ("internal error while checking this file: SYNC901 (crashes) failed on a Name: "
                               "RuntimeError: a bug in a rule")
    assert problem.severity == types.DiagnosticSeverity.Error
    assert problem.range == rng(0, 0, 0, 1)
    _, diagnostics = await opened(client, project / "app" / "meta.py")
    assert [d.code for d in diagnostics] == ["SYNC107"]
    assert client.messages == []


async def test_the_index_run_imports_the_servers_own_synclint(tmp_path: Path):
    """From the workspace folder, the index run imports the synclint the server runs (a checkout's,
    when the server was started in one), not another install: the cache keys hold the code."""
    import subprocess

    import synclint
    from synclint.server import indexer

    shown = subprocess.run([sys.executable, "-c", "import synclint; print(synclint.__file__)"], cwd=tmp_path,
                           env=indexer.environment(), capture_output=True, text=True, check=True).stdout
    assert Path(shown.strip()).resolve() == Path(synclint.__file__).resolve()


async def test_first_open_shows_the_files_own_findings_then_the_cross_file_ones(cold: Client, project: Path):
    client = cold
    uri, diagnostics = await opened(client, project / "app" / "user.py")
    assert diagnostics == []  # alone, `meta.seq_lens_cpu` is an attribute like any other
    mark = client.mark()
    published = await client.published_after(mark, uri)  # once the package is indexed
    [sync105] = published.diagnostics
    assert (sync105.code, sync105.range, sync105.message) == ("SYNC105", rng(6, 11, 6, 28), SYNC105_MESSAGE)
    [reports] = client.progress_reports.values()
    assert [r.kind for r in reports] == ["begin", "end"]
    assert reports[0].title == "synclint: indexing app"
    assert reports[1].message == "cross-file facts ready"


async def test_a_save_refreshes_the_open_files_whose_facts_it_changes(client: Client, project: Path):
    user, diagnostics = await opened(client, project / "app" / "user.py")
    assert [d.code for d in diagnostics] == ["SYNC105"]
    model, _ = await opened(client, project / "app" / "model.py")
    meta, _ = await opened(client, project / "app" / "meta.py")
    client.change(meta, META.replace('return self.seq_lens.to("cpu")', "return self.seq_lens"))
    mark = client.mark()
    client.save(meta)
    assert list((await client.published_after(mark, meta)).diagnostics) == []
    published = await client.published_after(mark, user)  # after the package is indexed again
    assert list(published.diagnostics) == []
    assert await client.published_by_now(model, mark) == []  # model.py uses no fact that changed


async def test_the_index_a_cli_run_left_gives_cross_file_findings_at_once(client: Client, project: Path):
    uri, diagnostics = await opened(client, project / "app" / "user.py")
    assert [(d.code, d.message) for d in diagnostics] == [("SYNC105", SYNC105_MESSAGE)]
    assert await client.published_by_now(uri, client.mark()) == []
    assert client.progress_reports == {}  # nothing to index


# ---- the end of a session ------------------------------------------------------------------------


@pytest_lsp.fixture(config=SERVER)
async def bare(lsp_client: Client, project: Path):
    """A client whose test ends the session itself."""
    await start(lsp_client, project)
    yield
    ended(lsp_client)


def ended(client: Client) -> None:
    """End a server that the test failed to end, so that the fixture's teardown does not wait for it."""
    if client._server is not None and client._server.returncode is None:
        client._server.kill()


async def test_shutdown_and_exit_end_the_server(bare: Client, project: Path):
    await opened(bare, project / "app" / "model.py")
    await bare.shutdown_async(None)
    bare.exit(None)
    assert await asyncio.wait_for(bare._server.wait(), WAIT_S) == 0


async def test_exit_without_shutdown_ends_the_server_with_status_1(bare: Client, project: Path):
    bare.exit(None)
    assert await asyncio.wait_for(bare._server.wait(), WAIT_S) == 1


async def test_the_client_going_away_ends_the_server(bare: Client, project: Path):
    await opened(bare, project / "app" / "user.py")  # an index run in flight, too
    bare._server.stdin.close()
    assert await asyncio.wait_for(bare._server.wait(), WAIT_S) == 1


async def test_without_the_server_extra_the_command_says_what_to_install():
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "import sys; sys.modules['pygls'] = None; from synclint.cli import main; sys.exit(main(['server']))",
        cwd=REPO, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await proc.communicate()
    assert proc.returncode == 2
    assert out == b""
    # synclint is on no package index: the extra is installed from the clone this synclint runs from.
    assert err.decode() == ("synclint: error: `synclint server` needs pygls, which the server extra installs: "
                            f"pip install '{REPO}[server]'\n")


@pytest_lsp.fixture(config=SERVER)
async def child_of_a_dying_editor(lsp_client: Client, project: Path):
    """A server whose `processId` names a process the test then ends (an editor that crashed
    without closing the server's input)."""
    editor = await asyncio.create_subprocess_exec(sys.executable, "-c", "import time; time.sleep(600)")
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"), root_uri=project.as_uri(), process_id=editor.pid))
    lsp_client.editor = editor
    yield
    ended(lsp_client)
    if editor.returncode is None:
        editor.kill()


async def test_the_server_ends_when_the_editor_process_is_gone(child_of_a_dying_editor: Client, project: Path):
    client = child_of_a_dying_editor
    await opened(client, project / "app" / "model.py")
    client.editor.kill()
    await client.editor.wait()
    assert await asyncio.wait_for(client._server.wait(), WAIT_S) == 1


async def test_a_client_that_reports_no_file_changes_gets_new_settings_at_the_next_check(neovim: Client, project: Path):
    uri, diagnostics = await opened(neovim, project / "app" / "model.py")
    assert [d.code for d in diagnostics] == ["SYNC101", "SYNC101", "SYNC103"]
    assert neovim.registrations == []  # Neovim on Linux watches no files for a server
    (project / "pyproject.toml").write_text('[tool.synclint]\nignore = ["SYNC103"]\n', encoding="utf-8")
    mark = neovim.mark()
    neovim.change(uri, MODEL + "\n")
    published = await neovim.published_after(mark, uri)
    assert [d.code for d in published.diagnostics] == ["SYNC101", "SYNC101"]


async def test_an_excluded_file_has_no_findings(client: Client, project: Path):
    (project / "pyproject.toml").write_text('[tool.synclint]\nextend-exclude = ["app/model.py"]\n', encoding="utf-8")
    _, diagnostics = await opened(client, project / "app" / "model.py")
    assert diagnostics == []
    _, diagnostics = await opened(client, project / "app" / "meta.py")
    assert [d.code for d in diagnostics] == ["SYNC107"]
