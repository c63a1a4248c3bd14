"""Second derivatives of the normalisations: the grad makers of `layer_norm_grad` and
`batch_norm_grad`, and the chain from the statistics outputs of `layer_norm` / `batch_norm`
back to X.

The first-order gradients stay fused kernels (norm.py). Differentiating one of them again is
rarer, so its grad maker writes the fused op's partial derivatives as ordinary registered ops
(reductions and elementwise arithmetic), which differentiate again (third order for free).
Each grad op's gradient is its true partial derivative, the statistics it reads (Mean and
Variance, SavedMean and SavedVariance) included; the forward ops' grad makers pass what reaches
those statistics outputs on to X (`stats_chain_*`). Together they compute what PyTorch's
layer_norm_double_backward / batchnorm_double_backward compute in one piece.

Notation, per statistics group G (a row of layer_norm, a channel of batch_norm; `mean_G` and
`sum_G` run over it) and with K the axes the parameters are summed over: xc = x - mean,
r = 1 / sqrt(var + eps), g = dy * scale. With batch statistics the fused op computes

    DX = r (g - mean_G g) - r^3 mean_G(g xc) xc,   DScale = sum_K(dy xc r),   DBias = sum_K(dy)

and, for cotangents u (of DX), vs (of DScale) and vb (of DBias), with uc = u - mean_G u,
A = mean_G(g xc) and B = mean_G(u xc), the partial derivatives are

    d/dDY    = scale (r uc - r^3 B xc) + r vs xc + vb
    d/dScale = sum_K(dy (r uc - r^3 B xc))
    d/dX     = -r^3 (B g + A u) + r vs dy
    d/dMean  = -sum_G(d/dX)                        (everything depends on x - mean)
    d/dr     = sum_G(uc g - 3 r^2 A u xc + vs dy xc)

With running statistics (batch_norm inference) DX = scale r dy: the terms in A and B vanish
and uc is u.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .grad_builder import GradBuilder


@dataclass(frozen=True)
class _Layout:
    """Where the statistics groups and the parameters lie in the arrays the partials use:
    layer_norm works on the [rows, width] view of X (groups: rows; parameters: columns),
    batch_norm on X itself (groups and parameters: channels, axis 1)."""

    group_axes: list[int]
    param_sum_axes: list[int]
    stat_shape: list[int]     # a per-group vector reshaped to broadcast
    param_shape: list[int]    # a parameter vector reshaped to broadcast


_ROWS = _Layout([1], [0], [-1, 1], [1, -1])


def _channels(ndim: int) -> _Layout:
    others, channel = [0] + list(range(2, ndim)), [1, -1] + [1] * (ndim - 2)
    return _Layout(others, others, channel, channel)


def _rows(g: GradBuilder, value: Any, begin_norm_axis: int) -> Any:
    """layer_norm: X as [rows, width] (the axes before begin_norm_axis, the rest)."""
    tail = g.op("flatten", {"X": value}, start_axis=begin_norm_axis, stop_axis=-1)
    if begin_norm_axis == 0:
        return g.op("unsqueeze", {"X": tail}, axes=[0])
    return g.op("flatten", {"X": tail}, start_axis=0, stop_axis=begin_norm_axis - 1)


def _stat(g: GradBuilder, lay: _Layout, value: Any) -> Any:
    """A per-group vector shaped to broadcast against the data."""
    return g.op("reshape", {"X": value}, shape=lay.stat_shape)


def _param(g: GradBuilder, lay: _Layout, value: Any) -> Any:
    """A parameter (Scale, or a cotangent of DScale / DBias) shaped to broadcast."""
    return g.op("reshape", {"X": value}, shape=lay.param_shape)


def _group_mean(g: GradBuilder, lay: _Layout, value: Any) -> Any:
    return g.op("reduce_mean", {"X": value}, axis=lay.group_axes, keepdim=True)


def _group_sum(g: GradBuilder, lay: _Layout, value: Any) -> Any:
    """Summed over each group: a per-group vector (the statistics' shape)."""
    return g.op("reduce_sum", {"X": value}, axis=lay.group_axes)


def _param_sum(g: GradBuilder, lay: _Layout, value: Any) -> Any:
    """Summed over the positions sharing one parameter: a flat parameter vector."""
    return g.op("reduce_sum", {"X": value}, axis=lay.param_sum_axes)


def _spread(g: GradBuilder, lay: _Layout, stat_grad: Any, target: Any) -> Any:
    """The gradient of a group mean: `stat_grad` / group size at each element of the group."""
    return g.op("unreduce", {"X": stat_grad, "Target": target}, axis=lay.group_axes, mean=True)


def _mul(g: GradBuilder, *values: Any) -> Any:
    out = values[0]
    for value in values[1:]:
        out = g.op("elementwise_mul", {"X": out, "Y": value})
    return out


def _add(g: GradBuilder, a: Any, b: Any) -> Any:
    return g.op("elementwise_add", {"X": a, "Y": b})


def _sub(g: GradBuilder, a: Any, b: Any) -> Any:
    return g.op("elementwise_sub", {"X": a, "Y": b})


def _scale(g: GradBuilder, value: Any, factor: float) -> Any:
    return g.op("scale", {"X": value}, scale=float(factor))


def _total(g: GradBuilder, terms: list) -> Any:
    """The sum of the terms present (None: no term, a symbolic zero)."""
    terms = [t for t in terms if t is not None]
    if not terms:
        return None
    out = terms[0]
    for term in terms[1:]:
        out = _add(g, out, term)
    return out


def _partials(g: GradBuilder, lay: _Layout, x: Any, scale: Any, mean: Any, r: Any, dy: Any, u: Any, vs: Any,
              vb: Any, batch_stats: bool) -> dict[str, Any]:
    """The partial derivatives in the module docstring; all operands broadcast against x
    (statistics per group, parameters per position). Returns full-shaped `DY` and `X`,
    per-group `r`, a flat parameter vector `Scale` (None where no term)."""
    xc = _sub(g, x, mean)
    grad_dy = dy if scale is None else _mul(g, dy, scale)
    ddy, dscale, dx, dr = [], None, [], []
    if u is not None:
        uc = _sub(g, u, _group_mean(g, lay, u)) if batch_stats else u
        per_g = _mul(g, r, uc)  # d<u, DX>/dg
        if batch_stats:
            r3 = g.op("pow", {"X": r}, factor=3.0)
            a_mean, b_mean = _group_mean(g, lay, _mul(g, grad_dy, xc)), _group_mean(g, lay, _mul(g, u, xc))
            per_g = _sub(g, per_g, _mul(g, r3, b_mean, xc))
            dx.append(_scale(g, _mul(g, r3, _add(g, _mul(g, b_mean, grad_dy), _mul(g, a_mean, u))), -1.0))
            r2_a = _mul(g, r, r, a_mean)
            dr.append(_sub(g, _mul(g, uc, grad_dy), _scale(g, _mul(g, r2_a, u, xc), 3.0)))
        else:
            dr.append(_mul(g, uc, grad_dy))
        ddy.append(per_g if scale is None else _mul(g, per_g, scale))
        if scale is not None and g.needs_input_grad("Scale"):
            dscale = _param_sum(g, lay, _mul(g, dy, per_g))
    if vs is not None:
        vs_dy = _mul(g, vs, dy)
        ddy.append(_mul(g, r, vs, xc))
        dx.append(_mul(g, r, vs_dy))
        dr.append(_mul(g, vs_dy, xc))
    if vb is not None:
        ddy.append(g.op("expand_as", {"X": vb, "Target": dy}) if not ddy else vb)
    dx_total = _total(g, dx)
    dr_total = _total(g, dr)
    return {"DY": _total(g, ddy), "Scale": dscale, "X": dx_total,
            "r": None if dr_total is None else _group_sum(g, lay, dr_total)}


def _mean_grad(g: GradBuilder, lay: _Layout, dx: Any) -> Any:
    """d/dMean = -sum_G(d/dX): the data enter only as x - mean."""
    return None if dx is None else _scale(g, _group_sum(g, lay, dx), -1.0)


def _cotangents(g: GradBuilder, lay: _Layout, begin_norm_axis: int | None) -> tuple[Any, Any, Any]:
    """The gradients reaching DX (as rows for layer_norm), DScale and DBias, shaped to
    broadcast (None where none flows)."""
    u = g.output_grad("DX") if g.has_output_grad("DX") else None
    if u is not None and begin_norm_axis is not None:
        u = _rows(g, u, begin_norm_axis)
    vs = _param(g, lay, g.output_grad("DScale")) if g.has_output_grad("DScale") else None
    vb = _param(g, lay, g.output_grad("DBias")) if g.has_output_grad("DBias") else None
    return u, vs, vb


# ---------------------------------------------------------------- layer_norm
def layer_norm_grad_grad(g: GradBuilder) -> None:
    """The gradient of layer_norm_grad (X, Scale?, Mean, Variance, DY -> DX, DScale, DBias)."""
    axis = g.attr("begin_norm_axis")
    x, scale, dy, variance = g.input("X"), g.input("Scale"), g.input("DY"), g.input("Variance")
    u, vs, vb = _cotangents(g, _ROWS, axis)
    r_vec = g.op("pow", {"X": _shift(g, variance, g.attr("epsilon"))}, factor=-0.5)
    parts = _partials(g, _ROWS, _rows(g, x, axis), None if scale is None else _param(g, _ROWS, scale),
                      _stat(g, _ROWS, g.input("Mean")), _stat(g, _ROWS, r_vec), _rows(g, dy, axis), u, vs, vb,
                      batch_stats=True)
    _set_reshaped(g, "X", parts["X"], x)
    _set_reshaped(g, "DY", parts["DY"], dy)
    if scale is not None:
        _set_reshaped(g, "Scale", parts["Scale"], scale)
    if g.needs_input_grad("Mean"):
        g.set_input_grad("Mean", _mean_grad(g, _ROWS, parts["X"]))
    if parts["r"] is not None and g.needs_input_grad("Variance"):  # dr/dVariance = -r^3 / 2
        g.set_input_grad("Variance", _mul(g, parts["r"], _scale(g, g.op("pow", {"X": r_vec}, factor=3.0), -0.5)))


def layer_norm_stats_chain(g: GradBuilder, dx: Any) -> Any:
    """layer_norm's grad maker: add to `dx` (or None) what the gradients reaching its Mean and
    Variance outputs give X (Mean = mean_G x, Variance = mean_G xc^2, so 2 xc / n per element)."""
    has_mean, has_var = g.has_output_grad("Mean"), g.has_output_grad("Variance")
    if not (has_mean or has_var):
        return dx
    axis, x = g.attr("begin_norm_axis"), g.input("X")
    rows = _rows(g, x, axis)
    terms = [dx]
    if has_mean:
        terms.append(g.op("reshape_as", {"X": _spread(g, _ROWS, g.output_grad("Mean"), rows), "Target": x}))
    if has_var:
        xc = _sub(g, rows, _stat(g, _ROWS, g.output("Mean")))
        from_var = _scale(g, _mul(g, xc, _spread(g, _ROWS, g.output_grad("Variance"), rows)), 2.0)
        terms.append(g.op("reshape_as", {"X": from_var, "Target": x}))
    return _total(g, terms)


# ---------------------------------------------------------------- batch_norm
def running_statistics(is_test: bool, use_global_stats: bool, trainable_statistics: bool = False) -> bool:
    """Whether batch_norm normalises with the running statistics (Paddle's rule): always with
    use_global_stats, in test mode (clone(for_test=True)) unless trainable_statistics asks for
    the batch's there too (F.batch_norm(use_global_stats=False) given explicitly)."""
    return bool(use_global_stats or (is_test and not trainable_statistics))


def _running(g: GradBuilder) -> bool:
    return running_statistics(g.attr("is_test"), g.attr("use_global_stats"), g.attr("trainable_statistics"))


def batch_norm_grad_grad(g: GradBuilder) -> None:
    """The gradient of batch_norm_grad (X, Scale, SavedMean, SavedVariance = r, DY -> DX,
    DScale, DBias), with batch statistics or (is_test / use_global_stats) running ones."""
    x, scale, dy = g.input("X"), g.input("Scale"), g.input("DY")
    batch_stats = not _running(g)
    lay = _channels(len(g.shape(x)))
    u, vs, vb = _cotangents(g, lay, None)
    parts = _partials(g, lay, x, _param(g, lay, scale), _stat(g, lay, g.input("SavedMean")),
                      _stat(g, lay, g.input("SavedVariance")), dy, u, vs, vb, batch_stats)
    g.set_input_grad("X", parts["X"])
    g.set_input_grad("DY", parts["DY"])
    g.set_input_grad("Scale", parts["Scale"])
    if g.needs_input_grad("SavedMean"):
        g.set_input_grad("SavedMean", _mean_grad(g, lay, parts["X"]))
    g.set_input_grad("SavedVariance", parts["r"])


def batch_norm_stats_chain(g: GradBuilder, dx: Any) -> Any:
    """batch_norm's grad maker, with batch statistics: add to `dx` (or None) what the gradients
    reaching SavedMean (mean_G x) and SavedVariance (r = (mean_G xc^2 + eps)^-1/2, so
    dr/dx = -r^3 xc / n) give X. The running statistics (MeanOut, VarianceOut) are not
    differentiated, as in PyTorch."""
    has_mean, has_r = g.has_output_grad("SavedMean"), g.has_output_grad("SavedVariance")
    if _running(g) or not (has_mean or has_r):
        return dx
    x = g.input("X")
    lay = _channels(len(g.shape(x)))
    terms = [dx]
    if has_mean:
        terms.append(_spread(g, lay, g.output_grad("SavedMean"), x))
    if has_r:
        r = _stat(g, lay, g.output("SavedVariance"))
        xc = _sub(g, x, _stat(g, lay, g.output("SavedMean")))
        spread = _spread(g, lay, g.output_grad("SavedVariance"), x)
        terms.append(_scale(g, _mul(g, g.op("pow", {"X": r}, factor=3.0), xc, spread), -1.0))
    return _total(g, terms)


# ---------------------------------------------------------------- helpers
def _shift(g: GradBuilder, value: Any, epsilon: float) -> Any:
    return g.op("scale", {"X": value}, scale=1.0, bias=float(epsilon))


def _set_reshaped(g: GradBuilder, slot: str, grad: Any, target: Any) -> None:
    """Deliver a gradient computed on a reshaped view in the input's own shape."""
    if grad is not None and g.needs_input_grad(slot):
        g.set_input_grad(slot, g.op("reshape_as", {"X": grad, "Target": target}))
