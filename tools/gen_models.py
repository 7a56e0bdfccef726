#!/usr/bin/env python3
"""Generate ddpsim's model files and GPU table from the reference CSVs.

Reads ../shared/data/*.csv (relative to the repository root; see --data)
and writes models/resnet50.yaml, models/bert-base.yaml, models/gpt2.yaml
and topologies/gpus.yaml; models/mobilenet_v2.yaml and models/vgg16.yaml
come from the torchvision architecture definitions written out below (no
CSV exists for them), their totals asserted against the published counts. Output depends only on the CSVs (same input,
byte-identical output). With --check nothing is written: the files are
regenerated in memory and compared with the ones in the tree; the exit
status is 1 when any differs.

Standard library only.
"""

import argparse
import csv
import os
import re
import sys

FP32 = 4  # bytes per element; every byte count in the model files is fp32

EXPECTED = {  # model -> (tensors, parameters); asserted
    "resnet50": (161, 25557032),
    "bert-base": (201, 108312579),
    "gpt2": (148, 124439808),
    "mobilenet_v2": (158, 3504872),
    "vgg16": (32, 138357544),
}

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_DATA = os.path.join(os.path.dirname(REPO), "shared", "data")
SRC = "../shared/data"  # as cited in the generated comments


class GenError(Exception):
    pass


# Tensor name -> shape (a list of dimensions), from the CSVs' shape column and
# the CNN definitions below; written as each parameter's `shape` (PowerSGD
# views a tensor as shape[0] x rest). A name is never given two shapes.
SHAPES = {}


def record_shape(name, dims, numel):
    prod = 1
    for d in dims:
        prod *= d
    check(prod == numel, "%s: shape %s != numel %d" % (name, dims, numel))
    check(SHAPES.get(name, dims) == dims, "%s: two shapes %s and %s" % (name, SHAPES.get(name), dims))
    SHAPES[name] = dims


def check(cond, msg):
    if not cond:
        raise GenError(msg)


def read_csv(data, name):
    path = os.path.join(data, name)
    try:
        with open(path, newline="", encoding="utf-8") as f:
            return list(csv.DictReader(f))
    except OSError as e:
        raise GenError("cannot read %s: %s" % (path, e.strerror))


def read_params(data, name):
    """Parameter tensors [(name, numel)] in registration order, verified."""
    rows = read_csv(data, name)
    out, cum = [], 0
    for i, r in enumerate(rows):
        check(int(r["index"]) == i, "%s: row %d has index %s" % (name, i, r["index"]))
        numel = int(r["numel"])
        shape = 1
        for d in r["shape"].split("x"):
            shape *= int(d)
        check(shape == numel, "%s: %s shape %s != numel %d" % (name, r["name"], r["shape"], numel))
        check(int(r["bytes_fp32"]) == FP32 * numel, "%s: %s bytes_fp32" % (name, r["name"]))
        cum += numel
        check(int(r["cumulative_numel"]) == cum, "%s: %s cumulative_numel" % (name, r["name"]))
        record_shape(r["name"], [int(d) for d in r["shape"].split("x")], numel)
        out.append((r["name"], numel))
    return out


class Layer:
    def __init__(self, name, fwd, bwd, fwd_bytes, act_bytes, prefixes=()):
        self.name = name
        self.fwd = int(fwd)
        self.bwd = int(bwd)
        self.fwd_bytes = int(fwd_bytes)
        self.act_bytes = int(act_bytes)
        self.prefixes = tuple(prefixes)  # parameter-name prefixes this layer owns
        self.params = []


def attach(model, layers, params):
    """Give each layer, in order, the run of consecutive parameters whose names
    start with one of its prefixes. Succeeds only if registration order equals
    the concatenation of the layers' parameter lists and every tensor is used
    exactly once."""
    i = 0
    for l in layers:
        while i < len(params) and l.prefixes and params[i][0].startswith(l.prefixes):
            l.params.append(params[i])
            i += 1
        check(not l.prefixes or l.params, "%s: layer %s got no parameters" % (model, l.name))
    check(i == len(params), "%s: parameter %s (registration index %d) does not follow "
          "forward layer order" % (model, params[i][0] if i < len(params) else "?", i))
    flat = [p for l in layers for p in l.params]
    check(flat == params, "%s: layer parameters differ from registration order" % model)
    check(len(set(n for n, _ in flat)) == len(flat), "%s: duplicate tensor names" % model)
    tensors, numel = len(flat), sum(n for _, n in flat)
    check((tensors, numel) == EXPECTED[model], "%s: %d tensors / %d parameters, expected "
          "%d / %d" % ((model, tensors, numel) + EXPECTED[model]))
    names = [l.name for l in layers]
    check(len(set(names)) == len(names), "%s: duplicate layer names" % model)
    for l in layers:
        check(min(l.fwd, l.bwd, l.fwd_bytes, l.act_bytes) >= 0, "%s: negative value" % l.name)


def emit_model(header, name, sample, batch, optimizer, layers, input_bytes=None):
    tensors = sum(len(l.params) for l in layers)
    numel = sum(n for l in layers for _, n in l.params)
    fwd = sum(l.fwd for l in layers)
    bwd = sum(l.bwd for l in layers)
    act = sum(l.act_bytes for l in layers)
    out = ["# " + h for h in header]
    out.append("# Totals: %d layers, %d tensors, %d parameters; per sample %d fwd FLOPs, "
               "%d bwd FLOPs, %d activation bytes." % (len(layers), tensors, numel, fwd, bwd, act))
    out += [
        "schema_version: 1",
        "name: %s" % name,
        'sample: "%s"' % sample,
        "default_batch: %d" % batch,
        "optimizer: %s" % optimizer,
    ]
    # input_bytes: one sample's input as DataParallel scatters it; written only
    # where the simulator's default (the first layer's fwd_bytes - act_bytes,
    # i.e. 4x its input elements) is not the model's input.
    if input_bytes is not None:
        out.append("input_bytes: %d" % input_bytes)
    out += ["layers:"]
    for l in layers:
        out += [
            "  - name: %s" % l.name,
            "    fwd_flops: %d" % l.fwd,
            "    bwd_flops: %d" % l.bwd,
            "    fwd_bytes: %d" % l.fwd_bytes,
            "    act_bytes: %d" % l.act_bytes,
        ]
        if l.params:
            out.append("    params:")
            for n, numel in l.params:
                check(n in SHAPES, "%s: no shape" % n)
                out.append("      - {name: %s, numel: %d, shape: [%s]}"
                           % (n, numel, ", ".join(str(d) for d in SHAPES[n])))
        else:
            out.append("    params: []")
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------
# ResNet-50

BN_FLOPS_PER_ELEM = 4  # normalize (sub, mul) + affine (mul, add); statistics not counted


def resnet50(data):
    params = read_params(data, "resnet50_params.csv")
    rows = read_csv(data, "resnet50_layers_fwd_224.csv")
    own = {}
    for n, numel in params:
        own.setdefault(n.rsplit(".", 1)[0], []).append(numel)
    layers = []
    for i, r in enumerate(rows):
        name, typ = r["layer"], r["type"]
        c_in, c_out = int(r["c_in"]), int(r["c_out"])
        h_in, h_out = int(r["h_in"]), int(r["h_out"])
        in_el, out_el = c_in * h_in * h_in, c_out * h_out * h_out
        check(out_el == int(r["out_elems_per_image"]), "%s: out_elems" % name)
        flops = int(r["fwd_flops_per_image"])
        check(flops == 2 * int(r["fwd_macs_per_image"]), "%s: flops != 2*macs" % name)
        check(sum(own.get(name, [])) == int(r["params"]), "%s: params column" % name)
        has_w = int(r["params"]) > 0
        if typ == "batchnorm2d":
            check(flops == 0 and in_el == out_el, name)
            flops = BN_FLOPS_PER_ELEM * out_el
        elif typ.startswith("maxpool"):
            check(flops == 0, name)
            k = int(r["kernel"])
            flops = k * k * out_el  # one compare per window element
        elif typ == "adaptiveavgpool":
            check(flops == 0, name)
            flops = in_el  # one add per input element
        else:
            check(typ in ("conv2d", "linear") and flops > 0, "%s: type %s" % (name, typ))
        if not has_w:
            bwd = flops
        elif i == 0:
            check(typ == "conv2d", name)
            bwd = flops  # first conv: weight gradient only, no input gradient
        else:
            bwd = 2 * flops
        layers.append(Layer(name, flops, bwd, FP32 * (in_el + out_el), FP32 * out_el,
                            (name + ".",) if has_w else ()))
    attach("resnet50", layers, params)
    conv_fc = sum(int(r["fwd_flops_per_image"]) for r in rows)
    header = [
        "ResNet-50 (torchvision, Bottleneck v1.5), one 224x224 image, 1000 classes. Generated by "
        "tools/gen_models.py from %s/resnet50_params.csv and resnet50_layers_fwd_224.csv; "
        "do not edit by hand." % SRC,
        "Layers: one per row of resnet50_layers_fwd_224.csv, in forward order; the CSV has no "
        "ReLU or residual-add rows, so none are modelled. Params attached by name prefix.",
        "fwd_flops: conv/fc = 2*MACs from the CSV (%d in all); bn %d FLOPs/element (normalize + "
        "affine, statistics not counted), maxpool k*k per output element, avgpool 1 per input "
        "element." % (conv_fc, BN_FLOPS_PER_ELEM),
        "bwd_flops: 2x fwd for layers with parameters (input + weight gradient); 1x for conv1 "
        "(no input gradient) and for parameter-free layers.",
        "fwd_bytes = 4*(input + output elements), weights excluded (the simulator adds them); "
        "act_bytes = 4*output elements, an approximation of what autograd keeps.",
    ]
    return emit_model(header, "resnet50", "one 224x224 RGB image", 32, "sgd", layers)


# --------------------------------------------------------------------------
# BERT-base, sequence length 128

LN_FLOPS_PER_ELEM = 4  # same count as batchnorm above


def bert_base(data):
    params = read_params(data, "bert_base_cased_seqcls3_params.csv")
    rows = read_csv(data, "bert_base_layers_fwd_seq128.csv")
    shapes = dict((n, numel) for n, numel in params)
    H = shapes["bert.embeddings.LayerNorm.weight"]
    I = shapes["bert.encoder.layer.0.intermediate.dense.bias"]
    L = len([n for n, _ in params if n.endswith(".attention.self.query.weight")])
    C = shapes["classifier.bias"]
    S, A = 128, 12
    check((H, I, L, C) == (768, 3072, 12, 3), "bert: unexpected config %r" % ((H, I, L, C),))
    fl = {}
    for r in rows:
        fl[(r["encoder_layer"], r["op"])] = int(r["fwd_flops_per_sequence"])
        check(int(r["fwd_flops_per_sequence"]) == 2 * int(r["fwd_macs_per_sequence"]), r["op"])
    ops = ("qkv_proj", "attn_scores_QK^T", "attn_context_AV", "attn_out_proj", "ffn_in", "ffn_out")
    check(len(fl) == L * len(ops) + 2, "bert: unexpected rows in the FLOPs CSV")
    SH, SI, ASS = S * H, S * I, A * S * S
    layers = [Layer("bert.embeddings",
                    (2 + LN_FLOPS_PER_ELEM) * SH, 2 * (2 + LN_FLOPS_PER_ELEM) * SH,
                    FP32 * (3 * SH + 2 * SH + SH), FP32 * 2 * SH, ("bert.embeddings.",))]
    for k in range(L):
        f = dict((op, fl[(str(k), op)]) for op in ops)
        check(f["qkv_proj"] == 2 * S * H * 3 * H and f["attn_out_proj"] == 2 * S * H * H
              and f["ffn_in"] == 2 * S * H * I == f["ffn_out"]
              and f["attn_scores_QK^T"] == 2 * S * S * H == f["attn_context_AV"],
              "bert: layer %d FLOPs do not match 2*S*in*out / 2*S*S*H" % k)
        p = "bert.encoder.layer.%d." % k
        core = f["attn_scores_QK^T"] + f["attn_context_AV"]
        layers += [
            Layer(p + "attention.self", f["qkv_proj"], 2 * f["qkv_proj"],
                  FP32 * (SH + 3 * SH), FP32 * 3 * SH, (p + "attention.self.",)),
            Layer(p + "attention.core", core, 2 * core,
                  FP32 * (3 * SH + SH + 4 * ASS), FP32 * (ASS + SH)),
            Layer(p + "attention.output", f["attn_out_proj"], 2 * f["attn_out_proj"],
                  FP32 * (SH + SH + 2 * SH + SH), FP32 * 2 * SH, (p + "attention.output.",)),
            Layer(p + "intermediate", f["ffn_in"], 2 * f["ffn_in"],
                  FP32 * (SH + 3 * SI), FP32 * 2 * SI, (p + "intermediate.",)),
            Layer(p + "output", f["ffn_out"], 2 * f["ffn_out"],
                  FP32 * (SI + SH + 2 * SH + SH), FP32 * 2 * SH, (p + "output.",)),
        ]
    pool, cls = fl[("pooler", "pooler_dense_CLS")], fl[("classifier", "classifier")]
    check(pool == 2 * H * H and cls == 2 * H * C, "bert: pooler/classifier FLOPs")
    layers += [
        Layer("bert.pooler", pool, 2 * pool, FP32 * 2 * H, FP32 * H, ("bert.pooler.",)),
        Layer("classifier", cls, 2 * cls, FP32 * (H + C), FP32 * C, ("classifier.",)),
    ]
    attach("bert-base", layers, params)
    header = [
        "BERT-base-cased for sequence classification (3 labels), sequence length 128. Generated "
        "by tools/gen_models.py from %s/bert_base_cased_seqcls3_params.csv and "
        "bert_base_layers_fwd_seq128.csv; do not edit by hand." % SRC,
        "S=128, H=768, FFN 3072, 12 heads, 12 layers; per sample = per sequence. GEMM FLOPs from "
        "the CSV (2*S*in*out; attention.core = QK^T + AV = 2*2*S*S*H; pooler 2*H*H on [CLS]).",
        "Not counted: softmax, GELU, dropout, residual adds and the encoder LayerNorms; "
        "embeddings = 2 adds + %d (LayerNorm) FLOPs per element. bwd_flops = 2x fwd for every "
        "layer (attention.core too: both operands need gradients)." % LN_FLOPS_PER_ELEM,
        "fwd_bytes (fp32, approximate) = 4*(inputs read + outputs written + unfused "
        "intermediates written and read: QKV, the 12xSxS scores/probabilities 4 passes, "
        "pre-LayerNorm sums, GELU input).",
        "act_bytes (approximate) = 4*(output + kept intermediates: attention probabilities "
        "12x128x128, pre-LayerNorm sums, GELU input); dropout masks ignored.",
    ]
    header.append("input_bytes = 3 x 128 int64: input_ids, token_type_ids, attention_mask.")
    return emit_model(header, "bert-base", "one sequence of 128 tokens", 32, "adam", layers,
                      input_bytes=3 * 128 * 8)


# --------------------------------------------------------------------------
# GPT-2 small, sequence length 1024


def gpt2(data):
    params = read_params(data, "gpt2_small_params.csv")
    rows = dict((r["name"], r["shape"]) for r in read_csv(data, "gpt2_small_params.csv"))
    V, H = (int(x) for x in rows["transformer.wte.weight"].split("x"))
    S = int(rows["transformer.wpe.weight"].split("x")[0])
    I = int(rows["transformer.h.0.mlp.c_fc.bias"])
    L = len([n for n in rows if n.endswith(".attn.c_attn.weight")])
    A = 12
    check((V, H, S, I, L) == (50257, 768, 1024, 3072, 12), "gpt2: unexpected config")
    SH, SI, ASS = S * H, S * I, A * S * S

    def lin(name, fin, fout, extra_in=0, prefixes=None, act=None):
        # GEMM S x fin x fout; bytes: input + extra inputs (residual) + output
        f = 2 * S * fin * fout
        return Layer(name, f, 2 * f, FP32 * (S * fin + extra_in + S * fout),
                     FP32 * (S * fout if act is None else act), prefixes or (name + ".",))

    def ln(name):
        f = LN_FLOPS_PER_ELEM * SH
        return Layer(name, f, 2 * f, FP32 * 2 * SH, FP32 * SH, (name + ".",))

    layers = [Layer("transformer.embeddings", SH, 2 * SH, FP32 * 3 * SH, FP32 * SH,
                    ("transformer.wte.", "transformer.wpe."))]
    for k in range(L):
        p = "transformer.h.%d." % k
        core = 2 * 2 * S * S * H
        fc = lin(p + "mlp.c_fc", H, I, act=2 * SI)
        fc.fwd_bytes += FP32 * 2 * SI  # GELU: reads and rewrites the S x 3072 output
        layers += [
            ln(p + "ln_1"),
            lin(p + "attn.c_attn", H, 3 * H),
            Layer(p + "attn.core", core, 2 * core, FP32 * (3 * SH + SH + 4 * ASS),
                  FP32 * (ASS + SH)),
            lin(p + "attn.c_proj", H, H, extra_in=SH),
            ln(p + "ln_2"),
            fc,
            lin(p + "mlp.c_proj", I, H, extra_in=SH),
        ]
    head = 2 * S * H * V
    layers += [ln("transformer.ln_f"),
               Layer("lm_head", head, 2 * head, FP32 * (SH + S * V), FP32 * S * V)]
    attach("gpt2", layers, params)
    header = [
        "GPT-2 small (Hugging Face GPT2LMHeadModel), sequence length 1024. Generated by "
        "tools/gen_models.py from %s/gpt2_small_params.csv; do not edit by hand." % SRC,
        "S=1024, H=768, 12 layers, 12 heads, vocab 50257; per sample = per sequence. FLOPs: "
        "linear 2*S*in*out; attn.core (QK^T, AV) 2*2*S*S*H, causal mask not exploited; "
        "lm_head 2*S*H*V; LayerNorm %d/element, embeddings 1 add/element." % LN_FLOPS_PER_ELEM,
        "Not counted: softmax, GELU, dropout, residual adds, the loss. bwd_flops = 2x fwd for "
        "every layer.",
        "lm_head is tied to transformer.wte and owns no parameter: wte is a parameter of the "
        "embeddings layer, so its gradient is complete (ready for DDP) only after that layer's "
        "backward, the last one.",
        "fwd_bytes (fp32, approximate) = 4*(inputs + residual read + outputs written; eager "
        "attention: 12xSxS scores/probabilities 4 passes; GELU pass over S x 3072; logits S x V).",
        "act_bytes (approximate) = 4*(outputs + attention probabilities 12xSxS + GELU input + "
        "logits); dropout masks ignored.",
    ]
    header.append("input_bytes = 1024 int64 input_ids.")
    return emit_model(header, "gpt2", "one sequence of 1024 tokens", 8, "adam", layers,
                      input_bytes=1024 * 8)


# --------------------------------------------------------------------------
# GPU table

PCIE_X16_GBPS = {3: 16, 4: 32, 5: 64}  # per direction


def num(s, what, gpu):
    s = s.strip()
    check(re.fullmatch(r"\d+(\.\d+)?", s) is not None, "%s: %s %r is not a number" % (gpu, what, s))
    return s


def short_source(s):
    """The source column as one line: its leading clauses, up to 140 characters."""
    parts = [p.strip() for p in re.split(r"(?:;|\.)\s+", " ".join(s.split())) if p.strip()]
    out = parts[0]
    for p in parts[1:]:
        if len(out) + 2 + len(p) > 140:
            break
        out += "; " + p
    return out.replace("\\", "\\\\").replace('"', '\\"')


def gpus(data):
    rows = read_csv(data, "gpu_specs.csv")
    out = [
        "# GPU table. Generated by tools/gen_models.py from %s/gpu_specs.csv (NVIDIA datasheets "
        "via the pages named there); do not edit by hand." % SRC,
        "# fp32: vector FP32; tf32/fp16/bf16: tensor cores, dense (no sparsity), key omitted "
        "where the GPU has none. mem: HBM capacity (decimal GB); mem_bw: HBM bandwidth.",
        "# nvlink_bw: NVLink per direction, all links together; pcie_bw: PCIe x16 per direction "
        "(Gen3 16, Gen4 32, Gen5 64 GBps).",
        "schema_version: 1",
        "gpus:",
    ]
    for r in rows:
        gpu = r["gpu"]
        m = re.fullmatch(r"(.*-)(\d+)/(\d+)GB", gpu)
        if m:
            variants = [(m.group(1) + m.group(k) + "GB", m.group(k)) for k in (2, 3)]
            mm = re.match(r"(\d+) or (\d+) GB", r["memory"])
            check(mm is not None and (mm.group(1), mm.group(2)) == (m.group(2), m.group(3)),
                  "%s: memory column %r" % (gpu, r["memory"]))
        else:
            mm = re.match(r"(\d+) GB", r["memory"])
            check(mm is not None, "%s: memory column %r" % (gpu, r["memory"]))
            variants = [(gpu, mm.group(1))]
        nv = r["nvlink"]
        m1 = re.search(r"(\d+(?:\.\d+)?) (?:GB/s )?per direction", nv)
        bidir = [float(x) for x in re.findall(r"(\d+(?:\.\d+)?) GB/s bidir", nv)]
        # total bidirectional = the largest "GB/s bidir" figure (V100 also quotes per link)
        if m1:
            nvlink = m1.group(1)
            check(not bidir or max(bidir) == 2 * float(nvlink), "%s: nvlink" % gpu)
        elif bidir:
            nvlink = "%g" % (max(bidir) / 2)
        else:
            check(nv.strip().lower() in ("", "n/a", "none"), "%s: nvlink %r" % (gpu, nv))
            nvlink = None
        mp = re.search(r"Gen(\d) x16", r["pcie"])
        check(mp is not None and int(mp.group(1)) in PCIE_X16_GBPS, "%s: pcie %r" % (gpu, r["pcie"]))
        pcie = PCIE_X16_GBPS[int(mp.group(1))]
        for pat, mult in ((r"~?(\d+) GB/s/dir", 1), (r"(\d+)\+\d+ GB/s", 1), (r"(\d+) GB/s bidir", 0.5)):
            mq = re.search(pat, r["pcie"])
            if mq:  # a figure quoted in the column must agree with the generation
                check(float(mq.group(1)) * mult == pcie, "%s: pcie %r" % (gpu, r["pcie"]))
        for name, mem in variants:
            out += [
                "  - name: %s" % name,
                "    arch: %s" % r["arch"],
                "    sms: %d" % int(r["SMs"]),
                "    fp32: %sTFLOPS" % num(r["fp32_TFLOPS_vector"], "fp32", gpu),
            ]
            for key, col in (("tf32", "tf32_tensor_TFLOPS_dense"), ("fp16", "fp16_tensor_TFLOPS_dense"),
                             ("bf16", "bf16_tensor_TFLOPS_dense")):
                v = r[col].strip()
                if v.lower().startswith("n/a"):
                    check(key != "fp16", "%s: fp16 is required" % gpu)
                    continue
                out.append("    %s: %sTFLOPS" % (key, num(v, key, gpu)))
            out += [
                "    mem: %sGB" % mem,
                "    mem_bw: %sGBps" % num(r["hbm_bw_GBps"], "hbm_bw_GBps", gpu),
            ]
            if nvlink is not None:
                out.append("    nvlink_bw: %sGBps" % nvlink)
            out += [
                "    pcie_bw: %dGBps" % pcie,
                '    source: "%s"' % short_source(r["source_and_notes"]),
            ]
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------


# --------------------------------------------------------------------------
# CNNs defined here layer by layer (torchvision's definitions), 224x224 input

class Cnn:
    """Builds a torchvision-style CNN in forward order: layers with their
    parameter tensors (registration order = forward order for these models),
    FLOPs and bytes per image under the same conventions as ResNet-50 above."""

    def __init__(self, model):
        self.model = model
        self.layers = []
        self.params = []
        self.c, self.h = 3, 224  # current channels and spatial size
        self.first_conv = True

    def _add(self, name, flops, bwd, in_el, out_el, params):
        l = Layer(name, flops, bwd, FP32 * (in_el + out_el), FP32 * out_el)
        l.params = params
        self.params += params
        self.layers.append(l)

    def conv(self, name, c_out, k, stride=1, groups=1, bias=False):
        pad = k // 2
        h_out = (self.h + 2 * pad - k) // stride + 1
        in_el, out_el = self.c * self.h * self.h, c_out * h_out * h_out
        macs = out_el * (self.c // groups) * k * k
        params = [(name + ".weight", c_out * (self.c // groups) * k * k)]
        record_shape(name + ".weight", [c_out, self.c // groups, k, k], params[0][1])
        if bias:
            params.append((name + ".bias", c_out))
            record_shape(name + ".bias", [c_out], c_out)
        flops = 2 * macs
        # first conv: weight gradient only, no input gradient
        bwd = flops if self.first_conv else 2 * flops
        self.first_conv = False
        self._add(name, flops, bwd, in_el, out_el, params)
        self.c, self.h = c_out, h_out

    def bn(self, name):
        el = self.c * self.h * self.h
        record_shape(name + ".weight", [self.c], self.c)
        record_shape(name + ".bias", [self.c], self.c)
        self._add(name, BN_FLOPS_PER_ELEM * el, 2 * BN_FLOPS_PER_ELEM * el, el, el,
                  [(name + ".weight", self.c), (name + ".bias", self.c)])

    def maxpool(self, name, k=2, stride=2):
        h_out = (self.h - k) // stride + 1
        in_el, out_el = self.c * self.h * self.h, self.c * h_out * h_out
        self._add(name, k * k * out_el, k * k * out_el, in_el, out_el, [])
        self.h = h_out

    def avgpool(self, name, out_size):
        in_el = self.c * self.h * self.h
        self._add(name, in_el, in_el, in_el, self.c * out_size * out_size, [])
        self.h = out_size

    def linear(self, name, f_out):
        f_in = self.c * self.h * self.h
        flops = 2 * f_in * f_out
        record_shape(name + ".weight", [f_out, f_in], f_in * f_out)
        record_shape(name + ".bias", [f_out], f_out)
        self._add(name, flops, 2 * flops, f_in, f_out,
                  [(name + ".weight", f_in * f_out), (name + ".bias", f_out)])
        self.c, self.h = f_out, 1

    def finish(self):
        flat = [p for l in self.layers for p in l.params]
        check(flat == self.params, "%s: parameter order" % self.model)
        tensors, numel = len(flat), sum(n for _, n in flat)
        check((tensors, numel) == EXPECTED[self.model], "%s: %d tensors / %d parameters, "
              "expected %d / %d" % ((self.model, tensors, numel) + EXPECTED[self.model]))
        names = [l.name for l in self.layers]
        check(len(set(names)) == len(names), "%s: duplicate layer names" % self.model)
        return self.layers


CNN_CONVENTIONS = [
    "fwd_flops: conv/linear = 2*MACs; bn %d FLOPs/element (normalize + affine); maxpool k*k "
    "per output element, avgpool 1 per input element; ReLU/ReLU6, dropout and residual adds "
    "not modelled." % BN_FLOPS_PER_ELEM,
    "bwd_flops: 2x fwd for layers with parameters; 1x for the first conv (no input gradient) "
    "and for parameter-free layers.",
    "fwd_bytes = 4*(input + output elements), weights excluded (the simulator adds them); "
    "act_bytes = 4*output elements, an approximation of what autograd keeps.",
]


def mobilenet_v2(data):
    """torchvision.models.mobilenet_v2 (width 1.0): features.0 conv-bn-relu6,
    17 inverted residual blocks, features.18 1x1 conv-bn-relu6, avgpool,
    classifier.1 linear. Parameter names as torchvision registers them."""
    del data  # defined here, not read from a CSV
    m = Cnn("mobilenet_v2")
    m.conv("features.0.0", 32, 3, stride=2)
    m.bn("features.0.1")
    settings = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]
    block = 1
    for t, c, n, s in settings:
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = m.c * t
            p = "features.%d.conv" % block
            j = 0
            if t != 1:  # 1x1 expansion conv-bn-relu6
                m.conv("%s.%d.0" % (p, j), hidden, 1)
                m.bn("%s.%d.1" % (p, j))
                j += 1
            m.conv("%s.%d.0" % (p, j), hidden, 3, stride=stride, groups=hidden)  # depthwise
            m.bn("%s.%d.1" % (p, j))
            m.conv("%s.%d" % (p, j + 1), c, 1)  # 1x1 projection, linear
            m.bn("%s.%d" % (p, j + 2))
            block += 1
    m.conv("features.18.0", 1280, 1)
    m.bn("features.18.1")
    m.avgpool("avgpool", 1)
    m.linear("classifier.1", 1000)
    layers = m.finish()
    header = [
        "MobileNetV2 (torchvision, width 1.0), one 224x224 image, 1000 classes. Generated by "
        "tools/gen_models.py from torchvision's architecture definition (written out in the "
        "generator; no reference CSV); do not edit by hand.",
        "Layers: every conv, batchnorm, pool and linear in forward order; parameter names as "
        "torchvision registers them.",
    ] + CNN_CONVENTIONS
    return emit_model(header, "mobilenet_v2", "one 224x224 RGB image", 32, "sgd", layers)


def vgg16(data):
    """torchvision.models.vgg16 (configuration D, no batchnorm): 13 3x3 convs
    in 5 blocks with max pools, adaptive avgpool to 7x7, 3 linear layers."""
    del data
    m = Cnn("vgg16")
    cfg = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M",
           512, 512, 512, "M"]
    idx = 0  # torchvision's index into `features` (ReLUs and pools count)
    for v in cfg:
        if v == "M":
            m.maxpool("features.%d" % idx)
            idx += 1
        else:
            m.conv("features.%d" % idx, v, 3, bias=True)
            idx += 2  # conv, then ReLU
    m.avgpool("avgpool", 7)
    m.linear("classifier.0", 4096)
    m.linear("classifier.3", 4096)
    m.linear("classifier.6", 1000)
    layers = m.finish()
    header = [
        "VGG-16 (torchvision, configuration D, no batchnorm), one 224x224 image, 1000 "
        "classes. Generated by tools/gen_models.py from torchvision's architecture definition "
        "(written out in the generator; no reference CSV); do not edit by hand.",
        "Layers: every conv, pool and linear in forward order; parameter names as torchvision "
        "registers them.",
    ] + CNN_CONVENTIONS
    return emit_model(header, "vgg16", "one 224x224 RGB image", 32, "sgd", layers)

OUTPUTS = (
    ("models/resnet50.yaml", resnet50),
    ("models/bert-base.yaml", bert_base),
    ("models/gpt2.yaml", gpt2),
    ("models/mobilenet_v2.yaml", mobilenet_v2),
    ("models/vgg16.yaml", vgg16),
    ("topologies/gpus.yaml", gpus),
)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=DEFAULT_DATA,
                    help="directory of the reference CSVs (default: %(default)s)")
    ap.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 if a generated file in the tree is out of date")
    args = ap.parse_args(argv)
    try:
        texts = [(rel, fn(args.data)) for rel, fn in OUTPUTS]
    except (GenError, KeyError, ValueError) as e:
        print("gen_models: error: %s" % e, file=sys.stderr)
        return 2
    stale = 0
    for rel, text in texts:
        path = os.path.join(REPO, rel)
        try:
            with open(path, encoding="utf-8", newline="") as f:
                old = f.read()
        except OSError:
            old = None
        if args.check:
            if old != text:
                print("gen_models: %s is %s; run python3 tools/gen_models.py"
                      % (rel, "missing" if old is None else "out of date"), file=sys.stderr)
                stale = 1
        elif old != text:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8", newline="\n") as f:
                f.write(text)
            print("wrote %s" % rel)
    if args.check and not stale:
        print("gen_models: generated files are up to date")
    return stale


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
