"""GridSample and AffineGrid, through fluidgrad's grid_sample / affine_grid compositions."""
from __future__ import annotations

from ..nn.functional.sampling import affine_grid, sample_grid
from .convert_table import converter

_MODES = {"bilinear": "linear", "linear": "linear", "nearest": "nearest", "bicubic": "cubic", "cubic": "cubic"}


@converter("GridSample")
def _grid_sample(ctx):
    x, grid = ctx.input(0), ctx.input(1)
    mode = ctx.attr("mode", "bilinear" if ctx.opset < 20 else "linear")
    if mode not in _MODES:
        raise ctx.unsupported(f"mode {mode!r}")
    if len(x.shape) not in (4, 5):
        raise ctx.unsupported(f"{len(x.shape)}-D input (fluidgrad samples 2-D and 3-D images)")
    return sample_grid(x, grid, _MODES[mode], ctx.attr("padding_mode", "zeros"), bool(ctx.attr("align_corners", 0)),
                       onnx_rules=True)


@converter("AffineGrid")
def _affine_grid(ctx):
    size = [int(v) for v in ctx.const(1, "size")]
    return affine_grid(ctx.input(0), size, align_corners=bool(ctx.attr("align_corners", 0)))
