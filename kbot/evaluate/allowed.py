"""What forward's call graph may use beside Triton launches: allocation, views, shape and
dtype queries, declared extern ops. Everything else under `torch` is compute (docs/evaluator.md)."""

from __future__ import annotations

TORCH_ALLOC = frozenset(
    "as_tensor empty empty_like empty_strided full full_like ones ones_like tensor zeros "
    "zeros_like".split()
)

TORCH_VIEWS = frozenset(
    "as_strided broadcast_to chunk flatten movedim narrow permute reshape select split "
    "squeeze swapaxes t tensor_split transpose unbind unflatten unsqueeze view_as_complex "
    "view_as_real".split()
)

TORCH_QUERIES = frozenset(
    "Size Tensor bfloat16 bool broadcast_shapes complex128 complex64 cuda.current_device "
    "cuda.device cuda.device_count cuda.get_device_capability cuda.get_device_name "
    "cuda.get_device_properties cuda.is_available device double dtype finfo float float16 "
    "float32 float64 get_default_dtype half iinfo inference_mode int int16 int32 int64 int8 "
    "is_complex is_floating_point is_tensor long no_grad numel promote_types result_type "
    "short uint8".split()
)

VIEW_METHODS = frozenset(
    "as_strided broadcast_to chunk contiguous detach diagonal expand expand_as flatten "
    "movedim narrow permute reshape reshape_as select split squeeze swapaxes t tensor_split "
    "transpose unbind unflatten unfold unsqueeze view view_as view_as_complex view_as_real".split()
)

ALLOC_METHODS = frozenset(
    "fill_ new_empty new_empty_strided new_full new_ones new_tensor new_zeros zero_".split()
)

QUERY_METHODS = frozenset(
    "data_ptr dim element_size get_device is_complex is_contiguous is_floating_point "
    "ndimension nelement numel size storage_offset stride".split()
)

CAST_METHODS = frozenset("bfloat16 bool cpu cuda double float half int long to type".split())

CONTAINER_METHODS = frozenset(
    "append endswith extend format get index insert items join keys pop setdefault startswith "
    "update values".split()
)

SCALAR_ATTRS = frozenset("device dtype is_cpu is_cuda itemsize layout ndim requires_grad".split())

TENSOR_ATTRS = frozenset("H T data imag mH mT real".split())

SCALAR_BUILTINS = frozenset(
    "abs all any bool callable divmod float hasattr hash int isinstance len max min pow round "
    "str sum".split()
)

OTHER_BUILTINS = frozenset(
    "AssertionError IndexError KeyError NotImplementedError RuntimeError TypeError ValueError "
    "dict enumerate filter iter list map next print range repr reversed set slice sorted "
    "tuple type zip".split()
)

EXTERN_CALLS: dict[str, tuple[str, ...]] = {
    "matmul": ("torch.matmul", "torch.Tensor.matmul"),
    "mm": ("torch.mm", "torch.Tensor.mm"),
    "bmm": ("torch.bmm", "torch.Tensor.bmm"),
    "addmm": ("torch.addmm", "torch.Tensor.addmm"),
    "linear": ("torch.nn.functional.linear", "torch.nn.Linear"),
    "conv1d": ("torch.nn.functional.conv1d", "torch.conv1d", "torch.nn.Conv1d"),
    "conv2d": ("torch.nn.functional.conv2d", "torch.conv2d", "torch.nn.Conv2d"),
    "conv3d": ("torch.nn.functional.conv3d", "torch.conv3d", "torch.nn.Conv3d"),
    "conv_transpose2d": (
        "torch.nn.functional.conv_transpose2d",
        "torch.conv_transpose2d",
        "torch.nn.ConvTranspose2d",
    ),
}
