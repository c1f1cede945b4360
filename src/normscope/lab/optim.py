"""Optimizers with exactly decoupled weight decay, written out explicitly.

Every optimizer splits a step into a *direction* ``s_t`` (from the gradient and the optimizer
state) and the update ``theta <- (1 - eta lambda) theta - eta s_t``, i.e.
``theta - eta s_t - eta lambda theta`` (docs/theory.md assumption A2 for SGD; section 7 C2/C3 for
momentum and AdamW). Decay applies to every parameter (``theta_D = theta``), so a k-homogeneous
encoder has ``lambda_rad = k lambda`` exactly (E4). For a pretrained network the decay acts on a
stated mask ``theta_D`` (``apply(..., decay=flags)``): unmasked parameters get ``theta - eta s_t``.
"""

from __future__ import annotations

import torch

from normscope.errors import InputError

__all__ = ["DecoupledOptimizer", "SGD", "Momentum", "AdamW", "make_optimizer", "DEFAULTS"]

#: default (lr, weight_decay) per optimizer; eta*lambda = 1e-3 for the table defaults
DEFAULTS = {
    "table": {"sgd": (1.0, 1e-3), "momentum": (0.1, 1e-2), "adamw": (1e-2, 1e-1)},
    "mlp": {"sgd": (0.5, 2e-3), "momentum": (0.05, 2e-2), "adamw": (5e-3, 2e-1)},
}


class DecoupledOptimizer:
    """Base class: ``direction(grads)`` then ``apply(params, direction)``.

    Parameters
    ----------
    lr : float
        Learning rate eta (> 0).
    weight_decay : float
        Decoupled weight decay lambda (>= 0, ``lr * weight_decay < 1``).
    """

    name = "base"

    def __init__(self, lr: float, weight_decay: float):
        import math

        def num(x):
            try:
                return float(x)
            except (TypeError, ValueError):
                return math.nan

        if not (math.isfinite(num(lr)) and num(lr) > 0):
            raise InputError(f"lr must be a finite number > 0, got {lr!r}")
        if not (math.isfinite(num(weight_decay)) and num(weight_decay) >= 0):
            raise InputError(f"weight_decay must be a finite number >= 0, got {weight_decay!r}")
        if lr * weight_decay >= 1:
            raise InputError(f"lr * weight_decay must be < 1 (decay multiplies weights by 1 - lr*weight_decay), "
                             f"got {lr:g} * {weight_decay:g} = {lr * weight_decay:g}")
        self.lr = float(lr)
        self.weight_decay = float(weight_decay)

    def direction(self, grads: list[torch.Tensor]) -> list[torch.Tensor]:  # pragma: no cover - abstract
        raise NotImplementedError

    @torch.no_grad()
    def apply(self, params: list[torch.Tensor], direction: list[torch.Tensor], decay: list[bool] | None = None) -> None:
        """``theta <- (1 - eta lambda) theta - eta s`` in place.

        Parameters
        ----------
        params, direction : list of torch.Tensor
            Same shapes, in the same order.
        decay : list of bool, optional
            The decay mask theta_D, one flag per parameter: a parameter with ``False`` gets
            ``theta - eta s`` (no decay). Default: every parameter is decayed.
        """
        keep = 1.0 - self.lr * self.weight_decay
        flags = [True] * len(params) if decay is None else list(decay)
        if len(flags) != len(params):
            raise InputError(f"decay mask has {len(flags)} flags for {len(params)} parameters")
        for p, s, f in zip(params, direction, flags):
            if f:
                p.mul_(keep)
            p.add_(s, alpha=-self.lr)

    def state_dict(self) -> dict:
        """The optimizer's state (buffers and counters) for a checkpoint; tensors are not copied."""
        return {}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict`'s output (tensors are used as given)."""

    def step(self, params, grads) -> list[torch.Tensor]:
        """One full step; returns the direction used."""
        d = self.direction(grads)
        self.apply(params, d)
        return d


class SGD(DecoupledOptimizer):
    """Plain SGD: ``s_t = g_t``."""

    name = "sgd"

    def direction(self, grads):
        return grads


class Momentum(DecoupledOptimizer):
    """Heavy-ball momentum: ``m_t = beta m_{t-1} + g_t``, ``s_t = m_t`` (decay outside the buffer).

    One gradient's total displacement is ``eta g / (1 - beta)``, hence (E12).
    """

    name = "momentum"

    def __init__(self, lr, weight_decay, beta: float = 0.9):
        super().__init__(lr, weight_decay)
        if not 0 <= beta < 1:
            raise InputError(f"beta must be in [0, 1), got {beta!r}")
        self.beta = float(beta)
        self._buf = None

    def direction(self, grads):
        if self._buf is None:
            self._buf = [g.clone() for g in grads]
        else:
            for m, g in zip(self._buf, grads):
                m.mul_(self.beta).add_(g)
        return [m.clone() for m in self._buf]

    def state_dict(self) -> dict:
        return {"buf": self._buf}

    def load_state_dict(self, state: dict) -> None:
        self._buf = state.get("buf")


class AdamW(DecoupledOptimizer):
    """AdamW (Loshchilov & Hutter 2019) with bias correction: ``s_t = m_hat / (sqrt(v_hat) + eps)``."""

    name = "adamw"

    def __init__(self, lr, weight_decay, betas=(0.9, 0.999), eps: float = 1e-8):
        super().__init__(lr, weight_decay)
        self.b1, self.b2 = map(float, betas)
        self.eps = float(eps)
        self._m = self._v = None
        self._t = 0

    def direction(self, grads):
        if self._m is None:
            self._m = [torch.zeros_like(g) for g in grads]
            self._v = [torch.zeros_like(g) for g in grads]
        self._t += 1
        c1 = 1.0 - self.b1**self._t
        c2 = 1.0 - self.b2**self._t
        out = []
        for m, v, g in zip(self._m, self._v, grads):
            m.mul_(self.b1).add_(g, alpha=1 - self.b1)
            v.mul_(self.b2).addcmul_(g, g, value=1 - self.b2)
            out.append((m / c1) / ((v / c2).sqrt() + self.eps))
        return out

    def state_dict(self) -> dict:
        return {"m": self._m, "v": self._v, "t": self._t}

    def load_state_dict(self, state: dict) -> None:
        self._m, self._v, self._t = state.get("m"), state.get("v"), int(state.get("t", 0))


def make_optimizer(name: str, lr: float, weight_decay: float, **kw) -> DecoupledOptimizer:
    """Build ``"sgd"``, ``"momentum"`` (``beta``) or ``"adamw"`` (``betas``, ``eps``).

    Raises
    ------
    InputError
        Unknown name or invalid hyper-parameters.
    """
    classes = {"sgd": SGD, "momentum": Momentum, "adamw": AdamW}
    if name not in classes:
        raise InputError(f"optimizer must be one of {sorted(classes)}, got {name!r}")
    return classes[name](lr, weight_decay, **kw)
