"""nanoGPT (karpathy/nanoGPT): its own scripts, run as a user runs them, with small overrides.

train.py, sample.py and bench.py are scripts that read ``configurator.py`` and ``data/<dataset>/``
from the working directory, so each scenario makes a working directory with a link to the
package's ``configurator.py`` and synthetic ``data/openwebtext/{train,val}.bin`` + ``meta.pkl``
(65 characters, as in shakespeare_char), then runs the script with ``runpy`` and ``--key=value``
overrides (tiny model, few iterations, ``--compile=False``).
"""

import os
import pickle
import runpy
import shutil
import sys

import numpy as np

HERE = os.path.dirname(os.path.realpath(__file__))


def package_root():
    return os.path.join(os.environ.get("RT_SRC", os.path.join(HERE, "..", "..", "..", "src")), "nanogpt")


SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


def _workdir(ctx):
    root = os.path.realpath(package_root())
    wd = os.path.join(ctx.tmp, "ng")
    os.makedirs(os.path.join(wd, "data", "openwebtext"), exist_ok=True)
    link = os.path.join(wd, "configurator.py")
    if not os.path.exists(link):
        os.symlink(os.path.join(root, "configurator.py"), link)
    rng = np.random.default_rng(0)
    chars = "\n !'&,-.:;?" + "abcdefghijklmnopqrstuvwxyz" + "ABCDEFGHIJKLMNOPQRSTUVWXYZ" + "$3"
    assert len(chars) == 65, len(chars)
    for split, n in (("train", 200_000), ("val", 20_000)):
        rng.integers(0, 65, size=n).astype(np.uint16).tofile(os.path.join(wd, "data", "openwebtext", f"{split}.bin"))
    meta = {"vocab_size": 65, "itos": dict(enumerate(chars)), "stoi": {c: i for i, c in enumerate(chars)}}
    with open(os.path.join(wd, "data", "openwebtext", "meta.pkl"), "wb") as fh:
        pickle.dump(meta, fh)
    if root not in sys.path:
        sys.path.insert(0, root)
    return root, wd


def _run_script(root, wd, script, args):
    old_argv, old_cwd = sys.argv, os.getcwd()
    sys.argv = [os.path.join(root, script)] + list(args)
    os.chdir(wd)
    try:
        runpy.run_path(os.path.join(root, script), run_name="__main__")
    finally:
        sys.argv = old_argv
        os.chdir(old_cwd)


def _train_args(ctx, out_dir, **over):
    a = dict(dataset="openwebtext", out_dir=out_dir, device=ctx.device.type, compile=False, eval_interval=2,
             eval_iters=2, log_interval=1, max_iters=6, batch_size=4, block_size=64, n_layer=2, n_head=2, n_embd=64,
             gradient_accumulation_steps=2, warmup_iters=2, lr_decay_iters=6, min_lr=6e-5,
             dtype="bfloat16" if ctx.cuda else "float32")
    a.update(over)
    return [f"--{k}={v}" for k, v in a.items()]


@scenario
def train_bf16(ctx):
    """train.py from scratch: eval at 0/2/4/6 (estimate_loss, checkpoint save), grad accumulation, clipping, logging, MFU."""
    root, wd = _workdir(ctx)
    out = os.path.join(ctx.tmp, "out")
    return lambda: _run_script(root, wd, "train.py", _train_args(ctx, out))


@scenario
def train_fp16_resume(ctx):
    """train.py resumed from a checkpoint with dtype=float16 (GradScaler path)."""
    root, wd = _workdir(ctx)
    base = os.path.join(ctx.tmp, "base")
    _run_script(root, wd, "train.py", _train_args(ctx, base, max_iters=2))
    out = os.path.join(ctx.tmp, "out")

    def run():
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(base, out)
        _run_script(root, wd, "train.py", _train_args(ctx, out, init_from="resume", max_iters=6,
                                                      dtype="float16" if ctx.cuda else "float32"))
    return run


@scenario
def sample(ctx):
    """sample.py from a checkpoint that train.py wrote (char-level meta.pkl; top-k multinomial generate)."""
    root, wd = _workdir(ctx)
    out = os.path.join(ctx.tmp, "out")
    _run_script(root, wd, "train.py", _train_args(ctx, out, max_iters=2))
    args = [f"--out_dir={out}", f"--device={ctx.device.type}", "--num_samples=2", "--max_new_tokens=24",
            "--compile=False", f"--dtype={'bfloat16' if ctx.cuda else 'float32'}"]
    return lambda: _run_script(root, wd, "sample.py", args)


@scenario
def bench(ctx):
    """bench.py (GPT-2 124M shape, block 64, batch 2, real_data from train.bin, no compile): 30 steps."""
    root, wd = _workdir(ctx)
    args = ["--batch_size=2", "--block_size=64", "--compile=False", "--real_data=True", f"--device={ctx.device.type}",
            f"--dtype={'bfloat16' if ctx.cuda else 'float32'}"]
    return lambda: _run_script(root, wd, "bench.py", args)
