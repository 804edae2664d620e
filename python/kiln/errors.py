"""Kiln's exceptions. Every failure a caller can cause is a KilnError with Kiln's one-line
message; the argument checks raise the subclasses that also are the builtin exception a
Python programmer expects (TypeError for a wrong dtype or a missing argument, ValueError for
a wrong shape, device or layout)."""


class KilnError(RuntimeError):
    """A failure reported by Kiln: the runtime (bundle load, launch checks, CUDA), the `kiln`
    binary (compile, tune), or the argument checks of a kernel callable."""


class KilnTypeError(KilnError, TypeError):
    """An argument of the wrong kind: wrong dtype, not a tensor, missing."""


class KilnValueError(KilnError, ValueError):
    """An argument of the right kind with a wrong value: rank, shape, symbol, device, strides."""


class KilnNoDevice(KilnError):
    """No CUDA driver library could be loaded, or there is no such device."""
