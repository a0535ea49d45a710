# coding=utf-8
"""LLaMA (and Qwen2, Qwen3, Mistral, Phi-3, Gemma 3) with a different number of query and KV heads in each layer, for transformers 4.x and 5.x.

Written by headprune next to a pruned LLaMA checkpoint that transformers' own LlamaForCausalLM
cannot build, and registered in config.json's `auto_map`, so that

    AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=True)

loads it. Two layouts need it:
  * layers keep different heads: `num_attention_heads` / `num_key_value_heads` are the original
    counts and `headprune.kept_heads[l]` lists the original query heads layer l keeps; its KV
    heads are those the kept query heads use (original KV head of query head h:
    h // (num_attention_heads // num_key_value_heads)), in ascending order;
  * every layer keeps the same heads, but their count does not divide hidden_size, which
    transformers 5's LlamaConfig refuses (4.x loads that config natively).

The computation is HF's LlamaForCausalLM (eager attention, RMSNorm computed in float32, rotary
embedding with rope_theta, SwiGLU, causal mask plus the padding mask, optional tied
embeddings), without a KV cache: generation recomputes the whole sequence at each step. A layer
with no heads adds only the output projection's bias (if any). Parameter names are
LlamaForCausalLM's, so the checkpoint loads unchanged.

Qwen2 (model_type "qwen2", Qwen2ForCausalLM) computes the same with biases on q/k/v_proj and
none on o_proj: HeadpruneQwen2Config / HeadpruneQwen2ForCausalLM, registered instead by
headprune's Qwen2 exports. Qwen3 (model_type "qwen3") adds an RMSNorm over head_dim on each query
and key head before the rotary embedding (self_attn.q_norm / k_norm, shared by the heads):
HeadpruneQwen3Config / HeadpruneQwen3ForCausalLM (on transformers before 4.51, which has no
Qwen3Config, the config class derives from Qwen2Config).

Mistral (model_type "mistral") computes LLaMA's attention through a sliding window: the query at
position i sees keys j with i - sliding_window < j <= i (transformers' sliding_window_overlay):
HeadpruneMistralConfig / HeadpruneMistralForCausalLM. Phi-3 (model_type "phi3") computes Mistral's
attention with the query/key/value projections stored as one self_attn.qkv_proj (rows: queries,
keys, values) and gate/up as one mlp.gate_up_proj (rows: gate, up), no biases:
HeadprunePhi3Config / HeadprunePhi3ForCausalLM. Gemma 3 (model_type "gemma3_text", Gemma3ForCausalLM)
adds (1 + w) RMS norms (four per layer: post_attention_layernorm on the attention output,
pre/post_feedforward_layernorm around the MLP; q/k norms), embeddings times sqrt(hidden_size),
scores scaled by query_pre_attn_scalar^-1/2, the tanh GELU (hidden_activation), and per-layer
`layer_types`: sliding layers attend through `sliding_window` with RoPE base
rope_local_base_freq, full ones with rope_theta: HeadpruneGemma3Config /
HeadpruneGemma3ForCausalLM (transformers 4.50+).

Self-contained: imports only torch and transformers' public names present in 4.x and 5.x.
"""

import math

import torch
from torch import nn
import transformers
from transformers import GenerationMixin, LlamaConfig, MistralConfig, Phi3Config, PreTrainedModel, Qwen2Config
from transformers.activations import ACT2FN
from transformers.modeling_outputs import BaseModelOutputWithPast, CausalLMOutputWithPast

try:
    from transformers import Qwen3Config as Qwen3ConfigBase
except ImportError:  # transformers < 4.51: no Qwen3 of its own
    Qwen3ConfigBase = Qwen2Config
try:
    from transformers import Gemma3TextConfig as Gemma3ConfigBase
except ImportError:  # transformers < 4.50: no Gemma 3 (the model cannot be built there)
    Gemma3ConfigBase = LlamaConfig

TRANSFORMERS_5 = int(transformers.__version__.split(".")[0]) >= 5


def check_head_dim(config):
    """headprune's exports always name the head size; it is never hidden_size / heads."""
    if not getattr(config, "head_dim", None):
        raise ValueError("headprune's LLaMA / Qwen2 needs an explicit head_dim")


class HeadpruneLlamaConfig(LlamaConfig):
    """LlamaConfig without transformers 5's rule that the query-head count divide hidden_size
    (the head size is the explicit `head_dim`)."""

    def validate_architecture(self):
        check_head_dim(self)


class HeadpruneQwen2Config(Qwen2Config):
    """Qwen2Config with an explicit `head_dim` (transformers 4.x's Qwen2 takes hidden_size /
    heads)."""

    def validate_architecture(self):
        check_head_dim(self)


class HeadpruneQwen3Config(Qwen3ConfigBase):
    """Qwen3Config with an explicit `head_dim`."""

    model_type = "qwen3"

    def validate_architecture(self):
        check_head_dim(self)


class HeadpruneMistralConfig(MistralConfig):
    """MistralConfig with an explicit `head_dim`."""

    def validate_architecture(self):
        check_head_dim(self)


class HeadprunePhi3Config(Phi3Config):
    """Phi3Config with an explicit `head_dim` (transformers 4.x's Phi-3 takes hidden_size / heads)."""

    def validate_architecture(self):
        check_head_dim(self)


class HeadpruneGemma3Config(Gemma3ConfigBase):
    """Gemma3TextConfig with an explicit `head_dim` (and without transformers 5's rule that the
    query-head count divide hidden_size)."""

    model_type = "gemma3_text"

    def validate_architecture(self):
        check_head_dim(self)


def is_gemma(config):
    return config.model_type == "gemma3_text"


def rope_theta(config, layer_type="full_attention"):
    """The RoPE base of a layer type: transformers 5 keeps it in rope_parameters (nested by layer
    type for Gemma 3), 4.x in rope_theta / rope_local_base_freq."""
    params = getattr(config, "rope_parameters", None) or {}
    if layer_type in params:
        params = params[layer_type] or {}
    if "rope_theta" in params:
        return params["rope_theta"]
    if layer_type == "sliding_attention":
        return getattr(config, "rope_local_base_freq", 10000.0)
    theta = getattr(config, "rope_theta", None)
    return 10000.0 if theta is None else theta


def layer_types(config):
    """Per layer: "sliding_attention" or "full_attention"."""
    if is_gemma(config):
        return list(config.layer_types)
    return ["sliding_attention" if sliding_window(config) else "full_attention"] * config.num_hidden_layers


def fused_projections(config):
    """Phi-3 stores q/k/v as one qkv_proj and gate/up as one gate_up_proj."""
    return config.model_type == "phi3"


def sliding_window(config):
    """The window sliding layers attend through, or None: Mistral's, Phi-3's and Gemma 3's
    `sliding_window` (Qwen2's is inert unless use_sliding_window, which headprune refuses)."""
    if config.model_type in ("mistral", "phi3", "gemma3_text"):
        return getattr(config, "sliding_window", None)
    return None


def projection_biases(config):
    """(q/k/v_proj bias, o_proj bias): LLaMA's attention_bias for all four; Qwen2: q/k/v only."""
    if config.model_type == "qwen2":
        return True, False
    bias = getattr(config, "attention_bias", False)
    return bias, bias


def ffn_widths(config):
    """FFN neurons present in each layer: `headprune.intermediate_sizes` when headprune removed
    neurons unevenly, else `intermediate_size` in every layer."""
    widths = (getattr(config, "headprune", None) or {}).get("intermediate_sizes")
    return list(widths) if widths is not None else [config.intermediate_size] * config.num_hidden_layers


def layer_heads(config):
    """Per layer: (number of query heads, index of each query head's KV head among the layer's
    KV heads [list], number of KV heads)."""
    if config.num_attention_heads == 0:  # every head removed: attention adds only o_proj's bias
        return [(0, [], 0)] * config.num_hidden_layers
    group = config.num_attention_heads // config.num_key_value_heads
    kept = (getattr(config, "headprune", None) or {}).get("kept_heads")
    if kept is None:
        uniform = [h // group for h in range(config.num_attention_heads)]
        return [(config.num_attention_heads, uniform, config.num_key_value_heads)] * config.num_hidden_layers
    layers = []
    for heads in kept:
        kv = sorted({h // group for h in heads})
        layers.append((len(heads), [kv.index(h // group) for h in heads], len(kv)))
    return layers


class HeadpruneLlamaRMSNorm(nn.Module):
    """x / sqrt(mean(x^2) + eps) * weight, computed in float32 (as LlamaRMSNorm); with offset 1,
    Gemma3RMSNorm's (x / sqrt(mean(x^2) + eps) * (1 + weight)) in float32, then cast."""

    def __init__(self, size, eps, offset=0.0):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size) if offset == 0.0 else torch.zeros(size))
        self.variance_epsilon, self.offset = eps, offset

    def forward(self, x):
        dtype = x.dtype
        x = x.to(torch.float32)
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        if self.offset:
            return (x * (self.offset + self.weight.float())).to(dtype)
        return self.weight * x.to(dtype)


def make_norm(config, size):
    return HeadpruneLlamaRMSNorm(size, config.rms_norm_eps, 1.0 if is_gemma(config) else 0.0)


def llama3_scaling(config):
    """Llama 3's RoPE frequency scaling parameters (rope_type "llama3"), or None: transformers 5
    keeps them in rope_parameters, 4.x in rope_scaling."""
    for params in (getattr(config, "rope_parameters", None), getattr(config, "rope_scaling", None)):
        if isinstance(params, dict) and params.get("rope_type", params.get("type")) == "llama3":
            return params
    return None


def scaled_inv_freq(inv_freq, params):
    """transformers' _compute_llama3_parameters: low frequencies divided by `factor`, high ones
    kept, those between interpolated by wavelength."""
    factor, low, high = params["factor"], params["low_freq_factor"], params["high_freq_factor"]
    old_context = params["original_max_position_embeddings"]
    wavelen = 2 * math.pi / inv_freq
    scaled = torch.where(wavelen > old_context / low, inv_freq / factor, inv_freq)
    smooth = (old_context / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = ~(wavelen < old_context / high) * ~(wavelen > old_context / low)
    return torch.where(medium, smoothed, scaled)


def rotary(config, positions, dtype, theta):
    """cos, sin [batch, 1, seq, head_dim] of the rotary embedding with base `theta` (and Llama 3's
    frequency scaling when the config has it)."""
    dim = config.head_dim
    inv_freq = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.int64, device=positions.device).float() / dim))
    scaling = llama3_scaling(config)
    if scaling is not None:
        inv_freq = scaled_inv_freq(inv_freq, scaling)
    freqs = positions[:, :, None].float() * inv_freq[None, None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype)[:, None], emb.sin().to(dtype)[:, None]


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class HeadpruneLlamaAttention(nn.Module):
    """Causal attention over `num_heads` query heads sharing `num_kv` KV heads; query head i uses
    KV head kv_index[i]. Q/K/V weights [heads * head_dim, hidden], output [hidden, heads * head_dim]."""

    def __init__(self, config, num_heads, kv_index, num_kv):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, config.head_dim
        self.kv_index = list(kv_index)  # a plain list: transformers 5 builds modules on the meta device
        bias, output_bias = projection_biases(config)
        self.sizes = [num_heads * self.head_dim, num_kv * self.head_dim, num_kv * self.head_dim]
        if fused_projections(config):
            self.qkv_proj = nn.Linear(config.hidden_size, sum(self.sizes), bias=False)
        else:
            self.q_proj = nn.Linear(config.hidden_size, self.sizes[0], bias=bias)
            self.k_proj = nn.Linear(config.hidden_size, self.sizes[1], bias=bias)
            self.v_proj = nn.Linear(config.hidden_size, self.sizes[2], bias=bias)
        self.o_proj = nn.Linear(num_heads * self.head_dim, config.hidden_size, bias=output_bias)
        if config.model_type == "qwen3" or is_gemma(config):  # over each head's head_dim, before RoPE
            self.q_norm = make_norm(config, self.head_dim)
            self.k_norm = make_norm(config, self.head_dim)
        self.scaling = (config.query_pre_attn_scalar if is_gemma(config) else self.head_dim) ** -0.5

    def forward(self, hidden, cos, sin, additive_mask):
        batch, seq, _ = hidden.shape
        if self.num_heads == 0:
            return self.o_proj(hidden.new_zeros(batch, seq, 0))

        def split(x):
            return x.view(batch, seq, -1, self.head_dim).transpose(1, 2)

        if hasattr(self, "qkv_proj"):
            q, k, v = (split(x) for x in self.qkv_proj(hidden).split(self.sizes, dim=-1))
        else:
            q, k, v = split(self.q_proj(hidden)), split(self.k_proj(hidden)), split(self.v_proj(hidden))
        if hasattr(self, "q_norm"):
            q, k = self.q_norm(q), self.k_norm(k)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        index = torch.tensor(self.kv_index, dtype=torch.long, device=hidden.device)
        k, v = k.index_select(1, index), v.index_select(1, index)
        scores = torch.matmul(q, k.transpose(2, 3)) * self.scaling + additive_mask
        probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
        context = torch.matmul(probs, v).transpose(1, 2).reshape(batch, seq, -1)
        return self.o_proj(context)


class HeadpruneLlamaMLP(nn.Module):
    """down(act(gate(x)) * up(x)); Phi-3: gate and up as one gate_up_proj."""

    def __init__(self, config, inner):
        super().__init__()
        size, bias = config.hidden_size, getattr(config, "mlp_bias", False)
        if fused_projections(config):
            self.gate_up_proj = nn.Linear(size, 2 * inner, bias=False)
        else:
            self.gate_proj = nn.Linear(size, inner, bias=bias)
            self.up_proj = nn.Linear(size, inner, bias=bias)
        self.down_proj = nn.Linear(inner, size, bias=bias)
        self.act_fn = ACT2FN[config.hidden_activation if is_gemma(config) else config.hidden_act]

    def forward(self, x):
        if hasattr(self, "gate_up_proj"):
            gate, up = self.gate_up_proj(x).chunk(2, dim=-1)
        else:
            gate, up = self.gate_proj(x), self.up_proj(x)
        return self.down_proj(self.act_fn(gate) * up)


class HeadpruneLlamaDecoderLayer(nn.Module):
    def __init__(self, config, heads, width):
        super().__init__()
        self.self_attn = HeadpruneLlamaAttention(config, *heads)
        self.mlp = HeadpruneLlamaMLP(config, width)
        self.input_layernorm = make_norm(config, config.hidden_size)
        self.post_attention_layernorm = make_norm(config, config.hidden_size)
        if is_gemma(config):  # sandwich norms: post_attention_layernorm acts on the attention output
            self.pre_feedforward_layernorm = make_norm(config, config.hidden_size)
            self.post_feedforward_layernorm = make_norm(config, config.hidden_size)

    def forward(self, hidden, cos, sin, additive_mask):
        attn = self.self_attn(self.input_layernorm(hidden), cos, sin, additive_mask)
        if not hasattr(self, "pre_feedforward_layernorm"):
            hidden = hidden + attn
            return hidden + self.mlp(self.post_attention_layernorm(hidden))
        hidden = hidden + self.post_attention_layernorm(attn)
        return hidden + self.post_feedforward_layernorm(self.mlp(self.pre_feedforward_layernorm(hidden)))


class HeadpruneLlamaPreTrainedModel(PreTrainedModel):
    config_class = HeadpruneLlamaConfig
    base_model_prefix = "model"

    def _init_weights(self, module):
        """LLaMA's initialisation, for weights a checkpoint does not hold."""
        if isinstance(module, (nn.Linear, nn.Embedding)) and module.weight.numel() > 0:
            module.weight.data.normal_(mean=0.0, std=self.config.initializer_range)
        if isinstance(module, nn.Linear) and module.bias is not None:
            module.bias.data.zero_()
        if isinstance(module, HeadpruneLlamaRMSNorm):
            module.weight.data.fill_(0.0 if module.offset else 1.0)


class HeadpruneLlamaModel(HeadpruneLlamaPreTrainedModel):
    """LlamaModel with per-layer head counts: `last_hidden_state` [batch, seq, hidden_size]."""

    def __init__(self, config):
        super().__init__(config)
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size, config.pad_token_id)
        self.layers = nn.ModuleList(HeadpruneLlamaDecoderLayer(config, heads, width)
                                    for heads, width in zip(layer_heads(config), ffn_widths(config)))
        self.norm = make_norm(config, config.hidden_size)
        self.post_init()

    def get_input_embeddings(self):
        return self.embed_tokens

    def set_input_embeddings(self, value):
        self.embed_tokens = value

    def forward(self, input_ids=None, attention_mask=None, position_ids=None, **unused):
        if input_ids is None:
            raise ValueError("HeadpruneLlamaModel needs input_ids")
        hidden = self.embed_tokens(input_ids)
        if is_gemma(self.config):  # Gemma3TextScaledWordEmbedding
            hidden = hidden * torch.tensor(self.config.hidden_size**0.5, dtype=hidden.dtype)
        batch, seq = input_ids.shape
        if position_ids is None:
            position_ids = torch.arange(seq, device=input_ids.device).expand(batch, seq)
        minimum = torch.finfo(hidden.dtype).min
        tables, masks = {}, {}
        for layer, layer_type in zip(self.layers, layer_types(self.config)):
            if layer_type not in tables:
                theta = rope_theta(self.config, layer_type)
                tables[layer_type] = rotary(self.config, position_ids, hidden.dtype, theta)
                allowed = torch.ones(seq, seq, dtype=torch.bool, device=input_ids.device).tril()
                if layer_type == "sliding_attention":
                    allowed = allowed & torch.ones_like(allowed).triu(1 - sliding_window(self.config))
                allowed = allowed[None, None]
                if attention_mask is not None:
                    allowed = allowed & attention_mask[:, None, None, :].bool()
                masks[layer_type] = torch.zeros(allowed.shape, dtype=hidden.dtype,
                                                device=hidden.device).masked_fill(~allowed, minimum)
            hidden = layer(hidden, *tables[layer_type], masks[layer_type])
        return BaseModelOutputWithPast(last_hidden_state=self.norm(hidden))


class HeadpruneLlamaForCausalLM(HeadpruneLlamaPreTrainedModel, GenerationMixin):
    """LlamaForCausalLM on HeadpruneLlamaModel: `logits` [batch, seq, vocab_size]; `loss` as HF's
    (next-token cross-entropy, labels of -100 ignored) when `labels` are given."""

    _tied_weights_keys = {"lm_head.weight": "model.embed_tokens.weight"} if TRANSFORMERS_5 else ["lm_head.weight"]

    def __init__(self, config):
        super().__init__(config)
        self.model = HeadpruneLlamaModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.post_init()

    def get_input_embeddings(self):
        return self.model.embed_tokens

    def set_input_embeddings(self, value):
        self.model.embed_tokens = value

    def get_output_embeddings(self):
        return self.lm_head

    def set_output_embeddings(self, value):
        self.lm_head = value

    def prepare_inputs_for_generation(self, input_ids, attention_mask=None, **unused):
        """No KV cache: every step runs the whole sequence."""
        return {"input_ids": input_ids, "attention_mask": attention_mask}

    def forward(self, input_ids=None, attention_mask=None, position_ids=None, labels=None,
                return_dict=None, **unused):
        hidden = self.model(input_ids, attention_mask, position_ids).last_hidden_state
        logits = self.lm_head(hidden).float()
        loss = None
        if labels is not None:
            loss = nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]),
                                               labels[:, 1:].reshape(-1), ignore_index=-100)
        if return_dict is False:
            return (loss, logits) if loss is not None else (logits,)
        return CausalLMOutputWithPast(loss=loss, logits=logits)


class HeadpruneQwen2ForCausalLM(HeadpruneLlamaForCausalLM):
    """Qwen2ForCausalLM with per-layer head counts: HeadpruneLlamaForCausalLM on a Qwen2 config
    (q/k/v biases, projection_biases)."""

    config_class = HeadpruneQwen2Config


class HeadpruneQwen3ForCausalLM(HeadpruneLlamaForCausalLM):
    """Qwen3ForCausalLM with per-layer head counts: HeadpruneLlamaForCausalLM on a Qwen3 config
    (q/k norms)."""

    config_class = HeadpruneQwen3Config


class HeadpruneMistralForCausalLM(HeadpruneLlamaForCausalLM):
    """MistralForCausalLM with per-layer head counts: HeadpruneLlamaForCausalLM on a Mistral config
    (sliding window)."""

    config_class = HeadpruneMistralConfig


class HeadprunePhi3ForCausalLM(HeadpruneLlamaForCausalLM):
    """Phi3ForCausalLM with per-layer head counts: HeadpruneLlamaForCausalLM on a Phi-3 config
    (fused projections, sliding window)."""

    config_class = HeadprunePhi3Config


class HeadpruneGemma3ForCausalLM(HeadpruneLlamaForCausalLM):
    """Gemma3ForCausalLM with per-layer head counts: HeadpruneLlamaForCausalLM on a Gemma 3 text
    config."""

    config_class = HeadpruneGemma3Config
