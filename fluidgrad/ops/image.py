"""decode_image: an encoded image (JPEG, PNG, BMP, TIFF, WebP, ... bytes) to an [H, W, C]
uint8 array (ONNX ImageDecoder). Decoding is Pillow's, an optional dependency imported when
the op first runs (`pip install 'fluidgrad[onnx]'`). The size is known only at run time."""
from __future__ import annotations

import io

import numpy as np

from ..framework.errors import ExecutionError
from .registry import NO_GRADIENT, register_op

_CHANNELS = {"RGB": 3, "BGR": 3, "Grayscale": 1}


def _decode_kernel(x, pixel_format):
    try:
        import PIL.Image  # optional dependency: only this op needs it
    except ImportError:
        raise ExecutionError("op decode_image needs Pillow: pip install 'fluidgrad[onnx]' (or pip install pillow)") \
            from None
    try:
        image = PIL.Image.open(io.BytesIO(np.ascontiguousarray(x).tobytes()))
        image.load()
    except Exception as exc:  # Pillow raises several types for bad data
        raise ExecutionError(f"op decode_image: the {x.size} bytes of X are not an image Pillow can "
                             f"decode ({type(exc).__name__}: {exc})") from None
    if pixel_format == "Grayscale":
        return np.asarray(image.convert("L"), dtype=np.uint8)[:, :, None]
    rgb = np.asarray(image.convert("RGB"), dtype=np.uint8)
    return np.ascontiguousarray(rgb[:, :, ::-1]) if pixel_format == "BGR" else rgb


def _decode_infer(ctx):
    if ctx.dtype("X") != "uint8" or len(ctx.shape("X")) != 1:
        raise ctx.dtype_error(f"expects the encoded bytes as a 1-D uint8 tensor, got {ctx.describe('X')}")
    if ctx.attr("pixel_format") not in _CHANNELS:
        raise ctx.shape_error(f"pixel_format must be one of {sorted(_CHANNELS)}, got {ctx.attr('pixel_format')!r}")
    ctx.set_output("Out", [-1, -1, _CHANNELS[ctx.attr("pixel_format")]], "uint8")


register_op("decode_image", inputs="X", outputs="Out", attrs={"pixel_format": "RGB"},
            kernel=_decode_kernel, infer=_decode_infer, grad=NO_GRADIENT,
            doc="Encoded image bytes -> [H, W, C] uint8 pixels in RGB, BGR or Grayscale (ONNX ImageDecoder).")
