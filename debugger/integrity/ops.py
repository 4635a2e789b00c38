"""What each PyTorch call does, as the integrity gate sees it: glue (allowed) or compute (a family).

Glue is allocation, views, casts, shape helpers and device plumbing: PyTorch may do these around a
kernel. Compute is grouped into families with a weight (3 heavy, 2 substantial, 1 elementwise,
0.5 arithmetic, 0 data movement); the compute rule compares a candidate's families with the
reference's to tell the operator's heavy part from light post-processing.
"""
from __future__ import annotations

FAMILY_WEIGHT = {
    "matmul": 3, "conv": 3, "attention": 3, "recurrent": 3, "linalg": 3, "fft": 3, "aten": 3,
    "softmax": 2, "norm": 2, "reduction": 2, "scan": 2, "sort": 2, "loss": 2, "pool": 2, "resample": 2,
    "activation": 1, "elementwise": 1, "other": 1,
    "arith": 0.5,
    "movement": 0,
}
HEAVY = {f for f, w in FAMILY_WEIGHT.items() if w == 3}
# Families a kernel's partial results may legitimately be finished with in PyTorch.
FINISHING = {"reduction", "scan", "arith"}

_FAMILIES = {
    "matmul": "matmul mm bmm mv dot vdot inner einsum tensordot linear bilinear addmm addbmm baddbmm addmv addr "
              "outer ger chain_matmul multi_dot kron cdist matrix_power __matmul__ __rmatmul__",
    "conv": "conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d convolution conv_tbc",
    "attention": "scaled_dot_product_attention multi_head_attention_forward",
    "recurrent": "lstm gru rnn_tanh rnn_relu lstm_cell gru_cell rnn_tanh_cell rnn_relu_cell",
    "linalg": "solve inv pinv svd qr cholesky eig eigh det slogdet lstsq lu matrix_exp triangular_solve "
              "cholesky_solve",
    "fft": "fft ifft rfft irfft fft2 ifft2 rfft2 irfft2 fftn ifftn rfftn irfftn stft istft",
    "softmax": "softmax log_softmax softmin gumbel_softmax",
    "norm": "layer_norm batch_norm group_norm instance_norm local_response_norm normalize rms_norm "
            "native_layer_norm native_batch_norm",
    "reduction": "sum mean max min amax amin argmax argmin prod std var norm logsumexp all any median nanmedian "
                 "mode count_nonzero nansum nanmean std_mean var_mean dist aminmax frobenius_norm "
                 "cosine_similarity pairwise_distance matrix_norm vector_norm",
    "scan": "cumsum cumprod cummax cummin logcumsumexp diff",
    "sort": "sort argsort topk kthvalue msort unique",
    "loss": "mse_loss l1_loss cross_entropy nll_loss kl_div smooth_l1_loss huber_loss binary_cross_entropy "
            "binary_cross_entropy_with_logits triplet_margin_loss hinge_embedding_loss cosine_embedding_loss "
            "margin_ranking_loss soft_margin_loss multi_margin_loss multilabel_margin_loss poisson_nll_loss "
            "gaussian_nll_loss ctc_loss multilabel_soft_margin_loss triplet_margin_with_distance_loss",
    "pool": "max_pool1d max_pool2d max_pool3d avg_pool1d avg_pool2d avg_pool3d adaptive_max_pool1d "
            "adaptive_max_pool2d adaptive_max_pool3d adaptive_avg_pool1d adaptive_avg_pool2d adaptive_avg_pool3d "
            "lp_pool1d lp_pool2d fractional_max_pool2d max_unpool2d",
    "resample": "interpolate upsample upsample_nearest upsample_bilinear grid_sample affine_grid",
    "activation": "relu relu6 gelu silu sigmoid tanh elu selu celu leaky_relu hardtanh hardsigmoid hardswish mish "
                  "softplus softsign tanhshrink threshold logsigmoid hardshrink softshrink glu prelu rrelu dropout "
                  "dropout1d dropout2d dropout3d alpha_dropout feature_alpha_dropout swish",
    "elementwise": "exp exp2 expm1 log log2 log10 log1p sqrt rsqrt abs absolute neg negative sin cos tan asin acos "
                   "atan atan2 sinh cosh asinh acosh atanh erf erfc erfinv pow float_power square reciprocal sign "
                   "sgn floor ceil round trunc frac clamp clip clamp_min clamp_max where maximum minimum fmax fmin "
                   "lerp logit masked_fill tril triu hypot logaddexp xlogy nan_to_num isnan isinf isfinite eq ne "
                   "lt le gt ge logical_and logical_or logical_not logical_xor bitwise_and bitwise_or bitwise_xor "
                   "bitwise_not heaviside sinc i0 polygamma digamma lgamma mvlgamma signbit copysign nextafter "
                   "isclose equal allclose",
    "arith": "add sub subtract mul multiply div divide true_divide floor_divide remainder fmod addcmul addcdiv "
             "rsub __add__ __sub__ __mul__ __truediv__ __radd__ __rmul__",
    "movement": "cat concat concatenate stack hstack vstack dstack pad flip fliplr flipud roll rot90 repeat tile "
                "repeat_interleave gather scatter scatter_add index_select take take_along_dim masked_select "
                "index_add index_copy index_fill index_put embedding one_hot unfold fold pixel_shuffle "
                "pixel_unshuffle channel_shuffle nonzero bucketize searchsorted block_diag diag_embed diagonal "
                "diag trace cartesian_prod combinations meshgrid",
}
OP_FAMILY = {op: family for family, ops in _FAMILIES.items() for op in ops.split()}

_GLUE_FUNCTIONS = (
    # allocation
    "empty zeros ones full empty_like zeros_like ones_like full_like arange linspace logspace empty_strided "
    "tensor as_tensor asarray from_numpy scalar_tensor eye rand randn randint rand_like randn_like randint_like "
    "randperm normal manual_seed seed initial_seed get_rng_state set_rng_state Generator "
    # views and layout
    "reshape view flatten unflatten squeeze unsqueeze permute transpose t swapaxes swapdims movedim moveaxis "
    "narrow select split chunk tensor_split unbind broadcast_to broadcast_tensors broadcast_shapes expand "
    "as_strided view_as_real view_as_complex atleast_1d atleast_2d atleast_3d ravel contiguous clone detach "
    # metadata, dtypes, autograd switches
    "numel is_tensor is_floating_point is_complex is_nonzero is_grad_enabled is_inference_mode_enabled "
    "result_type promote_types can_cast finfo iinfo get_default_dtype get_device device dtype Size Tensor "
    "load save is_storage compiled_with_cxx11_abi "
    "no_grad enable_grad inference_mode set_grad_enabled autocast_decrement_nesting is_autocast_enabled "
    "float32 float16 bfloat16 float64 half float double int32 int64 int8 uint8 int16 bool long int"
)
GLUE_FUNCTIONS = set(_GLUE_FUNCTIONS.split())
ALLOCATORS = set("empty zeros ones full empty_like zeros_like ones_like full_like empty_strided "
                 "new_empty new_zeros new_ones new_full new_tensor arange tensor".split())
LIKE_ALLOCATORS = {"empty_like", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like"}
CONSTANT_ALLOCATORS = {"zeros", "ones", "full", "zeros_like", "ones_like", "full_like", "tensor",
                       "new_zeros", "new_ones", "new_full", "new_tensor", "as_tensor"}

# Tensor methods that keep the data as it is (views, layout, dtype/device moves, copies).
VIEW_METHODS = set(
    "view view_as reshape reshape_as flatten unflatten squeeze unsqueeze permute transpose t T mT expand expand_as "
    "contiguous narrow select split chunk unbind movedim moveaxis swapaxes swapdims as_strided clone detach "
    "requires_grad_ to type type_as float half double bfloat16 int long bool short char byte cuda data "
    "unfold diagonal flip roll repeat index_select gather masked_select".split())
CAST_METHODS = {"to", "type", "type_as", "float", "half", "double", "bfloat16"}
META_METHODS = set("size stride numel dim ndimension element_size data_ptr is_contiguous storage_offset get_device "
                   "nelement is_floating_point is_complex untyped_storage storage item tolist".split())
META_ATTRIBUTES = set("shape dtype device ndim is_cuda layout requires_grad is_leaf itemsize nbytes".split())
INPLACE_GLUE = {"copy_", "fill_", "zero_", "requires_grad_", "resize_", "set_", "share_memory_",
                "record_stream", "pin_memory"}

# nn.Module classes: containers hold layers; every other layer class maps to a compute family.
NN_CONTAINERS = {"Module", "ModuleList", "ModuleDict", "Sequential", "ParameterList", "ParameterDict",
                 "Parameter", "Buffer", "Identity", "Flatten", "Unflatten"}
_NN_FAMILY_PREFIXES = [
    ("Linear", "matmul"), ("LazyLinear", "matmul"), ("Bilinear", "matmul"), ("Conv", "conv"),
    ("LazyConv", "conv"), ("MultiheadAttention", "attention"), ("Transformer", "attention"),
    ("LSTM", "recurrent"), ("GRU", "recurrent"), ("RNN", "recurrent"), ("BatchNorm", "norm"),
    ("LayerNorm", "norm"), ("GroupNorm", "norm"), ("InstanceNorm", "norm"), ("RMSNorm", "norm"),
    ("LocalResponseNorm", "norm"), ("Softmax", "softmax"), ("LogSoftmax", "softmax"), ("Softmin", "softmax"),
    ("MaxPool", "pool"), ("AvgPool", "pool"), ("AdaptiveMaxPool", "pool"), ("AdaptiveAvgPool", "pool"),
    ("LPPool", "pool"), ("Upsample", "resample"), ("Embedding", "movement"), ("PixelShuffle", "movement"),
    ("Fold", "movement"), ("Unfold", "movement"), ("Dropout", "activation"), ("CosineSimilarity", "reduction"),
    ("PairwiseDistance", "reduction"),
]


def nn_layer_family(class_name: str) -> str | None:
    """The family a torch.nn layer class computes; None for containers and parameters."""
    if class_name in NN_CONTAINERS:
        return None
    if class_name.endswith("Loss"):
        return "loss"
    for prefix, family in _NN_FAMILY_PREFIXES:
        if class_name.startswith(prefix):
            return family
    return "activation"  # ReLU, GELU, Hardtanh, ... : elementwise layers


def torch_function_family(qualified: str) -> str | None:
    """The compute family of a qualified torch call, or None when it is glue or not compute at all.

    `qualified` is a resolved dotted name such as 'torch.nn.functional.softmax' or 'torch.Tensor.sum'.
    """
    parts = qualified.split(".")
    if parts[0] == "operator" and len(parts) == 2:
        return {"matmul": "matmul", "imatmul": "matmul"}.get(parts[1], "arith" if parts[1] in (
            "add", "sub", "mul", "truediv", "pow", "iadd", "imul") else None)
    if parts[0] != "torch":
        return None
    if parts[1:3] in (["ops", "aten"], ["ops", "prims"]) or parts[1:2] == ["_C"]:
        return "aten"
    if parts[1:2] == ["fft"]:
        return "fft"
    if parts[1:2] == ["linalg"]:
        return OP_FAMILY.get(parts[-1], "linalg")
    if parts[1:2] == ["special"]:
        return OP_FAMILY.get(parts[-1], "elementwise")
    name = parts[-1]
    if len(parts) == 2 or parts[1:3] == ["nn", "functional"] or parts[1] in ("Tensor", "_VF"):
        if name in GLUE_FUNCTIONS or name in VIEW_METHODS or name in META_METHODS or name in INPLACE_GLUE:
            return None
        base = name[:-1] if name.endswith("_") and not name.startswith("_") else name
        if base in OP_FAMILY:
            return OP_FAMILY[base]
        if parts[1:3] == ["nn", "functional"]:
            return "other"
        if len(parts) == 2 and name[:1].islower() and not name.startswith(("set_", "get_", "is_", "_", "use_")):
            return "other"
    return None


def method_family(name: str) -> str | None:
    """The compute family of a tensor method call `t.name(...)`; None for glue and unknown names."""
    if name in VIEW_METHODS or name in META_METHODS or name in INPLACE_GLUE or name in CONTAINER_METHODS:
        return None
    return OP_FAMILY.get(name[:-1] if name.endswith("_") else name)


# Methods of lists, dicts and strings that share a name with a tensor op (`configs.sort()`).
CONTAINER_METHODS = {"index", "count", "copy", "split", "join", "get", "update", "pop", "append", "extend",
                     "insert", "remove", "clear", "keys", "values", "items", "format", "replace", "sort"}


_OPERATOR_NAMES = {"+": "add", "-": "sub", "*": "mul", "/": "div", "//": "floor_divide", "%": "remainder",
                   "**": "pow", "@": "matmul"}
_SYNONYMS = {"subtract": "sub", "multiply": "mul", "divide": "div", "true_divide": "div", "negative": "neg",
             "absolute": "abs", "clip": "clamp", "concat": "cat", "concatenate": "cat", "swish": "silu",
             "__add__": "add", "__radd__": "add", "__sub__": "sub", "__mul__": "mul", "__rmul__": "mul",
             "__truediv__": "div", "rsub": "sub", "clamp_min": "clamp", "clamp_max": "clamp", "leakyrelu": "leaky_relu",
             "logsigmoid": "logsigmoid", "gelu_": "gelu", "relu_": "relu"}


def canonical_op(op: str) -> str:
    """One name per elementwise op however it is spelled: `*`, torch.mul, .mul_(), nn.ReLU, F.relu."""
    if op in _OPERATOR_NAMES:
        return _OPERATOR_NAMES[op]
    name = op.split("(")[0].rstrip(".").split(".")[-1].lower()
    if name.endswith("_") and not name.startswith("_"):
        name = name[:-1]
    return _SYNONYMS.get(name, name)
