"""Code actions: a finding's fix, `# noqa: CODE` for its line, and every safe fix of the file.

Every edit is made by the code `synclint check --fix` and `--add-noqa` use: one finding's fix
is one round of the fix engine (`fixes.apply_fixes`: its edits and imports, and the result must
parse), fixing the whole file is `fixes.fix_text` to its fixpoint with safe fixes only, and a
noqa comment is `noqa.add_noqa`. The edit sent is the difference between the buffer and the
result. An action is listed without its edit, which is made when the user picks it
(`codeAction/resolve`), unless the client cannot ask for that.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import libcst as cst
from lsprotocol import types

from synclint.fixes import apply_fixes, fix_text
from synclint.model import Applicability, Finding, Fix
from synclint.noqa import add_noqa
from synclint.server import convert
from synclint.server.session import Checked, buffer_bytes
from synclint.source import DecodeProblem, decode

if TYPE_CHECKING:
    from synclint.server.app import SynclintServer

logger = logging.getLogger("synclint.server")

FIX_ALL_TITLE = "Fix all safe syncs in this file"


def _wanted(only: list[str] | None, kind: str) -> bool:
    """Whether the client asked for actions of `kind` (`only` lists kinds or their parents)."""
    return only is None or any(kind == asked or kind.startswith(asked + ".") for asked in only)


def _finding_for(checked: Checked, lines: convert.Lines, diagnostic: types.Diagnostic) -> Finding | None:
    """The finding a diagnostic of this check stands for, by its code and range."""
    for finding in checked.result.findings:
        if finding.code == diagnostic.code and lines.range(finding.location, finding.end_location) == diagnostic.range:
            return finding
    return None


def fix_title(fix: Fix) -> str:
    if fix.applicability is Applicability.UNSAFE and "(unsafe" not in fix.message:
        return f"{fix.message} (unsafe)"
    return fix.message


async def code_actions(ls: SynclintServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
    uri = params.text_document.uri
    checked = ls.current(uri)
    if checked is None:
        return None
    only = list(params.context.only) if params.context.only is not None else None
    lines = convert.Lines(checked.text, ls.position_codec(uri))
    base = {"uri": uri, "version": checked.version}
    actions = []
    if _wanted(only, types.CodeActionKind.QuickFix):
        for diagnostic in params.context.diagnostics:
            if diagnostic.source != convert.SOURCE or diagnostic.code in convert.PROBLEM_CODES:
                continue
            data = diagnostic.data if isinstance(diagnostic.data, dict) else {}
            if data and data.get("version") != checked.version:
                continue  # made for an older text: new diagnostics are on their way
            finding = _finding_for(checked, lines, diagnostic)
            fix = convert.fix_from_data(data["fix"]) if data.get("fix") else (finding.fix if finding else None)
            row = data.get("row") if data else (finding.noqa_row if finding else None)
            if fix is not None:
                actions.append(types.CodeAction(
                    title=fix_title(fix), kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic],
                    is_preferred=fix.applicability is Applicability.SAFE,
                    data={**base, "action": "fix", "fix": convert.fix_to_data(fix)}))
            if isinstance(row, int):
                actions.append(types.CodeAction(
                    title=f"Add `# noqa: {diagnostic.code}`", kind=types.CodeActionKind.QuickFix,
                    diagnostics=[diagnostic], data={**base, "action": "noqa", "row": row, "code": diagnostic.code}))
    if _wanted(only, convert.FIX_ALL_KIND) and any(
            f.fix is not None and f.fix.applicability is Applicability.SAFE for f in checked.result.findings):
        actions.append(types.CodeAction(title=FIX_ALL_TITLE, kind=convert.FIX_ALL_KIND,
                                        data={**base, "action": "fix-all"}))
    if not ls.resolves_edits():
        resolved = [await resolve(ls, action) for action in actions]
        actions = [action for action in resolved if action.edit is not None]
    return actions


async def resolve(ls: SynclintServer, action: types.CodeAction) -> types.CodeAction:
    """The action with its edit (none when the buffer changed since, or the fix would not parse)."""
    data = action.data if isinstance(action.data, dict) else {}
    uri = data.get("uri")
    if not isinstance(uri, str):
        return action
    checked = ls.current(uri)
    if checked is None or data.get("version") != checked.version:
        return action
    new_text = await ls.on_checker(_new_text, checked, data)
    if new_text is None or new_text == checked.text:
        return action
    lines = convert.Lines(checked.text, ls.position_codec(uri))
    edits = convert.text_edits(checked.text, new_text, lines)
    action.edit = _workspace_edit(ls, uri, checked.version, edits)
    return action


def _new_text(checked: Checked, data: dict[str, Any]) -> str | None:
    """The buffer after the action (runs on the checking thread)."""
    try:
        source = decode(buffer_bytes(checked.text))
    except DecodeProblem:
        return None
    kind = data.get("action")
    if kind == "fix":
        fix = convert.fix_from_data(data.get("fix"))
        if fix is None:
            return None
        try:
            return apply_fixes(source.text, [fix], checked.shown, source.newline)
        except (cst.ParserSyntaxError, SyntaxError, ValueError) as exc:
            logger.warning("%s: fix %r dropped: the result would not parse (%s)", checked.shown, fix.message, exc)
            return None
    if kind == "fix-all":
        outcome = fix_text(source, checked.shown, checked.settings, False, checked.project)
        for problem in outcome.dropped:
            logger.warning("%s", problem)
        return outcome.text
    if kind == "noqa" and isinstance(data.get("row"), int) and isinstance(data.get("code"), str):
        text, changed, _ = add_noqa(source.text, {data["row"]: {data["code"]}})
        if not changed:
            return None
        try:
            compile(text, checked.shown, "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            return None  # as --add-noqa: never a result that stopped parsing
        return text
    return None


def _workspace_edit(ls: SynclintServer, uri: str, version: int | None, edits: list[types.TextEdit]) -> types.WorkspaceEdit:
    """The edits for the buffer; at its version where the client takes that (it then refuses
    them if the buffer changed in between)."""
    workspace = ls.client_capabilities.workspace
    edit_caps = workspace.workspace_edit if workspace else None
    if edit_caps is not None and edit_caps.document_changes:
        return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(
            text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version), edits=edits)])
    return types.WorkspaceEdit(changes={uri: edits})
