# coding=utf-8
"""BERT with a different number of attention heads in each layer, for transformers 5.

Written by headprune next to a pruned BERT checkpoint and registered in config.json's
`auto_map`, so that

    AutoModel.from_pretrained(folder, trust_remote_code=True)
    AutoModelForSequenceClassification.from_pretrained(folder, trust_remote_code=True)
    SentenceTransformer(folder, trust_remote_code=True)

load it on transformers 5.x, which removed head pruning (`pruned_heads` is ignored there and
every layer is built with `num_attention_heads` heads). transformers 4.x without
`trust_remote_code` keeps using its own BertModel, which honours `pruned_heads`.

The computation is HF's BertModel (eager attention, absolute positions, no cross-attention,
no cache): layer l keeps `num_attention_heads - len(pruned_heads[l])` heads of size
`hidden_size // num_attention_heads`; Q/K/V weights are [heads_l * head_size, hidden] and the
output projection [hidden, heads_l * head_size]. A layer with no heads adds only the output
projection's bias. Parameter names are BertModel's, so the checkpoint loads unchanged.

Self-contained: imports only torch and transformers' public names present in 4.x and 5.x.
"""

import torch
from torch import nn
from transformers import BertConfig, PreTrainedModel
from transformers.activations import ACT2FN
from transformers.modeling_outputs import (
    BaseModelOutputWithPoolingAndCrossAttentions,
    SequenceClassifierOutput,
)


def pruned_heads(config):
    """`pruned_heads` as {layer: set of original head indices} (JSON keys are strings)."""
    return {int(layer): set(heads) for layer, heads in (getattr(config, "pruned_heads", None) or {}).items()}


def heads_per_layer(config):
    """Heads present in each layer, from `pruned_heads` ({layer: [original head indices]})."""
    pruned = pruned_heads(config)
    return [config.num_attention_heads - len(pruned.get(layer, ())) for layer in range(config.num_hidden_layers)]


def ffn_widths(config, width=None):
    """FFN neurons present in each layer: `headprune.intermediate_sizes` when headprune removed
    neurons unevenly, else `width` (default `intermediate_size`) in every layer."""
    widths = (getattr(config, "headprune", None) or {}).get("intermediate_sizes")
    if widths is not None:
        return list(widths)
    return [config.intermediate_size if width is None else width] * config.num_hidden_layers


class HeadpruneBertEmbeddings(nn.Module):
    """Word + absolute position + token type embeddings, LayerNorm, dropout (as BertEmbeddings)."""

    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids, token_type_ids):
        seq = input_ids.shape[1]
        positions = torch.arange(seq, device=input_ids.device).unsqueeze(0)
        x = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids) + self.position_embeddings(positions)
        return self.dropout(self.LayerNorm(x))


class HeadpruneBertSelfAttention(nn.Module):
    """Scaled dot-product attention over `num_heads` heads of size `head_size` (may be 0 heads)."""

    def __init__(self, config, num_heads):
        super().__init__()
        self.num_attention_heads = num_heads
        self.attention_head_size = config.hidden_size // config.num_attention_heads
        self.all_head_size = num_heads * self.attention_head_size
        self.query = nn.Linear(config.hidden_size, self.all_head_size)
        self.key = nn.Linear(config.hidden_size, self.all_head_size)
        self.value = nn.Linear(config.hidden_size, self.all_head_size)
        self.dropout = nn.Dropout(config.attention_probs_dropout_prob)

    def forward(self, hidden, additive_mask):
        batch, seq, _ = hidden.shape
        if self.num_attention_heads == 0:
            return hidden.new_zeros(batch, seq, 0)

        def split(x):
            return x.view(batch, seq, self.num_attention_heads, self.attention_head_size).transpose(1, 2)

        q, k, v = split(self.query(hidden)), split(self.key(hidden)), split(self.value(hidden))
        scores = torch.matmul(q, k.transpose(-1, -2)) / (self.attention_head_size**0.5) + additive_mask
        probs = self.dropout(torch.softmax(scores, dim=-1))
        return torch.matmul(probs, v).transpose(1, 2).reshape(batch, seq, self.all_head_size)


class HeadpruneBertSelfOutput(nn.Module):
    """Output projection (columns = the layer's heads), dropout, residual, LayerNorm."""

    def __init__(self, config, num_heads):
        super().__init__()
        head_size = config.hidden_size // config.num_attention_heads
        self.dense = nn.Linear(num_heads * head_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, context, residual):
        return self.LayerNorm(self.dropout(self.dense(context)) + residual)


class HeadpruneBertAttention(nn.Module):
    def __init__(self, config, num_heads):
        super().__init__()
        self.self = HeadpruneBertSelfAttention(config, num_heads)
        self.output = HeadpruneBertSelfOutput(config, num_heads)

    def forward(self, hidden, additive_mask):
        return self.output(self.self(hidden, additive_mask), hidden)


class HeadpruneBertIntermediate(nn.Module):
    def __init__(self, config, width):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, width)
        self.intermediate_act_fn = ACT2FN[config.hidden_act]

    def forward(self, hidden):
        return self.intermediate_act_fn(self.dense(hidden))


class HeadpruneBertOutput(nn.Module):
    def __init__(self, config, width):
        super().__init__()
        self.dense = nn.Linear(width, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, intermediate, residual):
        return self.LayerNorm(self.dropout(self.dense(intermediate)) + residual)


class HeadpruneBertLayer(nn.Module):
    def __init__(self, config, num_heads, width):
        super().__init__()
        self.attention = HeadpruneBertAttention(config, num_heads)
        self.intermediate = HeadpruneBertIntermediate(config, width)
        self.output = HeadpruneBertOutput(config, width)

    def forward(self, hidden, additive_mask):
        attended = self.attention(hidden, additive_mask)
        return self.output(self.intermediate(attended), attended)


class HeadpruneBertEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layer = nn.ModuleList(HeadpruneBertLayer(config, heads, width)
                                   for heads, width in zip(heads_per_layer(config), ffn_widths(config)))

    def forward(self, hidden, additive_mask, output_hidden_states=False):
        states = [hidden] if output_hidden_states else None
        for layer in self.layer:
            hidden = layer(hidden, additive_mask)
            if output_hidden_states:
                states.append(hidden)
        return hidden, states


class HeadpruneBertPooler(nn.Module):
    """tanh(dense(first token)), as BertPooler."""

    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.activation = nn.Tanh()

    def forward(self, hidden):
        return self.activation(self.dense(hidden[:, 0]))


def init_encoder_weights(module, std):
    """The encoders' initialisation, for weights a checkpoint does not hold (BERT, DistilBERT,
    MPNet, ModernBERT): Linear and Embedding weights from N(0, std), biases 0, LayerNorms 1 and 0."""
    if isinstance(module, (nn.Linear, nn.Embedding)) and module.weight.numel() > 0:
        module.weight.data.normal_(mean=0.0, std=std)
    if isinstance(module, nn.Linear) and module.bias is not None:
        module.bias.data.zero_()
    if isinstance(module, nn.LayerNorm):
        module.weight.data.fill_(1.0)
        if module.bias is not None:
            module.bias.data.zero_()


class HeadpruneBertPreTrainedModel(PreTrainedModel):
    config_class = BertConfig
    base_model_prefix = "bert"
    _keys_to_ignore_on_load_unexpected = [r"position_ids"]

    def _init_weights(self, module):
        init_encoder_weights(module, self.config.initializer_range)


class HeadpruneBertModel(HeadpruneBertPreTrainedModel):
    """BertModel with per-layer head counts. Inputs [batch, seq] int64; `last_hidden_state`
    [batch, seq, hidden_size]; `pooler_output` [batch, hidden_size]."""

    # The embeddings module (RoBERTa's remote code substitutes its own positions).
    embeddings_class = HeadpruneBertEmbeddings

    def __init__(self, config, add_pooling_layer=True):
        super().__init__(config)
        self.embeddings = self.embeddings_class(config)
        self.encoder = HeadpruneBertEncoder(config)
        self.pooler = HeadpruneBertPooler(config) if add_pooling_layer else None
        self.post_init()

    def _prune_heads(self, heads_to_prune):
        """transformers 4.x calls this at load time with config.pruned_heads, which this model
        was built without: nothing to do. Removing further heads is refused (use headprune)."""
        built = pruned_heads(self.config)
        extra = {int(layer): sorted(set(heads) - built.get(int(layer), set()))
                 for layer, heads in heads_to_prune.items()}
        extra = {layer: heads for layer, heads in extra.items() if heads}
        if extra:
            raise NotImplementedError(f"HeadpruneBertModel cannot remove more heads {extra}: prune "
                                      "with headprune, which writes a new folder")

    def get_input_embeddings(self):
        return self.embeddings.word_embeddings

    def set_input_embeddings(self, value):
        self.embeddings.word_embeddings = value

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, output_hidden_states=None,
                return_dict=None, **unused):
        if input_ids is None:
            raise ValueError("HeadpruneBertModel needs input_ids")
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        hidden = self.embeddings(input_ids, token_type_ids)
        # [batch, 1, 1, seq]: 0 for real tokens, the dtype's minimum for padding.
        additive_mask = (1.0 - attention_mask[:, None, None, :].to(hidden.dtype)) * torch.finfo(hidden.dtype).min
        hidden, states = self.encoder(hidden, additive_mask, bool(output_hidden_states))
        pooled = self.pooler(hidden) if self.pooler is not None else None
        if return_dict is False:
            return tuple(x for x in (hidden, pooled, tuple(states) if states else None) if x is not None)
        return BaseModelOutputWithPoolingAndCrossAttentions(
            last_hidden_state=hidden, pooler_output=pooled, hidden_states=tuple(states) if states else None)


def classifier_output(config, logits, labels, return_dict):
    """A *ForSequenceClassification's output for `logits` [batch, num_labels]: with `labels`, HF's
    loss (regression when num_labels == 1, binary cross-entropy for problem_type
    "multi_label_classification", else cross-entropy)."""
    loss = None
    if labels is not None:
        if config.num_labels == 1:
            loss = nn.functional.mse_loss(logits.squeeze(-1), labels.to(logits.dtype))
        elif getattr(config, "problem_type", None) == "multi_label_classification":
            loss = nn.functional.binary_cross_entropy_with_logits(logits, labels.to(logits.dtype))
        else:
            loss = nn.functional.cross_entropy(logits.view(-1, config.num_labels), labels.view(-1))
    if return_dict is False:
        return (loss, logits) if loss is not None else (logits,)
    return SequenceClassifierOutput(loss=loss, logits=logits)


class HeadpruneClassificationHead(nn.Module):
    """RobertaClassificationHead / MPNetClassificationHead: out_proj(dropout(tanh(dense(dropout(
    first token))))), logits [batch, num_labels]."""

    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        dropout = getattr(config, "classifier_dropout", None)
        self.dropout = nn.Dropout(config.hidden_dropout_prob if dropout is None else dropout)
        self.out_proj = nn.Linear(config.hidden_size, config.num_labels)

    def forward(self, hidden):
        x = torch.tanh(self.dense(self.dropout(hidden[:, 0])))
        return self.out_proj(self.dropout(x))


class HeadpruneBertForSequenceClassification(HeadpruneBertPreTrainedModel):
    """BertForSequenceClassification on HeadpruneBertModel: logits [batch, num_labels] from
    dropout(pooler_output); loss as classifier_output."""

    def __init__(self, config):
        super().__init__(config)
        self.num_labels = config.num_labels
        self.bert = HeadpruneBertModel(config)
        dropout = getattr(config, "classifier_dropout", None)
        self.dropout = nn.Dropout(config.hidden_dropout_prob if dropout is None else dropout)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, labels=None,
                return_dict=None, **unused):
        pooled = self.bert(input_ids, attention_mask, token_type_ids).pooler_output
        return classifier_output(self.config, self.classifier(self.dropout(pooled)), labels, return_dict)
