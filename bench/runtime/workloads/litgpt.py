"""litgpt: its own entry points (pretrain/finetune setup -> Fabric -> fit/validate, generate main,
speculative decoding, the LLM API) on tiny random-weight checkpoints made here.

A checkpoint directory is what ``litgpt download`` would leave: ``model_config.yaml`` (a tiny
Llama-shaped ``Config``), ``lit_model.pth`` (random weights), a word-level ``tokenizer.json``
built with the ``tokenizers`` library, ``tokenizer_config.json`` and ``generation_config.json``.
Fine-tuning data is a local JSON file through ``litgpt.data.JSON`` (``num_workers=0``);
pretraining data is a small random-token DataModule. ``pretrain.main`` calls ``torch.compile``
unconditionally: that scenario replaces it with the identity (compile time, not syncs, would
dominate); everything else is the package's own code path.
"""

import contextlib
import json
import os
import random
import sys
from dataclasses import dataclass
from pathlib import Path

import torch

WORDS = ("below is an instruction that describes a task paired with input provides further context write response "
         "appropriately completes the request what food do llamas eat grass hay and leaves they like to chew "
         "how many legs does spider have eight name three colors red green blue translate hello into french "
         "bonjour give me a short poem about sea waves roll on the shore sum two numbers one plus equals summarize "
         "text list fruits apple banana cherry why sky sun light scatters").split()
WORDS = sorted(set(WORDS) | {"###", ":", ".", ",", "?", "!", "\n"})

SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


def package_root():
    import litgpt

    return os.path.dirname(os.path.realpath(litgpt.__file__))


def _config(n_layer=2, name="tiny-llama"):
    from litgpt import Config

    return Config(name=name, block_size=256, vocab_size=256, padded_vocab_size=256, n_layer=n_layer, n_head=4,
                  n_query_groups=2, n_embd=64, rotary_percentage=1.0, parallel_residual=False, bias=False,
                  norm_class_name="RMSNorm", mlp_class_name="LLaMAMLP", intermediate_size=176)


def _tokenizer_files(d: Path):
    from tokenizers import Tokenizer, models, pre_tokenizers, decoders

    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for w in WORDS:
        vocab.setdefault(w, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()])
    tok.decoder = decoders.WordPiece(prefix="##")
    tok.save(str(d / "tokenizer.json"))
    (d / "tokenizer_config.json").write_text(json.dumps(
        {"bos_token": "<s>", "eos_token": "</s>", "add_bos_token": True, "tokenizer_class": "PreTrainedTokenizerFast"}))
    (d / "generation_config.json").write_text(json.dumps({"bos_token_id": 1, "eos_token_id": 2}))


def make_checkpoint(d: Path, n_layer=2, seed=0):
    from litgpt import GPT
    from litgpt.utils import save_config

    d.mkdir(parents=True, exist_ok=True)
    cfg = _config(n_layer)
    torch.manual_seed(seed)
    model = GPT(cfg)
    torch.save(model.state_dict(), d / "lit_model.pth")
    save_config(cfg, d)
    _tokenizer_files(d)
    return d


def make_sft_json(path: Path, n=24):
    rng = random.Random(0)
    rows = []
    for i in range(n):
        ins = " ".join(rng.choice(WORDS[5:]) for _ in range(rng.randint(3, 9)))
        out = " ".join(rng.choice(WORDS[5:]) for _ in range(rng.randint(2, 12)))
        rows.append({"instruction": ins, "input": "" if i % 2 else "hello", "output": out})
    path.write_text(json.dumps(rows))
    return path


@contextlib.contextmanager
def _argv(*args):
    """litgpt saves hyperparameters by re-parsing sys.argv with jsonargparse, as its CLI was called."""
    old = sys.argv
    sys.argv = ["litgpt", *map(str, args)]
    try:
        yield
    finally:
        sys.argv = old


def _precision(ctx, training=True):
    if not ctx.cuda:
        return "32-true"
    return "bf16-mixed" if training else "bf16-true"


@scenario
def pretrain_fit(ctx):
    """pretrain.setup -> main -> fit: grad accumulation, clip_gradients, RunningMean loss, ThroughputMonitor,
    validate every 2 steps, checkpoints, final validation (torch.compile replaced by identity)."""
    from litgpt import pretrain
    from litgpt.args import EvalArgs, TrainArgs
    from litgpt.data import DataModule
    from torch.utils.data import DataLoader

    @dataclass
    class RandomTokens(DataModule):
        n: int = 64
        seq: int = 64

        def connect(self, tokenizer=None, batch_size=1, max_seq_length=None, **kw):
            self.batch_size = batch_size
            self.seq = max_seq_length or self.seq

        def setup(self, stage=""):
            g = torch.Generator().manual_seed(0)
            self.data = torch.randint(0, 256, (self.n, self.seq + 1), generator=g)

        def train_dataloader(self):
            return DataLoader(self.data, batch_size=self.batch_size, shuffle=True, num_workers=0)

        def val_dataloader(self):
            return DataLoader(self.data[:8], batch_size=self.batch_size, num_workers=0)

    def run():
        real_compile = torch.compile
        torch.compile = lambda m, *a, **k: m
        try:
            with _argv("pretrain", "tiny-llama"):
                pretrain.setup(
                    model_name="tiny-llama", model_config=_config(), out_dir=Path(ctx.tmp) / "pretrain",
                    precision=_precision(ctx), data=RandomTokens(),
                    train=TrainArgs(save_interval=2, log_interval=1, global_batch_size=4, micro_batch_size=2,
                                    max_tokens=8 * 2 * 64, max_norm=1.0, min_lr=4e-5, lr_warmup_steps=2,
                                    tie_embeddings=False, max_seq_length=64),
                    eval=EvalArgs(interval=2, max_iters=2, initial_validation=True, final_validation=True),
                    devices=1, logger_name="csv", seed=42)
        finally:
            torch.compile = real_compile
    return run


def _sft(ctx, module_name, n_layer=2):
    import importlib

    from litgpt.args import EvalArgs, TrainArgs
    from litgpt.data import JSON

    mod = importlib.import_module(f"litgpt.finetune.{module_name}")
    ckpt = make_checkpoint(Path(ctx.tmp) / "checkpoints" / "tiny-llama", n_layer=n_layer)
    data_file = make_sft_json(Path(ctx.tmp) / "sft.json")
    counter = [0]

    def run():
        counter[0] += 1
        kw = dict(checkpoint_dir=ckpt, out_dir=Path(ctx.tmp) / f"out{counter[0]}", precision=_precision(ctx, False),
                  data=JSON(json_path=data_file, val_split_fraction=0.25, num_workers=0),
                  train=TrainArgs(save_interval=2, log_interval=1, global_batch_size=4, micro_batch_size=2,
                                  lr_warmup_steps=1, epochs=1, max_steps=4, max_seq_length=None),
                  eval=EvalArgs(interval=2, max_new_tokens=8, max_iters=2, initial_validation=False,
                                final_validation=True),
                  devices=1, logger_name="csv")
        with _argv(f"finetune_{module_name}", ckpt):
            mod.setup(**kw)
    return run


@scenario
def finetune_lora(ctx):
    """finetune.lora.setup on a JSON dataset: fit (token counts, RunningMean, validate, generate_example,
    all_reduce of val loss), LoRA checkpoint saves, final validation, merge_lora."""
    return _sft(ctx, "lora")


@scenario
def finetune_full(ctx):
    """finetune.full.setup on the same JSON dataset."""
    return _sft(ctx, "full")


@scenario
def finetune_adapter(ctx):
    """finetune.adapter.setup on the same JSON dataset (3 layers: adapters start at layer 2)."""
    return _sft(ctx, "adapter", n_layer=3)


@scenario
def generate_main(ctx):
    """generate.base.main (the `litgpt generate` entry): load, prompt style, top-k/top-p sampling, 2 samples."""
    from litgpt.generate import base

    ckpt = make_checkpoint(Path(ctx.tmp) / "checkpoints" / "tiny-llama")
    return lambda: base.main(ckpt, prompt="what food do llamas eat ?", num_samples=2, max_new_tokens=16,
                             top_k=50, top_p=0.9, temperature=0.8, precision=_precision(ctx, False))


@scenario
def generate_functions(ctx):
    """generate(), generate_fn streaming with stop tokens, batched_generate_fn, greedy and top-p sampling."""
    from litgpt import GPT
    from litgpt.generate import base

    torch.manual_seed(0)
    model = GPT(_config()).to(ctx.device)
    model.eval()
    prompt = torch.randint(3, 100, (12,), device=ctx.device)
    prompts = torch.randint(3, 100, (2, 10), device=ctx.device)

    @torch.inference_mode()
    def run():
        model.set_kv_cache(batch_size=1, device=ctx.device)
        base.generate(model, prompt, max_returned_tokens=40, temperature=0.8, top_k=20, eos_id=2)
        model.clear_kv_cache()
        model.set_kv_cache(batch_size=1, device=ctx.device)
        base.generate(model, prompt, max_returned_tokens=40, temperature=1.0, top_p=0.9)
        model.clear_kv_cache()
        model.set_kv_cache(batch_size=1, device=ctx.device)
        toks = list(base.generate_fn(model, prompt, max_returned_tokens=40, temperature=0.0, top_k=1,
                                     stop_tokens=([5, 6], [7]), include_prompt=False, include_eos=False))
        model.clear_kv_cache()
        model.set_kv_cache(batch_size=2, device=ctx.device)
        for _ in base.batched_generate_fn(model, prompts, max_returned_tokens=30,
                                          sample_args={"temperature": 0.7, "top_k": 20}, stop_tokens=([2],),
                                          include_prompt=True, include_eos=False):
            pass
        model.clear_kv_cache()
        return toks
    return run


@scenario
def speculative_decoding(ctx):
    """generate.speculative_decoding.main with a 1-layer draft and a 2-layer target model."""
    from litgpt.generate import speculative_decoding as sd

    draft = make_checkpoint(Path(ctx.tmp) / "checkpoints" / "draft", n_layer=1, seed=1)
    target = make_checkpoint(Path(ctx.tmp) / "checkpoints" / "target", n_layer=2, seed=2)
    return lambda: sd.main(draft, target, prompt="give me a short poem about sea", num_samples=2, max_new_tokens=16,
                           speculative_k=3, top_k=50, temperature=0.8, precision=_precision(ctx, False))


@scenario
def api_llm(ctx):
    """litgpt.LLM: load from a local checkpoint, distribute, generate (text, token ids, stream), benchmark."""
    from litgpt import LLM

    ckpt = make_checkpoint(Path(ctx.tmp) / "checkpoints" / "tiny-llama")

    def run():
        llm = LLM.load(str(ckpt), distribute=None)
        llm.distribute(devices=1, accelerator="cuda" if ctx.cuda else "cpu", precision=_precision(ctx, False))
        llm.generate("what food do llamas eat ?", max_new_tokens=16, top_k=20)
        llm.generate("name three colors", max_new_tokens=8, temperature=0.0, return_as_token_ids=True)
        for _ in llm.generate("translate hello into french", max_new_tokens=12, stream=True):
            pass
        llm.benchmark(num_iterations=2, prompt="sum two numbers", max_new_tokens=8)
    return run


ZOO = ["pythia-14m", "Llama-3.2-1B", "Mixtral-8x7B-v0.1", "Qwen3-30B-A3B", "Gemma-2-2b", "Gemma-3-1b-it", "phi-2",
       "Phi-3-mini-4k-instruct", "Phi-4-mini-instruct", "falcon-7b", "Qwen2.5-0.5B", "Qwen3-0.6B", "SmolLM2-135M",
       "Mistral-7B-v0.1", "stablelm-3b-4e1t", "Falcon3-1B-Base"]


def _shrunk(name):
    """The architecture of a named litgpt config at toy size (2 layers, width 128, vocab 256)."""
    from litgpt import Config
    from litgpt.config import name_to_config

    base = name_to_config[name]
    kw = dict(n_layer=2, n_embd=128, n_head=4, head_size=32, block_size=128, vocab_size=256, padded_vocab_size=256,
              intermediate_size=256)
    g, h = base.get("n_query_groups"), base.get("n_head")
    kw["n_query_groups"] = 4 if g in (None, h) else (1 if g == 1 else 2)
    if base.get("n_expert"):
        kw.update(n_expert=4, n_expert_per_token=2)
        if base.get("moe_intermediate_size"):
            kw["moe_intermediate_size"] = 64
    if base.get("sliding_window_size"):
        kw["sliding_window_size"] = 16
    return Config.from_name(name, **kw)


@scenario
def model_zoo(ctx):
    """16 litgpt architectures (GPT-NeoX, Llama 3.2, Mixtral and Qwen3 MoE, Gemma 2/3 sliding window and
    soft-capping, Phi 2/3/4, Falcon MQA, Qwen2.5/3, SmolLM2, Mistral, StableLM, Falcon3) at toy size: one
    training step (chunked_cross_entropy, AdamW) and 8 generated tokens each with the KV cache."""
    from litgpt import GPT
    from litgpt.generate.base import generate
    from litgpt.utils import chunked_cross_entropy

    failed = {}

    def run():
        for name in ZOO:
            try:
                torch.manual_seed(0)
                model = GPT(_shrunk(name)).to(ctx.device)
                opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
                idx = torch.randint(0, 256, (2, 33), device=ctx.device)
                with torch.autocast(ctx.device.type, dtype=torch.bfloat16, enabled=ctx.cuda):
                    logits = model(idx[:, :-1])
                    loss = chunked_cross_entropy(logits, idx[:, 1:], chunk_size=16)
                loss.backward()
                opt.step()
                opt.zero_grad()
                model.eval()
                with torch.inference_mode():
                    model.set_kv_cache(batch_size=1, device=ctx.device)
                    generate(model, idx[0, :12], max_returned_tokens=20, temperature=0.8, top_k=10, eos_id=2)
                    model.clear_kv_cache()
            except Exception as exc:  # noqa: BLE001
                failed[name] = f"{type(exc).__name__}: {exc}"[:200]
        if failed:
            print("architectures that failed:", failed)
    return run


@scenario
def chat(ctx):
    """chat.base.main (the `litgpt chat` loop) with two typed prompts, then '!quit'."""
    import builtins

    from litgpt.chat import base as chat_base

    ckpt = make_checkpoint(Path(ctx.tmp) / "checkpoints" / "tiny-llama")

    def run():
        answers = iter(["what food do llamas eat ?", "name three colors", "!quit"])
        real_input = builtins.input
        builtins.input = lambda *a, **k: next(answers)
        try:
            chat_base.main(ckpt, max_new_tokens=12, top_k=20, temperature=0.8, precision=_precision(ctx, False))
        finally:
            builtins.input = real_input
    return run
