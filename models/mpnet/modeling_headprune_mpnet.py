# coding=utf-8
"""MPNet with a different number of attention heads in each layer, for transformers 4 and 5.

Written by headprune next to a pruned MPNet checkpoint and registered in config.json's
`auto_map`, so that

    AutoModel.from_pretrained(folder, trust_remote_code=True)
    AutoModelForSequenceClassification.from_pretrained(folder, trust_remote_code=True)
    SentenceTransformer(folder, trust_remote_code=True)

load it. Neither version's own MPNetModel can: transformers 4.x prunes q/k/v/o from
`pruned_heads` but keeps the relative position bias all layers share with every head, so the
scores and the bias no longer have the same heads; 5.x removed head pruning.

The computation is HF's MPNetModel (eager attention, positions counted after padding_idx 1, 32
relative-position buckets up to distance 128): layer l keeps `num_attention_heads -
len(pruned_heads[l])` heads of size `hidden_size // num_attention_heads`, and adds to their
scores their own columns of `encoder.relative_attention_bias` (the table keeps every original
head's column). Parameter names are MPNetModel's, so the checkpoint loads unchanged.

Imports torch, transformers' public names present in 4.x and 5.x, and the classification head
and loss of modeling_headprune_bert.py (written beside it).
"""

import math

import torch
from torch import nn
from transformers import MPNetConfig, PreTrainedModel
from transformers.activations import ACT2FN
from transformers.modeling_outputs import BaseModelOutputWithPooling

from .modeling_headprune_bert import HeadpruneClassificationHead, classifier_output, ffn_widths, init_encoder_weights

PADDING_IDX = 1  # MPNetEmbeddings' padding_idx, whatever pad_token_id says


def pruned_heads(config):
    """`pruned_heads` as {layer: set of original head indices} (JSON keys are strings)."""
    return {int(layer): set(heads) for layer, heads in (getattr(config, "pruned_heads", None) or {}).items()}


def kept_heads(config):
    """The original indices of the heads present in each layer."""
    pruned = pruned_heads(config)
    return [[h for h in range(config.num_attention_heads) if h not in pruned.get(layer, ())]
            for layer in range(config.num_hidden_layers)]


def relative_position_bucket(relative_position, num_buckets=32, max_distance=128):
    """MPNetEncoder.relative_position_bucket (T5's bidirectional buckets)."""
    n = -relative_position
    num_buckets //= 2
    ret = (n < 0).to(torch.long) * num_buckets
    n = torch.abs(n)
    max_exact = num_buckets // 2
    val_if_large = max_exact + (torch.log(n.float() / max_exact) / math.log(max_distance / max_exact)
                                * (num_buckets - max_exact)).to(torch.long)
    val_if_large = torch.min(val_if_large, torch.full_like(val_if_large, num_buckets - 1))
    return ret + torch.where(n < max_exact, n, val_if_large)


class HeadpruneMPNetEmbeddings(nn.Module):
    """Word + position embeddings (positions after padding_idx), LayerNorm, dropout."""

    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=PADDING_IDX)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size,
                                                padding_idx=PADDING_IDX)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids):
        real = input_ids.ne(PADDING_IDX).long()
        positions = torch.cumsum(real, dim=1) * real + PADDING_IDX
        return self.dropout(self.LayerNorm(self.word_embeddings(input_ids) + self.position_embeddings(positions)))


class HeadpruneMPNetSelfAttention(nn.Module):
    """q/k/v/o over the layer's heads (may be none); scores plus their position-bias columns."""

    def __init__(self, config, heads):
        super().__init__()
        # A plain list, not a buffer: transformers 5 builds models on the meta device and leaves
        # buffers the checkpoint does not hold uninitialised.
        self.heads = list(heads)
        self.num_heads = len(heads)
        self.head_size = config.hidden_size // config.num_attention_heads
        inner = self.num_heads * self.head_size
        self.q = nn.Linear(config.hidden_size, inner)
        self.k = nn.Linear(config.hidden_size, inner)
        self.v = nn.Linear(config.hidden_size, inner)
        self.o = nn.Linear(inner, config.hidden_size)
        self.dropout = nn.Dropout(config.attention_probs_dropout_prob)

    def forward(self, hidden, additive_mask, position_bias):
        batch, seq, _ = hidden.shape
        if self.num_heads == 0:
            return self.o(hidden.new_zeros(batch, seq, 0))

        def split(x):
            return x.view(batch, seq, self.num_heads, self.head_size).transpose(1, 2)

        q, k, v = split(self.q(hidden)), split(self.k(hidden)), split(self.v(hidden))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_size)
        columns = torch.tensor(self.heads, dtype=torch.long, device=scores.device)
        scores = scores + position_bias.index_select(1, columns) + additive_mask
        probs = self.dropout(torch.softmax(scores, dim=-1))
        context = torch.matmul(probs, v).transpose(1, 2).reshape(batch, seq, self.num_heads * self.head_size)
        return self.o(context)


class HeadpruneMPNetAttention(nn.Module):
    def __init__(self, config, heads):
        super().__init__()
        self.attn = HeadpruneMPNetSelfAttention(config, heads)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden, additive_mask, position_bias):
        return self.LayerNorm(self.dropout(self.attn(hidden, additive_mask, position_bias)) + hidden)


class HeadpruneMPNetIntermediate(nn.Module):
    def __init__(self, config, width):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, width)
        self.intermediate_act_fn = ACT2FN[config.hidden_act]

    def forward(self, hidden):
        return self.intermediate_act_fn(self.dense(hidden))


class HeadpruneMPNetOutput(nn.Module):
    def __init__(self, config, width):
        super().__init__()
        self.dense = nn.Linear(width, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, intermediate, residual):
        return self.LayerNorm(self.dropout(self.dense(intermediate)) + residual)


class HeadpruneMPNetLayer(nn.Module):
    def __init__(self, config, heads, width):
        super().__init__()
        self.attention = HeadpruneMPNetAttention(config, heads)
        self.intermediate = HeadpruneMPNetIntermediate(config, width)
        self.output = HeadpruneMPNetOutput(config, width)

    def forward(self, hidden, additive_mask, position_bias):
        attended = self.attention(hidden, additive_mask, position_bias)
        return self.output(self.intermediate(attended), attended)


class HeadpruneMPNetEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layer = nn.ModuleList(HeadpruneMPNetLayer(config, heads, width)
                                   for heads, width in zip(kept_heads(config), ffn_widths(config)))
        self.relative_attention_bias = nn.Embedding(config.relative_attention_num_buckets, config.num_attention_heads)

    def forward(self, hidden, additive_mask, output_hidden_states=False):
        seq = hidden.shape[1]
        positions = torch.arange(seq, dtype=torch.long, device=hidden.device)
        buckets = relative_position_bucket(positions[None, :] - positions[:, None])
        position_bias = self.relative_attention_bias(buckets).permute([2, 0, 1]).unsqueeze(0)
        states = [hidden] if output_hidden_states else None
        for layer in self.layer:
            hidden = layer(hidden, additive_mask, position_bias)
            if output_hidden_states:
                states.append(hidden)
        return hidden, states


class HeadpruneMPNetPooler(nn.Module):
    """tanh(dense(first token)), as MPNetPooler."""

    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.activation = nn.Tanh()

    def forward(self, hidden):
        return self.activation(self.dense(hidden[:, 0]))


class HeadpruneMPNetModel(PreTrainedModel):
    """MPNetModel with per-layer head counts. Inputs [batch, seq] int64; `last_hidden_state`
    [batch, seq, hidden_size]; `pooler_output` [batch, hidden_size]."""

    config_class = MPNetConfig
    base_model_prefix = "mpnet"
    _keys_to_ignore_on_load_unexpected = [r"position_ids"]

    def __init__(self, config, add_pooling_layer=True):
        super().__init__(config)
        self.embeddings = HeadpruneMPNetEmbeddings(config)
        self.encoder = HeadpruneMPNetEncoder(config)
        self.pooler = HeadpruneMPNetPooler(config) if add_pooling_layer else None
        self.post_init()

    def _init_weights(self, module):
        init_encoder_weights(module, self.config.initializer_range)

    def _prune_heads(self, heads_to_prune):
        """transformers 4.x calls this at load time with config.pruned_heads, which this model
        was built without: nothing to do. Removing further heads is refused (use headprune)."""
        built = pruned_heads(self.config)
        extra = {int(layer): sorted(set(heads) - built.get(int(layer), set()))
                 for layer, heads in heads_to_prune.items()}
        extra = {layer: heads for layer, heads in extra.items() if heads}
        if extra:
            raise NotImplementedError(f"HeadpruneMPNetModel cannot remove more heads {extra}: prune "
                                      "with headprune, which writes a new folder")

    def get_input_embeddings(self):
        return self.embeddings.word_embeddings

    def set_input_embeddings(self, value):
        self.embeddings.word_embeddings = value

    def forward(self, input_ids=None, attention_mask=None, output_hidden_states=None, return_dict=None, **unused):
        if input_ids is None:
            raise ValueError("HeadpruneMPNetModel needs input_ids")
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        hidden = self.embeddings(input_ids)
        # [batch, 1, 1, seq]: 0 for real tokens, the dtype's minimum for padding.
        additive_mask = (1.0 - attention_mask[:, None, None, :].to(hidden.dtype)) * torch.finfo(hidden.dtype).min
        hidden, states = self.encoder(hidden, additive_mask, bool(output_hidden_states))
        pooled = self.pooler(hidden) if self.pooler is not None else None
        if return_dict is False:
            return tuple(x for x in (hidden, pooled, tuple(states) if states else None) if x is not None)
        return BaseModelOutputWithPooling(last_hidden_state=hidden, pooler_output=pooled,
                                          hidden_states=tuple(states) if states else None)


class HeadpruneMPNetForSequenceClassification(PreTrainedModel):
    """MPNetForSequenceClassification on HeadpruneMPNetModel (no pooler): logits [batch,
    num_labels] from MPNetClassificationHead on the first token; loss as classifier_output."""

    config_class = MPNetConfig
    base_model_prefix = "mpnet"
    _keys_to_ignore_on_load_unexpected = [r"position_ids"]
    _init_weights = HeadpruneMPNetModel._init_weights

    def __init__(self, config):
        super().__init__(config)
        self.num_labels = config.num_labels
        self.mpnet = HeadpruneMPNetModel(config, add_pooling_layer=False)
        self.classifier = HeadpruneClassificationHead(config)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, labels=None, return_dict=None, **unused):
        hidden = self.mpnet(input_ids, attention_mask).last_hidden_state
        return classifier_output(self.config, self.classifier(hidden), labels, return_dict)
