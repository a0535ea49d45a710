# coding=utf-8
"""DistilBERT with a different number of attention heads in each layer, for transformers 5.

Written by headprune next to a pruned DistilBERT checkpoint and registered in config.json's
`auto_map`, so that

    AutoModel.from_pretrained(folder, trust_remote_code=True)
    AutoModelForSequenceClassification.from_pretrained(folder, trust_remote_code=True)
    SentenceTransformer(folder, trust_remote_code=True)

load it on transformers 5.x, which removed head pruning (`pruned_heads` is ignored there and
every layer is built with `n_heads` heads). transformers 4.x without `trust_remote_code` keeps
using its own DistilBertModel, which honours `pruned_heads`.

The computation is HF's DistilBertModel (eager attention, learned or saved sinusoidal position
table, post-LN blocks): layer l keeps `n_heads - len(pruned_heads[l])` heads of size
`dim // n_heads`; q_lin / k_lin / v_lin weights are [heads_l * head_size, dim] and out_lin
[dim, heads_l * head_size]. A layer with no heads adds only out_lin's bias. Parameter names are
DistilBertModel's, so the checkpoint loads unchanged.

Imports torch, transformers' public names present in 4.x and 5.x, and the classification loss
of modeling_headprune_bert.py (written beside it).
"""

import torch
from torch import nn
from transformers import DistilBertConfig, PreTrainedModel
from transformers.activations import get_activation
from transformers.modeling_outputs import BaseModelOutput

from .modeling_headprune_bert import classifier_output, ffn_widths, init_encoder_weights


def pruned_heads(config):
    """`pruned_heads` as {layer: set of original head indices} (JSON keys are strings)."""
    return {int(layer): set(heads) for layer, heads in (getattr(config, "pruned_heads", None) or {}).items()}


def heads_per_layer(config):
    """Heads present in each layer, from `pruned_heads`."""
    pruned = pruned_heads(config)
    return [config.n_heads - len(pruned.get(layer, ())) for layer in range(config.n_layers)]


class HeadpruneDistilBertEmbeddings(nn.Module):
    """Word + position embeddings, LayerNorm (eps 1e-12), dropout (as DistilBERT's Embeddings)."""

    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.dim, padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.dim)
        self.LayerNorm = nn.LayerNorm(config.dim, eps=1e-12)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, input_ids):
        positions = torch.arange(input_ids.shape[1], device=input_ids.device).unsqueeze(0)
        return self.dropout(self.LayerNorm(self.word_embeddings(input_ids) + self.position_embeddings(positions)))


class HeadpruneDistilBertAttention(nn.Module):
    """Multi-head self-attention over `num_heads` heads of size dim // n_heads (may be 0 heads)."""

    def __init__(self, config, num_heads):
        super().__init__()
        self.n_heads = num_heads
        self.head_size = config.dim // config.n_heads
        inner = num_heads * self.head_size
        self.q_lin = nn.Linear(config.dim, inner)
        self.k_lin = nn.Linear(config.dim, inner)
        self.v_lin = nn.Linear(config.dim, inner)
        self.out_lin = nn.Linear(inner, config.dim)
        self.dropout = nn.Dropout(config.attention_dropout)

    def forward(self, hidden, additive_mask):
        batch, seq, _ = hidden.shape
        if self.n_heads == 0:
            return self.out_lin(hidden.new_zeros(batch, seq, 0))

        def split(x):
            return x.view(batch, seq, self.n_heads, self.head_size).transpose(1, 2)

        q, k, v = split(self.q_lin(hidden)), split(self.k_lin(hidden)), split(self.v_lin(hidden))
        scores = torch.matmul(q, k.transpose(-1, -2)) / (self.head_size**0.5) + additive_mask
        probs = self.dropout(torch.softmax(scores, dim=-1))
        context = torch.matmul(probs, v).transpose(1, 2).reshape(batch, seq, self.n_heads * self.head_size)
        return self.out_lin(context)


class HeadpruneDistilBertFFN(nn.Module):
    def __init__(self, config, width):
        super().__init__()
        self.lin1 = nn.Linear(config.dim, width)
        self.lin2 = nn.Linear(width, config.dim)
        self.activation = get_activation(config.activation)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, hidden):
        return self.dropout(self.lin2(self.activation(self.lin1(hidden))))


class HeadpruneDistilBertBlock(nn.Module):
    """Attention, residual, sa_layer_norm; FFN, residual, output_layer_norm (DistilBERT's
    TransformerBlock)."""

    def __init__(self, config, num_heads, width):
        super().__init__()
        self.attention = HeadpruneDistilBertAttention(config, num_heads)
        self.sa_layer_norm = nn.LayerNorm(config.dim, eps=1e-12)
        self.ffn = HeadpruneDistilBertFFN(config, width)
        self.output_layer_norm = nn.LayerNorm(config.dim, eps=1e-12)

    def forward(self, hidden, additive_mask):
        attended = self.sa_layer_norm(self.attention(hidden, additive_mask) + hidden)
        return self.output_layer_norm(self.ffn(attended) + attended)


class HeadpruneDistilBertTransformer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layer = nn.ModuleList(HeadpruneDistilBertBlock(config, heads, width) for heads, width in
                                   zip(heads_per_layer(config), ffn_widths(config, config.hidden_dim)))

    def forward(self, hidden, additive_mask, output_hidden_states=False):
        states = [hidden] if output_hidden_states else None
        for layer in self.layer:
            hidden = layer(hidden, additive_mask)
            if output_hidden_states:
                states.append(hidden)
        return hidden, states


class HeadpruneDistilBertModel(PreTrainedModel):
    """DistilBertModel with per-layer head counts. Inputs [batch, seq] int64;
    `last_hidden_state` [batch, seq, dim]."""

    config_class = DistilBertConfig
    base_model_prefix = "distilbert"
    _keys_to_ignore_on_load_unexpected = [r"position_ids"]

    def __init__(self, config):
        super().__init__(config)
        self.embeddings = HeadpruneDistilBertEmbeddings(config)
        self.transformer = HeadpruneDistilBertTransformer(config)
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
            raise NotImplementedError(f"HeadpruneDistilBertModel cannot remove more heads {extra}: prune "
                                      "with headprune, which writes a new folder")

    def get_input_embeddings(self):
        return self.embeddings.word_embeddings

    def set_input_embeddings(self, value):
        self.embeddings.word_embeddings = value

    def forward(self, input_ids=None, attention_mask=None, output_hidden_states=None, return_dict=None, **unused):
        if input_ids is None:
            raise ValueError("HeadpruneDistilBertModel needs input_ids")
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        hidden = self.embeddings(input_ids)
        # [batch, 1, 1, seq]: 0 for real tokens, the dtype's minimum for padding.
        additive_mask = (1.0 - attention_mask[:, None, None, :].to(hidden.dtype)) * torch.finfo(hidden.dtype).min
        hidden, states = self.transformer(hidden, additive_mask, bool(output_hidden_states))
        if return_dict is False:
            return tuple(x for x in (hidden, tuple(states) if states else None) if x is not None)
        return BaseModelOutput(last_hidden_state=hidden, hidden_states=tuple(states) if states else None)


class HeadpruneDistilBertForSequenceClassification(PreTrainedModel):
    """DistilBertForSequenceClassification on HeadpruneDistilBertModel: logits [batch, num_labels]
    = classifier(dropout(relu(pre_classifier(first token)))); loss as classifier_output."""

    config_class = DistilBertConfig
    base_model_prefix = "distilbert"
    _keys_to_ignore_on_load_unexpected = [r"position_ids"]
    _init_weights = HeadpruneDistilBertModel._init_weights

    def __init__(self, config):
        super().__init__(config)
        self.num_labels = config.num_labels
        self.distilbert = HeadpruneDistilBertModel(config)
        self.pre_classifier = nn.Linear(config.dim, config.dim)
        self.classifier = nn.Linear(config.dim, config.num_labels)
        self.dropout = nn.Dropout(config.seq_classif_dropout)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, labels=None, return_dict=None, **unused):
        hidden = self.distilbert(input_ids, attention_mask).last_hidden_state
        pooled = self.dropout(nn.functional.relu(self.pre_classifier(hidden[:, 0])))
        return classifier_output(self.config, self.classifier(pooled), labels, return_dict)
