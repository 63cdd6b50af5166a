"""SYNC105 sync-property: configured and discovered properties, and which reads they match."""

from __future__ import annotations

from synclint.model import Confidence
from synclint.rules.sync_property import SyncProperty
from synclint.testing import check_snippet

METADATA = (
    "import torch\nfrom dataclasses import dataclass\n\n\n@dataclass\nclass Meta:\n"
    "    seq_lens: torch.Tensor\n    query_start_loc_cpu: torch.Tensor\n\n"
    "    @property\n    def seq_lens_cpu(self) -> torch.Tensor:\n        return self.seq_lens.cpu()\n\n"
    "    @property\n    def num_computed_tokens_cpu(self) -> torch.Tensor:\n"
    "        query_lens = self.query_start_loc_cpu[1:] - self.query_start_loc_cpu[:-1]\n"
    "        return self.seq_lens_cpu - query_lens\n"
)


def findings(code: str, table: dict | None = None):
    config = {"sync-properties": table} if table is not None else None
    return check_snippet(SyncProperty, code, config)


def test_a_property_that_reads_a_syncing_property_syncs_too():
    code = METADATA + "\n\ndef decodes(meta: Meta) -> int:\n    return int((meta.num_computed_tokens_cpu > 0).sum())\n"
    found = [f for f in findings(code) if f.location.row > 17]
    assert len(found) == 1 and "Meta.num_computed_tokens_cpu" in found[0].message
    assert found[0].confidence == Confidence.MEDIUM  # seq_lens is a tensor of unknown device


def test_a_property_that_copies_a_host_value_does_not_sync():
    code = (
        "import torch\n\n\nclass Batch:\n    def __init__(self, n: int):\n        self.lens = torch.zeros(n)\n\n"
        "    @property\n    def lens_list(self):\n        return self.lens.tolist()\n\n\n"
        "def f(batch: Batch):\n    return batch.lens_list\n"
    )
    assert findings(code) == []


def test_a_class_entry_matches_self_in_subclasses_and_not_other_classes():
    code = (
        "import torch\n\n\nclass Base:\n    pass\n\n\nclass Child(Base):\n"
        "    def plan(self):\n        return self.seq_lens_cpu\n\n\nclass Other:\n"
        "    def plan(self):\n        return self.seq_lens_cpu\n"
    )
    found = findings(code, {"Base.seq_lens_cpu": "seq_lens_cpu_upper_bound"})
    assert [f.location.row for f in found] == [10]
    assert found[0].confidence == Confidence.HIGH and found[0].fix is not None


def test_writes_deletes_and_the_class_attribute_itself_are_not_reads():
    code = (
        "import torch\n\n\nclass Meta:\n    pass\n\n\ndef f(meta: Meta, x):\n"
        "    meta.seq_lens_cpu = x\n    meta.seq_lens_cpu += x\n    del meta.seq_lens_cpu\n"
        "    for meta.seq_lens_cpu in x:\n        pass\n    return Meta.seq_lens_cpu\n"
    )
    assert findings(code, {"seq_lens_cpu": ""}) == []


def test_an_indexed_write_reads_the_property_first():
    code = "import torch\n\n\ndef f(meta, i):\n    meta.seq_lens_cpu[i] = 0\n"
    found = findings(code, {"seq_lens_cpu": ""})
    assert len(found) == 1 and found[0].fix is None


def test_a_replacement_that_is_not_a_name_gives_no_fix():
    code = "import torch\n\n\ndef f(meta):\n    return meta.seq_lens_cpu\n"
    found = findings(code, {"seq_lens_cpu": "not a name"})
    assert len(found) == 1 and found[0].fix is None


def test_a_class_entry_on_a_value_of_unknown_class_is_only_a_low_confidence_guess():
    code = "import torch\n\n\ndef f(batch):\n    return batch.num_computed_tokens_cpu[:4]\n"
    config = {"sync-properties": {"CommonAttentionMetadata.num_computed_tokens_cpu": ""}}
    assert check_snippet(SyncProperty, code, config) == []
    found = check_snippet(SyncProperty, code, config, min_confidence=Confidence.LOW)
    assert len(found) == 1 and found[0].confidence == Confidence.LOW
