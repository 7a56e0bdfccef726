"""Factories for tools/export_model.py and tools/capture_conformance.py.

Each builds a model from its architecture or configuration only (no
weights are downloaded) and returns (model, example_input, meta):
example_input is a tensor, a tuple of positional tensors or a dict of
keyword tensors with `batch` samples; meta names what the exporter writes
at the top of the model file (sample, default_batch, optimizer) and how the
loss is taken (`loss`: "classify" for cross-entropy over the last dimension
of the first output, "lm" for next-token cross-entropy).

The configurations are those of ../shared/data/README.md: ResNet-50,
MobileNetV2 (width 1.0) and VGG-16 from torchvision with 1000 classes and a
224x224 image; BERT-base-cased with a 3-label sequence-classification head
(vocab 28996), sequence length 128; GPT-2 small (GPT2LMHeadModel, lm_head
tied to wte), sequence length 1024.

attention: "eager" (unfused: QK^T, softmax, dropout, AV as separate ops)
or "fused" (Hugging Face's "sdpa": torch's scaled_dot_product_attention).
"""

import torch

IMAGE = {"sample": "one 224x224 RGB image", "default_batch": 32, "optimizer": "sgd",
         "loss": "classify"}


def _image(batch):
    g = torch.Generator().manual_seed(0)
    return torch.randn(batch, 3, 224, 224, generator=g)


def _tv(name, batch):
    import torchvision.models as tvm
    torch.manual_seed(0)
    return getattr(tvm, name)(weights=None), _image(batch), dict(IMAGE)


def resnet50(batch=2, attention="eager"):
    return _tv("resnet50", batch)


def mobilenet_v2(batch=2, attention="eager"):
    return _tv("mobilenet_v2", batch)


def vgg16(batch=2, attention="eager"):
    return _tv("vgg16", batch)


def _attn(attention):
    if attention not in ("eager", "fused"):
        raise ValueError("attention must be eager or fused, got %r" % attention)
    return "eager" if attention == "eager" else "sdpa"


def bert_base(batch=2, attention="eager", seq=128):
    from transformers import BertConfig, BertForSequenceClassification
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=28996, num_labels=3)  # bert-base-cased, 3 labels
    cfg._attn_implementation = _attn(attention)
    model = BertForSequenceClassification(cfg)
    g = torch.Generator().manual_seed(0)
    x = {
        "input_ids": torch.randint(0, cfg.vocab_size, (batch, seq), generator=g),
        "token_type_ids": torch.zeros(batch, seq, dtype=torch.long),
        "attention_mask": torch.ones(batch, seq, dtype=torch.long),
    }
    meta = {"sample": "one sequence of %d tokens" % seq, "default_batch": 32,
            "optimizer": "adam", "loss": "classify"}
    return model, x, meta


def gpt2(batch=2, attention="eager", seq=1024):
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    cfg = GPT2Config()  # GPT-2 small: vocab 50257, 1024 positions, 768 wide, 12 layers
    cfg._attn_implementation = _attn(attention)
    model = GPT2LMHeadModel(cfg)  # lm_head.weight is transformer.wte.weight
    g = torch.Generator().manual_seed(0)
    x = {"input_ids": torch.randint(0, cfg.vocab_size, (batch, seq), generator=g)}
    meta = {"sample": "one sequence of %d tokens" % seq, "default_batch": 8,
            "optimizer": "adam", "loss": "lm"}
    return model, x, meta


MODELS = {  # name -> factory, as tools/conformance.sh and capture_conformance.py use them
    "resnet50": resnet50,
    "mobilenet_v2": mobilenet_v2,
    "vgg16": vgg16,
    "bert-base": bert_base,
    "gpt2": gpt2,
}
