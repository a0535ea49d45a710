# coding=utf-8
"""RoBERTa and XLM-RoBERTa with a different number of attention heads in each layer, for
transformers 5.

Written by headprune next to a pruned RoBERTa / XLM-RoBERTa checkpoint, with the
modeling_headprune_bert.py it imports, and registered in config.json's `auto_map`, so that

    AutoModel.from_pretrained(folder, trust_remote_code=True)
    AutoModelForSequenceClassification.from_pretrained(folder, trust_remote_code=True)
    SentenceTransformer(folder, trust_remote_code=True)

load it on transformers 5.x, which removed head pruning. transformers 4.x without
`trust_remote_code` keeps using its own RobertaModel / XLMRobertaModel, which honour
`pruned_heads`.

The computation is HF's RobertaModel: BertModel's encoder (modeling_headprune_bert.py, per-layer
head counts from `pruned_heads`) with RobertaEmbeddings' positions: padding_idx + 1, + 2, ...
for real tokens and padding_idx for padding (padding_idx = pad_token_id), as
`create_position_ids_from_input_ids`. Parameter names are RobertaModel's, so the checkpoint loads
unchanged.
"""

import torch
from transformers import RobertaConfig, XLMRobertaConfig

from .modeling_headprune_bert import (HeadpruneBertEmbeddings, HeadpruneBertModel, HeadpruneBertPreTrainedModel,
                                      HeadpruneClassificationHead, classifier_output)


class HeadpruneRobertaEmbeddings(HeadpruneBertEmbeddings):
    """Word + RoBERTa position + token type embeddings, LayerNorm, dropout (RobertaEmbeddings)."""

    def forward(self, input_ids, token_type_ids):
        real = input_ids.ne(self.word_embeddings.padding_idx).long()
        positions = torch.cumsum(real, dim=1) * real + self.word_embeddings.padding_idx
        x = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids) + self.position_embeddings(positions)
        return self.dropout(self.LayerNorm(x))


class HeadpruneRobertaModel(HeadpruneBertModel):
    """RobertaModel with per-layer head counts. Inputs [batch, seq] int64; `last_hidden_state`
    [batch, seq, hidden_size]; `pooler_output` [batch, hidden_size]."""

    config_class = RobertaConfig
    base_model_prefix = "roberta"
    embeddings_class = HeadpruneRobertaEmbeddings


class HeadpruneXLMRobertaModel(HeadpruneRobertaModel):
    """XLMRobertaModel (RobertaModel under XLMRobertaConfig) with per-layer head counts."""

    config_class = XLMRobertaConfig


class HeadpruneRobertaForSequenceClassification(HeadpruneBertPreTrainedModel):
    """RobertaForSequenceClassification on HeadpruneRobertaModel (no pooler): logits [batch,
    num_labels] from RobertaClassificationHead on the first token; loss as classifier_output."""

    config_class = RobertaConfig
    base_model_prefix = "roberta"
    model_class = HeadpruneRobertaModel

    def __init__(self, config):
        super().__init__(config)
        self.num_labels = config.num_labels
        self.roberta = self.model_class(config, add_pooling_layer=False)
        self.classifier = HeadpruneClassificationHead(config)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, labels=None,
                return_dict=None, **unused):
        hidden = self.roberta(input_ids, attention_mask, token_type_ids).last_hidden_state
        return classifier_output(self.config, self.classifier(hidden), labels, return_dict)


class HeadpruneXLMRobertaForSequenceClassification(HeadpruneRobertaForSequenceClassification):
    """XLMRobertaForSequenceClassification (RobertaForSequenceClassification under
    XLMRobertaConfig) with per-layer head counts."""

    config_class = XLMRobertaConfig
    model_class = HeadpruneXLMRobertaModel
