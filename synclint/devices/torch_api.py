"""What torch's (and numpy's) functions and tensor methods return, as the device model needs it.

Plain tables of names; the evaluator (`synclint.devices.evaluate`) reads them.
"""

from __future__ import annotations

TORCH_FACTORIES = frozenset(
    "tensor as_tensor asarray zeros ones empty full rand randn randint randperm arange range "
    "linspace logspace eye empty_strided tril_indices triu_indices normal".split()
)
# Factories that copy data from the host: wherever they put the tensor, the data crosses.
DATA_FACTORIES = frozenset("tensor as_tensor asarray".split())
TORCH_LIKE_FACTORIES = frozenset(
    "zeros_like ones_like empty_like full_like rand_like randn_like randint_like".split()
)
# Tensor methods whose result is a host value whatever the tensor's device.
HOST_RESULT_METHODS = frozenset(
    "size dim ndimension numel nelement _nnz sparse_dim dense_dim element_size is_contiguous data_ptr stride get_device "
    "storage_offset is_floating_point is_complex is_pinned type tolist item numpy nbytes untyped_storage "
    "storage equal allclose".split()
)
# torch functions whose result is a Python value, not a tensor (equal/allclose sync inside: SYNC109).
HOST_RESULT_FUNCTIONS = frozenset(
    "is_tensor is_storage is_floating_point is_complex is_nonzero is_grad_enabled is_inference_mode_enabled "
    "numel typename get_default_dtype get_default_device equal allclose result_type promote_types can_cast "
    "is_autocast_enabled compiled_with_cxx11_abi".split()
)
HOST_ATTRIBUTES = frozenset("shape dtype device ndim is_cuda is_cpu requires_grad layout itemsize nbytes".split())
# `values`/`indices`: the fields of what max, min, sort, topk, ... return.
SAME_PLACE_ATTRIBUTES = frozenset("T mT H mH data real imag grad values indices".split())
# Builtins whose result is a host value.
HOST_BUILTINS = frozenset(
    "len int float bool str repr range list tuple dict set frozenset sorted isinstance issubclass "
    "hasattr getattr callable id hash type print enumerate zip abs round divmod format ord chr any all".split()
)
# torch functions that take a sequence of tensors (`torch.cat(tensors)`).
SEQUENCE_OPERATIONS = frozenset(
    "cat concat concatenate stack hstack vstack dstack column_stack row_stack block_diag cartesian_prod "
    "broadcast_tensors meshgrid".split()
)
NEW_TENSOR_METHODS = frozenset("new_tensor new_zeros new_ones new_empty new_full".split())

# Reductions and comparisons that a torch tensor and a numpy array have and no builtin value has
# (a list, a dict, a str, a number): their result, of a value of unknown type in a module that
# imports torch, is a tensor (numpy evidence, seen first, makes the value a host one). What code
# tests or reads on the host (`if x.any():`, `bool(t.max() == 0)`, `float(norm.sum())`). Methods
# that keep the receiver's shape or dtype (`view`, `float`) say nothing of where it lives.
ARRAY_ONLY_METHODS = frozenset(
    "any all sum mean std var max min argmax argmin amax amin nonzero count_nonzero norm prod "
    "isnan isinf isfinite isneginf isposinf eq ne gt lt ge le".split()
)

DTYPE_NAMES = frozenset(
    "float float16 float32 float64 bfloat16 half double int int8 int16 int32 int64 long uint8 bool "
    "complex64 complex128 float8_e4m3fn float8_e5m2 short".split()
)

# Tensor methods and torch functions whose result is a boolean tensor.
BOOL_RESULTS = frozenset(
    "isnan isinf isfinite isneginf isposinf isreal signbit isin logical_and logical_or logical_xor logical_not "
    "eq ne gt ge lt le greater greater_equal less less_equal not_equal bool any all".split()
)
# Calls that build a host tensor from Python or numpy data. A copy of their result to the
# device is SYNC103's (host-data-to-device); SYNC102 leaves those chains alone.
HOST_DATA_CONSTRUCTORS = frozenset({"torch.tensor", "torch.as_tensor", "torch.asarray", "torch.from_numpy"})

# ---- nn.Module ------------------------------------------------------------------------------

# Containers of layers: an attribute of one, called, is a layer called (`self.transformer.wte(idx)`).
MODULE_CONTAINERS = frozenset("ModuleDict ModuleList Sequential".split())
# Classes under these prefixes are nn.Modules (`torch.nn.Linear`, `DistributedDataParallel`, FSDP).
MODULE_CLASS_PREFIXES = ("torch.nn.", "torch.distributed.fsdp.")
# Methods whose receiver must be looked at before anything is assumed: on a module they move or
# cast the module itself rather than a tensor.
MODULE_METHODS = frozenset("cuda cpu to type".split())
# Methods of an nn.Module that return the module itself.
MODULE_RETURNING_METHODS = frozenset(
    "half float double bfloat16 train eval requires_grad_ type share_memory apply cpu to_empty".split()
)
# Every method of torch.nn.Module: called on a module, none of them runs it.
MODULE_METHOD_NAMES = frozenset(
    "add_module apply bfloat16 buffers children compile cpu cuda double eval extra_repr float get_buffer "
    "get_extra_state get_parameter get_submodule half ipu load_state_dict modules mtia named_buffers named_children "
    "named_modules named_parameters parameters register_backward_hook register_buffer register_forward_hook "
    "register_forward_pre_hook register_full_backward_hook register_full_backward_pre_hook register_module "
    "register_parameter requires_grad_ set_extra_state share_memory state_dict to to_empty train type xpu zero_grad "
    # and of the containers (ModuleDict, ModuleList, ParameterDict, Sequential)
    "keys values items get pop update clear append extend insert".split()
)
# Methods of an nn.Module (or of a model class) that run it and return its output.
MODULE_OUTPUT_METHODS = frozenset("forward generate __call__".split())
# Attributes of an nn.Module that are its tensors.
MODULE_TENSOR_ATTRIBUTES = frozenset("weight bias".split())
# Fields of a model's output object that hold its tensors (`outputs.loss`, `unet(...).sample`).
OUTPUT_FIELDS = frozenset(
    "loss logits last_hidden_state hidden_states pooler_output attentions sample prev_sample "
    "pred_original_sample image_embeds text_embeds".split()
)

# ---- torch functions that return tensors ------------------------------------------------------

# Top-level torch functions that return no tensor (or return what they are given).
NON_TENSOR_FUNCTIONS = frozenset(
    "no_grad enable_grad inference_mode set_grad_enabled manual_seed seed initial_seed save load compile "
    "autocast set_printoptions set_num_threads get_num_threads set_default_dtype set_default_device "
    "use_deterministic_algorithms typename device dtype broadcast_shapes set_float32_matmul_precision "
    "get_float32_matmul_precision vmap cond".split()
)
# Namespaces of torch whose functions compute tensors.
TENSOR_NAMESPACES = ("torch.nn.functional.", "torch.linalg.", "torch.fft.", "torch.special.")


def returns_a_tensor(qual: str) -> bool:
    """Whether a torch function computes a tensor (`torch.softmax`, `F.cross_entropy`,
    `torch.nn.utils.clip_grad_norm_`), not a context, a setting or an object."""
    short = qual.rsplit(".", 1)[-1]
    if not short[:1].islower() or short.startswith(("is_", "has_", "get_", "set_")):
        return False
    if qual.count(".") == 1:
        return short not in NON_TENSOR_FUNCTIONS
    return qual.startswith(TENSOR_NAMESPACES) or qual == "torch.nn.utils.clip_grad_norm_"

# Calls that return their tensor argument, or one like it on the same device: collectives of the
# distributed helpers of training libraries (`accelerator.gather(t)`, `gather_for_metrics`,
# `reduce`), and loss scaling (`scaler.scale(loss)`). Whatever their receiver, by their name.
SAME_PLACE_CALLS = frozenset(
    "gather all_gather gather_for_metrics reduce pad_across_processes broadcast scale all_reduce_mean all_reduce".split()
)
