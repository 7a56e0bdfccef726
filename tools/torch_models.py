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
tied to wte), sequence length 1024. bert_base_squad (not in the shared data
README): bert-base-uncased with a question-answering head, sequence length 384,
as DeepLearningExamples' run_squad.py fine-tunes it (Lambda's benchmark).
resnet101, resnext50_32x4d and resnext101_32x8d (not in the shared data
README): torchvision's, 1000 classes, 224x224, the other models PyTorch's
DDP benchmark (benchmarks/distributed/ddp) measured. resnext101_32x4d (not in
the shared data README): the ResNeXt-101 32x4d NVIDIA DeepLearningExamples
benchmarks (PyTorch/Classification/ConvNets), which torchvision has no
constructor for: torchvision's ResNet with Bottleneck blocks [3, 4, 23, 3],
groups=32, width_per_group=4. DeepLearningExamples' own definition
(image_classification/models/resnet.py, "resnext101-32x4d": widths
128..1024, expansion 2, cardinality 32, stem width 64) has the same layers:
7x7 stem, batch norm, ReLU, max-pool; 1x1, grouped 3x3 with the stride
(v1.5), 1x1, no conv biases; 1x1 strided downsample with batch norm; fc.
se_resnext101_32x4d (not in the shared data README): DeepLearningExamples'
SE-ResNeXt-101 32x4d, that ResNeXt-101 32x4d with a squeeze-and-excitation
gate in every bottleneck (see SqueezeExcitation and SEBottleneck below).
bert_large_squad (not in the shared data README): bert-large-uncased with the
same question-answering head, sequence length 384, as DeepLearningExamples'
run_squad.py fine-tunes it for its BERT-large throughput tables.

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


def resnet101(batch=2, attention="eager"):
    return _tv("resnet101", batch)


def resnext50_32x4d(batch=2, attention="eager"):
    return _tv("resnext50_32x4d", batch)


def resnext101_32x8d(batch=2, attention="eager"):
    return _tv("resnext101_32x8d", batch)


def resnext101_32x4d(batch=2, attention="eager"):
    from torchvision.models.resnet import Bottleneck, ResNet
    torch.manual_seed(0)
    model = ResNet(Bottleneck, [3, 4, 23, 3], groups=32, width_per_group=4)
    return model, _image(batch), dict(IMAGE)


class SqueezeExcitation(torch.nn.Module):
    """DeepLearningExamples' squeeze-and-excitation gate as its pytorch-21.03
    performance tables ran it (image_classification/models/common.py at commit
    7bdfc81d, the commit that published those tables): global average pool to
    1x1, a 1x1 convolution with bias to `hidden` channels, ReLU, a 1x1
    convolution with bias back to `channels`, sigmoid. The gate is
    (N, channels, 1, 1). `hidden` is a fixed 16 (SEBottleneck passes
    se_squeeze=16 as the width, not as a reduction ratio C/16 as the SE paper
    does), so the gate adds 33*channels + 16 parameters per block. Later
    commits run the same math with torch.mean and two nn.Linear (same
    parameters) unless --trt is given."""

    def __init__(self, channels, hidden=16):
        super().__init__()
        self.avgpool = torch.nn.AdaptiveAvgPool2d(1)
        self.squeeze = torch.nn.Conv2d(channels, hidden, 1)
        self.relu = torch.nn.ReLU(inplace=True)
        self.expand = torch.nn.Conv2d(hidden, channels, 1)
        self.sigmoid = torch.nn.Sigmoid()

    def forward(self, x):
        return self.sigmoid(self.expand(self.relu(self.squeeze(self.avgpool(x)))))


def _se_bottleneck():
    from torchvision.models.resnet import Bottleneck

    class SEBottleneck(Bottleneck):
        """torchvision's Bottleneck (the layers of DeepLearningExamples' for
        ResNeXt) with the gate after bn3, registered after downsample as
        DeepLearningExamples registers it. Its forward runs downsample before
        the gate and joins them as DeepLearningExamples' fused_se path does
        (the default): relu(addcmul(identity, out, gate)), one kernel where
        the plain block has the residual add."""

        def __init__(self, inplanes, planes, *args, **kwargs):
            super().__init__(inplanes, planes, *args, **kwargs)
            self.se = SqueezeExcitation(planes * self.expansion)

        def forward(self, x):
            identity = x
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.relu(self.bn2(self.conv2(out)))
            out = self.bn3(self.conv3(out))
            if self.downsample is not None:
                identity = self.downsample(x)
            out = torch.addcmul(identity, out, self.se(out))
            return self.relu(out)

    return SEBottleneck


def se_resnext101_32x4d(batch=2, attention="eager"):
    """DeepLearningExamples' "se-resnext101-32x4d" (image_classification/
    models/resnet.py: block SEBottleneck, layers [3, 4, 23, 3], widths
    128..1024, expansion 2, cardinality 32, stem 64): resnext101_32x4d's
    layers with a SqueezeExcitation per block. 45,251,128 parameters:
    44,177,704 + 33 gates of 33*C + 16 with C = 256 (3 blocks), 512 (4),
    1024 (23), 2048 (3). The SE paper's SE-ResNeXt-101 (reduction 16) has
    48.9M: DeepLearningExamples' gates are narrower."""
    from torchvision.models.resnet import ResNet
    torch.manual_seed(0)
    model = ResNet(_se_bottleneck(), [3, 4, 23, 3], groups=32, width_per_group=4)
    return model, _image(batch), dict(IMAGE)


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


def _squad_qa(batch, attention, seq, default_batch, **config):
    """The question-answering model and input bert_base_squad and
    bert_large_squad share: Hugging Face's BertForQuestionAnswering on a
    BertConfig with the vocabulary 30522 padded to 30528 (run_squad.py rounds
    vocab_size up to a multiple of 8) and config's sizes, its start and end
    logits stacked as (batch, 2, seq) for the exporter's "classify" loss."""
    from transformers import BertConfig, BertForQuestionAnswering

    class SquadQA(BertForQuestionAnswering):
        def forward(self, input_ids, token_type_ids, attention_mask):
            out = super().forward(input_ids=input_ids, token_type_ids=token_type_ids,
                                  attention_mask=attention_mask)
            return torch.stack((out.start_logits, out.end_logits), dim=1)

    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=30528, **config)
    cfg._attn_implementation = _attn(attention)
    model = SquadQA(cfg)
    g = torch.Generator().manual_seed(0)
    x = {
        "input_ids": torch.randint(0, 30522, (batch, seq), generator=g),
        "token_type_ids": torch.zeros(batch, seq, dtype=torch.long),
        "attention_mask": torch.ones(batch, seq, dtype=torch.long),
    }
    meta = {"sample": "one SQuAD feature of %d tokens" % seq, "default_batch": default_batch,
            "optimizer": "adam", "loss": "classify"}
    return model, x, meta


def bert_base_squad(batch=2, attention="eager", seq=384):
    """BERT-base fine-tuned on SQuAD v1.1 as NVIDIA DeepLearningExamples'
    PyTorch/LanguageModeling/BERT/run_squad.py trains it (the script Lambda's
    deeplearning-benchmark runs as bert_base_squad): a question-answering head
    (one 768x2 linear: start and end logits) on bert-base-uncased, vocabulary
    30522 padded to 30528 (run_squad.py rounds vocab_size up to a multiple of 8),
    sequence length 384 (scripts/run_squad.sh: --max_seq_length=384).

    The model returns the start and end logits stacked as (batch, 2, seq), so
    the exporter's "classify" loss (cross-entropy over the last dimension, mean
    over the rows) is run_squad.py's (start_loss + end_loss) / 2. Hugging Face's
    BertForQuestionAnswering has no pooler; DeepLearningExamples' computes one
    and discards it (run_squad.py keeps it out of the optimizer): 2*768*768
    FLOPs per sample left out.
    """
    return _squad_qa(batch, attention, seq, 24)  # bert-base-uncased's sizes


def bert_large_squad(batch=2, attention="eager", seq=384):
    """BERT-large fine-tuned on SQuAD v1.1 as NVIDIA DeepLearningExamples'
    PyTorch/LanguageModeling/BERT/run_squad.py trains it for its published
    throughput tables (commit a9e2c1d5): bert_configs/large.json (24 layers,
    hidden 1024, 16 heads, intermediate 4096, vocabulary 30522 padded to
    30528: run_squad.py:931-932), sequence length 384
    (scripts/run_squad.sh: --max_seq_length=384), the question-answering head
    (one 1024x2 linear). Built as bert_base_squad (Hugging Face's
    BertForQuestionAnswering, the logits stacked as (batch, 2, seq) for the
    exporter's "classify" loss); DeepLearningExamples' modeling.py differs as
    bert_base_squad's docstring says (a pooler computed and discarded:
    2*1024*1024 FLOPs per sample left out), and it runs the encoder
    sequence-first, (seq, batch, hidden), with two transposes around it.
    """
    # bert-large-uncased (DeepLearningExamples' bert_configs/large.json)
    return _squad_qa(batch, attention, seq, 32, hidden_size=1024, num_hidden_layers=24,
                     num_attention_heads=16, intermediate_size=4096)


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


# name -> factory: the shipped models (models/NAME.yaml, each exported from
# its factory), which tools/conformance.sh and capture_conformance.py cover.
# The order is the rows' order in tests/data/conformance/*.csv (conformance.sh
# diffs line for line): the six captured first, then the DDP benchmark's and
# DeepLearningExamples' models added after them.
MODELS = {
    "resnet50": resnet50,
    "mobilenet_v2": mobilenet_v2,
    "vgg16": vgg16,
    "bert-base": bert_base,
    "gpt2": gpt2,
    "bert-base-squad": bert_base_squad,
    "resnet101": resnet101,
    "resnext50_32x4d": resnext50_32x4d,
    "resnext101_32x4d": resnext101_32x4d,
    "resnext101_32x8d": resnext101_32x8d,
    "se_resnext101_32x4d": se_resnext101_32x4d,
    "bert-large-squad": bert_large_squad,
}
