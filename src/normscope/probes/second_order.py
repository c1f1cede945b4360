"""Exact second directional derivatives by forward-over-forward AD (``torch.func.jvp`` of a ``jvp``).

The radial drift needs ``c = (1/2) d^2/dt^2 f(theta + t v, x)`` at ``t = 0`` (docs/theory.md
section 6, step 2). A JVP of a JVP gives it exactly, in the model's own precision and with no step
size: the inner JVP maps ``theta -> (f(theta), J v)``, and the outer JVP of that map along the
same ``v`` returns ``(f, J v)`` as its primal and ``(J v, f''[v, v])`` as its tangent. One call
therefore yields ``z``, the first-order displacement ``a = J v`` and ``c``.

PyTorch's hand-written forward-AD rules of ``layer_norm`` and ``batch_norm`` are right to first
order but drop a term when they are themselves differentiated (pytorch/pytorch#196700, #196699:
a nested JVP of ``F.layer_norm`` on MiniLM is off by 10 % of ``||f''||``). :class:`ComposedNorms`
routes those two functions through their textbook compositions (mean, centred second moment,
``rsqrt``; every op of which has a correct second-order rule), only while a nested JVP runs.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["ComposedNorms", "second_directional"]


def _layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    dims = tuple(range(-len(tuple(normalized_shape)), 0))
    xc = x - x.mean(dims, keepdim=True)
    y = xc * (xc * xc).mean(dims, keepdim=True).add(eps).rsqrt()
    if weight is not None:
        y = y * weight
    return y + bias if bias is not None else y


def _batch_norm(x, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    shape = [1, -1] + [1] * (x.dim() - 2)
    if training:  # batch statistics (running statistics are not updated: the probe runs in eval mode)
        dims = [0] + list(range(2, x.dim()))
        mean = x.mean(dims, keepdim=True)
        var = ((x - mean) ** 2).mean(dims, keepdim=True)
    else:
        mean, var = running_mean.reshape(shape), running_var.reshape(shape)
    y = (x - mean) * (var + eps).rsqrt()
    if weight is not None:
        y = y * weight.reshape(shape)
    return y + bias.reshape(shape) if bias is not None else y


def _composed() -> dict:
    import torch.nn.functional as F

    return {F.layer_norm: _layer_norm, F.batch_norm: _batch_norm}


class ComposedNorms:
    """Context manager: ``F.layer_norm`` and ``F.batch_norm`` computed by their compositions.

    A :class:`torch.overrides.TorchFunctionMode` (built on first use); the forward values equal the
    fused kernels' to float rounding (layer norm: 4e-16 in float64). Needed for nested forward-mode
    AD only (pytorch/pytorch#196700, #196699); other functions pass through unchanged.
    """

    _mode_cls = None

    def __new__(cls):
        if cls._mode_cls is None:
            from torch.overrides import TorchFunctionMode

            table = _composed()

            class _Mode(TorchFunctionMode):
                def __torch_function__(self, func, types, args=(), kwargs=None):
                    fn = table.get(func)
                    return fn(*args, **(kwargs or {})) if fn is not None else func(*args, **(kwargs or {}))

            cls._mode_cls = _Mode
        return cls._mode_cls()


def second_directional(fn: Callable, theta: dict, v: dict):
    """``z = f(theta)``, ``a = J v`` and ``c = (1/2) f''[v, v]`` by one forward-over-forward pass.

    Parameters
    ----------
    fn : callable dict -> torch.Tensor
        ``theta -> f(theta)``, a tensor of shape (n, d) (e.g. a chunk of raw embeddings through
        ``torch.func.functional_call``).
    theta : dict of str -> torch.Tensor
        Parameters (the point of expansion).
    v : dict of str -> torch.Tensor
        Direction, same keys, shapes and dtypes as ``theta``.

    Returns
    -------
    z, a, c : torch.Tensor of shape (n, d), detached, in the parameters' dtype
        ``f(theta + t v) = z + t a + t^2 c + O(t^3)`` (the Taylor coefficients; ``c`` is what the
        central difference ``(f(theta + eps v) + f(theta - eps v) - 2 z) / (2 eps^2)`` estimates).

    Raises
    ------
    NotImplementedError, RuntimeError
        From torch when an op of ``fn`` has no forward-mode rule (the caller maps it to a
        ``ModelError``).
    """
    from torch.func import jvp

    def first(p):
        return jvp(fn, (p,), (v,))

    with ComposedNorms():
        (z, a), (_, h) = jvp(first, (theta,), (v,))
    return z.detach(), a.detach(), 0.5 * h.detach()
