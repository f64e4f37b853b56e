"""The three reference models of issue #14, shared by python/tests and bench/torch_models.py.

Small, standard PyTorch modules (nothing Tessera-specific): an MLP with GELU and LayerNorm,
a pre-norm transformer block (causal self-attention with softmax, RMSNorm, SiLU-gated MLP)
and a classifier whose training step (forward, cross-entropy loss) is what gets compiled.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self, d_in=64, d_hidden=128, d_out=32, layers=2):
        super().__init__()
        dims = [d_in] + [d_hidden] * layers
        self.linears = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims, dims[1:]))
        self.norms = nn.ModuleList(nn.LayerNorm(d_hidden) for _ in range(layers))
        self.head = nn.Linear(d_hidden, d_out)

    def forward(self, x):
        for lin, norm in zip(self.linears, self.norms):
            x = F.gelu(norm(lin(x)))
        return self.head(x)


class TransformerBlock(nn.Module):
    def __init__(self, dim=64, heads=4, hidden=128):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.proj = nn.Linear(dim, dim, bias=False)
        self.norm1 = nn.RMSNorm(dim)
        self.norm2 = nn.RMSNorm(dim)
        self.w_gate = nn.Linear(dim, hidden, bias=False)
        self.w_up = nn.Linear(dim, hidden, bias=False)
        self.w_down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        b, t, d = x.shape
        h = self.heads
        q, k, v = self.qkv(self.norm1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, h, d // h).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (d // h) ** -0.5
        causal = torch.tril(torch.ones(t, t, dtype=torch.bool, device=x.device))
        att = att.masked_fill(~causal, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        n = self.norm2(x)
        return x + self.w_down(F.silu(self.w_gate(n)) * self.w_up(n))


class Classifier(nn.Module):
    """forward(x, labels) -> mean cross-entropy loss, so the whole step compiles."""

    def __init__(self, d_in=32, hidden=64, classes=10):
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden)
        self.fc2 = nn.Linear(hidden, classes)

    def forward(self, x, labels):
        return F.cross_entropy(self.fc2(torch.relu(self.fc1(x))), labels)


def classifier_data(n=48, d_in=32, classes=10, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d_in, generator=g)
    labels = torch.randint(0, classes, (n,), generator=g)
    return x, labels
