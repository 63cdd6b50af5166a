"""SARIF 2.1.0, as GitHub code scanning accepts it: rules with help, results (the message with its
`because` on a second line, and `because` in the properties), fixes."""

from __future__ import annotations

import json
from typing import Any, TextIO

from synclint import __version__
from synclint.model import Finding

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
ENGINE_RULES = {
    "SYNC000": ("parse-error", "The file could not be decoded or parsed"),
    "SYNC001": ("internal-error", "synclint failed while checking the file"),
}


def _region(f_loc, f_end) -> dict:
    return {"startLine": f_loc.row, "startColumn": f_loc.column, "endLine": f_end.row, "endColumn": f_end.column}


def _rule_descriptor(rule) -> dict:
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.doc_sections().get("What it does", rule.summary)},
        "help": {"text": rule.markdown(), "markdown": rule.markdown()},
        "defaultConfiguration": {"level": "warning"},
        "properties": {"tags": ["performance", "gpu-sync"]},
    }


def sarif_document(findings: list[Finding], rules) -> dict:
    descriptors = [_rule_descriptor(rule) for rule in sorted(rules, key=lambda r: r.code)]
    used = {f.code for f in findings}
    for code, (name, text) in ENGINE_RULES.items():
        if code in used:
            descriptors.append({"id": code, "name": name, "shortDescription": {"text": text},
                                "defaultConfiguration": {"level": "error"}})
    index = {d["id"]: i for i, d in enumerate(descriptors)}
    results = []
    for f in findings:
        result: dict[str, Any] = {
            "ruleId": f.code,
            "level": f.level(),
            "message": {"text": f.explained()},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": f.filename.replace("\\", "/")},
                        "region": _region(f.location, f.end_location),
                    }
                }
            ],
            "properties": {"confidence": str(f.confidence), "context": f.context,
                           **({} if f.runtime_syncs is None else {"runtimeSyncs": f.runtime_syncs}),
                           **({} if f.runtime_wait_s is None else {"runtimeWaitSeconds": f.runtime_wait_s}),
                           **({"because": f.because} if f.because else {})},
        }
        if f.code in index:
            result["ruleIndex"] = index[f.code]
        if f.fix is not None:
            result["fixes"] = [
                {
                    "description": {"text": f"{f.fix.message} ({f.fix.applicability.value} fix)"},
                    "artifactChanges": [
                        {
                            "artifactLocation": {"uri": f.filename.replace("\\", "/")},
                            "replacements": [
                                {
                                    "deletedRegion": _region(e.location, e.end_location),
                                    "insertedContent": {"text": e.content},
                                }
                                for e in f.fix.edits
                            ],
                        }
                    ],
                }
            ]
        results.append(result)
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "synclint",
                        "version": __version__,
                        "rules": descriptors,
                    }
                },
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }


def write_sarif(findings: list[Finding], stream: TextIO, rules) -> None:
    json.dump(sarif_document(findings, rules), stream, indent=2)
    stream.write("\n")
