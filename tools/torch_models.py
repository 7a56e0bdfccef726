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
bert_base_squad_dle and bert_large_squad_dle (not in the shared data README):
the same two as DeepLearningExamples' own modeling.py runs them
(DleBertForQuestionAnswering below), what Lambda's benchmark and DLE's SQuAD
tables ran; bert_base_squad and bert_large_squad (Hugging Face's model) stay
for this project's own measurements, which ran Hugging Face's.
bert_large_layer_s512 and bert_large_layer_s128 (validation only: their files are
validation/models/, not models/): one BERT-large encoder layer (Hugging Face's, with
embeddings and the QA head around it) at sequence 512 and 128, for Ivanov et al.'s
V100 layer times (validation/notes-ivanov.md).

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
    FLOPs per sample left out. bert_base_squad_dle is DLE's own model (its
    kernels: the mask's add on every layer's scores and the rest); this one is
    Hugging Face's, which this project's own SQuAD measurements ran.
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



def _bert_large_layer(batch, attention, seq, default_batch):
    """One BERT-large encoder layer (hidden 1024, 16 heads, intermediate 4096)
    at sequence length seq, for validation/notes-ivanov.md: Hugging Face's
    BertForQuestionAnswering as bert_large_squad builds it with
    num_hidden_layers=1 (embeddings and the 1024x2 head around the one layer;
    the validation rows sum only bert.encoder.layer.0's ops). Ivanov et al.'s
    PyTorch baseline ran torch.nn.TransformerEncoderLayer (spcl/substation
    pytorch_profiling/transformer_layer.py): the same post-LayerNorm layer,
    but ReLU for GELU, one packed QKV projection, q scaled before QK^T, no
    attention mask, and PyTorch 1.x's head-averaged attention weights; the
    notes say what each difference costs."""
    model, x, meta = _squad_qa(batch, attention, seq, default_batch, hidden_size=1024,
                               num_hidden_layers=1, num_attention_heads=16,
                               intermediate_size=4096)
    meta = dict(meta, sample="one sequence of %d tokens through one BERT-large layer" % seq)
    return model, x, meta


def bert_large_layer_s512(batch=2, attention="eager", seq=512):
    """_bert_large_layer at sequence length 512 (Ivanov et al.'s batch 8)."""
    return _bert_large_layer(batch, attention, seq, 8)


def bert_large_layer_s128(batch=2, attention="eager", seq=128):
    """_bert_large_layer at sequence length 128 (Ivanov et al.'s batch 96)."""
    return _bert_large_layer(batch, attention, seq, 96)

class _DleSelfAttention(torch.nn.Module):
    """DeepLearningExamples' BertSelfAttention (modeling.py, LambdaLabsML lambda/benchmark
    c1781a37 and NVIDIA a9e2c1d5 alike) on sequence-first input (seq, batch, hidden):
    query, key, value linears; Q and V viewed (s, b*heads, d) and transposed, K permuted
    to (b*heads, d, s), so torch.bmm reads all three as strided views (no copies);
    the scores viewed (b, heads, s, s), divided by sqrt(d), plus the extended mask
    (always: DLE adds it whatever its values), softmax, dropout, bmm with V, the context
    transposed back and made contiguous, (s, b, hidden). The probabilities' dropout is
    functional (DLE's is an nn.Dropout module: the same native_dropout kernel) so that the
    exporter keeps the core one layer, as Hugging Face's eager attention is."""

    def __init__(self, hidden, heads, p):
        super().__init__()
        self.heads, self.d, self.p = heads, hidden // heads, p
        self.query = torch.nn.Linear(hidden, hidden)
        self.key = torch.nn.Linear(hidden, hidden)
        self.value = torch.nn.Linear(hidden, hidden)

    def forward(self, x, mask):
        import math
        s, b = x.size(0), x.size(1)
        q, k, v = self.query(x), self.key(x), self.value(x)
        q = q.view(s, b * self.heads, self.d).transpose(0, 1)
        k = k.view(s, b * self.heads, self.d).permute(1, 2, 0)
        v = v.view(s, b * self.heads, self.d).transpose(0, 1)
        scores = torch.bmm(q, k).view(b, self.heads, s, s)
        scores = scores / math.sqrt(self.d)
        scores = scores + mask
        probs = torch.nn.functional.softmax(scores, dim=-1)
        probs = torch.nn.functional.dropout(probs, self.p, self.training)
        ctx = torch.bmm(probs.view(b * self.heads, s, s), v)
        return ctx.transpose(0, 1).contiguous().view(s, b, self.heads * self.d)


class _DleDenseOut(torch.nn.Module):
    """DLE's BertSelfOutput and BertOutput: dense, dropout, LayerNorm(h + input)."""

    def __init__(self, inp, hidden, p):
        super().__init__()
        self.dense = torch.nn.Linear(inp, hidden)
        self.LayerNorm = torch.nn.LayerNorm(hidden, eps=1e-12)
        self.dropout = torch.nn.Dropout(p)

    def forward(self, h, residual):
        return self.LayerNorm(self.dropout(self.dense(h)) + residual)


class _DleLinearAct(torch.nn.Module):
    """DLE's LinearActivation's parameters (weight, then bias, registered on the module
    itself: `dense_act.weight`) and its F.linear; the activation DLE applies inside the
    module runs in the caller here (the same kernels, F.linear then the activation), so
    that the exporter makes it a layer of its own rather than part of a matmul layer.
    frozen=True holds the weights as non-persistent buffers, not parameters (the
    pooler's: see DleBertForQuestionAnswering): .half() and .to() cast them, and the
    exporter counts them as state, not activation bytes."""

    def __init__(self, inp, out, frozen=False):
        super().__init__()
        w, bias = torch.randn(out, inp) * 0.02, torch.zeros(out)
        if frozen:
            self.register_buffer("weight", w, persistent=False)
            self.register_buffer("bias", bias, persistent=False)
        else:
            self.weight, self.bias = torch.nn.Parameter(w), torch.nn.Parameter(bias)

    def forward(self, x):
        return torch.nn.functional.linear(x, self.weight, self.bias)


class _DleAttention(torch.nn.Module):
    """DLE's BertAttention: self (the core), output (dense, dropout, add, LayerNorm)."""

    def __init__(self, hidden, heads, p):
        super().__init__()
        self.self = _DleSelfAttention(hidden, heads, p)
        self.output = _DleDenseOut(hidden, hidden, p)

    def forward(self, x, mask):
        return self.output(self.self(x, mask), x)


class _DleIntermediate(torch.nn.Module):
    """DLE's BertIntermediate: dense_act, a LinearActivation with modeling.py's gelu,
    F.gelu(x, approximate='tanh') (a9e2c1d5: approximate=True)."""

    def __init__(self, hidden, inter):
        super().__init__()
        self.dense_act = _DleLinearAct(hidden, inter)

    def forward(self, x):
        return torch.nn.functional.gelu(self.dense_act(x), approximate="tanh")


class _DleLayer(torch.nn.Module):
    """DLE's BertLayer: attention, intermediate, output, with DLE's module names."""

    def __init__(self, hidden, heads, inter, p):
        super().__init__()
        self.attention = _DleAttention(hidden, heads, p)
        self.intermediate = _DleIntermediate(hidden, inter)
        self.output = _DleDenseOut(inter, hidden, p)

    def forward(self, x, mask):
        a = self.attention(x, mask)
        return self.output(self.intermediate(a), a)


class _DleEmbeddings(torch.nn.Module):
    """DLE's BertEmbeddings: word, position and token-type lookups (in that order), two
    adds, LayerNorm, dropout."""

    def __init__(self, vocab, positions, types, hidden, p):
        super().__init__()
        self.word_embeddings = torch.nn.Embedding(vocab, hidden)
        self.position_embeddings = torch.nn.Embedding(positions, hidden)
        self.token_type_embeddings = torch.nn.Embedding(types, hidden)
        self.LayerNorm = torch.nn.LayerNorm(hidden, eps=1e-12)
        self.dropout = torch.nn.Dropout(p)

    def forward(self, input_ids, token_type_ids):
        pos = torch.arange(input_ids.size(1), dtype=torch.long, device=input_ids.device)
        pos = pos.unsqueeze(0).expand_as(input_ids)
        words, places = self.word_embeddings(input_ids), self.position_embeddings(pos)
        kinds = self.token_type_embeddings(token_type_ids)
        return self.dropout(self.LayerNorm(words + places + kinds))


class _DleEncoder(torch.nn.Module):
    """DLE's BertEncoder: (batch, seq, hidden) transposed to sequence-first (a view),
    the layers, transposed back and made contiguous (a copy)."""

    def __init__(self, layers, hidden, heads, inter, p):
        super().__init__()
        self.layer = torch.nn.ModuleList(_DleLayer(hidden, heads, inter, p)
                                         for _ in range(layers))

    def forward(self, x, mask):
        x = x.transpose(0, 1)
        for layer in self.layer:
            x = layer(x, mask)
        return x.transpose(0, 1).contiguous()


class _DlePooler(torch.nn.Module):
    """DLE's BertPooler: the first token, dense_act (weights held as buffers: see
    DleBertForQuestionAnswering), tanh."""

    def __init__(self, hidden):
        super().__init__()
        self.dense_act = _DleLinearAct(hidden, hidden, frozen=True)

    def forward(self, x):
        return torch.tanh(self.dense_act(x[:, 0]))


class _DleBertModel(torch.nn.Module):
    """DLE's BertModel: the extended mask (1 - m) * -10000, (b, 1, 1, s) in the word
    embeddings' dtype, built once; embeddings; encoder; the pooler (its output returned
    and discarded by the caller)."""

    def __init__(self, layers, hidden, heads, inter, vocab, positions, types, p):
        super().__init__()
        self.embeddings = _DleEmbeddings(vocab, positions, types, hidden, p)
        self.encoder = _DleEncoder(layers, hidden, heads, inter, p)
        self.pooler = _DlePooler(hidden)

    def forward(self, input_ids, token_type_ids, attention_mask):
        ext = attention_mask.unsqueeze(1).unsqueeze(2)
        ext = ext.to(dtype=self.embeddings.word_embeddings.weight.dtype)
        ext = (1.0 - ext) * -10000.0
        x = self.encoder(self.embeddings(input_ids, token_type_ids), ext)
        return x, self.pooler(x)


class DleBertForQuestionAnswering(torch.nn.Module):
    """DeepLearningExamples' BertForQuestionAnswering (PyTorch/LanguageModeling/BERT/
    modeling.py, the one the Lambda benchmark's and DLE's own SQuAD rows ran; the two
    commits' encoders are the same), written here from its op sequence (not its code):
    the extended mask (1 - m) * -10000 of shape (b, 1, 1, s) in the weights' dtype, built
    once and added to every layer's scores; embeddings (word, position, token type, two
    adds, LayerNorm, dropout); the encoder sequence-first after a transpose (a view), its
    output transposed back and made contiguous; the pooler (first token, dense, tanh)
    computed and discarded; the 2-wide QA head split into start and end logits.
    Parameters, names and order as DLE registers them (bert.embeddings.word_embeddings
    ... bert.encoder.layer.N.intermediate.dense_act.weight ... qa_outputs) but for the
    pooler's two tensors: its output is discarded, so they never get a gradient, apex's
    DistributedDataParallel (what run_squad.py wraps the model in) reduces only the
    gradients that arrived, and run_squad.py leaves them out of the optimizer ("hack to
    remove pooler"); they are held as non-persistent buffers (still read by the pooler's
    forward), so the model's parameters are those DDP reduces and Adam updates (DLE's
    model_weights_num counts them: 590,592 more for BERT-base, 1,049,600 for BERT-large).
    torch's DDP would broadcast those buffers before each forward (broadcast_buffers);
    apex's, which run_squad.py uses, broadcasts nothing then (--no-broadcast-buffers).
    Returns (start, end) logits, (batch, seq) each."""

    def __init__(self, layers, hidden, heads, inter, vocab=30528, positions=512, types=2,
                 p=0.1):
        super().__init__()
        self.bert = _DleBertModel(layers, hidden, heads, inter, vocab, positions, types, p)
        self.qa_outputs = torch.nn.Linear(hidden, 2)

    def forward(self, input_ids, token_type_ids, attention_mask):
        x, _ = self.bert(input_ids, token_type_ids, attention_mask)  # pooler's discarded
        start, end = self.qa_outputs(x).split(1, dim=-1)
        return start.squeeze(-1), end.squeeze(-1)


def _squad_dle(batch, attention, seq, default_batch, **sizes):
    """bert_base_squad_dle and bert_large_squad_dle's model and input: DLE's
    BertForQuestionAnswering (DleBertForQuestionAnswering), its start and end logits
    stacked as (batch, 2, seq) for the exporter's "classify" loss (as _squad_qa). The input
    mask pads the second half of every other sample (a SQuAD feature shorter than 384):
    its values change no kernel, DLE adds the mask whatever they are."""
    if attention != "eager":
        raise ValueError("DLE's BertForQuestionAnswering has one attention (eager), got %r"
                         % attention)

    class SquadDle(DleBertForQuestionAnswering):
        def forward(self, input_ids, token_type_ids, attention_mask):
            return torch.stack(super().forward(input_ids, token_type_ids, attention_mask), dim=1)

    torch.manual_seed(0)
    model = SquadDle(**sizes)
    g = torch.Generator().manual_seed(0)
    mask = torch.ones(batch, seq, dtype=torch.long)
    mask[1::2, seq // 2:] = 0
    x = {
        "input_ids": torch.randint(0, 30522, (batch, seq), generator=g),
        "token_type_ids": torch.zeros(batch, seq, dtype=torch.long),
        "attention_mask": mask,
    }
    meta = {"sample": "one SQuAD feature of %d tokens" % seq, "default_batch": default_batch,
            "optimizer": "adam", "loss": "classify"}
    return model, x, meta


BERT_BASE = dict(layers=12, hidden=768, heads=12, inter=3072)
BERT_LARGE = dict(layers=24, hidden=1024, heads=16, inter=4096)


def bert_base_squad_dle(batch=2, attention="eager", seq=384):
    """bert_base_squad's model as DeepLearningExamples' own modeling.py runs it (what
    Lambda's deeplearning-benchmark bert_base_squad ran): DleBertForQuestionAnswering with
    bert-base-uncased's sizes, vocabulary 30528, sequence 384. Its kernels differ from
    Hugging Face's (bert_base_squad): the mask's broadcast add on every layer's scores, no
    Q/K^T/V head copies in forward, the key gradient's transposed copy, tanh GELU, the
    pooler's forward, the scale as a div."""
    return _squad_dle(batch, attention, seq, 24, **BERT_BASE)


def bert_large_squad_dle(batch=2, attention="eager", seq=384):
    """bert_large_squad's model (bert_configs/large.json's sizes, vocabulary 30528,
    sequence 384) as DeepLearningExamples' modeling.py runs it: DleBertForQuestionAnswering,
    as bert_base_squad_dle."""
    return _squad_dle(batch, attention, seq, 32, **BERT_LARGE)


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
    "bert-base-squad-dle": bert_base_squad_dle,
    "bert-large-squad-dle": bert_large_squad_dle,
}
