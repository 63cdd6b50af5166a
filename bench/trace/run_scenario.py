"""One scenario of `../runtime/workloads/` run as `../runtime/trace_syncs.py run` runs it: built, run
once to warm up inside `gpu_sync_allowed()` (so that `synclint trace` leaves the warm-up's syncs out,
as the harness leaves them unrecorded), then run once more. argv: WORKLOAD.py SCENARIO."""

import os
import sys
import tempfile

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "runtime"))
from trace_syncs import Ctx, load_workload  # noqa: E402

from synclint.verify import gpu_sync_allowed  # noqa: E402

workload, scenario = load_workload(sys.argv[1]), sys.argv[2]
device = torch.device("cuda")
ctx = Ctx(device=device, cuda=True, tmp=tempfile.mkdtemp(prefix=f"rt-{scenario}-"), scenario=scenario)
run = workload.SCENARIOS[scenario](ctx)
with gpu_sync_allowed():
    run()
    torch.cuda.synchronize()
run()
