# coding=utf-8
"""ModernBERT with a different number of attention heads in each layer, for transformers 4.x and 5.x.

Written by headprune next to a pruned ModernBERT checkpoint and registered in config.json's
`auto_map`, so that

    AutoModel.from_pretrained(folder, trust_remote_code=True)
    SentenceTransformer(folder, trust_remote_code=True)

load it. transformers' own ModernBertModel sizes every layer's heads as hidden_size /
num_attention_heads, and transformers before 4.48 has no ModernBERT at all: here
`num_attention_heads` and `head_dim` are the original ones and `headprune.kept_heads[l]` lists the
heads layer l keeps (absent: all of them).

The computation is HF's ModernBertModel in eval mode with eager attention (the padded path):
token embeddings then LayerNorm; per layer x + Wo(attention(attn_norm(x))) — layer 0 has no
attn_norm — then x + mlp.Wo(act(input) * gate) on mlp_norm(x), where input, gate = mlp.Wi(...)
halves; final_norm. Attention is bidirectional: "full_attention" layers see every key but padding,
"sliding_attention" layers the keys at most local_attention // 2 positions away; both rotate
queries and keys by the rotary embedding of their layer type's base (rope_parameters[type]
["rope_theta"], or global_rope_theta / local_rope_theta). A layer with no heads adds nothing.
Parameter names are ModernBertModel's, so the checkpoint loads unchanged. HeadpruneModernBertForSequenceClassification
is ModernBertForSequenceClassification (pooling, head.dense, classifier_activation, head.norm, classifier)
on it.

Imports only torch, transformers' public names present in 4.x and 5.x, and
modeling_headprune_bert.py (written beside it: the encoders' initialisation and classifier output).
"""

import torch
from torch import nn
from transformers import PretrainedConfig, PreTrainedModel
from transformers.activations import ACT2FN
from transformers.modeling_outputs import BaseModelOutput

from .modeling_headprune_bert import classifier_output, ffn_widths, init_encoder_weights

try:
    from transformers import ModernBertConfig as ModernBertConfigBase
except ImportError:  # transformers < 4.48: no ModernBERT of its own
    ModernBertConfigBase = None

# ModernBertConfig's keys and defaults (transformers 4.48+), for releases without it.
DEFAULTS = {
    "vocab_size": 50368, "hidden_size": 768, "intermediate_size": 1152, "num_hidden_layers": 22,
    "num_attention_heads": 12, "hidden_activation": "gelu", "max_position_embeddings": 8192,
    "initializer_range": 0.02, "initializer_cutoff_factor": 2.0, "norm_eps": 1e-5, "norm_bias": False,
    "global_rope_theta": 160000.0, "attention_bias": False, "attention_dropout": 0.0,
    "global_attn_every_n_layers": 3, "local_attention": 128, "local_rope_theta": 10000.0,
    "embedding_dropout": 0.0, "mlp_bias": False, "mlp_dropout": 0.0, "classifier_pooling": "cls",
    "classifier_dropout": 0.0, "classifier_bias": False, "classifier_activation": "gelu",
    "cls_token_id": 50281, "sep_token_id": 50282, "layer_types": None, "rope_parameters": None,
}

if ModernBertConfigBase is not None:

    class HeadpruneModernBertConfig(ModernBertConfigBase):
        """ModernBertConfig, read with headprune's keys (head_dim, headprune.kept_heads) kept."""

else:

    class HeadpruneModernBertConfig(PretrainedConfig):
        """ModernBertConfig's keys and defaults, for transformers releases that have no ModernBERT."""

        model_type = "modernbert"

        def __init__(self, pad_token_id=50283, bos_token_id=50281, eos_token_id=50282, **kwargs):
            for key, value in DEFAULTS.items():
                setattr(self, key, kwargs.pop(key, value))
            super().__init__(pad_token_id=pad_token_id, bos_token_id=bos_token_id, eos_token_id=eos_token_id,
                             **kwargs)


def head_dim(config):
    return getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads


def layer_types(config):
    """Per layer: "sliding_attention" or "full_attention" (layer_types, else every layer whose
    index is not a multiple of global_attn_every_n_layers slides)."""
    types = getattr(config, "layer_types", None)
    if types:
        return list(types)
    every = getattr(config, "global_attn_every_n_layers", 3)
    return ["sliding_attention" if i % every else "full_attention" for i in range(config.num_hidden_layers)]


def rope_theta(config, layer_type):
    params = (getattr(config, "rope_parameters", None) or {}).get(layer_type) or {}
    if "rope_theta" in params:
        return params["rope_theta"]
    if layer_type == "sliding_attention" and getattr(config, "local_rope_theta", None) is not None:
        return config.local_rope_theta
    return getattr(config, "global_rope_theta", 160000.0)


def layer_head_counts(config):
    kept = (getattr(config, "headprune", None) or {}).get("kept_heads")
    if kept is None:
        return [config.num_attention_heads] * config.num_hidden_layers
    return [len(heads) for heads in kept]


def make_norm(config):
    return nn.LayerNorm(config.hidden_size, eps=config.norm_eps, bias=config.norm_bias)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class HeadpruneModernBertEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.tok_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.norm = make_norm(config)

    def forward(self, input_ids):
        return self.norm(self.tok_embeddings(input_ids))


class HeadpruneModernBertAttention(nn.Module):
    """Bidirectional attention over `num_heads` heads of head_dim: Wqkv [3 * heads * head_dim,
    hidden] (queries, keys, values), Wo [hidden, heads * head_dim]."""

    def __init__(self, config, num_heads):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, head_dim(config)
        self.Wqkv = nn.Linear(config.hidden_size, 3 * num_heads * self.head_dim, bias=config.attention_bias)
        self.Wo = nn.Linear(num_heads * self.head_dim, config.hidden_size, bias=config.attention_bias)

    def forward(self, hidden, cos, sin, additive_mask):
        batch, seq, _ = hidden.shape
        if self.num_heads == 0:
            return self.Wo(hidden.new_zeros(batch, seq, 0))
        qkv = self.Wqkv(hidden).view(batch, seq, 3, self.num_heads, self.head_dim)
        q, k, v = (x.transpose(1, 2) for x in qkv.unbind(dim=2))
        q = (q.float() * cos + rotate_half(q.float()) * sin).to(v.dtype)
        k = (k.float() * cos + rotate_half(k.float()) * sin).to(v.dtype)
        scores = torch.matmul(q, k.transpose(2, 3)) * self.head_dim**-0.5 + additive_mask
        probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
        return self.Wo(torch.matmul(probs, v).transpose(1, 2).reshape(batch, seq, -1))


class HeadpruneModernBertMLP(nn.Module):
    def __init__(self, config, width):
        super().__init__()
        self.Wi = nn.Linear(config.hidden_size, 2 * width, bias=config.mlp_bias)
        self.act = ACT2FN[config.hidden_activation]
        self.Wo = nn.Linear(width, config.hidden_size, bias=config.mlp_bias)

    def forward(self, x):
        inputs, gate = self.Wi(x).chunk(2, dim=-1)
        return self.Wo(self.act(inputs) * gate)


class HeadpruneModernBertEncoderLayer(nn.Module):
    def __init__(self, config, layer_index, num_heads, width):
        super().__init__()
        self.attn_norm = nn.Identity() if layer_index == 0 else make_norm(config)
        self.attn = HeadpruneModernBertAttention(config, num_heads)
        self.mlp_norm = make_norm(config)
        self.mlp = HeadpruneModernBertMLP(config, width)

    def forward(self, hidden, cos, sin, additive_mask):
        hidden = hidden + self.attn(self.attn_norm(hidden), cos, sin, additive_mask)
        return hidden + self.mlp(self.mlp_norm(hidden))


class HeadpruneModernBertPreTrainedModel(PreTrainedModel):
    config_class = HeadpruneModernBertConfig
    base_model_prefix = "model"

    def _init_weights(self, module):
        init_encoder_weights(module, self.config.initializer_range)


class HeadpruneModernBertModel(HeadpruneModernBertPreTrainedModel):
    """ModernBertModel with per-layer head counts: `last_hidden_state` [batch, seq, hidden_size]."""

    def __init__(self, config):
        super().__init__(config)
        self.embeddings = HeadpruneModernBertEmbeddings(config)
        self.layers = nn.ModuleList(HeadpruneModernBertEncoderLayer(config, i, heads, width) for i, (heads, width)
                                    in enumerate(zip(layer_head_counts(config), ffn_widths(config))))
        self.final_norm = make_norm(config)
        self.post_init()

    def get_input_embeddings(self):
        return self.embeddings.tok_embeddings

    def set_input_embeddings(self, value):
        self.embeddings.tok_embeddings = value

    def forward(self, input_ids=None, attention_mask=None, position_ids=None, **unused):
        if input_ids is None:
            raise ValueError("HeadpruneModernBertModel needs input_ids")
        batch, seq = input_ids.shape
        hidden = self.embeddings(input_ids)
        if position_ids is None:
            position_ids = torch.arange(seq, device=input_ids.device).expand(batch, seq)
        dim, minimum = head_dim(self.config), torch.finfo(hidden.dtype).min
        tables, masks = {}, {}
        for layer, layer_type in zip(self.layers, layer_types(self.config)):
            if layer_type not in tables:
                exponent = torch.arange(0, dim, 2, dtype=torch.int64, device=input_ids.device).float() / dim
                inv_freq = 1.0 / (rope_theta(self.config, layer_type) ** exponent)
                freqs = position_ids[:, :, None].float() * inv_freq[None, None, :]
                emb = torch.cat((freqs, freqs), dim=-1)
                tables[layer_type] = (emb.cos()[:, None], emb.sin()[:, None])
                allowed = torch.ones(seq, seq, dtype=torch.bool, device=input_ids.device)
                if layer_type == "sliding_attention":
                    rows = torch.arange(seq, device=input_ids.device)
                    allowed = (rows[None, :] - rows[:, None]).abs() <= self.config.local_attention // 2
                allowed = allowed[None, None]
                if attention_mask is not None:
                    allowed = allowed & attention_mask[:, None, None, :].bool()
                masks[layer_type] = torch.zeros(allowed.shape, dtype=hidden.dtype,
                                                device=hidden.device).masked_fill(~allowed, minimum)
            hidden = layer(hidden, *tables[layer_type], masks[layer_type])
        return BaseModelOutput(last_hidden_state=self.final_norm(hidden))


class HeadpruneModernBertPredictionHead(nn.Module):
    """norm(act(dense(x))), as ModernBertPredictionHead."""

    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size, bias=config.classifier_bias)
        self.act = ACT2FN[config.classifier_activation]
        self.norm = make_norm(config)

    def forward(self, x):
        return self.norm(self.act(self.dense(x)))


class HeadpruneModernBertForSequenceClassification(HeadpruneModernBertPreTrainedModel):
    """ModernBertForSequenceClassification on HeadpruneModernBertModel: classifier_pooling ("cls":
    the first token's state, "mean": the mean over real tokens), the prediction head, then
    `classifier`: `logits` [batch, num_labels]; `loss` as HF's when `labels` are given."""

    def __init__(self, config):
        super().__init__(config)
        self.num_labels = config.num_labels
        self.model = HeadpruneModernBertModel(config)
        self.head = HeadpruneModernBertPredictionHead(config)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, position_ids=None, labels=None, return_dict=None,
                **unused):
        hidden = self.model(input_ids, attention_mask, position_ids).last_hidden_state
        if self.config.classifier_pooling == "mean":
            mask = torch.ones(hidden.shape[:2], device=hidden.device) if attention_mask is None else attention_mask
            pooled = (hidden * mask.unsqueeze(-1)).sum(dim=1) / mask.sum(dim=1, keepdim=True)
        else:
            pooled = hidden[:, 0]
        return classifier_output(self.config, self.classifier(self.head(pooled)), labels, return_dict)
