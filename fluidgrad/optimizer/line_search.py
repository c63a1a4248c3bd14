"""The strong Wolfe line search of LBFGS(line_search_fn="strong_wolfe"), torch.optim's and
Paddle's (after minFunc): from a trial step t along d, bracket a step meeting the strong Wolfe
conditions (sufficient decrease c1, curvature c2), then zoom into the bracket by safeguarded
cubic interpolation. `evaluate(x, t, d)` returns the loss and flat gradient at x + t d."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np


def cubic_minimum(x1: float, f1: float, g1: float, x2: float, f2: float, g2: float,
                  bounds: tuple[float, float] | None = None) -> float:
    """The minimiser of the cubic through (x1, f1, slope g1) and (x2, f2, slope g2), within
    `bounds` (default: between x1 and x2); the middle of the bounds when the cubic has none."""
    low, high = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square < 0:
        return (low + high) / 2.0
    d2 = np.sqrt(d2_square)
    if x1 <= x2:
        position = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        position = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(position, low), high)


class _Bracket:
    """Two trial points (step, loss, gradient, slope), the lower-loss one at `low`."""

    def __init__(self, points: list[tuple[Any, float, np.ndarray, Any]]) -> None:
        self.points = points
        self._order()

    def _order(self) -> None:
        self.low, self.high = (0, 1) if self.points[0][1] <= self.points[-1][1] else (1, 0)

    def steps(self) -> list[Any]:
        return [p[0] for p in self.points]

    def replace(self, which: int, point: tuple[Any, float, np.ndarray, Any]) -> None:
        self.points[which] = point


def strong_wolfe(evaluate: Callable[[Any, Any, np.ndarray], tuple[float, np.ndarray]], x: Any, t: Any,
                 d: np.ndarray, f: float, g: np.ndarray, gtd: Any, c1: float = 1e-4, c2: float = 0.9,
                 tolerance_change: float = 1e-9, max_ls: int = 25) -> tuple[float, np.ndarray, Any, int]:
    """(loss, gradient, step, evaluations) at the step found."""
    d_norm = np.abs(d).max()
    g = g.copy()
    f_new, g_new = evaluate(x, t, d)
    evals, ls_iter, done = 1, 0, False
    gtd_new = g_new.dot(d)
    previous = (0, f, g, gtd)
    bracket = None
    while ls_iter < max_ls:
        if f_new > f + c1 * t * gtd or (ls_iter > 1 and f_new >= previous[1]):
            bracket = _Bracket([previous, (t, f_new, g_new.copy(), gtd_new)])
            break
        if abs(gtd_new) <= -c2 * gtd:          # both conditions hold: this step
            bracket, done = _Bracket([(t, f_new, g_new, gtd_new)]), True
            break
        if gtd_new >= 0:                       # past the minimum along d
            bracket = _Bracket([previous, (t, f_new, g_new.copy(), gtd_new)])
            break
        t_prev = previous[0]
        step = cubic_minimum(t_prev, previous[1], previous[3], t, f_new, gtd_new,
                             bounds=(t + 0.01 * (t - t_prev), t * 10))
        previous = (t, f_new, g_new.copy(), gtd_new)
        t = step
        f_new, g_new = evaluate(x, t, d)
        evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
    if ls_iter == max_ls:
        bracket = _Bracket([(0, f, g, None), (t, f_new, g_new, None)])
    insufficient = False
    while not done and ls_iter < max_ls:
        steps = bracket.steps()
        if abs(steps[1] - steps[0]) * d_norm < tolerance_change:
            break
        (t0, f0, _, s0), (t1, f1, _, s1) = bracket.points
        t = cubic_minimum(t0, f0, s0, t1, f1, s1)
        t, insufficient = _away_from_the_ends(t, steps, insufficient)
        f_new, g_new = evaluate(x, t, d)
        evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
        low, high = bracket.low, bracket.high
        if f_new > f + c1 * t * gtd or f_new >= bracket.points[low][1]:
            bracket.replace(high, (t, f_new, g_new.copy(), gtd_new))
            bracket._order()
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket.points[high][0] - bracket.points[low][0]) >= 0:
                bracket.replace(high, bracket.points[low])
            bracket.replace(low, (t, f_new, g_new.copy(), gtd_new))
    t, f_new, g_new, _ = bracket.points[bracket.low]
    return f_new, g_new, t, evals


def _away_from_the_ends(t: Any, steps: list[Any], insufficient: bool) -> tuple[Any, bool]:
    """A trial step within 10% of the bracket's width from an end is moved to that 10% mark when
    the last one was too (or it lies outside): the zoom then always makes progress."""
    top, bottom = max(steps), min(steps)
    eps = 0.1 * (top - bottom)
    if min(top - t, t - bottom) >= eps:
        return t, False
    if insufficient or t >= top or t <= bottom:
        return (top - eps if abs(t - top) < abs(t - bottom) else bottom + eps), False
    return t, True
