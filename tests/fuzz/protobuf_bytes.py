"""Hand-encoded protobuf GraphDefs (no TensorFlow needed to write one): ``GraphDef.node`` is
field 1, and in a ``NodeDef`` ``name`` is field 1, ``op`` field 2, ``input`` field 3."""

from __future__ import annotations


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2)."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def node(name: str, op: str, inputs: list[str] = ()) -> bytes:
    body = field(1, name.encode()) + field(2, op.encode())
    return body + b"".join(field(3, i.encode()) for i in inputs)


def graphdef(nodes: list[bytes]) -> bytes:
    return b"".join(field(1, n) for n in nodes)


def chain_with_cycle(n: int) -> bytes:
    """``n`` Identity ops in a chain whose first op reads the last: the file that crashed TensorFlow."""
    return graphdef([node(f"n{i}", "Identity", [f"n{(i - 1) % n}"]) for i in range(n)])
