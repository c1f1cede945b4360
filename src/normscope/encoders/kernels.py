"""oneDNN matrix products for float32 inference on CPU.

PyTorch's CPU wheels send a float32 ``torch.nn.functional.linear`` to MKL's sgemm. On CPUs where
MKL does not take its AVX-512 path (AMD EPYC among them), oneDNN's matmul, which PyTorch ships and
exposes as ``torch.ops.mkldnn._linear_pointwise`` (the op its own compiler emits for CPU linear
layers), runs the same products about twice as fast. :class:`OneDNNLinear` is a
``torch.overrides.TorchFunctionMode`` that routes ``F.linear`` calls to it, only where that is
exactly an inference-time float32 product:

- the call runs under ``torch.inference_mode`` (the op has no autograd formula, so a graph that
  differentiates the model, such as the probes' ``jvp`` and backward passes, never reaches it);
- input, weight and bias are float32 CPU tensors, the input has at least one element, and
  ``torch.autocast`` is off on CPU (a bf16 run keeps autocast's kernels).

Anything else falls through to ``F.linear`` unchanged. The products are the same up to float32
summation order: MiniLM-L6 vectors of SciFact titles and abstracts under the two kernels agree to
1.4e-6 relative (norms to 4.8e-7; ``benchmarks/embed_throughput.py``, which also times them against
each other as "aten kernels"), and ``tests/test_kernels.py`` checks both against a float64 copy of the model.
"""

from __future__ import annotations

import contextlib
import functools

from normscope.validate import check_choice

__all__ = ["LINEAR_KERNELS", "OneDNNLinear", "linear_kernel_context", "onednn_linear_available"]

#: Kernels :attr:`normscope.encoders.base.TorchEncoder.linear_kernel` accepts: ``"onednn"``
#: (:class:`OneDNNLinear` where it applies) or ``"aten"`` (PyTorch's default dispatch, MKL on CPU).
LINEAR_KERNELS = ("onednn", "aten")


@functools.cache
def onednn_linear_available() -> bool:
    """Whether this torch build has a working oneDNN linear op (checked once against ``F.linear``).

    Returns
    -------
    bool
        True when ``torch.backends.mkldnn`` is available, ``torch.ops.mkldnn._linear_pointwise``
        exists, and on a small float32 example (3 x 5 input, 4 x 5 weight, with and without bias,
        under ``torch.inference_mode``) it equals ``F.linear`` to 1e-5 absolute.
    """
    import torch

    if not torch.backends.mkldnn.is_available():
        return False
    try:
        op = torch.ops.mkldnn._linear_pointwise
        g = torch.Generator().manual_seed(0)
        x, w, b = (torch.randn(*s, generator=g) for s in ((3, 5), (4, 5), (4,)))
        with torch.inference_mode():
            ok = all(torch.allclose(op(x, w, bias, "none", [], ""), torch.nn.functional.linear(x, w, bias),
                                    rtol=0.0, atol=1e-5) for bias in (b, None))
    except (AttributeError, RuntimeError):
        return False
    return bool(ok)


@functools.cache
def _mode_class():
    """The ``TorchFunctionMode`` subclass behind :class:`OneDNNLinear`, built once (torch is imported here,
    not when :mod:`normscope.encoders` is, so the CLI starts without it)."""
    import torch
    from torch.overrides import TorchFunctionMode

    linear = torch.nn.functional.linear
    op = torch.ops.mkldnn._linear_pointwise
    f32 = torch.float32

    def eligible(x, w, b) -> bool:  # an inference-time float32 CPU product, outside autocast
        return (torch.is_inference_mode_enabled() and not torch.is_autocast_enabled("cpu")
                and isinstance(x, torch.Tensor) and isinstance(w, torch.Tensor)
                and x.dtype == f32 and w.dtype == f32 and x.device.type == "cpu" and w.device.type == "cpu"
                and w.dim() == 2 and x.dim() >= 1 and x.numel() > 0
                and (b is None or (isinstance(b, torch.Tensor) and b.dtype == f32 and b.device.type == "cpu")))

    class OneDNNLinearMode(TorchFunctionMode):
        calls = 0

        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func is linear:
                x, w = args[0], (args[1] if len(args) > 1 else kwargs.get("weight"))
                b = args[2] if len(args) > 2 else kwargs.get("bias")
                if eligible(x, w, b):
                    self.calls += 1
                    return op(x, w, b, "none", [], "")
            return func(*args, **kwargs)

    return OneDNNLinearMode


class OneDNNLinear:
    """``TorchFunctionMode`` sending eligible ``F.linear`` calls to oneDNN (see the module docstring).

    ``OneDNNLinear()`` returns an instance of a ``torch.overrides.TorchFunctionMode`` subclass (built once, on
    first use); enter it with ``with``. Its ``calls`` counts the products routed to oneDNN. Prefer
    :func:`linear_kernel_context`, which checks first that this torch build has the op.
    """

    def __new__(cls):
        return _mode_class()()


def linear_kernel_context(kernel: str = "onednn"):
    """Context manager under which float32 CPU inference uses ``kernel`` for ``F.linear``.

    Parameters
    ----------
    kernel : {"onednn", "aten"}
        ``"onednn"``: an :class:`OneDNNLinear` mode where :func:`onednn_linear_available`, else a
        no-op; ``"aten"``: a no-op (PyTorch's default kernels).

    Raises
    ------
    normscope.errors.InputError
        ``kernel`` is not one of :data:`LINEAR_KERNELS`.
    """
    check_choice("linear_kernel", kernel, LINEAR_KERNELS)
    if kernel == "onednn" and onednn_linear_available():
        return OneDNNLinear()
    return contextlib.nullcontext()
