"""tools/model_export/autocast.py: the exporter's rerun under CUDA's autocast lists on CPU.

Needs PyTorch (`make test-export`, TORCH_PYTHON=/root/venv-torch/bin/python); `make test` does
not run it. Standard library unittest. What it checks, on the installed torch:

  * the policies: under cuda_autocast_on_cpu() a Linear and mm run in the half type (bf16:
    CUDA's lower_precision_fp list); layer_norm, exp (fp32 list), softmax and sum
    (fp32_set_opt_dtype) of a bf16 input return fp32, where CPU's own autocast leaves them
    bf16; max_pool3d and a reflection pad, which CPU's own fp32 list casts and CUDA's lists do
    not name, keep their bf16; relu and gelu, in no list, keep their dtype; addcmul (promote)
    takes the widest input; binary_cross_entropy (banned) is refused; on exit torch.autocast
    ("cpu") has CPU's lists again.
  * the node counts the exporter writes for a tiny model, worked by hand (Tiny below).
  * the refusals: a CUDA_POLICIES that gives an op another policy than the wheel's
    include/ATen/autocast_mode.h (simulated by monkeypatching), or names other ops than those
    with an AutocastCUDA kernel, is refused with ExportError before anything is registered,
    and tools/export_model.py exits 2 with the message; a header missing a list is refused;
    a wheel without the header is a warning.
"""

import argparse
import contextlib
import importlib.util
import io
import os
import sys
import tempfile
import unittest
import warnings

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tools"))

try:
    import torch
    import torch.nn.functional as F
    import torch.utils._python_dispatch
except ImportError as e:  # without torch: what to do, not a traceback
    sys.stderr.write("%s: %s: needs PyTorch; run it with a Python that has it (make test-export "
                     "TORCH_PYTHON=/root/venv-torch/bin/python; tools/README.md)\n"
                     % (os.path.basename(__file__), e))
    sys.exit(2)

from model_export import autocast, host, tracing  # noqa: E402
from model_export.cli import ExportError  # noqa: E402

BF16, FP32 = torch.bfloat16, torch.float32


class Tiny(torch.nn.Module):
    """x [B, 4] -> lin (Linear 4->8) -> h; h + norm(h) (LayerNorm(8), the add a module-less
    layer of the root, recorded as "model"); -> head (Linear 8->3); loss cross_entropy.

    Backward nodes per layer, worked by hand (derivatives.yaml; host.py: a node is free when
    every aten op it dispatches is a view or makes an empty tensor), AccumulateGrad apart:
      fp32 run
        lin    AddmmBackward0 (mm, bias sum: kernels), TBackward0 (a view: free)    2, 1 free
        norm   NativeLayerNormBackward0 (kernels)                                   1, 0 free
        model  AddBackward0 of two fp32 inputs: returns its gradient twice          1, 1 free
        head   AddmmBackward0, TBackward0                                           2, 1 free
      under CUDA's lists (bf16 half): lin is half, so linear casts x (no grad: no node), its
      weight and bias (2 ToCopyBackward0, each a cast kernel); norm is on the fp32 list and
      casts h (1 ToCopyBackward0); the add joins lin's bf16 h and norm's fp32 output, so it is
      fp32 and autograd's engine casts h's share of its gradient to bf16 inside AddBackward0:
      a kernel, not free; head casts its fp32 input, weight and bias (3 ToCopyBackward0)
        lin 2 + 2 casts, 1 free; norm 1 + 1, 0 free; model 1, 0 free; head 2 + 3, 1 free
    So host_view_nodes_amp (the rerun's free nodes) is 1, 0, 0, 1: only the add differs from
    host_view_nodes (1, 0, 1, 1). The casts the fp32 run counts for autocast
    (host_amp_nodes: 2, 1, 0, 3) are the rerun's ToCopyBackward0 nodes. Written host_nodes add
    each layer's parameter tensors' AccumulateGrad: 4, 3, 1, 4.
    """

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 8)
        self.norm = torch.nn.LayerNorm(8)
        self.head = torch.nn.Linear(8, 3)

    def forward(self, x):
        h = self.lin(x)
        h = h + self.norm(h)
        return self.head(h)


def build(batch=2):
    """The exporter's factory for Tiny (tools/export_model.py FILE.py:build)."""
    torch.manual_seed(0)
    x = torch.randn(batch, 4, generator=torch.Generator().manual_seed(0))
    return Tiny(), x, {"loss": "classify", "sample": "one vector of 4", "default_batch": 2,
                       "optimizer": "sgd"}


LAYERS = ["lin", "norm", "model", "head"]
# per layer: (nodes, free) fp32; (nodes, casts' nodes, free) under CUDA's lists
FP32_NODES = {"lin": (2, 1), "norm": (1, 0), "model": (1, 1), "head": (2, 1)}
AMP_NODES = {"lin": (4, 2, 1), "norm": (2, 1, 0), "model": (1, 0, 0), "head": (5, 3, 1)}
PARAM_TENSORS = {"lin": 2, "norm": 2, "model": 0, "head": 2}


def counts(layer, *keys):
    return tuple(getattr(layer, k, 0) for k in keys)


@contextlib.contextmanager
def patched(obj, name, value):
    old = getattr(obj, name)
    setattr(obj, name, value)
    try:
        yield
    finally:
        setattr(obj, name, old)


def cpu_lists_in_place(test):
    """CPU's own autocast lists: layer_norm of bf16 stays bf16, max_pool3d goes to fp32."""
    x = torch.randn(1, 2, 4, 4, 4).to(BF16)
    with torch.autocast("cpu", dtype=BF16):
        test.assertEqual(F.layer_norm(x, (4,)).dtype, BF16)
        test.assertEqual(F.max_pool3d(x, 2).dtype, FP32)


class Policies(unittest.TestCase):
    def setUp(self):
        self.x = torch.randn(2, 8, generator=torch.Generator().manual_seed(0))
        self.xb = self.x.to(BF16)
        self.lin = torch.nn.Linear(8, 8)

    def test_cpu_autocast_alone_differs_where_the_rerun_matters(self):
        # the reason for autocast.py: CPU's lists leave layer_norm and softmax in bf16
        with torch.autocast("cpu", dtype=BF16):
            self.assertEqual(self.lin(self.x).dtype, BF16)
            self.assertEqual(F.layer_norm(self.xb, (8,)).dtype, BF16)
            self.assertEqual(F.softmax(self.xb, -1).dtype, BF16)

    def test_lower_precision_ops_run_in_half(self):
        with autocast.cuda_autocast_on_cpu():
            y = self.lin(self.x)
            self.assertEqual(y.dtype, BF16)
            self.assertEqual(torch.mm(self.x, self.x.t()).dtype, BF16)
            # the weight's cast is cached: one ToCopyBackward0 per forward, as autocast's
            a, b = F.linear(self.x, self.lin.weight), F.linear(self.x, self.lin.weight)
            self.assertIs(a.grad_fn.next_functions[1][0].next_functions[0][0],
                          b.grad_fn.next_functions[1][0].next_functions[0][0])
        self.assertEqual(autocast.CUDA_POLICIES["linear"], "lower_precision_fp")

    def test_fp32_ops_return_fp32_from_a_half_input(self):
        with autocast.cuda_autocast_on_cpu():
            self.assertEqual(F.layer_norm(self.xb, (8,)).dtype, FP32)  # fp32
            self.assertEqual(torch.exp(self.xb).dtype, FP32)  # fp32
            self.assertEqual(F.softmax(self.xb, -1).dtype, FP32)  # fp32_set_opt_dtype
            self.assertEqual(self.xb.sum().dtype, FP32)  # fp32_set_opt_dtype
            # an explicit dtype is the caller's (set_opt_dtype fills only a missing one)
            self.assertEqual(F.softmax(self.xb, -1, dtype=BF16).dtype, BF16)
        self.assertEqual(autocast.CUDA_POLICIES["layer_norm"], "fp32")
        self.assertEqual(autocast.CUDA_POLICIES["softmax.int"], "fp32_set_opt_dtype")

    def test_ops_in_no_cuda_list_keep_their_dtype(self):
        v = torch.randn(1, 2, 4, 4, 4).to(BF16)
        w = torch.randn(1, 2, 8).to(BF16)
        with autocast.cuda_autocast_on_cpu():
            # on CPU's fp32 list, not on CUDA's: they fall through
            self.assertEqual(F.max_pool3d(v, 2).dtype, BF16)
            self.assertEqual(F.pad(w, (1, 1), mode="reflect").dtype, BF16)
            # on no list at all
            self.assertEqual(F.relu(self.xb).dtype, BF16)
            self.assertEqual(F.relu(self.x).dtype, FP32)
            self.assertEqual(F.gelu(self.xb).dtype, BF16)
        for op in ("max_pool3d", "reflection_pad1d", "relu", "gelu"):
            self.assertNotIn(op, autocast.CUDA_POLICIES)

    def test_promote_takes_the_widest_and_banned_refuses(self):
        with autocast.cuda_autocast_on_cpu():
            self.assertEqual(torch.addcmul(self.xb, self.xb, self.xb).dtype, BF16)
            self.assertEqual(torch.addcmul(self.x, self.xb, self.xb).dtype, FP32)
            with self.assertRaisesRegex(RuntimeError, "binary_cross_entropy is unsafe"):
                F.binary_cross_entropy(torch.sigmoid(self.x), torch.rand(2, 8))

    def test_cpu_lists_are_back_after_the_context(self):
        with autocast.cuda_autocast_on_cpu():
            pass
        cpu_lists_in_place(self)
        with self.assertRaises(ZeroDivisionError):
            with autocast.cuda_autocast_on_cpu():
                1 / 0
        cpu_lists_in_place(self)

    def test_the_installed_header_agrees_with_the_table(self):
        header = autocast.header_policies()
        self.assertIsNotNone(header, "torch %s ships no include/ATen/autocast_mode.h"
                             % torch.__version__)
        autocast.check_policies(autocast.CUDA_POLICIES, header)
        self.assertEqual(header["layer_norm"], "fp32")
        self.assertEqual(header["linear"], "lower_precision_fp")
        self.assertEqual(header["softmax.int"], "fp32_set_opt_dtype")


class Seen(torch.utils._python_dispatch.TorchDispatchMode):
    """Records each op it dispatches with its output's dtype (a mode above Fp32Products)."""

    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.ops.append((func, out.dtype if isinstance(out, torch.Tensor) else None))
        return out


class Products(unittest.TestCase):
    """Fp32Products (the rerun's half products in fp32, below every mode): each product of
    bf16 tensors returns what the bf16 kernel returns but for rounding (dtype, shape,
    strides), a mode above sees the one bf16 op and nothing of the fp32 work, which a mode
    below sees (the kernels get fp32), and other ops and fp32 products pass untouched."""

    def test_half_products_run_in_fp32_unseen(self):
        g = torch.Generator().manual_seed(0)
        a, b, c = (torch.randn(*s, generator=g) for s in ((5, 7), (7, 3), (5, 3)))
        A, B = torch.randn(2, 5, 7, generator=g), torch.randn(2, 7, 3, generator=g)
        C = torch.randn(2, 5, 3, generator=g)
        aten = torch.ops.aten
        cases = [(aten.mm.default, (a, b)), (aten.addmm.default, (c, a, b)),
                 (aten.bmm.default, (A, B)), (aten.baddbmm.default, (C, A, B)),
                 (aten.mm.default, (a, b.t().contiguous().t()))]
        for func, args in cases:
            half = tuple(t.to(BF16) for t in args)
            want = func(*half)
            below, seen = Seen(), Seen()  # the kernels' view, and the modes' above it
            with below, autocast.Fp32Products(), seen:
                got = func(*half)
            self.assertIn((func, FP32), below.ops, func)
            self.assertNotIn((func, BF16), below.ops, func)
            rounded = below.ops[-1]  # the fp32 output rounded (aten.to, or _to_copy)
            self.assertIn(rounded[0], (aten.to.dtype, aten._to_copy.default), func)
            self.assertEqual(rounded[1], BF16, func)
            self.assertEqual(got.dtype, BF16, func)
            self.assertEqual((got.shape, got.stride()), (want.shape, want.stride()), func)
            self.assertTrue(torch.allclose(got.float(), want.float(), rtol=0.02, atol=0.05), func)
            self.assertEqual(seen.ops, [(func, BF16)], func)
            exact = func(*(t.to(BF16).float() for t in args)).to(BF16)
            self.assertTrue(torch.equal(got, exact), func)  # fp32 rounded: not the bf16 kernel
        seen = Seen()
        with autocast.Fp32Products(), seen:
            fp32 = aten.mm.default(a, b)
            relu = aten.relu.default(a.to(BF16))
        self.assertEqual(fp32.dtype, FP32)
        self.assertEqual(relu.dtype, BF16)
        self.assertEqual((seen.ops[0], seen.ops[-1]),
                         ((aten.mm.default, FP32), (aten.relu.default, BF16)))


class Refusals(unittest.TestCase):
    def moved(self, op, policy):
        table = dict(autocast.CUDA_POLICIES)
        table[op] = policy
        return table

    def test_a_policy_the_header_does_not_give_is_refused(self):
        table = self.moved("softmax.int", "fp32")
        with patched(autocast, "CUDA_POLICIES", table):
            with self.assertRaises(ExportError) as e:
                with autocast.cuda_autocast_on_cpu():
                    self.fail("entered with a wrong table")
        msg = str(e.exception)
        self.assertIn("softmax.int: fp32_set_opt_dtype in the header, fp32 here", msg)
        self.assertIn("autocast_mode.h", msg)
        cpu_lists_in_place(self)  # nothing was registered

    def test_a_table_without_an_op_the_header_lists_is_refused(self):
        # the names check would catch a dropped op first; check_policies alone says "none"
        header = autocast.header_policies()
        table = dict(autocast.CUDA_POLICIES)
        del table["layer_norm"]
        with self.assertRaisesRegex(ExportError, "layer_norm: fp32 in the header, none here"):
            autocast.check_policies(table, header)

    def test_other_op_names_than_cuda_autocasts_are_refused(self):
        table = dict(autocast.CUDA_POLICIES)
        del table["linear"]
        table["relu"] = "fp32"
        with patched(autocast, "CUDA_POLICIES", table):
            with self.assertRaises(ExportError) as e:
                with autocast.cuda_autocast_on_cpu():
                    self.fail("entered with a wrong table")
        self.assertIn("casts ['linear'] and not ['relu']", str(e.exception))
        cpu_lists_in_place(self)

    def test_a_header_moved_op_is_refused(self):
        # a wheel whose header moved layer_norm to the lower-precision list
        path = os.path.join(os.path.dirname(torch.__file__), "include", "ATen",
                            "autocast_mode.h")
        with open(path) as f:
            text = f.read()
        self.assertEqual(text.count("  _(layer_norm) "), 1)
        self.assertEqual(text.count("#define AT_FORALL_LOWER_PRECISION_FP(_)"), 1)
        moved = text.replace("  _(layer_norm) ", "  _(no_such_op) ").replace(
            "#define AT_FORALL_LOWER_PRECISION_FP(_)",
            "#define AT_FORALL_LOWER_PRECISION_FP(_) \\\n  _(layer_norm)")
        with tempfile.TemporaryDirectory() as d:
            fake = os.path.join(d, "autocast_mode.h")
            with open(fake, "w") as f:
                f.write(moved)
            header = autocast.header_policies(fake)
            self.assertEqual(header["layer_norm"], "lower_precision_fp")
            with self.assertRaisesRegex(ExportError, "layer_norm: lower_precision_fp in the "
                                        "header, fp32 here"):
                autocast.check_policies(autocast.CUDA_POLICIES, header)
            with open(fake, "w") as f:
                f.write(text.replace("#define AT_FORALL_PROMOTE(_)", "#define SOMETHING_ELSE"))
            with self.assertRaisesRegex(ExportError, "no #define AT_FORALL_PROMOTE"):
                autocast.header_policies(fake)
            self.assertIsNone(autocast.header_policies(os.path.join(d, "missing.h")))

    def test_a_wheel_without_the_header_warns_and_runs(self):
        with patched(autocast, "header_policies", lambda path=None: None):
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                with autocast.cuda_autocast_on_cpu():
                    self.assertEqual(F.layer_norm(torch.randn(2, 8).to(BF16), (8,)).dtype,
                                     FP32)
        self.assertTrue(any("ships no include/ATen/autocast_mode.h" in str(x.message)
                            for x in w), [str(x.message) for x in w])


class NodeCounts(unittest.TestCase):
    """Tiny's docstring works each count by hand."""

    @classmethod
    def setUpClass(cls):
        model, cls.x, cls.meta = build()
        cls.rec, _, _ = tracing.record(model, cls.x, "classify")

    def test_the_fp32_run(self):
        self.assertEqual([l.name for l in self.rec.layers], LAYERS)
        for l in self.rec.layers:
            self.assertEqual(counts(l, "host_nodes", "host_view_nodes"), FP32_NODES[l.name],
                             l.name)
            self.assertEqual(len(l.params), PARAM_TENSORS[l.name], l.name)

    def test_the_rerun_under_cudas_lists(self):
        model, _, _ = build()
        rec2, _, _ = tracing.record(model, self.x, "classify", amp=True)
        self.assertEqual([l.name for l in rec2.layers], LAYERS)
        for l, l1 in zip(rec2.layers, self.rec.layers):
            self.assertEqual(counts(l, "host_nodes", "host_cast_nodes", "host_view_nodes"),
                             AMP_NODES[l.name], l.name)
            # the casts the fp32 run counts for autocast are the rerun's cast nodes
            self.assertEqual(getattr(l1, "host_amp_nodes", 0), AMP_NODES[l.name][1], l.name)

    def test_record_amp_writes_host_view_nodes_amp(self):
        model, x, meta = build()
        rec, _, _ = tracing.record(model, x, "classify")
        args = argparse.Namespace(batch=2, attention="eager")
        tracing.record_amp(rec, x, build, args, meta)
        want = {"lin": (4, 1, 1), "norm": (3, 0, 0), "model": (1, 1, 0), "head": (4, 1, 1)}
        for l in rec.layers:
            lines = dict(s.strip().split(": ") for s in host.host_lines(rec, l))
            got = tuple(int(lines[k]) for k in ("host_nodes", "host_view_nodes",
                                                "host_view_nodes_amp"))
            self.assertEqual(got, want[l.name], l.name)


def load_exporter():
    spec = importlib.util.spec_from_file_location(
        "export_model_under_test", os.path.join(REPO, "tools", "export_model.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class Exporter(unittest.TestCase):
    """tools/export_model.py on Tiny (this file's build), in process."""

    def run_export(self, out):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            rc = load_exporter().main(["tools/export_model.py", os.path.abspath(__file__) +
                                       ":build", "--name", "tiny", "--output", out])
        return rc, err.getvalue()

    def test_the_file_holds_the_hand_worked_counts(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "tiny.yaml")
            rc, err = self.run_export(out)
            self.assertEqual(rc, 0, err)
            with open(out) as f:
                text = f.read()
        per = text.split("\n  - name: ")[1:]
        names = [b.split("\n", 1)[0] for b in per]
        self.assertEqual(len(names), 4, names)
        got = []
        for b in per:
            kv = dict(s.strip().split(": ", 1) for s in b.splitlines()[1:]
                      if s.startswith("    host_"))
            got.append(tuple(int(kv[k]) for k in ("host_nodes", "host_view_nodes",
                                                   "host_view_nodes_amp")))
        self.assertEqual(got, [(4, 1, 1), (3, 0, 0), (1, 1, 0), (4, 1, 1)], names)

    def test_a_policy_mismatch_exits_2(self):
        table = dict(autocast.CUDA_POLICIES)
        table["layer_norm"] = "lower_precision_fp"
        with tempfile.TemporaryDirectory() as d, patched(autocast, "CUDA_POLICIES", table):
            out = os.path.join(d, "tiny.yaml")
            rc, err = self.run_export(out)
            self.assertFalse(os.path.exists(out))
        self.assertEqual(rc, 2, err)
        self.assertIn("export_model.py: torch %s's include/ATen/autocast_mode.h lists ops "
                      "under other policies" % torch.__version__, err)
        self.assertIn("layer_norm: fp32 in the header, lower_precision_fp here", err)


if __name__ == "__main__":
    unittest.main()
