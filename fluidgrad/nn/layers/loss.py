"""Loss layers: each holds its options (and a class weight) and calls nn.functional."""
from __future__ import annotations

from typing import Any

from .. import functional as NF
from ..functional.spellings import either
from ..layer import Layer

__all__ = ['CrossEntropyLoss', 'NLLLoss', 'MSELoss', 'L1Loss', 'SmoothL1Loss', 'HuberLoss', 'BCELoss',
           'BCEWithLogitsLoss', 'KLDivLoss', 'MarginRankingLoss', 'CosineSimilarity', 'CTCLoss', 'PairwiseDistance',
           'TripletMarginLoss', 'TripletMarginWithDistanceLoss', 'CosineEmbeddingLoss', 'SoftMarginLoss',
           'GaussianNLLLoss', 'HingeEmbeddingLoss', 'MultiLabelSoftMarginLoss', 'PoissonNLLLoss', 'MultiMarginLoss']


class CrossEntropyLoss(Layer):
    """The Layer form of `nn.functional.cross_entropy` (weight, ignore_index, label_smoothing; axis
    None: the class axis read from the shapes, Paddle's last or torch's 1, as the function does)."""

    def __init__(self, weight: Any = None, ignore_index: int = -100, reduction: str = "mean",
                 soft_label: bool = False, axis: int | None = None, use_softmax: bool = True,
                 label_smoothing: float = 0.0, name: str | None = None) -> None:
        super().__init__()
        self.weight, self.ignore_index, self.reduction = weight, ignore_index, reduction
        self.soft_label, self.axis, self.use_softmax = soft_label, axis, use_softmax
        self.label_smoothing = label_smoothing

    def forward(self, input: Any, label: Any) -> Any:
        return NF.cross_entropy(input, label, weight=self.weight, ignore_index=self.ignore_index,
                                reduction=self.reduction, soft_label=self.soft_label, axis=self.axis,
                                use_softmax=self.use_softmax, label_smoothing=self.label_smoothing)


class NLLLoss(Layer):
    """The Layer form of `nn.functional.nll_loss` (log-probabilities, classes on axis 1)."""

    def __init__(self, weight: Any = None, ignore_index: int = -100, reduction: str = "mean",
                 name: str | None = None) -> None:
        super().__init__()
        self.weight, self.ignore_index, self.reduction = weight, ignore_index, reduction

    def forward(self, input: Any, label: Any) -> Any:
        return NF.nll_loss(input, label, self.weight, self.ignore_index, self.reduction)


class _PairLoss(Layer):
    """A loss of (input, label) with a reduction only."""

    function = staticmethod(NF.mse_loss)

    def __init__(self, reduction: str = "mean", name: str | None = None) -> None:
        super().__init__()
        self.reduction = reduction

    def forward(self, input: Any, label: Any) -> Any:
        return self.function(input, label, reduction=self.reduction)


class MSELoss(_PairLoss):
    """The Layer form of `nn.functional.mse_loss`."""

    function = staticmethod(NF.mse_loss)


class L1Loss(_PairLoss):
    """The Layer form of `nn.functional.l1_loss`."""

    function = staticmethod(NF.l1_loss)


class SmoothL1Loss(Layer):
    """The Layer form of `nn.functional.smooth_l1_loss`: Paddle's `delta` (Huber with threshold
    delta) or torch's `beta` (Huber / beta)."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0, name: str | None = None, *,
                 beta: float | None = None) -> None:
        super().__init__()
        self.reduction, self.delta, self.beta = reduction, delta, beta

    def forward(self, input: Any, label: Any) -> Any:
        return NF.smooth_l1_loss(input, label, self.reduction, self.delta, beta=self.beta)


class HuberLoss(Layer):
    """The Layer form of `nn.functional.huber_loss` (torch's HuberLoss(reduction, delta))."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0, name: str | None = None) -> None:
        super().__init__()
        self.reduction, self.delta = reduction, delta

    def forward(self, input: Any, label: Any) -> Any:
        return NF.huber_loss(input, label, self.reduction, self.delta)


class BCELoss(Layer):
    """The Layer form of `nn.functional.binary_cross_entropy` (probabilities in)."""

    def __init__(self, weight: Any = None, reduction: str = "mean", name: str | None = None) -> None:
        super().__init__()
        self.weight, self.reduction = weight, reduction

    def forward(self, input: Any, label: Any) -> Any:
        return NF.binary_cross_entropy(input, label, self.weight, self.reduction)


class BCEWithLogitsLoss(Layer):
    """The Layer form of `nn.functional.binary_cross_entropy_with_logits` (pos_weight)."""

    def __init__(self, weight: Any = None, reduction: str = "mean", pos_weight: Any = None,
                 name: str | None = None) -> None:
        super().__init__()
        self.weight, self.reduction, self.pos_weight = weight, reduction, pos_weight

    def forward(self, logit: Any, label: Any) -> Any:
        return NF.binary_cross_entropy_with_logits(logit, label, self.weight, self.reduction, self.pos_weight)


class KLDivLoss(Layer):
    """The Layer form of `nn.functional.kl_div`."""

    def __init__(self, reduction: str = "mean", log_target: bool = False) -> None:
        super().__init__()
        self.reduction, self.log_target = reduction, log_target

    def forward(self, input: Any, label: Any) -> Any:
        return NF.kl_div(input, label, self.reduction, self.log_target)


class MarginRankingLoss(Layer):
    """The Layer form of `nn.functional.margin_ranking_loss`."""

    def __init__(self, margin: float = 0.0, reduction: str = "mean", name: str | None = None) -> None:
        super().__init__()
        self.margin, self.reduction = margin, reduction

    def forward(self, input: Any, other: Any, label: Any) -> Any:
        return NF.margin_ranking_loss(input, other, label, self.margin, self.reduction)


class CosineSimilarity(Layer):
    """The Layer form of `nn.functional.cosine_similarity` along `axis`."""

    def __init__(self, axis: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.axis, self.eps = axis, eps

    def forward(self, x1: Any, x2: Any) -> Any:
        return NF.cosine_similarity(x1, x2, self.axis, self.eps)


class CTCLoss(Layer):
    """The Layer form of `nn.functional.ctc_loss`."""

    def __init__(self, blank: int = 0, reduction: str = "mean") -> None:
        super().__init__()
        self.blank, self.reduction = blank, reduction

    def forward(self, log_probs: Any, labels: Any, input_lengths: Any, label_lengths: Any,
                norm_by_times: bool = False) -> Any:
        return NF.ctc_loss(log_probs, labels, input_lengths, label_lengths, self.blank, self.reduction, norm_by_times)


class PairwiseDistance(Layer):
    """The Layer form of `nn.functional.pairwise_distance` (PyTorch's eps= also taken)."""

    def __init__(self, p: float = 2.0, epsilon: float = 1e-6, keepdim: bool = False, name: str | None = None, *,
                 eps: float | None = None) -> None:
        super().__init__()
        self.p, self.keepdim = p, keepdim
        self.epsilon = either("PairwiseDistance", "epsilon", epsilon, 1e-6, "eps", eps)

    def forward(self, x: Any, y: Any) -> Any:
        return NF.pairwise_distance(x, y, self.p, self.epsilon, self.keepdim)


class TripletMarginLoss(Layer):
    """The Layer form of `nn.functional.triplet_margin_loss` (PyTorch's eps= also taken)."""

    def __init__(self, margin: float = 1.0, p: float = 2.0, epsilon: float = 1e-6, swap: bool = False,
                 reduction: str = "mean", name: str | None = None, *, eps: float | None = None) -> None:
        super().__init__()
        self.margin, self.p, self.swap, self.reduction = margin, p, swap, reduction
        self.epsilon = either("TripletMarginLoss", "epsilon", epsilon, 1e-6, "eps", eps)

    def forward(self, input: Any, positive: Any, negative: Any) -> Any:
        return NF.triplet_margin_loss(input, positive, negative, self.margin, self.p, self.epsilon, self.swap,
                                      self.reduction)


class TripletMarginWithDistanceLoss(Layer):
    """The Layer form of `nn.functional.triplet_margin_with_distance_loss`."""

    def __init__(self, distance_function: Any = None, margin: float = 1.0, swap: bool = False,
                 reduction: str = "mean", name: str | None = None) -> None:
        super().__init__()
        self.distance_function, self.margin, self.swap, self.reduction = distance_function, margin, swap, reduction

    def forward(self, input: Any, positive: Any, negative: Any) -> Any:
        return NF.triplet_margin_with_distance_loss(input, positive, negative, self.distance_function, self.margin,
                                                    self.swap, self.reduction)


class CosineEmbeddingLoss(Layer):
    """The Layer form of `nn.functional.cosine_embedding_loss`."""

    def __init__(self, margin: float = 0.0, reduction: str = "mean", name: str | None = None) -> None:
        super().__init__()
        self.margin, self.reduction = margin, reduction

    def forward(self, input1: Any, input2: Any, label: Any) -> Any:
        return NF.cosine_embedding_loss(input1, input2, label, self.margin, self.reduction)


class SoftMarginLoss(_PairLoss):
    """The Layer form of `nn.functional.soft_margin_loss`."""

    function = staticmethod(NF.soft_margin_loss)


class GaussianNLLLoss(Layer):
    """The Layer form of `nn.functional.gaussian_nll_loss` (PyTorch's eps= also taken)."""

    def __init__(self, full: bool = False, epsilon: float = 1e-6, reduction: str = "mean", name: str | None = None,
                 *, eps: float | None = None) -> None:
        super().__init__()
        self.full, self.reduction = full, reduction
        self.epsilon = either("GaussianNLLLoss", "epsilon", epsilon, 1e-6, "eps", eps)

    def forward(self, input: Any, label: Any, variance: Any) -> Any:
        return NF.gaussian_nll_loss(input, label, variance, self.full, self.epsilon, self.reduction)


class HingeEmbeddingLoss(Layer):
    """The Layer form of `nn.functional.hinge_embedding_loss`."""

    def __init__(self, margin: float = 1.0, reduction: str = "mean", name: str | None = None) -> None:
        super().__init__()
        self.margin, self.reduction = margin, reduction

    def forward(self, input: Any, label: Any) -> Any:
        return NF.hinge_embedding_loss(input, label, self.margin, self.reduction)


class MultiLabelSoftMarginLoss(Layer):
    """The Layer form of `nn.functional.multi_label_soft_margin_loss` (a class weight)."""

    def __init__(self, weight: Any = None, reduction: str = "mean", name: str | None = None) -> None:
        super().__init__()
        self.weight, self.reduction = weight, reduction

    def forward(self, input: Any, label: Any) -> Any:
        return NF.multi_label_soft_margin_loss(input, label, self.weight, self.reduction)


class PoissonNLLLoss(Layer):
    """The Layer form of `nn.functional.poisson_nll_loss` (PyTorch's eps= also taken)."""

    def __init__(self, log_input: bool = True, full: bool = False, epsilon: float = 1e-8, reduction: str = "mean",
                 name: str | None = None, *, eps: float | None = None) -> None:
        super().__init__()
        self.log_input, self.full, self.reduction = log_input, full, reduction
        self.epsilon = either("PoissonNLLLoss", "epsilon", epsilon, 1e-8, "eps", eps)

    def forward(self, input: Any, label: Any) -> Any:
        return NF.poisson_nll_loss(input, label, self.log_input, self.full, self.epsilon, self.reduction)


class MultiMarginLoss(Layer):
    """The Layer form of `nn.functional.multi_margin_loss` (p, margin, a class weight)."""

    def __init__(self, p: int = 1, margin: float = 1.0, weight: Any = None, reduction: str = "mean",
                 name: str | None = None) -> None:
        super().__init__()
        self.p, self.margin, self.weight, self.reduction = p, margin, weight, reduction

    def forward(self, input: Any, label: Any) -> Any:
        return NF.multi_margin_loss(input, label, self.p, self.margin, self.weight, self.reduction)
