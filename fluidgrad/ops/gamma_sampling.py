"""Draws of the gamma family with a gradient, and Poisson counts.

`standard_gamma` draws Gamma(alpha, 1) (the source of the Gamma, Beta, Dirichlet, Chi2 and
StudentT samples of fluidgrad.distribution) by inverting the regularised incomplete gamma
function P(alpha, z) at a uniform u. With its seed fixed a draw is then a smooth function of
alpha, and its gradient is that function's derivative, the implicit reparameterisation
dz/dalpha = -(dP/dalpha)(alpha, z) / p(z; alpha) (Figurnov et al., 2018): `standard_gamma_grad`
computes it from P's power series (z < alpha + 1) or its continued fraction (beyond), each
differentiated in alpha alongside its value, so no term cancels against another. It plays
torch._standard_gamma_grad's part (torch's is a rational approximation; this is exact to
rounding), and has no gradient of its own, as torch's.

`gammainc` is P(a, x) itself (the Gamma CDF), differentiable in x (the density) and in a (minus the
density times standard_gamma_grad).

`poisson` draws counts with per-element rates (paddle.poisson, torch.poisson); like torch's,
its gradient is zero: the counts are piecewise constant in the rates.
"""
from __future__ import annotations

import numpy as np

from .grad_builder import GradBuilder
from .random import generator
from .registry import NO_GRADIENT, ZERO_GRADIENT, register_op
from .shape_rules import float_only
from .special import _lgamma_kernel, _polygamma_kernel

_TOLERANCE = 1e-15
_MAX_TERMS = 100_000
_TINY = 1e-300


def _series(a: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """S and dS/da, for P(a, x) = x^a e^-x / gamma(a + 1) * S with S = sum_n x^n / ((a+1)...(a+n))."""
    term, total = np.ones_like(x), np.ones_like(x)
    harmonic, slope = np.zeros_like(x), np.zeros_like(x)
    for n in range(1, _MAX_TERMS):
        term = term * x / (a + n)
        harmonic = harmonic + 1.0 / (a + n)
        total = total + term
        slope = slope - term * harmonic           # d term_n / da = -term_n * sum_k<=n 1 / (a + k)
        if np.all(term * (1.0 + harmonic) <= _TOLERANCE * np.minimum(total, np.abs(slope) + _TINY)):
            break
    return total, slope


def _fraction(a: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """h and dh/da, for Q(a, x) = x^a e^-x / gamma(a) * h with h the continued fraction
    1 / (x + 1 - a - 1 (1 - a) / (x + 3 - a - 2 (2 - a) / ...)), by Lentz's method carrying derivatives."""
    b = x + 1.0 - a
    c, dc = np.full_like(x, 1.0 / _TINY), np.zeros_like(x)
    d, dd = 1.0 / b, 1.0 / b ** 2                 # db/da = -1 at every level
    h, dh = d.copy(), dd.copy()
    for i in range(1, _MAX_TERMS):
        an, dan = -i * (i - a), float(i)
        b = b + 2.0
        dd_next = dan * d + an * dd - 1.0
        d_next = an * d + b
        d_next = np.where(np.abs(d_next) < _TINY, _TINY, d_next)
        dc = -1.0 + dan / c - an * dc / c / c
        c = b + an / c
        c = np.where(np.abs(c) < _TINY, _TINY, c)
        d, dd = 1.0 / d_next, -dd_next / d_next ** 2
        delta, ddelta = d * c, dd * c + d * dc
        h, dh, dh_before = h * delta, dh * delta + h * ddelta, dh
        if np.all(np.abs(delta - 1.0) <= _TOLERANCE) and np.all(np.abs(dh - dh_before) <= _TOLERANCE * np.abs(dh)):
            break
    return h, dh


def _log_prefactor(a: np.ndarray, x: np.ndarray, log_x: np.ndarray) -> np.ndarray:
    """log(x^a e^-x / gamma(a)) = log(x p(x; a)), p the Gamma(a, 1) density."""
    return a * log_x - x - _lgamma_kernel(a)


def _log_p_and_q(a: np.ndarray, log_x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """log P(a, x), log Q(a, x) and the log prefactor, each side from the expansion that converges;
    x is given by its log, so an x below the float range (small a, small P) still has its P."""
    x = np.exp(log_x)
    log_pre = _log_prefactor(a, x, log_x)
    log_p, log_q = np.empty_like(x), np.empty_like(x)
    low = x < a + 1.0
    series, _ = _series(a[low], x[low])
    log_p[low] = log_pre[low] - np.log(a[low]) + np.log(series)
    log_q[low] = np.log1p(-np.exp(log_p[low]))
    fraction, _ = _fraction(a[~low], x[~low])
    log_q[~low] = log_pre[~low] + np.log(fraction)
    log_p[~low] = np.log1p(-np.exp(log_q[~low]))
    return log_p, log_q, log_pre


def gamma_p(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The regularised lower incomplete gamma function P(a, x) (a > 0, x >= 0), in float64."""
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    out = np.zeros(a.shape)
    positive = x > 0
    out[positive] = np.exp(_log_p_and_q(a[positive], np.log(x[positive]))[0])
    return out


def _initial_log_guess(a: np.ndarray, u: np.ndarray) -> np.ndarray:
    """log of a start for Newton's method (Numerical Recipes' invgammp): Wilson-Hilferty for a > 1,
    the small-x power law P ~ x^a / gamma(a + 1) or the exponential tail below."""
    tail = np.where(u < 0.5, u, 1.0 - u)
    t = np.sqrt(-2.0 * np.log(np.maximum(tail, _TINY)))
    z = (2.30753 + t * 0.27061) / (1.0 + t * (0.99229 + t * 0.04481)) - t
    z = np.where(u < 0.5, -z, z)
    root = np.sqrt(np.maximum(a, 1.0))
    wilson = np.log(np.maximum(1e-3, a * (1.0 - 1.0 / (9.0 * a) - z / (3.0 * root)) ** 3))
    split = np.where(a > 1.0, 0.5, 1.0 - a * (0.253 + a * 0.12))     # (positive for a <= 1)
    power = (np.log(np.maximum(u, _TINY)) - np.log(split)) / a
    beyond = np.log(1.0 - np.log1p(-np.clip((u - split) / (1.0 - split), 0.0, 1.0 - 1e-16)))
    return np.where(a > 1.0, wilson, np.where(u < split, power, beyond))


def gamma_p_inverse(a: np.ndarray, u: np.ndarray) -> np.ndarray:
    """x with P(a, x) = u, by Newton's method on log x against log P (u <= 1/2) or log Q (above),
    so both tails keep their relative precision. An x below the float range comes back as 0."""
    lower = u <= 0.5
    target = np.where(lower, np.log(np.maximum(u, _TINY)), np.log1p(-u))
    t = _initial_log_guess(a, u)
    active = np.ones(a.shape, bool)
    for _ in range(200):
        if not active.any():
            break
        aa, tt, low = a[active], t[active], lower[active]
        log_p, log_q, log_pre = _log_p_and_q(aa, tt)
        log_side = np.where(low, log_p, log_q)
        slope = np.exp(log_pre - log_side) * np.where(low, 1.0, -1.0)   # d log P / d log x = x p / P
        step = np.clip((log_side - target[active]) / slope, -2.0, 2.0)
        t[active] = tt - step
        still = np.abs(step) > 1e-14 * np.maximum(1.0, np.abs(tt))
        active[np.flatnonzero(active)[~still]] = False
    return np.exp(t)


def _check_concentration(op_type: str, a: np.ndarray) -> None:
    if not np.all(a > 0) or not np.all(np.isfinite(a)):
        raise ValueError(f"op {op_type}: X (shape {list(a.shape)}, {a.dtype}) must hold finite positive "
                         f"concentrations, got {a.min() if a.size else a} at the least")


def _standard_gamma_kernel(x: np.ndarray, seed: int) -> np.ndarray:
    _check_concentration("standard_gamma", x)
    u = generator(seed).random(x.shape)
    draws = gamma_p_inverse(x.astype(np.float64).ravel(), u.ravel()).reshape(x.shape)
    return np.maximum(draws, np.finfo(x.dtype).tiny).astype(x.dtype)


def _standard_gamma_grad_kernel(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """dz/dalpha at alpha = x and the draw z = y."""
    _check_concentration("standard_gamma_grad", x)
    a, z = np.broadcast_arrays(x.astype(np.float64), np.maximum(y.astype(np.float64), _TINY))
    a, z = a.ravel(), z.ravel()
    log_z, psi = np.log(z), _polygamma_kernel(a, 0)
    out = np.empty_like(z)
    low = z < a + 1.0
    s, ds = _series(a[low], z[low])
    al = a[low]
    out[low] = -z[low] * ((log_z[low] - psi[low]) * s / al - s / al ** 2 + ds / al)
    h, dh = _fraction(a[~low], z[~low])
    out[~low] = z[~low] * ((log_z[~low] - psi[~low]) * h + dh)
    return out.reshape(np.broadcast_shapes(x.shape, y.shape)).astype(x.dtype)


def _standard_gamma_infer(ctx):
    float_only(ctx, "X")
    ctx.set_output("Out", ctx.shape("X"), ctx.dtype("X"))


def _standard_gamma_grad_infer(ctx):
    float_only(ctx, "X", "Y")
    if ctx.shape("X") != ctx.shape("Y") or ctx.dtype("X") != ctx.dtype("Y"):
        raise ctx.shape_error(f"the concentrations {ctx.describe('X')} and the draws {ctx.describe('Y')} must "
                              f"have one shape and dtype")
    ctx.set_output("Out", ctx.shape("X"), ctx.dtype("X"))


def _standard_gamma_grad(g: GradBuilder):
    if g.needs_input_grad("X"):
        slope = g.op("standard_gamma_grad", {"X": g.input("X"), "Y": g.output("Out")})
        g.set_input_grad("X", g.op("elementwise_mul", {"X": g.output_grad("Out"), "Y": slope}))


def _gammainc_kernel(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    _check_concentration("gammainc", x)
    if not np.all(y >= 0):
        raise ValueError(f"op gammainc: Y (shape {list(y.shape)}, {y.dtype}) must hold non-negative values")
    return gamma_p(x, y).astype(x.dtype)


def _gammainc_infer(ctx):
    float_only(ctx, "X", "Y")
    if ctx.shape("X") != ctx.shape("Y") or ctx.dtype("X") != ctx.dtype("Y"):
        raise ctx.shape_error(f"the concentrations {ctx.describe('X')} and the values {ctx.describe('Y')} must "
                              f"have one shape and dtype")
    ctx.set_output("Out", ctx.shape("X"), ctx.dtype("X"))


def _gammainc_grad(g: GradBuilder):
    """dP/dx is the Gamma(a, 1) density, exp((a - 1) log x - x - lgamma(a)); dP/da = -density *
    standard_gamma_grad(a, x) (the implicit gradient read backwards)."""
    a, x = g.input("X"), g.input("Y")
    exponent = g.op("elementwise_mul", {"X": g.op("scale", {"X": a}, scale=1.0, bias=-1.0),
                                        "Y": g.op("log", {"X": x})})
    exponent = g.op("elementwise_sub", {"X": g.op("elementwise_sub", {"X": exponent, "Y": x}),
                                        "Y": g.op("lgamma", {"X": a})})
    weighted = g.op("elementwise_mul", {"X": g.output_grad("Out"), "Y": g.op("exp", {"X": exponent})})
    if g.needs_input_grad("Y"):
        g.set_input_grad("Y", weighted)
    if g.needs_input_grad("X"):
        slope = g.op("standard_gamma_grad", {"X": a, "Y": x})
        g.set_input_grad("X", g.op("scale", {"X": g.op("elementwise_mul", {"X": weighted, "Y": slope})}, scale=-1.0))


def _poisson_kernel(x: np.ndarray, seed: int) -> np.ndarray:
    if not np.all(x >= 0) or not np.all(np.isfinite(x)):
        raise ValueError(f"op poisson: X (shape {list(x.shape)}, {x.dtype}) must hold finite non-negative rates")
    return generator(seed).poisson(x.astype(np.float64)).astype(x.dtype)


register_op("standard_gamma", inputs="X", outputs="Out", attrs={"seed": 0}, kernel=_standard_gamma_kernel,
            infer=_standard_gamma_infer, grad=_standard_gamma_grad,
            doc="Gamma(X, 1) draws by the inverse CDF; its gradient is the implicit reparameterisation "
                "(torch._standard_gamma).")
register_op("standard_gamma_grad", inputs=("X", "Y"), outputs="Out", kernel=_standard_gamma_grad_kernel,
            infer=_standard_gamma_grad_infer, grad=NO_GRADIENT,
            doc="d draw / d concentration of a Gamma(X, 1) draw Y (torch._standard_gamma_grad).")
register_op("gammainc", inputs=("X", "Y"), outputs="Out", kernel=_gammainc_kernel, infer=_gammainc_infer,
            grad=_gammainc_grad, doc="The regularised lower incomplete gamma function P(X, Y) (torch.special.gammainc), "
                                     "differentiable in both arguments.")
register_op("poisson", inputs="X", outputs="Out", attrs={"seed": 0}, kernel=_poisson_kernel,
            infer=_standard_gamma_infer, grad=ZERO_GRADIENT,
            doc="Poisson counts with rates X, in X's dtype (paddle.poisson, torch.poisson).")
