"""Placeto's network (policies.rl.placeto.net): message passing against a plain loop, its direction
and its gradient."""

from __future__ import annotations

import torch

from policies.rl.placeto.net import DirectionalPass, SparsePair

torch.set_num_threads(1)


def test_message_passing_matches_a_plain_loop_and_respects_direction():
    torch.manual_seed(0)
    mp = DirectionalPass(4, 8)
    # chain 0 → 1 → 2 (top-down: row v holds v's parents)
    down = torch.tensor([[0, 0, 0], [1, 0, 0], [0, 1, 0]], dtype=torch.float32)
    adj = SparsePair(down.to_sparse_csr(), down.t().contiguous().to_sparse_csr())
    x = torch.randn(3, 4)
    out = mp(x, adj, rounds=2)
    ref = x.clone()
    for _ in range(2):
        f = mp.f(ref)
        agg = torch.stack([sum((f[u] for u in range(3) if down[v, u]), torch.zeros(4)) for v in range(3)])
        ref = ref + mp.g(agg)
    torch.testing.assert_close(out, ref)
    # information flows only parent → child: changing the sink leaves the source unchanged
    x2 = x.clone()
    x2[2] += 5.0
    out2 = mp(x2, adj, rounds=2)
    torch.testing.assert_close(out2[0], out[0])
    assert not torch.allclose(out2[2], out[2])


def test_message_passing_gradient_uses_the_transpose():
    torch.manual_seed(1)
    mp = DirectionalPass(3, 8)
    down = torch.tensor([[0, 0, 0], [1, 0, 0], [1, 1, 0]], dtype=torch.float32)
    adj = SparsePair(down.to_sparse_csr(), down.t().contiguous().to_sparse_csr())
    x = torch.randn(3, 3, requires_grad=True)
    mp(x, adj, rounds=1).pow(2).sum().backward()
    x_ref = x.detach().clone().requires_grad_(True)
    (x_ref + mp.g(down @ mp.f(x_ref))).pow(2).sum().backward()
    torch.testing.assert_close(x.grad, x_ref.grad)
