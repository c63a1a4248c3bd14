"""Op cases of fluidgrad/ops/decomposition.py: svd, eigh and qr on well-conditioned matrices
(distinct singular values / eigenvalues, full rank), square, tall, wide and batched.

The ops fix the signs of singular and eigen vectors (each column of U, of V's eigenvectors, has
its largest-magnitude entry positive); PyTorch's vectors get the same convention here, a
locally constant sign, so the random cotangent of every output is compared as it is: values,
gradients and PyTorch's double backward. QR's signs are LAPACK's Householder ones on both sides."""
from __future__ import annotations

import numpy as np
import torch as T

from fluidgrad.testing import OpCase

from .common import rand


def _positive_largest(vectors):
    """Columns flipped so that each one's largest-magnitude entry is positive (a constant sign)."""
    at = vectors.abs().argmax(-2, keepdim=True)
    return vectors * T.sign(T.gather(vectors, -2, at)).detach()


def _torch_svd(full_matrices=False):
    def svd(X):
        u, s, vh = T.linalg.svd(X, full_matrices=full_matrices)
        k = s.shape[-1]
        signs = T.sign(T.gather(u[..., :k], -2, u[..., :k].abs().argmax(-2, keepdim=True))).detach()
        u = T.cat([u[..., :k] * signs, u[..., k:]], -1)
        vh = T.cat([vh[..., :k, :] * signs.mT, vh[..., k:, :]], -2)
        return u, s, vh
    return svd


def _only(outputs, torch_fn):
    """torch_fn's outputs at `outputs` (those a case's `use_outputs` keeps)."""
    return lambda X: tuple(torch_fn(X)[i] for i in outputs)


def _torch_eigh(X):
    values, vectors = T.linalg.eigh((X + X.mT) / 2)
    return values, _positive_largest(vectors)


def _spread(*shape):
    """Random matrices whose singular values are well apart (the gradient divides by their gaps)."""
    q1, _ = np.linalg.qr(rand(*shape[:-1], shape[-2]))
    q2, _ = np.linalg.qr(rand(*shape[:-2], shape[-1], shape[-1]))
    k = min(shape[-2:])
    values = np.zeros(shape)
    idx = np.arange(k)
    values[..., idx, idx] = 3.0 - 0.6 * idx
    return q1 @ values @ q2


def _symmetric(*shape):
    a = _spread(*shape)
    return a + np.swapaxes(a, -1, -2)


CASES = [
    OpCase("svd", {"X": _spread(3, 3)}, torch_fn=_torch_svd()),
    OpCase("svd", {"X": _spread(4, 3)}, id="svd-tall", torch_fn=_torch_svd()),
    OpCase("svd", {"X": _spread(3, 5)}, id="svd-wide", torch_fn=_torch_svd()),
    OpCase("svd", {"X": _spread(2, 4, 3)}, id="svd-batched", torch_fn=_torch_svd()),
    OpCase("svd", {"X": _spread(4, 3)}, id="svd-values", use_outputs=(1,), torch_fn=_only((1,), _torch_svd())),
    OpCase("svd", {"X": _spread(3, 4)}, id="svd-vectors", use_outputs=(0, 2), torch_fn=_only((0, 2), _torch_svd())),
    OpCase("svd", {"X": _spread(4, 3)}, id="svd-full-tall", attrs={"full_matrices": True},
           use_outputs=(1,), torch_fn=_only((1,), _torch_svd(True))),
    OpCase("eigh", {"X": _symmetric(3, 3)}, torch_fn=_torch_eigh),
    OpCase("eigh", {"X": _symmetric(2, 4, 4) + 0.3 * rand(2, 4, 4)}, id="eigh-batched-asymmetric",
           torch_fn=_torch_eigh),
    OpCase("eigh", {"X": _symmetric(3, 3)}, id="eigh-values", use_outputs=(0,), torch_fn=_only((0,), _torch_eigh)),
    OpCase("eigh", {"X": _symmetric(3, 3)}, id="eigh-vectors", use_outputs=(1,), torch_fn=_only((1,), _torch_eigh)),
    OpCase("qr", {"X": _spread(3, 3)}, torch_fn=lambda X: T.linalg.qr(X)),
    OpCase("qr", {"X": _spread(5, 3)}, id="qr-tall", torch_fn=lambda X: T.linalg.qr(X)),
    OpCase("qr", {"X": _spread(3, 5)}, id="qr-wide", torch_fn=lambda X: T.linalg.qr(X)),
    OpCase("qr", {"X": _spread(2, 4, 3)}, id="qr-batched", torch_fn=lambda X: T.linalg.qr(X)),
    OpCase("qr", {"X": _spread(3, 5)}, id="qr-wide-q", use_outputs=(0,), torch_fn=_only((0,), T.linalg.qr)),
    OpCase("qr", {"X": _spread(4, 3)}, id="qr-tall-r", use_outputs=(1,), torch_fn=_only((1,), T.linalg.qr)),
    OpCase("qr", {"X": _spread(3, 4)}, id="qr-complete-wide", attrs={"mode": "complete"},
           torch_fn=lambda X: T.linalg.qr(X, mode="complete")),
]
