"""non_max_suppression: greedy selection of boxes by score, dropping those that overlap a
selected one too much (ONNX NonMaxSuppression; per batch and class, like
torchvision.ops.batched_nms). The number of boxes kept is known only at run time."""
from __future__ import annotations

import numpy as np

from .registry import NO_GRADIENT, register_op


def _corners(boxes: np.ndarray, center_point_box: bool) -> np.ndarray:
    """[n, 4] boxes as (y_min, x_min, y_max, x_max); ONNX corners may come in either order."""
    if center_point_box:  # (x_center, y_center, width, height)
        x, y, w, h = boxes.T
        return np.stack([y - h / 2, x - w / 2, y + h / 2, x + w / 2], axis=1)
    y1, x1, y2, x2 = boxes.T
    return np.stack([np.minimum(y1, y2), np.minimum(x1, x2), np.maximum(y1, y2), np.maximum(x1, x2)], axis=1)


def _iou(box: np.ndarray, others: np.ndarray) -> np.ndarray:
    """Intersection over union of one box with each of `others` (0 where either has no area)."""
    top, left = np.maximum(box[0], others[:, 0]), np.maximum(box[1], others[:, 1])
    bottom, right = np.minimum(box[2], others[:, 2]), np.minimum(box[3], others[:, 3])
    inter = np.clip(bottom - top, 0, None) * np.clip(right - left, 0, None)
    area = (box[2] - box[0]) * (box[3] - box[1])
    areas = (others[:, 2] - others[:, 0]) * (others[:, 3] - others[:, 1])
    union = area + areas - inter
    valid = (inter > 0) & (area > 0) & (areas > 0) & (union > 0)
    return np.where(valid, inter / np.where(valid, union, 1), 0.0)


def _nms_kernel(boxes, scores, max_output_boxes_per_class, iou_threshold, score_threshold, center_point_box):
    selected = []
    limit = max(int(max_output_boxes_per_class), 0)
    for batch in range(scores.shape[0]):
        corners = _corners(boxes[batch].astype(np.float64), center_point_box)
        for cls in range(scores.shape[1]):
            class_scores = scores[batch, cls]
            candidates = np.flatnonzero(class_scores > score_threshold)
            # highest score first; among equal scores the lower box index first
            order = candidates[np.lexsort((candidates, -class_scores[candidates]))]
            kept: list[int] = []
            for index in order:
                if len(kept) >= limit:
                    break
                if not kept or not np.any(_iou(corners[index], corners[kept]) > iou_threshold):
                    kept.append(int(index))
            selected += [(batch, cls, index) for index in kept]
    return np.asarray(selected, dtype=np.int64).reshape(-1, 3)


def _nms_infer(ctx):
    boxes, scores = ctx.shape("Boxes"), ctx.shape("Scores")
    for slot in ("Boxes", "Scores"):
        if not ctx.dtype(slot).startswith("float"):
            raise ctx.dtype_error(f"expects float inputs, got {ctx.describe(slot)}")
    if len(boxes) != 3 or boxes[2] not in (4, -1) or len(scores) != 3 or \
            any(a != b and a >= 0 and b >= 0 for a, b in ((boxes[0], scores[0]), (boxes[1], scores[2]))):
        raise ctx.shape_error(f"expects Boxes [batch, boxes, 4] and Scores [batch, classes, boxes], got "
                              f"{ctx.describe('Boxes')} and {ctx.describe('Scores')}")
    ctx.set_output("Out", [-1, 3], "int64")


register_op("non_max_suppression", inputs="Boxes Scores", outputs="Out",
            attrs={"max_output_boxes_per_class": 0, "iou_threshold": 0.0, "score_threshold": float("-inf"),
                   "center_point_box": False},
            kernel=_nms_kernel, infer=_nms_infer, grad=NO_GRADIENT,
            doc="[selected, 3] rows (batch, class, box) of the boxes kept by greedy non-maximum suppression "
                "(ONNX NonMaxSuppression): scores above score_threshold, IoU with a kept box at most "
                "iou_threshold, at most max_output_boxes_per_class per batch and class.")
