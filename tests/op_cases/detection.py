"""Op cases of fluidgrad/ops/detection.py's roi_align (non_max_suppression's output size is known
only at run time: tests/test_data_dependent_ops.py). The forward reference is ONNX's own RoiAlign
(onnx.reference); the gradient is checked against central differences."""
from __future__ import annotations

import numpy as np

from fluidgrad.testing import OpCase

from .common import rand

_ATTRS = {"output_height": 3, "output_width": 2, "sampling_ratio": 2, "spatial_scale": 0.5, "aligned": True,
          "mode": "avg"}


def _onnx_roi_align(X, Rois, BatchIndices, **attrs):
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator
    node = helper.make_node("RoiAlign", ["X", "rois", "batch"], ["Y"], output_height=attrs["output_height"],
                            output_width=attrs["output_width"], sampling_ratio=attrs["sampling_ratio"],
                            spatial_scale=attrs["spatial_scale"], mode=attrs["mode"],
                            coordinate_transformation_mode="half_pixel" if attrs["aligned"] else "output_half_pixel")
    graph = helper.make_graph([node], "roi", [
        helper.make_tensor_value_info("X", TensorProto.DOUBLE, X.shape),
        helper.make_tensor_value_info("rois", TensorProto.DOUBLE, Rois.shape),
        helper.make_tensor_value_info("batch", TensorProto.INT64, BatchIndices.shape)],
        [helper.make_tensor_value_info("Y", TensorProto.DOUBLE, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
    return ReferenceEvaluator(model).run(None, {"X": np.asarray(X, np.float64), "rois": np.asarray(Rois, np.float64),
                                                "batch": np.asarray(BatchIndices, np.int64)})[0]


def _reference(**attrs):
    def fn(X, Rois, BatchIndices):
        return [_onnx_roi_align(X, Rois, BatchIndices, **attrs).astype(np.asarray(X).dtype)]
    return fn


def _reference_grad(**attrs):
    """Average pooling is linear in X: DX = J^T DOut, J's columns from the reference on unit inputs."""
    def fn(X, Rois, BatchIndices, DOut):
        x = np.asarray(X, np.float64)
        dx = np.zeros(x.size)
        for i in range(x.size):
            unit = np.zeros(x.size)
            unit[i] = 1.0
            dx[i] = np.sum(_onnx_roi_align(unit.reshape(x.shape), Rois, BatchIndices, **attrs) * DOut)
        return [dx.reshape(x.shape).astype(np.asarray(X).dtype)]
    return fn


_X = rand(2, 2, 6, 5)
_ROIS = np.array([[0.5, 1.0, 7.0, 9.0], [2.0, 0.0, 5.5, 4.5], [-1.0, -2.0, 3.0, 12.0]])
_BATCH = np.array([1, 0, 1])
_MAX = dict(_ATTRS, mode="max", sampling_ratio=0, aligned=False, spatial_scale=1.0)

# second_order=False: that check differentiates in every float input, and the box coordinates get no
# gradient (as in torchvision); the gradient's own gradient (in DOut) is the roi_align_grad case.
CASES = [
    OpCase("roi_align", {"X": _X, "Rois": _ROIS, "BatchIndices": _BATCH}, _ATTRS, numpy_fn=_reference(**_ATTRS),
           no_grad=("Rois",), second_order=False),
    OpCase("roi_align", {"X": _X, "Rois": _ROIS * 0.5, "BatchIndices": _BATCH}, _MAX, id="roi_align-max",
           numpy_fn=_reference(**_MAX), no_grad=("Rois",), second_order=False),
    OpCase("roi_align_grad", {"X": _X[:1, :, :4, :4], "Rois": _ROIS[:2] * 0.5, "BatchIndices": np.array([0, 0]),
                              "DOut": rand(2, 2, 3, 2)}, _ATTRS, numpy_fn=_reference_grad(**_ATTRS),
           no_grad=("Rois", "X"), second_order=False),  # its gradient in DOut is roi_align's grad of grad
]
