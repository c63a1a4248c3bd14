"""non_max_suppression: greedy selection of boxes by score, dropping those that overlap a
selected one too much (ONNX NonMaxSuppression; per batch and class, like
torchvision.ops.batched_nms). The number of boxes kept is known only at run time."""
from __future__ import annotations

import numpy as np

from .grad_builder import GradBuilder
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


# ---------------------------------------------------------------- roi_align
def _roi_samples(roi, height, width, out_h, out_w, sampling_ratio, spatial_scale, aligned):
    """For one ROI: (positions, weights), each [out_h * out_w, samples, 4]: the four pixels (flat
    indices into H * W) of each bilinear sample and their weights (ONNX RoiAlign's rule; samples
    outside the image weigh 0)."""
    offset = 0.5 if aligned else 0.0
    start_w, start_h, end_w, end_h = (float(v) * spatial_scale - offset for v in roi)
    roi_w, roi_h = end_w - start_w, end_h - start_h
    if not aligned:
        roi_w, roi_h = max(roi_w, 1.0), max(roi_h, 1.0)
    bin_h, bin_w = roi_h / out_h, roi_w / out_w
    grid_h = int(sampling_ratio) if sampling_ratio > 0 else int(np.ceil(roi_h / out_h))
    grid_w = int(sampling_ratio) if sampling_ratio > 0 else int(np.ceil(roi_w / out_w))
    ph, pw, iy, ix = np.meshgrid(np.arange(out_h), np.arange(out_w), np.arange(grid_h), np.arange(grid_w),
                                 indexing="ij")
    y = (start_h + ph * bin_h + (iy + 0.5) * bin_h / grid_h).reshape(out_h * out_w, -1)
    x = (start_w + pw * bin_w + (ix + 0.5) * bin_w / grid_w).reshape(out_h * out_w, -1)
    outside = (y < -1.0) | (y > height) | (x < -1.0) | (x > width)
    y, x = np.maximum(y, 0.0), np.maximum(x, 0.0)
    y_low, x_low = np.floor(y).astype(np.int64), np.floor(x).astype(np.int64)
    y_edge, x_edge = y_low >= height - 1, x_low >= width - 1
    y_low, x_low = np.where(y_edge, height - 1, y_low), np.where(x_edge, width - 1, x_low)
    y, x = np.where(y_edge, y_low, y), np.where(x_edge, x_low, x)
    y_high, x_high = np.where(y_edge, y_low, y_low + 1), np.where(x_edge, x_low, x_low + 1)
    ly, lx = y - y_low, x - x_low
    hy, hx = 1.0 - ly, 1.0 - lx
    positions = np.stack([y_low * width + x_low, y_low * width + x_high, y_high * width + x_low,
                          y_high * width + x_high], axis=-1)
    weights = np.stack([hy * hx, hy * lx, ly * hx, ly * lx], axis=-1)
    positions, weights = np.where(outside[..., None], 0, positions), np.where(outside[..., None], 0.0, weights)
    return positions, weights, max(grid_h * grid_w, 1)


def _roi_tables(x_shape, rois, attrs):
    height, width = x_shape[2], x_shape[3]
    return [_roi_samples(roi, height, width, attrs["output_height"], attrs["output_width"],
                         attrs["sampling_ratio"], attrs["spatial_scale"], attrs["aligned"]) for roi in rois]


def _roi_align_kernel(x, rois, batch_indices, **attrs):
    count_rois, channels = rois.shape[0], x.shape[1]
    out = np.zeros((count_rois, channels, attrs["output_height"] * attrs["output_width"]), dtype=x.dtype)
    for r, (positions, weights, count) in enumerate(_roi_tables(x.shape, rois, attrs)):
        flat = x[int(batch_indices[r])].reshape(channels, -1)
        corners = flat[:, positions] * weights  # [C, bins, samples, 4]
        if attrs["mode"] == "avg":
            out[r] = corners.sum(axis=(2, 3)) / count
        else:
            out[r] = corners.max(axis=3).max(axis=2) if positions.shape[1] else 0.0
    return out.reshape(count_rois, channels, attrs["output_height"], attrs["output_width"])


def _roi_align_grad_kernel(x, rois, batch_indices, dout, **attrs):
    """Each output's gradient sent back to the pixels it read, with their weights (to the
    winning corner of the winning sample in max mode)."""
    dx = np.zeros_like(x)
    channels = x.shape[1]
    for r, (positions, weights, count) in enumerate(_roi_tables(x.shape, rois, attrs)):
        batch = int(batch_indices[r])
        grad = dout[r].reshape(channels, -1)  # [C, bins]
        target = dx[batch].reshape(channels, -1)
        if attrs["mode"] == "avg":
            contributions = grad[:, :, None, None] * weights / count
            for c in range(channels):
                np.add.at(target[c], positions.reshape(-1), contributions[c].reshape(-1))
        else:
            corners = x[batch].reshape(channels, -1)[:, positions] * weights  # [C, bins, samples, 4]
            shaped = corners.reshape(channels, positions.shape[0], -1)
            best = shaped.argmax(axis=2)  # [C, bins]: one (sample, corner) per output
            bins = np.arange(positions.shape[0])
            flat_positions = positions.reshape(positions.shape[0], -1)
            flat_weights = weights.reshape(weights.shape[0], -1)
            for c in range(channels):
                np.add.at(target[c], flat_positions[bins, best[c]], grad[c] * flat_weights[bins, best[c]])
        dx[batch] = target.reshape(dx[batch].shape)
    return dx


_ROI_ATTRS = {"output_height": 1, "output_width": 1, "sampling_ratio": 0, "spatial_scale": 1.0, "aligned": True,
              "mode": "avg"}


def _roi_align_infer(ctx):
    x, rois, batch = ctx.shape("X"), ctx.shape("Rois"), ctx.shape("BatchIndices")
    if not ctx.dtype("X").startswith("float") or ctx.dtype("Rois") != ctx.dtype("X"):
        raise ctx.dtype_error(f"expects float X and Rois of one dtype, got {ctx.describe('X')}, {ctx.describe('Rois')}")
    if len(x) != 4 or len(rois) != 2 or rois[1] not in (4, -1) or len(batch) != 1 or \
            (rois[0] != batch[0] and min(rois[0], batch[0]) >= 0):
        raise ctx.shape_error(f"expects X [N, C, H, W], Rois [R, 4] and BatchIndices [R], got {ctx.describe('X')}, "
                              f"{ctx.describe('Rois')}, {ctx.describe('BatchIndices')}")
    if ctx.attr("mode") not in ("avg", "max"):
        raise ctx.shape_error(f"mode must be avg or max, got {ctx.attr('mode')!r}")
    ctx.set_output("Out", [rois[0], x[1], ctx.attr("output_height"), ctx.attr("output_width")], ctx.dtype("X"))


def _roi_align_grad(g: GradBuilder) -> None:
    attrs = {name: g.attr(name) for name in _ROI_ATTRS}
    g.set_input_grad("X", g.op("roi_align_grad", {"X": g.input("X"), "Rois": g.input("Rois"),
                                                  "BatchIndices": g.input("BatchIndices"),
                                                  "DOut": g.output_grad("Out")}, **attrs))


def _roi_align_grad_grad(g: GradBuilder) -> None:
    """Average mode is linear in X: the gradient's gradient (in DOut) is roi_align itself."""
    if g.attr("mode") != "avg":
        raise NotImplementedError("grad of op roi_align_grad: only in avg mode (max mode selects by value)")
    attrs = {name: g.attr(name) for name in _ROI_ATTRS}
    if g.needs_input_grad("DOut"):
        g.set_input_grad("DOut", g.op("roi_align", {"X": g.output_grad("DX"), "Rois": g.input("Rois"),
                                                   "BatchIndices": g.input("BatchIndices")}, **attrs))


def _roi_align_grad_infer(ctx):
    ctx.set_output("DX", ctx.shape("X"), ctx.dtype("X"))


register_op("roi_align", inputs="X Rois BatchIndices", outputs="Out", attrs=dict(_ROI_ATTRS),
            kernel=_roi_align_kernel, infer=_roi_align_infer, grad=_roi_align_grad,
            doc="Each region of interest (x1, y1, x2, y2 in X's batch BatchIndices[r]) pooled to "
                "output_height x output_width by averaging (or taking the largest of) bilinear samples "
                "(ONNX RoiAlign; aligned: half-pixel coordinates).")
register_op("roi_align_grad", inputs="X Rois BatchIndices DOut", outputs="DX", attrs=dict(_ROI_ATTRS),
            kernel=_roi_align_grad_kernel, infer=_roi_align_grad_infer, grad=_roi_align_grad_grad,
            doc="roi_align's gradient in X: each output's gradient sent back to the pixels it read.")
