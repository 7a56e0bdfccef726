#!/usr/bin/env python3
"""Small copies of the shipped models, for the model fuzz target's fast pass
(scripts/fuzz.sh, fuzz/README.md): scripts/fuzz_small_models.py OUT_DIR MODEL...

A shipped model (models/*.yaml, 30-330 KB) runs the model reader about 36
times a second under libFuzzer; a copy of a few layers, a few KB, runs it
thousands of times. Each copy keeps the document's top-level keys, its first
and last layers and, greedily, the layer that brings the most layer keys the
kept ones lack, until none is left (MAX_LAYERS at most: 2-6 KB a copy, every
layer key the model uses still there); a layer's tied_params bring the layer
that owns the tensor. The lists that name every parameter (grad_ready,
registration) keep the kept tensors' names in their order, and buffers the
kept layers' (or the first one), so each copy loads as the original does. Text in, text out (the exporter's
layout: tools/export_model.py), standard library only; comments dropped.
"""
import os
import re
import sys

MAX_LAYERS = 10


def split(lines):
    """head (top-level lines before layers:), layer blocks, tail sections."""
    head, layers, tail = [], [], []
    i = 0
    while i < len(lines) and lines[i] != "layers:":
        head.append(lines[i])
        i += 1
    i += 1
    while i < len(lines) and lines[i].startswith("  "):
        if lines[i].startswith("  - "):
            layers.append([])
        layers[-1].append(lines[i])
        i += 1
    while i < len(lines):  # top-level keys, each with its indented lines
        tail.append([lines[i]])
        i += 1
        while i < len(lines) and lines[i].startswith(" "):
            tail[-1].append(lines[i])
            i += 1
    return head, layers, tail


def keys_of(block):
    return {m.group(1) for l in block for m in [re.match(r"(?:  - |    )([a-z_0-9]+):", l)] if m}


def params_of(block):
    return [m.group(1) for l in block for m in [re.search(r"\{name: ([^,}]+),", l)] if m]


def tied_of(block):
    for l in block:
        m = re.match(r"    tied_params: \[(.*)\]", l)
        if m:
            return [t.strip() for t in m.group(1).split(",") if t.strip()]
    return []


def trim(text):
    lines = [l.rstrip("\n") for l in text.splitlines() if l.strip() and not l.startswith("#")]
    head, layers, tail = split(lines)
    keep = {0, len(layers) - 1}
    have = set().union(*(keys_of(layers[k]) for k in keep))
    while len(keep) < MAX_LAYERS:  # greedy set cover: the layer adding the most keys
        best = max(range(len(layers)), key=lambda k: (len(keys_of(layers[k]) - have), -k))
        if not keys_of(layers[best]) - have:
            break
        keep.add(best)
        have |= keys_of(layers[best])
    owner = {p: k for k, block in enumerate(layers) for p in params_of(block)}
    for k in sorted(keep):
        keep |= {owner[t] for t in tied_of(layers[k]) if t in owner}
    kept_params = {p for k in keep for p in params_of(layers[k])}
    kept_names = set()
    for k in keep:
        m = re.match(r"  - name: (.*)", layers[k][0])
        kept_names.add(m.group(1).strip().strip('"') if m else "")
    out = head + ["layers:"]
    for k in sorted(keep):
        out += layers[k]
    for sec in tail:
        key = sec[0].split(":")[0]
        if key in ("grad_ready", "registration"):
            out.append(sec[0])
            out += [l for l in sec[1:] if l.strip()[2:].strip() in kept_params]
        elif key == "buffers":
            items = [l for l in sec[1:]
                     if re.search(r"name: ([^,}]+)\.[^.,}]+,", l)
                     and re.search(r"name: ([^,}]+)\.[^.,}]+,", l).group(1) in kept_names]
            out.append(sec[0])
            out += items or sec[1:2]
        else:
            out += sec
    return "\n".join(out) + "\n"


def main():
    out_dir = sys.argv[1]
    for path in sys.argv[2:]:
        name = os.path.basename(path)
        with open(path) as f:
            small = trim(f.read())
        with open(os.path.join(out_dir, "small-" + name), "w") as f:
            f.write(small)


if __name__ == "__main__":
    main()
