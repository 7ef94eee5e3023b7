"""precdetect.probe: the activations a forward pass reaches, module by module, in the model's current precision.

Weights predict an fp16 overflow; activations are where it happens (seed 001). probe() hooks every module, runs the
forward passes it is given, and records each module's largest |output| and |input| and their headroom to fp16's
largest value (65504) and fp8 E4M3's (448). The modules that hold parameters and whose output goes over fp16's limit
are the ones to keep in fp32 when the rest runs in fp16: they feed the keep list of the result's advice, which
check() computes with these measurements as evidence. Run it on the model as it trains or serves today (fp32 or
bf16): it names the module before any inf, where transformers' DebugUnderflowOverflow names it after one."""

import sys
import weakref
from collections.abc import Mapping

from precdetect.api import check
from precdetect.result import ScanResult

FP16_MAX = 65504.0
E4M3_MAX = 448.0


def probe(model, inputs, *, forward=None, **options) -> ScanResult:
    """Runs `model` on `inputs` (a mapping: model(**inputs); a tuple or list: model(*inputs); else model(inputs)), or
    calls `forward(inputs)` when given (a Lightning module's training_step, say), with no gradients, then checks the
    model as check() does with what was measured. `options` are check()'s. The result's `activations` lists every
    module measured; its advice's keep list names the ones over fp16's limit."""
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(model, torch.nn.Module):
        raise TypeError(f"probe() takes a torch nn.Module, not {type(model).__name__}")
    peaks = _measure(torch, model, inputs, forward)
    over = [{"module": name, "output": output, "input": inp} for name, (output, inp, holds) in peaks.items()
            if name and holds and output > FP16_MAX]
    result = check(model, activations=over, **options)
    result._model["activations"] = [_activation(name, output, inp, holds)
                                    for name, (output, inp, holds) in peaks.items()]
    return result


def _measure(torch, model, inputs, forward) -> dict:
    """{module name: (largest |output|, largest |input|, holds parameters itself)}, the model's own module first."""
    running = {}
    measured = {}  # id(tensor) -> (weak reference, peak): a module's input is the previous one's output, measured once

    def hook_for(name):
        def hook(module, args, output):
            out, inp = _largest(torch, output, measured), _largest(torch, args, measured)
            if name in running:
                out, inp = torch.maximum(out, running[name][0]), torch.maximum(inp, running[name][1])
            running[name] = (out, inp)
        return hook

    modules = dict(model.named_modules())
    handles = [module.register_forward_hook(hook_for(name)) for name, module in modules.items()]
    try:
        with torch.no_grad():
            if forward is not None:
                forward(inputs)
            elif isinstance(inputs, Mapping):
                model(**inputs)
            elif isinstance(inputs, (tuple, list)):
                model(*inputs)
            else:
                model(inputs)
    finally:
        for handle in handles:
            handle.remove()
    # One transfer at the end: the hooks kept their maxima on the device, so the forward pass never waits on them.
    return {name: (_finite(float(out)), _finite(float(inp)), any(True for _ in modules[name].parameters(recurse=False)))
            for name, (out, inp) in running.items()}


def _largest(torch, value, measured):
    """The largest magnitude among the floating tensors in `value` (a tensor, or tuples, lists and mappings of them,
    as model outputs are), as a 0-dim float32 tensor; NaN is no magnitude and counts as 0. A tensor still alive in
    `measured` is not reduced again (containers return their last child's output, modules take the previous one's)."""
    largest = torch.zeros((), dtype=torch.float32)
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, torch.Tensor):
            if item.is_floating_point() and item.numel() > 0:
                largest = torch.maximum(largest.to(item.device), _peak(torch, item, measured))
        elif isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, (tuple, list)):
            stack.extend(item)
    return largest


def _peak(torch, tensor, measured):
    known = measured.get(id(tensor))
    if known is not None and known[0]() is tensor:
        return known[1]
    peak = torch.nan_to_num(torch.linalg.vector_norm(tensor.detach(), ord=float("inf")).float(), nan=0.0)
    measured[id(tensor)] = (weakref.ref(tensor), peak)
    return peak


def _finite(value: float) -> float:
    """inf (the model already overflows in its own precision) as the largest double: JSON has no infinity."""
    return min(value, sys.float_info.max)


def _activation(name, output, inp, holds) -> dict:
    peak = max(output, inp)
    return {"module": name or "(model)", "output": output, "input": inp, "parameters": holds,
            "fp16_headroom": FP16_MAX / peak if peak > 0 else None,
            "e4m3_headroom": E4M3_MAX / peak if peak > 0 else None}
