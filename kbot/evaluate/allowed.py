"""What forward's call graph may use beside Triton launches: allocation, views, shape and
dtype queries, declared extern ops. Everything else under `torch` is compute (docs/evaluator.md)."""

from __future__ import annotations

TORCH_ALLOC = frozenset(
    "arange as_tensor empty empty_like empty_strided full full_like ones ones_like tensor "
    "zeros zeros_like".split()
)

TORCH_VIEWS = frozenset(
    "as_strided broadcast_to chunk flatten movedim narrow permute reshape select split "
    "squeeze swapaxes t tensor_split transpose unbind unflatten unsqueeze view_as_complex "
    "view_as_real".split()
)

TORCH_QUERIES = frozenset(
    "Size Tensor bfloat16 bool broadcast_shapes complex128 complex64 "
    "cuda.device cuda.device_of cuda.get_device_capability "
    "cuda.get_device_properties cuda.is_available device double dtype finfo float float16 "
    "float32 float64 half iinfo inference_mode int int16 int32 int64 int8 "
    "is_complex is_floating_point is_tensor long no_grad numel promote_types result_type "
    "short uint8 uint16 uint32 uint64 float8_e4m3fn float8_e5m2 float8_e4m3fnuz float8_e5m2fnuz "
    "cfloat cdouble contiguous_format preserve_format channels_last channels_last_3d strided "
    "layout memory_format".split()
)

# Facts of the machine's devices that differ between the judge (one visible GPU, index 0) and a
# user's (a tensor-parallel rank on cuda:3 of 8): forward may not read them, since its result
# could follow them unchecked (red-team round thirteen's c07 halved its output when
# `torch.cuda.device_count() > 1`). The device's own properties (capability, SM count) stay
# queries: tuning reads them, and they are the judge's GPU's.
DEVICE_FACTS = frozenset("cuda.current_device cuda.device_count cuda.get_device_name".split())
DEVICE_FACT_METHODS = frozenset({"get_device"})

# torch's dtypes and memory formats as values (`torch.float16`, not a call): plain constants.
TORCH_VALUES = frozenset(
    f"torch.{name}"
    for name in (
        "bfloat16 bool cdouble cfloat complex128 complex64 double float float16 float32 "
        "float64 half int int16 int32 int64 int8 long short uint8 uint16 uint32 uint64 "
        "float8_e4m3fn float8_e5m2 float8_e4m3fnuz float8_e5m2fnuz contiguous_format "
        "preserve_format channels_last channels_last_3d strided"
    ).split()
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
    "data_ptr dim element_size is_complex is_contiguous is_floating_point "
    "ndimension nelement numel size storage_offset stride".split()
)

CAST_METHODS = frozenset("bfloat16 bool cpu cuda double float half int long to type".split())

CONTAINER_METHODS = frozenset(
    "append endswith extend format get index insert items join keys pop setdefault startswith "
    "update values".split()
)

SCALAR_ATTRS = frozenset("device dtype is_cpu is_cuda itemsize layout ndim requires_grad".split())

TENSOR_ATTRS = frozenset("H T data imag mH mT real".split())

# What a torch.autograd.Function's forward may do with its `ctx`: record what backward needs.
AUTOGRAD_CTX_METHODS = frozenset(
    "save_for_backward save_for_forward mark_dirty mark_non_differentiable set_materialize_grads".split()
)
# The methods torch calls on a torch.autograd.Function subclass; others are helpers.
AUTOGRAD_METHODS = frozenset("forward setup_context backward jvp vmap".split())
AUTOGRAD_BASES = frozenset({"torch.autograd.Function", "torch.autograd.function.Function"})
# torch.autograd.Function's own machinery, which a subclass may not override (`apply` runs
# forward as the checks assume; the rest is what autograd reads from the class or its ctx).
AUTOGRAD_MACHINERY = frozenset(
    "apply vjp mark_dirty mark_non_differentiable mark_shared_storage save_for_backward "
    "save_for_forward set_materialize_grads register_hook register_prehook saved_tensors "
    "saved_variables needs_input_grad next_functions metadata name requires_grad "
    "materialize_grads dirty_tensors non_differentiable to_save saved_for_forward "
    "generate_vmap_rule boxed_grads_call clear_saved_tensors_on_access "
    "maybe_clear_saved_tensors".split()
)
# Decorators a torch.autograd.Function's backward may carry (backward is never run by the judge).
AUTOGRAD_BACKWARD_DECORATORS = frozenset({"torch.autograd.function.once_differentiable"})

SCALAR_BUILTINS = frozenset(
    "abs all any bool callable divmod float hasattr hash int isinstance issubclass len max min "
    "pow round str sum".split()
)

OTHER_BUILTINS = frozenset(
    "AssertionError IndexError KeyError NotImplementedError RuntimeError TypeError ValueError "
    "dict enumerate filter iter list map next print range repr reversed set slice sorted "
    "tuple type zip".split()
)

# The matmul family: any one declared lets the candidate call any of them (`torch.mm` for a
# declared `matmul`), as the compute guard counts them alike (kbot.evaluate.compute_guard);
# the number of calls, and of fused adds, is still the reference's.
_MATMUL_CALLS = (
    "torch.matmul", "torch.Tensor.matmul", "torch.mm", "torch.Tensor.mm", "torch.bmm",
    "torch.Tensor.bmm", "torch.addmm", "torch.Tensor.addmm", "torch.nn.functional.linear",
    "torch.nn.Linear",
)  # fmt: skip
EXTERN_CALLS: dict[str, tuple[str, ...]] = {
    "matmul": _MATMUL_CALLS,
    "mm": _MATMUL_CALLS,
    "bmm": _MATMUL_CALLS,
    "addmm": _MATMUL_CALLS,
    "linear": _MATMUL_CALLS,
    "conv1d": ("torch.nn.functional.conv1d", "torch.conv1d", "torch.nn.Conv1d"),
    "conv2d": ("torch.nn.functional.conv2d", "torch.conv2d", "torch.nn.Conv2d"),
    "conv3d": ("torch.nn.functional.conv3d", "torch.conv3d", "torch.nn.Conv3d"),
    "conv_transpose1d": (
        "torch.nn.functional.conv_transpose1d",
        "torch.conv_transpose1d",
        "torch.nn.ConvTranspose1d",
    ),
    "conv_transpose2d": (
        "torch.nn.functional.conv_transpose2d",
        "torch.conv_transpose2d",
        "torch.nn.ConvTranspose2d",
    ),
    "conv_transpose3d": (
        "torch.nn.functional.conv_transpose3d",
        "torch.conv_transpose3d",
        "torch.nn.ConvTranspose3d",
    ),
}

# The triton API outside kernel bodies: the decorators, their Config, the two grid helpers, and
# triton.language's dtypes and constexpr (inside @triton.jit bodies all of triton.language is
# allowed). Two device queries of Triton's driver are the honest way to size persistent grids.
TRITON_API = frozenset(
    "triton triton.jit triton.autotune triton.Config triton.heuristics triton.cdiv "
    "triton.next_power_of_2 triton.__version__ triton.language triton.language.constexpr "
    "triton.language.dtype triton.runtime.driver.active.get_current_device "
    "triton.runtime.driver.active.utils.get_device_properties "
    "triton.tools.tensor_descriptor.TensorDescriptor "
    "triton.tools.tensor_descriptor.TensorDescriptor.from_tensor".split()
)
# A host-side TensorDescriptor holds its tensor: the forward check takes one for a tensor.
TRITON_DESCRIPTORS = frozenset(
    {
        "triton.tools.tensor_descriptor.TensorDescriptor",
        "triton.tools.tensor_descriptor.TensorDescriptor.from_tensor",
    }
)
TRITON_DTYPES = frozenset(
    "int1 int8 int16 int32 int64 uint8 uint16 uint32 uint64 float16 bfloat16 float32 float64 "
    "float8e4nv float8e5 float8e4b15 float8e4b8 float8e5b16 float8e4nv".split()
)
# What forward's call graph may call of the above: numbers in, numbers out.
TRITON_HELPERS = frozenset({"triton.cdiv", "triton.next_power_of_2"})

# `triton.autotune(...)` keywords: its configs and keys. The others run candidate code at
# launch (`prune_configs_by`, `pre_hook`, `post_hook`) or replace its timer (`do_bench`).
AUTOTUNE_KEYWORDS = frozenset(
    "configs key reset_to_zero restore_value warmup rep use_cuda_graph cache_results".split()
)
CONFIG_KEYWORDS = frozenset("kwargs num_warps num_stages num_ctas maxnreg".split())
JIT_KEYWORDS = frozenset("do_not_specialize do_not_specialize_on_alignment debug noinline".split())

# Context managers forward may enter: none of them swallows an exception.
CONTEXT_MANAGERS = frozenset(
    "torch.no_grad torch.inference_mode torch.enable_grad torch.cuda.device torch.device "
    "torch.cuda.device_of".split()
)

# Decorators a function or method that is not a kernel may carry.
FUNCTION_DECORATORS = frozenset(
    "staticmethod classmethod property functools.cached_property torch.no_grad "
    "torch.inference_mode".split()
)

# Calls allowed in code that runs at import (module level, class bodies, default values,
# decorator arguments): constructors of numbers, dtypes and launch configs.
IMPORT_TIME_CALLS = frozenset(
    "triton.cdiv triton.next_power_of_2 triton.Config triton.language.constexpr torch.finfo "
    "torch.iinfo torch.device torch.Size dataclasses.field enum.auto typing.TypeVar "
    "int float str bool complex len range tuple list dict set frozenset min max abs round sum "
    "sorted reversed zip enumerate pow divmod isinstance any all".split()
)
IMPORT_TIME_MODULES = ("math.", "itertools.", "operator.")

# nn.Module methods the evaluator's calls go through: ModelNew must not define them (it would
# run code around forward, or change what is loaded, moved or returned).
NN_MODULE_MACHINERY = frozenset(
    "__call__ _call_impl _wrapped_call_impl __getattr__ __getattribute__ __setattr__ "
    "__delattr__ __dir__ __setstate__ __getstate__ __reduce__ __reduce_ex__ __new__ __del__ "
    "_apply apply to to_empty cuda cpu type float double half bfloat16 train eval "
    "requires_grad_ zero_grad state_dict load_state_dict _load_from_state_dict "
    "_save_to_state_dict named_parameters parameters buffers named_buffers children "
    "named_children modules named_modules register_buffer register_parameter register_module "
    "add_module get_submodule get_parameter get_buffer get_extra_state set_extra_state "
    "share_memory compile _named_members _get_name _replicate_for_data_parallel".split()
)

# Special methods that Python runs implicitly, at times no call graph shows (attribute access,
# class creation, garbage collection); no class of a candidate may define them.
IMPLICIT_DUNDERS = frozenset(
    "__call__ __getattr__ __getattribute__ __setattr__ __delattr__ __get__ __set__ __delete__ "
    "__set_name__ __init_subclass__ __class_getitem__ __prepare__ __instancecheck__ "
    "__subclasscheck__ __new__ __del__ __missing__ __index__ __torch_function__ "
    "__torch_dispatch__ __reduce__ __reduce_ex__ __setstate__ __getstate__".split()
)


# What Python's import and class machinery put in a module's or a class's namespace: the only
# names the walk leaves out. Any other name is walked, dunder or not (a counter kept in a
# module global `__pool__`, a weight cache in `ModelNew.__wcache__`: round ten).
MODULE_MACHINERY = frozenset(
    "__name__ __doc__ __package__ __loader__ __spec__ __file__ __cached__ __builtins__ "
    "__annotations__ __annotate__ __conditional_annotations__ __path__".split()
)
CLASS_MACHINERY = frozenset(
    "__module__ __qualname__ __doc__ __dict__ __weakref__ __annotations__ __annotate__ "
    "__annotate_func__ __annotations_cache__ __firstlineno__ __static_attributes__ __slots__ "
    "__orig_bases__ __parameters__ __type_params__ __classcell__ __abstractmethods__ _abc_impl "
    "__dataclass_fields__ __dataclass_params__ __match_args__ __hash__".split()
)
