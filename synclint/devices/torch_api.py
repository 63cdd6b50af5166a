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
    "size dim numel nelement element_size is_contiguous data_ptr stride get_device "
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
