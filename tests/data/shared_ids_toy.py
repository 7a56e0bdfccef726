"""A toy for tools/export_model.py (tests/data/shared-ids-model.yaml, tests/test_elt_bwd.c):
token ids [batch, 50] into a table of 1000 rows of 100 fp32 (per sample), position ids
[1, 50] (one arange the batch shares, as GPT-2 makes them) into a table of 64 rows, their
broadcast sum, and a linear head. The position embedding's tensors are the batch's: the
file gives its bytes per step (bytes_per: step), the same at any recorded batch."""
import torch

SEQ = 50


class SharedIds(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = torch.nn.Embedding(1000, 100)
        self.pos = torch.nn.Embedding(64, 100)
        self.head = torch.nn.Linear(100, 10)

    def forward(self, ids):
        positions = torch.arange(ids.shape[1]).unsqueeze(0)  # [1, seq]: the batch's
        return self.head(self.tok(ids) + self.pos(positions))


def build(batch=2, attention="eager"):
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 1000, (batch, SEQ), generator=g)
    return SharedIds(), x, {"sample": "one sequence of %d tokens" % SEQ, "default_batch": 4,
                            "optimizer": "sgd", "loss": "classify"}
