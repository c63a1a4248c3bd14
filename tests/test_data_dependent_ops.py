"""Ops whose output size is known only at run time (declared -1), so the op-case table, which
checks declared shapes, cannot take them: unique and non_max_suppression. Each is checked in
eager and static mode against an independent reference (PyTorch, or ONNX's own reference
implementation)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad.dispatch import apply_op
from test_indexing import assert_matches, both_modes


# ------------------------------------------------------------------ unique
def _torch_unique(x, **kw):
    values, inverse, counts = torch.unique(torch.tensor(x), return_inverse=True, return_counts=True, **kw)
    return values, inverse.reshape(-1), counts


@pytest.mark.parametrize("x", [np.array([[2.0, 1.0, 2.0], [0.5, 1.0, 2.0]]),
                               np.random.default_rng(0).integers(0, 5, (4, 6)),
                               np.array([7]), np.zeros((0,))], ids=["float", "int", "one", "empty"])
def test_unique_equals_pytorch(x):
    got = both_modes(lambda t: fg.unique(t, return_inverse=True, return_counts=True), x)
    assert_matches(got, _torch_unique(x))
    first = both_modes(lambda t: fg.unique(t, return_index=True)[1], x)[0]
    np.testing.assert_array_equal(x.reshape(-1)[first], got[0])  # the first occurrence of each value
    assert all(list(x.reshape(-1)).index(v) == i for v, i in zip(got[0].tolist(), first.tolist()))


def test_unique_along_an_axis_equals_pytorch():
    x = np.array([[1, 0, 0], [1, 0, 0], [2, 3, 4], [1, 0, 1]])
    got = both_modes(lambda t: fg.unique(t, return_inverse=True, return_counts=True, axis=0), x)
    assert_matches(got, _torch_unique(x, dim=0))
    got = both_modes(lambda t: fg.unique(t, return_inverse=True, return_counts=True, axis=1), x.T.copy())
    assert_matches(got, _torch_unique(x.T.copy(), dim=1))


def test_unique_in_order_of_first_occurrence():
    x = np.array([3.0, 1.0, 3.0, 0.0, 1.0, 5.0])
    values, first, inverse, counts = both_modes(
        lambda t: list(apply_op("unique", {"X": t}, {"axis": [], "sorted": False, "dtype": "int32"})), x)
    np.testing.assert_array_equal(values, [3.0, 1.0, 0.0, 5.0])
    np.testing.assert_array_equal(first, [0, 1, 3, 5])
    np.testing.assert_array_equal(values[inverse], x)
    np.testing.assert_array_equal(counts, [2, 2, 1, 1])
    assert first.dtype == np.int32


def test_unique_declares_run_time_sizes_and_refuses_bad_attributes():
    with fg.program_guard(fg.Program(), fg.Program()):
        x = fg.static.data("x", [4, 3], "float32")
        out, index, inverse, counts = fg.unique(x, return_index=True, return_inverse=True, return_counts=True)
        assert list(out.shape) == [-1] and list(inverse.shape) == [12] and list(counts.shape) == [-1]
        rows = fg.unique(x, axis=0)
        assert list(rows.shape) == [-1, 3]
        with pytest.raises(fg.framework.errors.DTypeError, match="unique"):
            fg.unique(x, dtype="float32")
        with pytest.raises(fg.framework.errors.ShapeError, match="unique"):
            fg.unique(x, axis=2)


# ------------------------------------------------------------------ non_max_suppression
def _onnx_reference_nms(boxes, scores, limit, iou, score, center):
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator
    names = ["boxes", "scores", "limit", "iou", "score"]
    node = helper.make_node("NonMaxSuppression", names, ["out"], center_point_box=int(center))
    graph = helper.make_graph([node], "nms", [
        helper.make_tensor_value_info("boxes", TensorProto.FLOAT, boxes.shape),
        helper.make_tensor_value_info("scores", TensorProto.FLOAT, scores.shape),
        helper.make_tensor_value_info("limit", TensorProto.INT64, [1]),
        helper.make_tensor_value_info("iou", TensorProto.FLOAT, [1]),
        helper.make_tensor_value_info("score", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("out", TensorProto.INT64, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    feeds = dict(zip(names, [boxes, scores, np.array([limit]), np.array([iou], np.float32),
                             np.array([score], np.float32)]))
    return ReferenceEvaluator(model).run(None, feeds)[0]


@pytest.mark.parametrize("seed, center, limit, iou, score", [
    (0, False, 3, 0.3, 0.2), (1, True, 10, 0.5, -1.0), (2, False, 2, 0.0, 0.5), (3, False, 20, 0.7, 0.0)])
def test_non_max_suppression_equals_onnx_reference(seed, center, limit, iou, score):
    rng = np.random.default_rng(seed)
    corners = rng.uniform(0, 10, (2, 12, 2, 2))
    if center:  # (x, y, w, h)
        boxes = np.concatenate([corners[..., 0, :], rng.uniform(0.5, 4, (2, 12, 2))], axis=-1)
    else:  # two corners, in either order (ONNX allows flipped coordinates)
        boxes = corners.reshape(2, 12, 4)
    boxes, scores = boxes.astype(np.float32), rng.uniform(0, 1, (2, 3, 12)).astype(np.float32)
    scores[0, 0, :3] = 0.5  # ties: the lower box index goes first
    attrs = {"max_output_boxes_per_class": limit, "iou_threshold": iou, "score_threshold": score,
             "center_point_box": center}
    got = both_modes(lambda b, s: apply_op("non_max_suppression", {"Boxes": b, "Scores": s}, attrs), boxes, scores)
    want = _onnx_reference_nms(boxes, scores, limit, iou, score, center)
    np.testing.assert_array_equal(got[0], want)
    assert got[0].dtype == np.int64


def test_non_max_suppression_refuses_mismatched_shapes():
    with fg.program_guard(fg.Program(), fg.Program()):
        boxes = fg.static.data("boxes", [1, 5, 4], "float32")
        scores = fg.static.data("scores", [1, 2, 6], "float32")
        with pytest.raises(fg.framework.errors.ShapeError, match="non_max_suppression"):
            apply_op("non_max_suppression", {"Boxes": boxes, "Scores": scores})


# ------------------------------------------------------------------ decode_image
@pytest.mark.parametrize("fmt", ["PNG", "BMP", "TIFF"])
def test_decode_image_gives_the_encoded_pixels(fmt):
    image_module = pytest.importorskip("PIL.Image")
    import io
    pixels = np.random.default_rng(1).integers(0, 256, (5, 7, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    image_module.fromarray(pixels).save(buffer, format=fmt)
    encoded = np.frombuffer(buffer.getvalue(), dtype=np.uint8)
    rgb, = both_modes(lambda x: apply_op("decode_image", {"X": x}, {"pixel_format": "RGB"}), encoded)
    np.testing.assert_array_equal(rgb, pixels)  # lossless formats give the pixels back
    bgr, = both_modes(lambda x: apply_op("decode_image", {"X": x}, {"pixel_format": "BGR"}), encoded)
    np.testing.assert_array_equal(bgr, pixels[:, :, ::-1])
    gray, = both_modes(lambda x: apply_op("decode_image", {"X": x}, {"pixel_format": "Grayscale"}), encoded)
    want = np.asarray(image_module.fromarray(pixels).convert("L"))[:, :, None]
    np.testing.assert_array_equal(gray, want)


def test_decode_image_refuses_bytes_that_are_no_image_and_bad_attributes():
    pytest.importorskip("PIL.Image")
    with pytest.raises(Exception, match="decode_image"):
        apply_op("decode_image", {"X": fg.to_tensor(np.arange(40, dtype=np.uint8))}, {"pixel_format": "RGB"})
    with fg.program_guard(fg.Program(), fg.Program()):
        stream = fg.static.data("stream", [100], "uint8")
        assert list(apply_op("decode_image", {"X": stream}, {"pixel_format": "Grayscale"}).shape) == [-1, -1, 1]
        with pytest.raises(fg.framework.errors.ShapeError, match="decode_image"):
            apply_op("decode_image", {"X": stream}, {"pixel_format": "CMYK"})
        with pytest.raises(fg.framework.errors.DTypeError, match="decode_image"):
            apply_op("decode_image", {"X": fg.static.data("f", [100], "float32")}, {"pixel_format": "RGB"})


# ------------------------------------------------------------------ arange (bounds given as tensors)
@pytest.mark.parametrize("start, end, step", [(0.0, 5.0, 1.0), (1.5, -2.0, -0.75), (3, 20, 4), (5, 5, 1),
                                              (np.float32(0.1), np.float32(1.0), np.float32(0.3))])
def test_arange_of_run_time_bounds_equals_pytorch(start, end, step):
    values = [np.asarray(v) for v in (start, end, step)]
    got = both_modes(lambda s, e, d: apply_op("arange", {"Start": s, "End": e, "Step": d}), *values)
    want = torch.arange(*[torch.tensor(v) for v in values])
    np.testing.assert_allclose(got[0], want.numpy(), rtol=1e-6)
    assert got[0].dtype == values[0].dtype


def test_arange_refuses_mixed_dtypes_and_a_zero_step():
    with fg.program_guard(fg.Program(), fg.Program()):
        start, end = fg.static.data("s", [], "float32"), fg.static.data("e", [], "float64")
        with pytest.raises(fg.framework.errors.ShapeError, match="arange"):
            apply_op("arange", {"Start": start, "End": end, "Step": start})
    with pytest.raises(Exception, match="step must not be 0"):
        apply_op("arange", {k: fg.to_tensor(np.asarray(v)) for k, v in (("Start", 0), ("End", 3), ("Step", 0))})
