"""Inputs from a model's configuration, for a repository without `.kbot.yml` targets.

`kbot scan --model-config PATH|PRESET` reads a Hugging Face `config.json` (its `text_config`
for a multimodal one) or a named preset, and maps constructor and argument names to the model's
sizes: a constructor's `hidden_size` (or `dim`, `d_model`, ...) is the model's hidden size, an
`eps` its `rms_norm_eps`, a forward's `x` a `[T, hidden_size]` tensor, `positions` `[T]`
integers below `max_position_embeddings`, and so on; the token count `T` takes the scan's
decode and prefill cases. Nothing is guessed silently: every value says where it came from (the
scan's table and the problem file's header show it), and a name the table does not know is a
skip reason that names the `.kbot.yml` key to add.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbot.errors import UsageError

FIELDS = (
    "hidden_size",
    "intermediate_size",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "vocab_size",
    "rope_theta",
    "max_position_embeddings",
    "rms_norm_eps",
)

# Public sizes of common model families (their Hugging Face config.json).
PRESETS: dict[str, dict[str, Any]] = {
    "llama-3-8b": dict(
        hidden_size=4096, intermediate_size=14336, num_attention_heads=32,
        num_key_value_heads=8, head_dim=128, vocab_size=128256, rope_theta=500000.0,
        max_position_embeddings=8192, rms_norm_eps=1e-5, torch_dtype="bfloat16",
    ),
    "qwen2.5-7b": dict(
        hidden_size=3584, intermediate_size=18944, num_attention_heads=28,
        num_key_value_heads=4, head_dim=128, vocab_size=152064, rope_theta=1000000.0,
        max_position_embeddings=32768, rms_norm_eps=1e-6, torch_dtype="bfloat16",
    ),
    "qwen3-8b": dict(
        hidden_size=4096, intermediate_size=12288, num_attention_heads=32,
        num_key_value_heads=8, head_dim=128, vocab_size=151936, rope_theta=1000000.0,
        max_position_embeddings=40960, rms_norm_eps=1e-6, torch_dtype="bfloat16",
    ),
}  # fmt: skip

# Constructor and scalar argument names -> the model field they mean.
SCALAR_NAMES: dict[str, str] = {
    **dict.fromkeys(("hidden_size", "hidden", "dim", "d_model", "embed_dim", "n_embd", "size",
                     "hidden_dim", "normalized_shape", "num_features"), "hidden_size"),
    **dict.fromkeys(("intermediate_size", "ffn_dim", "ffn_hidden_size", "inter_size"),
                    "intermediate_size"),
    **dict.fromkeys(("num_heads", "num_attention_heads", "n_heads", "n_head"),
                    "num_attention_heads"),
    **dict.fromkeys(("num_kv_heads", "num_key_value_heads", "n_kv_heads"), "num_key_value_heads"),
    **dict.fromkeys(("head_dim", "head_size", "rotary_dim"), "head_dim"),
    "vocab_size": "vocab_size",
    **dict.fromkeys(("eps", "rms_norm_eps", "variance_epsilon", "layer_norm_eps", "norm_eps"),
                    "rms_norm_eps"),
    **dict.fromkeys(("base", "rope_theta", "theta", "rope_base"), "rope_theta"),
    **dict.fromkeys(("max_position_embeddings", "max_position", "max_seq_len",
                     "max_seq_length", "max_context_length", "context_length",
                     "max_positions"), "max_position_embeddings"),
}  # fmt: skip

_HEADS = {
    **dict.fromkeys(("query", "q", "xq"), "num_attention_heads"),
    **dict.fromkeys(("key", "k", "xk", "value", "v", "xv"), "num_key_value_heads"),
}
_ROTARY = ("rotary", "rope")
_TABLES = {"cos", "sin", "cos_cached", "sin_cached", "cos_emb", "sin_emb", "cos_table", "sin_table"}
_FREQUENCIES = {"freqs_cis", "freqs_ci", "freq_cis", "freqs"}
# A gated activation's halves passed apart (`silu(gate) * up`).
_GATE_HALVES = {"gate", "up", "gate_out", "up_out"}
_ACTIVATION_TENSORS = {"x", "hidden_states", "hidden", "input", "inp", "h", "states", "residual"}
_GATED = ("and_mul", "swiglu", "geglu", "glu", "gate_up", "gated")
# A gated activation's input by the names serving code gives the fused projection's output.
_GATE_UP = {"intermediate", "gate_up", "gate_up_out", "gateup", "x_gate_up"}
_ACTIVATIONS = ("gelu", "silu", "relu", "swish", "act", "mish")
_VOCAB = ("logit", "softcap", "softmax", "sampl", "lm_head", "vocab")
_SCALES = {"scale", "scales", "x_scale", "input_scale", "act_scale"}
_QUANT = ("quant", "fp8", "int8", "w8a8")
# A square projection's weight: hidden_size -> hidden_size, as the attention's output projection.
_LINEAR = ("linear", "proj", "matmul", "gemm")


@dataclass(frozen=True)
class ModelConfig:
    name: str  # the preset's name or the config file's path, as given
    values: dict[str, Any]  # FIELDS (head_dim filled in) and torch_dtype
    # Every scalar of the config (or preset) as given, FIELDS completed: what a module that
    # takes the whole configuration object reads (`config.rope_scaling`, `config.hidden_act`).
    raw: dict[str, Any] = field(default_factory=dict)

    def value(self, field: str) -> Any:
        return self.values[field]


@dataclass(frozen=True)
class Inferred:
    """One value and where it came from, e.g. `x: [T, 4096] bfloat16 (T, hidden_size)`."""

    value: Any
    because: str


def load_model_config(spec: str) -> ModelConfig:
    """A preset's name or a config.json path; UsageError saying what is wrong otherwise."""
    if spec in PRESETS:
        values = _complete(dict(PRESETS[spec]), spec)
        return ModelConfig(spec, values, _raw(PRESETS[spec], values))
    path = Path(spec)
    if not path.is_file():
        raise UsageError(
            f"--model-config {spec}: neither a file nor a preset; presets: {', '.join(PRESETS)}"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"--model-config {spec}: not a JSON file ({exc})") from None
    if isinstance(data, dict) and isinstance(data.get("text_config"), dict):
        data = {**data, **data["text_config"]}  # multimodal configs nest the language model's
    if isinstance(data, dict):
        data = _canonical_names(data)
    if not isinstance(data, dict) or not isinstance(data.get("hidden_size"), int):
        names = ", ".join(("hidden_size", *CONFIG_ALIASES["hidden_size"]))
        raise UsageError(
            f"--model-config {spec}: no integer hidden size (any of {names}); "
            "give a Hugging Face config.json"
        )
    values = _complete(data, spec)
    return ModelConfig(spec, values, _raw(data, values))


# Other names Hugging Face configs give FIELDS (their classes' `attribute_map`): GPT-2, GPT-J
# and CodeGen (n_embd, n_head, n_positions, n_inner, layer_norm_epsilon), BLOOM (n_embed),
# T5 (d_model, num_heads, d_ff), Falcon (num_kv_heads), ChatGLM (multi_query_group_num,
# seq_length), OPT (ffn_dim), GPT-NeoX (rotary_emb_base, layer_norm_eps).
CONFIG_ALIASES: dict[str, tuple[str, ...]] = {
    "hidden_size": ("n_embd", "n_embed", "d_model"),
    "num_attention_heads": ("n_head", "num_heads", "n_heads"),
    "num_key_value_heads": ("num_kv_heads", "n_head_kv", "multi_query_group_num"),
    "intermediate_size": ("n_inner", "ffn_dim", "d_ff", "ffn_hidden_size"),
    "max_position_embeddings": ("n_positions", "n_ctx", "seq_length", "max_seq_len"),
    "rms_norm_eps": ("layer_norm_epsilon", "layer_norm_eps", "norm_eps", "rms_norm_epsilon"),
    "rope_theta": ("rotary_emb_base", "rope_base"),
}


def _canonical_names(data: dict[str, Any]) -> dict[str, Any]:
    """FIELDS under their Hugging Face names, from the config's other spellings of them and
    from `rope_parameters` (where newer configs keep `rope_theta`); a field the config gives
    under its own name is kept as given."""
    out = dict(data)
    rope = data.get("rope_parameters")
    if isinstance(rope, dict) and isinstance(rope.get("rope_theta"), (int, float)):
        out.setdefault("rope_theta", rope["rope_theta"])
    for name, aliases in CONFIG_ALIASES.items():
        if isinstance(out.get(name), (int, float)):
            continue
        given = next((a for a in aliases if isinstance(data.get(a), (int, float))), None)
        if given is not None and not isinstance(data[given], bool):
            out[name] = data[given]
    return out


# What a Hugging Face config object has when config.json leaves it out (LlamaConfig and its
# kin): a module reading `config.rope_scaling` gets None, not an AttributeError.
_HF_OPTIONAL: dict[str, Any] = {"rope_scaling": None}


def _raw(data: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """The config's own scalars, None values and plain lists/dicts (`rope_scaling`), with the
    completed FIELDS, their other spellings (CONFIG_ALIASES: a Hugging Face config answers to
    both, through its `attribute_map`; OLMo reads `config.layer_norm_eps`) and _HF_OPTIONAL's
    defaults; nested model configs are left out."""
    plain = (bool, int, float, str, list, dict, type(None))
    kept = {k: v for k, v in data.items() if k.isidentifier() and isinstance(v, plain)}
    kept = {k: v for k, v in kept.items() if not k.endswith("_config")}
    spelled = {
        alias: values[name]
        for name, aliases in CONFIG_ALIASES.items()
        if name in values
        for alias in aliases
    }
    return {**_HF_OPTIONAL, **spelled, **kept, **values}


def _complete(data: dict[str, Any], spec: str) -> dict[str, Any]:
    values = {k: data[k] for k in FIELDS if isinstance(data.get(k), (int, float))}
    heads = values.get("num_attention_heads")
    if "head_dim" not in values and heads:
        values["head_dim"] = values["hidden_size"] // heads
    if "num_key_value_heads" not in values and heads:
        values["num_key_value_heads"] = heads
    dtype = data.get("torch_dtype") or data.get("dtype")
    values["torch_dtype"] = dtype if dtype in ("bfloat16", "float16", "float32") else "bfloat16"
    return values


def scalar_value(config: ModelConfig, name: str, op_words: str = "") -> Inferred | None:
    """A constructor or scalar argument by its name (and the op's own words: a rotary op's
    `dim` is its head_dim); None when the table does not know it."""
    field = SCALAR_NAMES.get(name.lower())
    if name.lower() == "dim" and any(w in op_words.lower() for w in _ROTARY):
        field = "head_dim"
    if field is None or field not in config.values:
        # The configuration's own key of that name (DeepSeek's `swiglu_limit`, Gemma's
        # `final_logit_softcapping`), when it is a number.
        value = config.raw.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return Inferred(value, f"the model config's `{name}`")
        return None
    value = config.value(field)
    return Inferred(value, field if field == name else f"{field} for `{name}`")


def is_per_head(name: str) -> bool:
    """Whether an argument (query, key, value) has a flat [T, heads × head_dim] and a split
    [T, heads, head_dim] layout, both common (vLLM's rotary takes the first, nano-vllm's the
    second): kbot.scan.extract runs the reference to see which one the op takes."""
    return name.lower() in _HEADS


def is_positions(name: str) -> bool:
    """Token positions: [T] in serving engines, [1, T] in Hugging Face-style code."""
    return name.lower() in ("positions", "position_ids", "pos", "positions_ids")


def is_quant_scale(name: str, op_words: str) -> bool:
    """A quantization op's scale (`x / scale`, then clamped to fp8's range): drawn positive."""
    return name.lower() in _SCALES and any(w in op_words.lower() for w in _QUANT)


def is_length(name: str) -> bool:
    """A token count passed as a number (a vision rotary's `forward(seqlen)` builds its table
    for that many positions): it takes the case's T, as a tensor's leading dimension does."""
    return name.lower() in ("seqlen", "seq_len", "seq_length", "num_tokens", "n_tokens")


def is_rotary_table(name: str) -> bool:
    """cos/sin tables, or a frequency table (angles, or `freqs_cis`: each angle as a complex
    number, a (cos, sin) pair or a 2 × 2 rotation), passed to a rotary function beside the
    tensor it rotates."""
    return name.lower() in _TABLES or name.lower() in _FREQUENCIES


# The layouts kbot.scan.extract tries in turn, until the reference runs its first cases:
# per-head tensors (query, key; x of a rotary op given a table) and the tables beside them.
LAYOUTS = (
    "flat",
    "split",
    "split_full",
    "split_2d",
    "heads_first",
    "batch_first",
    "batch_first_pairs",
    "batch_first_split",
    "batch_first_rotations",
)
_PER_HEAD_LAYOUT = {
    "split": ("[T, {heads}, head_dim]", lambda t, h, d: (t, h, d)),
    "split_full": ("[T, {heads}, head_dim]", lambda t, h, d: (t, h, d)),
    "split_2d": ("[T, {heads}, head_dim]", lambda t, h, d: (t, h, d)),
    "heads_first": ("[1, {heads}, T, head_dim]", lambda t, h, d: (1, h, t, d)),
    "batch_first": ("[1, T, {heads}, head_dim]", lambda t, h, d: (1, t, h, d)),
    "batch_first_pairs": ("[1, T, {heads}, head_dim]", lambda t, h, d: (1, t, h, d)),
    "batch_first_split": ("[1, T, {heads}, head_dim]", lambda t, h, d: (1, t, h, d)),
    "batch_first_rotations": ("[1, T, {heads}, head_dim]", lambda t, h, d: (1, t, h, d)),
}
_TABLE_LAYOUT = {
    "flat": ("[T, head_dim / 2]", lambda t, d: (t, d // 2)),
    "split": ("[T, 1, head_dim / 2]", lambda t, d: (t, 1, d // 2)),
    "split_full": ("[T, 1, head_dim]", lambda t, d: (t, 1, d)),
    # Qwen2-VL's vision rotary: full-width tables that the op unsqueezes against the heads.
    "split_2d": ("[T, head_dim]", lambda t, d: (t, d)),
    "heads_first": ("[T, head_dim]", lambda t, d: (t, d)),
    # nanochat's rotary: x [B, T, H, D] against half-width tables [1, T, 1, D / 2], which
    # [T, 1, head_dim / 2] broadcasts as.
    "batch_first_split": ("[T, 1, head_dim / 2]", lambda t, d: (t, 1, d // 2)),
}
# Frequency tables: (shape, as what, dtype, shape); complex64 becomes float32 angles for a table
# named as angles (`freqs`) rather than as complex numbers (`freqs_cis`).
_FREQUENCY_LAYOUT = {
    "batch_first": ("[T, head_dim / 2]", "of complex numbers", "complex64",
                    lambda t, d: (t, d // 2)),
    "batch_first_pairs": ("[T, head_dim / 2, 2]", "as (cos, sin) pairs", "float32",
                          lambda t, d: (t, d // 2, 2)),
    "heads_first": ("[T, head_dim / 2, 2, 2]", "as 2 × 2 rotations", "float32",
                    lambda t, d: (t, d // 2, 2, 2)),
    # lingua's rotary: x [B, S, H, D] against [S, D / 2, 2, 2] rotations on its sequence axis
    "batch_first_rotations": ("[T, head_dim / 2, 2, 2]", "as 2 × 2 rotations", "float32",
                              lambda t, d: (t, d // 2, 2, 2)),
}  # fmt: skip


# A rotary op that takes only the tensor it rotates and indexes a table of its own (torchtune's
# RotaryPositionalEmbeddings: x [b, s, n_h, h_d], its cache a buffer): x is per-head; the
# batch-first layout of training code first, then a serving engine's [T, heads, head_dim], and
# last the flat [T, heads × head_dim] every op without a table got before.
ROTARY_OWN_TABLE_LAYOUTS = ("batch_first", "split", "heads_first", "flat")


def is_rotary_op(op_words: str) -> bool:
    """The op's own names (qualname, file) say rotary embedding: `rotary`, or RoPE as a word
    (`Llama3ScaledRoPE`, `apply_rope`; not `property` or `europe`)."""
    if "rotary" in op_words.lower():
        return True
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", op_words.replace("RoPE", "_Rope_"))
    return re.search(r"(?<![a-z])ro_?pe(?![a-z])", spaced.lower()) is not None


def layouts_for(names: list[str], rotary_op: bool = False) -> tuple[str, ...]:
    """The layouts worth trying for an op with these argument names, in LAYOUTS order: every
    one that places each of its tables; flat and split for per-head tensors alone;
    ROTARY_OWN_TABLE_LAYOUTS for a rotary op (`rotary_op`) that takes no table."""
    lowered = {n.lower() for n in names}
    if lowered & _FREQUENCIES:
        return tuple(layout for layout in LAYOUTS if layout in _FREQUENCY_LAYOUT)
    if lowered & _TABLES:
        return tuple(layout for layout in LAYOUTS if layout in _TABLE_LAYOUT)
    if rotary_op and lowered & (_ACTIVATION_TENSORS | {"t", "tensor"}):
        return ROTARY_OWN_TABLE_LAYOUTS
    if any(is_per_head(n) for n in names):
        return LAYOUTS[:2]
    return LAYOUTS[:1]


def tensor_shape(
    config: ModelConfig,
    name: str,
    op_words: str,
    layout: str = "flat",
    rotary_tables: bool = False,
    batched_positions: bool = False,
) -> tuple[tuple[int | str, ...], str, int | None, str] | None:
    """(shape, dtype, high for integers, why) of a forward tensor argument by its name and the
    op's own words (its qualname and file); None when the table does not know the name.
    `layout` (one of LAYOUTS) places per-head tensors and rotary tables; `rotary_tables`: the
    op takes cos/sin or a frequency table, so the tensor it rotates (`x`) is per-head like a
    query.
    `batched_positions`: positions as [1, T] (Hugging Face's batch of one) instead of [T]."""
    v = config.values
    lowered = name.lower()
    words = op_words.lower()
    dtype = v["torch_dtype"]
    if is_positions(lowered):
        high = int(v.get("max_position_embeddings", 4096))
        if batched_positions:
            return (1, "T"), "int64", high, "[1, T] positions below max_position_embeddings"
        return ("T",), "int64", high, "[T] positions below max_position_embeddings"
    heads = _HEADS.get(lowered)
    if heads is None and rotary_tables and lowered in _ACTIVATION_TENSORS | {"t", "tensor"}:
        heads = "num_attention_heads"
    if heads is not None and heads in v:
        if layout in _PER_HEAD_LAYOUT:
            said, shape = _PER_HEAD_LAYOUT[layout]
            return shape("T", v[heads], v["head_dim"]), dtype, None, said.format(heads=heads)
        width = v[heads] * v["head_dim"]
        return ("T", width), dtype, None, f"[T, {heads} × head_dim]"
    if lowered in _TABLES and "head_dim" in v and layout in _TABLE_LAYOUT:
        said, shape = _TABLE_LAYOUT[layout]
        return shape("T", v["head_dim"]), "float32", None, f"{said}: a rotary cos/sin table"
    if lowered in _FREQUENCIES and "head_dim" in v and layout in _FREQUENCY_LAYOUT:
        said, as_what, table_dtype, shape = _FREQUENCY_LAYOUT[layout]
        if table_dtype == "complex64" and lowered == "freqs":  # named as angles
            table_dtype, as_what = "float32", "of angles"
        why = f"{said}: a rotary frequency table {as_what}"
        return shape("T", v["head_dim"]), table_dtype, None, why
    if is_quant_scale(lowered, words):
        if "per_tensor" in words:
            return (1,), "float32", None, "[1]: a per-tensor quantization scale, positive"
        return ("T", 1), "float32", None, "[T, 1]: a per-token quantization scale, positive"
    if lowered == "weight" and any(w in words for w in _LINEAR):
        width = v["hidden_size"]
        return (width, width), dtype, None, "[hidden_size, hidden_size]: a square projection"
    if lowered in _GATE_HALVES and "intermediate_size" in v:
        width = v["intermediate_size"]
        return ("T", width), dtype, None, "[T, intermediate_size]: one half of a gated activation"
    if lowered == "logits" and "vocab_size" in v:
        return ("T", v["vocab_size"]), dtype, None, "[T, vocab_size]"
    gated = any(w in words for w in _GATED)
    if lowered not in _ACTIVATION_TENSORS and not (gated and lowered in _GATE_UP):
        return None
    if gated and "intermediate_size" in v:
        width = 2 * v["intermediate_size"]
        return (
            ("T", width),
            dtype,
            None,
            "[T, 2 × intermediate_size]: a gated activation's gate and up",
        )
    if any(w in words for w in _VOCAB) and "vocab_size" in v:
        return ("T", v["vocab_size"]), dtype, None, "[T, vocab_size]: the op works on logits"
    if any(w in words for w in _ACTIVATIONS) and "intermediate_size" in v:
        width = v["intermediate_size"]
        return ("T", width), dtype, None, "[T, intermediate_size]: an activation of the MLP"
    return ("T", v["hidden_size"]), dtype, None, "[T, hidden_size]"
