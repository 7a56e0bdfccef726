"""A toy for tools/export_model.py's view nodes (tests/data/view-nodes-model.yaml,
tests/test_model.c): one leaf module per kind of backward node, each on a gradient a
linear layer made (contiguous), so that each layer's host_view_nodes is worked by hand
from what its node runs in backward (FunctionsManual.cpp, derivatives.yaml):
  unsq     unsqueeze:            UnsqueezeBackward0 squeezes the gradient: a view, free
  bcast    expand [B,1,16] -> [B,4,16]: ExpandBackward0 sums (sum_to_size): a kernel
  same     expand to its own size: ExpandBackward0 returns the gradient: free
  copy     clone:                CloneBackward0 returns the gradient: free
  pick     select and slice:     SelectBackward0 and SliceBackward0 each fill a zero
           tensor and copy the gradient into it: kernels
  halves   split, then the two halves added: SplitBackward0 concatenates (a kernel),
           AddBackward0 passes its gradient on (free: it returns it, twice)
  rows     unbind, then stack:   StackBackward0 unbinds (views: free), UnbindBackward0
           stacks (a kernel)
  flat     view [B, 64] as [B, 4, 16]: ViewBackward0 reshapes a contiguous gradient: free
  join     x + layer_norm(x):    AddBackward0 passes its gradient on (free);
           NativeLayerNormBackward0 a kernel. Under autocast (host_view_nodes_amp) x is
           the linear's half output and the layer norm's fp32 (autocast's fp32 list), so
           the add is fp32 and its gradient for x is cast to half inside AddBackward0: not
           free (and layer_norm's cast of x adds a ToCopyBackward0, a cast node). Every
           other layer's nodes keep their dtypes: its count under autocast is its own.
"""
import torch

BATCH_IN = 8


class Op(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


def _halves(x):
    a, b = torch.split(x, 2, dim=1)
    return a + b


def _join(x):
    return x + torch.nn.functional.layer_norm(x, x.shape[-1:])


def _rows(x):
    return torch.stack(torch.unbind(x, dim=1), dim=1)


class ViewNodes(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(BATCH_IN, 16)
        self.unsq = Op(lambda x: x.unsqueeze(1))
        self.bcast = Op(lambda x: x.expand(-1, 4, 16))
        self.same = Op(lambda x: x.expand(-1, 4, 16))
        self.copy = Op(lambda x: x.clone())
        self.mix = torch.nn.Linear(16, 16)
        self.pick = Op(lambda x: x.select(1, 0)[:, 2:])
        self.pad = torch.nn.Linear(14, 64)
        self.flat = Op(lambda x: x.view(x.shape[0], 4, 16))
        self.mix2 = torch.nn.Linear(16, 16)
        self.join = Op(_join)
        self.halves = Op(_halves)
        self.rows = Op(_rows)
        self.head = torch.nn.Linear(32, 10)

    def forward(self, x):
        h = self.copy(self.same(self.bcast(self.unsq(self.lin(x)))))
        h = self.pad(self.pick(self.mix(h)))
        h = self.rows(self.halves(self.join(self.mix2(self.flat(h)))))
        return self.head(h.reshape(h.shape[0], -1))


def build(batch=2, attention="eager"):
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(batch, BATCH_IN, generator=g)
    return ViewNodes(), x, {"sample": "one vector of %d" % BATCH_IN, "default_batch": 4,
                            "optimizer": "sgd", "loss": "classify"}
