"""The same function on less data: the first rows of a task's inputs, shared by the jailed tracer's confirmations
(pipeline.decontam.jailed, source text: `pipeline.inlining` pastes the marked part in place of its import line) and
the paraphrase calibration's verification (pipeline.decontam.calibration.paraphrase). Torch is imported by the
caller's process; nothing else is needed.
"""

# ---- inlined: from here


def batch_slice(inputs, rows=2, first_only=False):
    """The first `rows` of the tensor inputs along dim 0 when they share that size (the batch), or of the first
    tensor only (the rows of A in A @ B): the same function on less data (both sides get the same slice)."""
    import torch

    ts = [t for t in inputs if isinstance(t, torch.Tensor) and t.dim() > 0]
    if not ts or (not first_only and len({t.shape[0] for t in ts}) != 1) or ts[0].shape[0] <= rows:
        return inputs
    out, done = [], False
    for t in inputs:
        if isinstance(t, torch.Tensor) and t.dim() > 0 and not (first_only and done):
            out.append(t[:rows].clone())
            done = True
        else:
            out.append(t)
    return out


# ---- inlined: to here
