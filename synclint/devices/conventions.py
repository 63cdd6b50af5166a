"""Every naming convention the analysis relies on, in one place.

Code says where a value lives only sometimes; projects name things by habit, and synclint
reads those habits last, with lower confidence than what the code proves:

* names of values: `*_cpu`, `*_np`, `pinned_*` on the host, `*_gpu` on the device, flags
  (`is_cuda`, `use_gpu`), model activations (`hidden_states`, `logits`, ...), vLLM's
  `CpuGpuBuffer` fields (`.gpu`, `.cpu`, `.np`) and boolean masks (`valid_mask`, `is_prefill`);
* names of functions: per-step methods (`forward`, `execute_model`, ...), set-up code
  (`__init__`, `load_weights`, ...), weight loaders, tests;
* paths and names of code for the host (CPU kernels, multimodal processors) or for other
  accelerators (XPU, TPU, HPU, NPU, Neuron);
* vLLM's declarations of multimodal inputs kept on the CPU (`keep_on_cpu=True`).
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

import libcst as cst

from synclint.devices.lattice import HOST, Place, Where, device, host_tensor
from synclint.evidence import Basis, Certainty

# ---- names of values ----------------------------------------------------------------------


@dataclass(frozen=True)
class NameConventions:
    """Name patterns that projects use for where a value lives (fnmatch, on the last name)."""

    host: tuple[str, ...] = ("*_cpu", "*_cpu_*", "cpu_*", "*_np", "*_host", "*_numpy", "*_per_gpu", "cpu", "np", "host",
                             "host_*", "pinned_*", "*_pinned")
    device: tuple[str, ...] = ("*_gpu", "*_cuda")
    host_fields: frozenset[str] = frozenset()  # multimodal inputs the project keeps on the CPU
    # Models and layers (what a training loop calls and moves): `model`, `draft_model`, `net`.
    # Batches a data loader yields (`batch`, `micro_batch`): dicts or tuples of tensors.
    batches: tuple[str, ...] = ("batch", "*_batch", "minibatch", "microbatch")
    modules: tuple[str, ...] = ("model", "*_model", "net", "*_net", "network", "module", "*_module", "backbone",
                                "transformer", "unet", "vae", "encoder", "decoder", "*_encoder", "*_decoder", "controlnet",
                                "*_proj", "lm_head", "embed_tokens")

    def is_batch(self, name: str) -> bool:
        return bool(_any_of(self.batches).match(name))

    def classify(self, name: str) -> Where | None:
        if name in self.host_fields:
            return Where(Place.HOST_TENSOR, Certainty.MEDIUM,
                         f"{name} is a multimodal input the project declares with keep_on_cpu=True", basis=Basis.NAME)
        if _any_of(self.host).match(name):
            return Where(Place.HOST, Certainty.MEDIUM, f"{name} is a host value by its name", basis=Basis.NAME)
        if _any_of(self.device).match(name):
            if _FLAG_NAME.match(name):
                # `_is_cuda`, `use_gpu`, `has_cuda`: a yes/no answer about the device, not a tensor on it.
                return Where(Place.HOST, Certainty.MEDIUM, f"{name} is a flag by its name", basis=Basis.NAME)
            return replace(device(f"{name} is on the device by its name", Certainty.MEDIUM), basis=Basis.NAME)
        if _any_of(self.modules).match(name) and not VERB_NAME.match(name):
            return Where(Place.MODULE, Certainty.LOW, f"{name} is a model by its name", basis=Basis.NAME)
        return None


# Names that read as a yes/no question (`is_cuda`, `_use_gpu`, `has_cuda`, `on_gpu`): flags.
# Names of actions, not of things (`load_model`, `uses_draft_model`, `get_encoder`).
VERB_NAME = re.compile(r"_*(?:load|get|build|init|create|capture|uses?|set|save|compile|make|wrap|unwrap|prepare|setup|"
                       r"is|has|to|from|reset|register|add|remove|update|run|apply|freeze|unfreeze|should|can|check|"
                       r"find|try|skip|maybe|needs?|convert|replace|patch|merge|split|filter|process|validate|import)_")


# Counts and modes are no tensors either (`multi_gpu`, `num_gpus`, `n_gpu`, `single_gpu`).
_FLAG_NAME = re.compile(r"_*(?:is|has|have|use|uses|using|can|should|enable|enabled|supports?|allow|on|run_on|needs?"
                        r"|multi|n|single|no)_")


@functools.lru_cache(maxsize=None)
def _any_of(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """One regular expression for `fnmatchcase(name, p) for p in patterns` (asked of every name)."""
    return re.compile("|".join(fnmatch.translate(pattern) for pattern in patterns) or "(?!)")


def name_matches(name: str, patterns: tuple[str, ...]) -> bool:
    """Whether `name` matches one of the fnmatch `patterns` (case-sensitive), in one regular expression."""
    return _any_of(patterns).match(name) is not None


# What command-line flags and settings objects are called (`args = parser.parse_args()`,
# `self.config`, `cfg`, `opt`, `hparams`): their fields are Python values, whatever their name
# says (`args.gpu` is a GPU's number, not a `.gpu` buffer).
SETTINGS_NAMES = frozenset("args opt opts options config cfg conf hparams hps flags FLAGS settings".split())


def is_settings_namespace(expr: cst.BaseExpression) -> bool:
    """Whether `expr` names a settings object: `args`, `cfg`, `self.config`, `self.args`."""
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
        expr = expr.attr
    return isinstance(expr, cst.Name) and expr.value in SETTINGS_NAMES


def classify_buffer_field(attr: str) -> Where | None:
    """vLLM's `CpuGpuBuffer` pairs a tensor on each side: `buf.gpu`, `buf.cpu`, and `buf.np`."""
    if attr == "gpu":
        return device("a .gpu buffer", Certainty.MEDIUM)
    if attr == "cpu":
        return host_tensor("a .cpu buffer")
    if attr == "np":
        return HOST
    return None


def names_the_host(text: str) -> bool:
    """Whether a device expression's text names the host (`"cpu"`, `self.host_device`)."""
    lowered = text.lower()
    return "cpu" in lowered or "host" in lowered


def names_a_device(text: str) -> bool:
    """Whether an expression's text reads as an accelerator device (`device`, `self.cuda_dev`, `dev`)."""
    lowered = text.lower()
    return "device" in lowered or "cuda" in lowered or "gpu" in lowered or lowered in ("dev", "self.dev")


# Functions whose names say they move what they are given to the accelerator: composer's
# `device.tensor_to_device(t)`, accelerate's `send_to_device(t, device)`, `to_gpu(t)`, `move_to_device`.
MOVES_TO_DEVICE = re.compile(r"(?:^|_)to_(?:device|gpu|cuda|accelerator)$")


# Parameter names that, annotated `torch.Tensor`, are a model's activations or caches wherever
# they appear: they live on the GPU during inference.
ACTIVATION_NAMES = frozenset(
    "x hidden_states hidden_state residual inputs_embeds input_embeds logits router_logits input_ids positions "
    "query key value q k v kv_cache kv_caches k_cache v_cache topk_ids topk_weights attn_output attention_mask "
    "position_ids".split()
)


# Names that say a tensor is a loss (`loss`, `critic_loss`, `loss_kl`): computed from a model's output, so on the
# model's device, the GPU in ordinary GPU use.
LOSS_NAME = re.compile(r"(?:^|_)loss(?:es)?(?:$|_)")
WEIGHT_LOADER = re.compile(r"load\w*weight|weight\w*load")
# The model's parameter a weight loader fills (`param`, `param_data`, `weight_param`).
PARAMETER_NAME = re.compile(r"(?:\w*_)?param(?:eter)?(?:_data)?$")


def is_activation_name(name: str) -> bool:
    return name in ACTIVATION_NAMES


def names_a_module(name: str) -> bool:
    """Whether a name reads as a model or a layer (`model`, `self.lm_head_module`, `net`), not data."""
    lowered = name.lower()
    return any(word in lowered for word in ("model", "module", "layer", "net", "self", "cls"))


# Helpers named for a device-wide wait (`device_synchronize()`, `synchronize_device()`, `cuda_sync()`).
SYNC_HELPER_NAME = re.compile(r"^_*(?:(?:device|cuda|gpu|accelerator)_?sync(?:hronize)?|sync(?:hronize)?_?(?:device|cuda|gpu|accelerator))$")


# Names that say a value is a boolean mask (`valid_mask`, `is_prefill`, `keep`).
MASK_NAME = re.compile(r"mask|^(is|has|no|not|keep|valid|invalid|done|finished|skip)(_|$)", re.IGNORECASE)


# ---- names of functions and files -----------------------------------------------------------

INIT_FUNCTIONS = ("__init__", "__post_init__", "load_weights", "load_model", "_init_*", "init_*", "initialize*",
                  "setup*", "_setup*", "warmup*", "_warmup*", "profile_run", "_dummy_*", "dummy_*",
                  # a CUDA graph is captured once per shape and replayed after: its capture (and the warm-up
                  # runs before it) happen at start-up
                  "capture*", "_capture*", "*_capture", "*_capture_*",
                  "build_model", "create_weights", "process_weights_after_loading",
                  # checkpoints, export and teardown: once per run, or once in a long while
                  "save_checkpoint", "_save_checkpoint", "load_checkpoint", "_load_checkpoint", "save_pretrained",
                  "state_dict", "load_state_dict", "_load_from_state_dict", "*_load_state_dict", "load_optim_state*",
                  "from_pretrained", "export", "export_*", "_export_*", "teardown*", "shutdown", "__del__",
                  "on_fit_start", "on_fit_end", "on_train_start", "on_train_end", "on_test_end", "on_predict_end")
# Functions that run once per epoch: an interval, not every step.
EPOCH_FUNCTIONS = ("*_epoch_end", "*_epoch_start", "on_epoch_*")
# Calls whose truth says that a step is one of every so many (`if every_n_steps(step, 100):`,
# `if self.should_log(step):`): an `if` on one of them is an interval.
PERIODIC_GUARD = re.compile(r"(?:^|_)every(?:_n)?(?:_|$)|^_*should_(?:log|eval|evaluate|save|print|report|sync)|"
                            r"^_*is_(?:log|eval|save|logging)_step$")
STEP_FUNCTIONS = ("forward", "__call__", "step", "*_step", "execute_model", "sample", "sample_tokens", "*prepare_inputs",
                  "_preprocess", "postprocess", "*update_states", "propose", "compute_logits", "build", "apply")


# Calls that only a step of training or inference makes: a backward pass, an optimizer's or a
# scheduler's step, a gradient reset, a generation or decode step, a module's forward.
MODEL_METHODS = frozenset({"backward", "zero_grad", "generate", "forward", "clip_grad_norm_", "unscale_"})
# Receivers whose `.step()` is one: optimizers, scalers, schedulers, engines, trainers.
STEPPING = re.compile(r"optim|(^|_)opt($|_)|scaler|sched|engine|trainer|accelerator", re.IGNORECASE)
STEP_CALLS = ("*_step", "step_*", "train_batch", "*train_on_batch", "decode", "decode_*", "*_decode", "sample_next*",
              "next_token*", "*_next_token*", "sample_token*", "execute_model", "generate_*", "*_generate", "rollout*",
              "predict_step", "forward_*", "*_forward")
# Entry points that run once per process, by name (beyond `INIT_FUNCTIONS`).
ENTRY_POINTS = ("main", "_main", "*_main", "main_*", "cli", "run_cli", "parse_args", "*_cli")
# Classes whose item and iteration methods DataLoader workers call, and those methods.
DATA_CLASS = re.compile(r"(Dataset|DataSet|Sampler|Collator|Collate|DataPipe|IterDataPipe|MapDataPipe)$")
DATA_METHODS = ("__getitem__", "__getitems__", "__iter__", "__next__", "__len__", "collate*", "_collate*", "__call__")


def names_a_step(name: str) -> bool:
    """Whether a function's name says it runs per step (`STEP_FUNCTIONS`)."""
    return name_matches(name, STEP_FUNCTIONS)


def is_test_path(relpath: str) -> bool:
    name = relpath.rsplit("/", 1)[-1]
    parts = relpath.split("/")
    return (
        name.startswith("test_")
        or name.endswith("_test.py")
        or name == "conftest.py"
        or any(p in ("tests", "test", "testing") for p in parts[:-1])
    )


# Files for accelerators other than CUDA GPUs, by their path: `xpumem.py`, `mla/xpu_mla_sparse.py`,
# `mixed_precision/xpu.py`, `tpu_model_runner.py`, `hpu/`, `device_mps.py`, `xla_utils.py`, Intel
# Gaudi's `habana/` and `gaudi_*.py`, IPEX's `*_ipex.py`, Moore Threads' MUSA and Cambricon's MLU. ROCm GPUs are
# CUDA devices to torch.
# The torch device types of other accelerators, and the other names their code goes by.
OTHER_DEVICE_TYPES = ("xpu", "npu", "hpu", "tpu", "xla", "mps", "mlu", "musa", "neuron")
_PLATFORMS = "|".join((*OTHER_DEVICE_TYPES, "habana", "gaudi", "ipex"))
OTHER_ACCELERATOR_PATH = re.compile(rf"(?:^|[/_])({_PLATFORMS})(?:mem)?(?:[/_.]|$)", re.IGNORECASE)
# Intel Gaudi goes by its maker's name too; its torch device is "hpu".
_PLATFORM_ALIASES = {"HABANA": "HPU", "GAUDI": "HPU"}
# The packages that drive another accelerator: a file that imports one unconditionally cannot
# run without it. (Imported under a test, or in a `try`, they say nothing: diffusers' pipelines
# import torch_xla where it is installed and run on CUDA GPUs elsewhere.)
OTHER_ACCELERATOR_PACKAGES = {
    "habana_frameworks": "HPU", "optimum.habana": "HPU", "intel_extension_for_pytorch": "IPEX", "torch_xla": "XLA",
    "torch_npu": "NPU", "torch_neuronx": "NEURON", "torch_neuron": "NEURON", "torch_mlu": "MLU", "torch_musa": "MUSA",
}


def platform_name(name: str) -> str:
    """The platform a name's part (`xpu`, `habana`, `Gaudi`) stands for, as findings name it."""
    return _PLATFORM_ALIASES.get(name.upper(), name.upper())


def other_accelerator(relpath: str) -> str | None:
    """The accelerator, other than a CUDA GPU, that a file's path says its code is for."""
    match = OTHER_ACCELERATOR_PATH.search(relpath.replace("\\", "/"))
    return platform_name(match.group(1)) if match else None


def other_accelerator_package(module: str) -> str | None:
    """The accelerator whose driving package `module` (an imported module's dotted name) is part of."""
    for package, platform in OTHER_ACCELERATOR_PACKAGES.items():
        if module == package or module.startswith(package + "."):
            return platform
    return None


# Classes and methods named for another accelerator: `INCXPULinearBase`, `TPUModelRunner`,
# `DeviceMPS`, and the per-platform methods of a custom op (vLLM's `CustomOp.forward_xpu`,
# `forward_cpu`), which the op dispatches to only on that platform.
OTHER_ACCELERATOR_CLASS = re.compile(r"(XPU|TPU|HPU|NPU|MLU|MUSA|Neuron|MPS|XLA|Gaudi|Habana|IPEX)(?![a-z])")
OTHER_PLATFORM_METHOD = re.compile(rf"_*forward_({_PLATFORMS}|cpu)$")
# Functions named for one: accelerate's `_neuron_gather_object` beside `_gpu_gather_object`.
OTHER_PLATFORM_FUNCTION = re.compile(rf"(?:^|_)({_PLATFORMS})(?:_|$)")


def other_accelerator_scope(names: list[str], class_name: str | None) -> str | None:
    """The platform, other than a CUDA GPU, that the functions `names` (outermost first) of a
    class `class_name` are for, by their names."""
    for name in names:
        method = OTHER_PLATFORM_METHOD.match(name) or OTHER_PLATFORM_FUNCTION.search(name)
        if method:
            return platform_name(method.group(1))
    match = OTHER_ACCELERATOR_CLASS.search(class_name or "")
    return platform_name(match.group(1)) if match else None


# Classes whose methods prepare a model's inputs on the host, by their names: vLLM's multimodal
# processors (`KeyeVL1_5MultiModalProcessor`, `...ProcessingInfo`, `...DummyInputsBuilder`) and the
# image, video and audio processors and feature extractors of HF-style libraries. (Not logits
# processors: they run in the sampling step, on the GPU.)
HOST_SIDE_CLASS = re.compile(r"(?:MultiModalProcessor|ProcessingInfo|DummyInputsBuilder|ImageProcessor|VideoProcessor"
                             r"|AudioProcessor|FeatureExtractor)$")


# Files whose code runs on the host, by their path: CPU kernels (`cpu_mla.py`, `ops/cpu/`) and
# multimodal processors (`transformers_utils/processors/`, `*processing*.py`, `mm_preprocess.py`),
# which prepare model inputs on the CPU. There a tensor of unknown device is a host tensor.
HOST_CODE_PATH = re.compile(r"(^|[/_])cpu([/_.]|$)|(^|/)processors?/|(^|/)[^/]*(processing|preprocess)[^/]*\.py$")


def is_host_code_path(relpath: str) -> bool:
    return bool(HOST_CODE_PATH.search(relpath))


# ---- declarations of data kept on the host ------------------------------------------------

# vLLM declares which multimodal inputs stay in host memory when they reach the model:
# `image_grid_thw=MultiModalFieldConfig.batched("image", keep_on_cpu=True)`, as a dict key
# (`"image_grid_thw": ...`), as an item (`fields["image_grid_thw"] = ...`), or as an item named by
# a loop over names (`for key in ("a", "b"): fields[key] = ...`).
_FIELD = re.compile(rb"""(?:\b(\w+)\s*=|["'](\w+)["']\s*:|\[\s*["'](\w+)["']\s*\]\s*=|\[\s*(\w+)\s*\]\s*=)"""
                    rb"""\s*MultiModalFieldConfig\.\w+\(((?:[^()]|\([^()]*\))*)\)""")
_NAMES_LOOP = re.compile(rb"""\bfor\s+(\w+)\s+in\s+[(\[]((?:\s*["']\w+["']\s*,?)+)\s*[)\]]\s*:""")
_STRING = re.compile(rb"""["'](\w+)["']""")
# The model's own step inputs, which a modality's field only shares a name with (`video_input_ids`).
_STEP_INPUTS = frozenset({"input_ids", "positions", "inputs_embeds", "embed_mask", "attention_mask"})
_KEEP_ON_CPU = re.compile(rb"\bkeep_on_cpu\s*=\s*True\b")
_MODALITY_PREFIX = re.compile(r"^(images?|videos?|audios?|vision)_(?=\w*_)")


def field_declarations(data: bytes) -> tuple[frozenset[str], frozenset[str]]:
    """The multimodal fields a file declares kept on the CPU, and those it leaves to the
    device, each with the name the code gives it once the modality is known
    (`image_grid_thw` -> `grid_thw`; only where the rest is still specific: `image_sizes`
    does not make `sizes` a host name)."""
    host: set[str] = set()
    other: set[str] = set()
    if b"MultiModalFieldConfig" in data:
        for match in _FIELD.finditer(data):
            if match.group(4) is not None:  # `fields[key] = ...`: the names of the nearest loop over `key`
                loops = [m for m in _NAMES_LOOP.finditer(data, 0, match.start()) if m.group(1) == match.group(4)]
                declared = [n.decode() for n in _STRING.findall(loops[-1].group(2))] if loops else []
            else:
                declared = [(match.group(1) or match.group(2) or match.group(3)).decode()]
            for name in declared:
                names = {name, _MODALITY_PREFIX.sub("", name)} - _STEP_INPUTS
                (host if _KEEP_ON_CPU.search(match.group(5)) else other).update(names)
    return frozenset(host), frozenset(other)


def host_field_names(declarations: Iterable[tuple[frozenset[str], frozenset[str]]]) -> frozenset[str]:
    """The fields that every declaration in the project keeps on the CPU."""
    host: set[str] = set()
    other: set[str] = set()
    for kept, left in declarations:
        host |= kept
        other |= left
    return frozenset(host - other)
