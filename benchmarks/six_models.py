"""The six real models of issue #35, written as a user writes a model file for ``placelab graph import
FILE.py:FACTORY`` (``benchmarks/bench_model_size.py`` imports each and trains the learned placers on it).

Three from ``tf.keras.applications`` with ``weights=None`` (nothing is downloaded): ResNet50, InceptionV3,
MobileNetV2. Three in PyTorch, inline (torchvision is not used): ``nn.Transformer`` 6+6, an LSTM
encoder-decoder NMT with attention unrolled over its time steps (``nn.LSTMCell``: one op group per step, as
Mirhoseini's and Placeto's NMT graphs), and a 12-layer GPT-2-like decoder on ``nn.MultiheadAttention``.
Sizes are the papers' or the models' own (the Transformer base, GPT-2 small); the NMT is GNMT-like, 2 layers
of 512 units, 20 source and 20 target steps, a 10k vocabulary.
"""

from __future__ import annotations

#: factory → (the import's extra arguments: input shapes, batch; without the batch dimension)
IMPORT_ARGS: dict[str, list[str]] = {
    "resnet50": ["--batch", "32"],
    "inception_v3": ["--batch", "32"],
    "mobilenet_v2": ["--batch", "32"],
    "transformer": ["--input-shape", "32,512", "--input-shape", "32,512", "--batch", "16"],
    "lstm_nmt": ["--input-shape", "20:int64", "--input-shape", "20:int64", "--batch", "64"],
    "gpt2": ["--input-shape", "128:int64", "--batch", "8"],
}


def resnet50():
    import tensorflow as tf

    return tf.keras.applications.ResNet50(weights=None)


def inception_v3():
    import tensorflow as tf

    return tf.keras.applications.InceptionV3(weights=None)


def mobilenet_v2():
    import tensorflow as tf

    return tf.keras.applications.MobileNetV2(weights=None)


def transformer():
    """nn.Transformer, the base model of Vaswani et al. 2017: d 512, 8 heads, 6 + 6 layers, FFN 2048."""
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.t = nn.Transformer(d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
                                    dim_feedforward=2048, batch_first=True)

        def forward(self, src, tgt):
            return self.t(src, tgt)

    return Model()


def lstm_nmt():
    """A GNMT-like encoder-decoder: 2 LSTM layers of 512 units each side, dot attention, unrolled steps."""
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self, vocab: int = 10_000, hidden: int = 512, layers: int = 2) -> None:
            super().__init__()
            self.embed_src = nn.Embedding(vocab, hidden)
            self.embed_tgt = nn.Embedding(vocab, hidden)
            self.encoder = nn.ModuleList(nn.LSTMCell(hidden, hidden) for _ in range(layers))
            self.decoder = nn.ModuleList(nn.LSTMCell(hidden, hidden) for _ in range(layers))
            self.attention = nn.Linear(2 * hidden, hidden)
            self.softmax = nn.Linear(hidden, vocab)

        def _run(self, cells, xs, states):
            outs = []
            for x in xs:
                for k, cell in enumerate(cells):
                    states[k] = cell(x, states[k])
                    x = states[k][0]
                outs.append(x)
            return outs, states

        def forward(self, src, tgt):
            b, h = src.shape[0], self.embed_src.embedding_dim
            zeros = [(torch.zeros(b, h), torch.zeros(b, h)) for _ in self.encoder]
            enc, states = self._run(self.encoder, self.embed_src(src).unbind(1), zeros)
            memory = torch.stack(enc, 1)
            dec, _ = self._run(self.decoder, self.embed_tgt(tgt).unbind(1), states)
            logits = []
            for d in dec:
                weights = torch.softmax((memory @ d.unsqueeze(2)).squeeze(2), dim=1)
                context = (weights.unsqueeze(2) * memory).sum(1)
                logits.append(self.softmax(torch.tanh(self.attention(torch.cat([d, context], 1)))))
            return torch.stack(logits, 1)

    return Model()


def gpt2():
    """A GPT-2-small-like decoder: 12 layers, d 768, 12 heads, causal self-attention, a 50,257-token head."""
    import torch
    import torch.nn as nn

    class Block(nn.Module):
        def __init__(self, d: int, heads: int) -> None:
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(self, x, mask):
            y = self.ln1(x)
            x = x + self.attn(y, y, y, attn_mask=mask, need_weights=False)[0]
            return x + self.mlp(self.ln2(x))

    class Model(nn.Module):
        def __init__(self, vocab: int = 50_257, d: int = 768, layers: int = 12, heads: int = 12,
                     context: int = 128) -> None:
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(context, d)
            self.h = nn.ModuleList(Block(d, heads) for _ in range(layers))
            self.ln_f = nn.LayerNorm(d)
            self.head = nn.Linear(d, vocab, bias=False)

        def forward(self, ids):
            n = ids.shape[1]
            x = self.wte(ids) + self.wpe(torch.arange(n))
            mask = torch.triu(torch.full((n, n), float("-inf")), diagonal=1)
            for block in self.h:
                x = block(x, mask)
            return self.head(self.ln_f(x))

    return Model()
