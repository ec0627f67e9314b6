"""``sort`` on the host's orders, between the kernels: a library sort, not a kernel.

On a GPU, CuPy sorts the device buffers where they are (``cupy.argsort`` is stable and
puts NaNs last, as NumPy's): the keys' order is built least significant key first, then
permutes every operand. Without CuPy a GPU program that sorts cannot run, and says which
package to install. Under the simulator the step copies its operands to the host and
runs the reference implementation, so the tests cover a program's sorts there too.
"""

from __future__ import annotations

from . import device
from .host_runners import RUNNERS
from .linalg import require_cupy
from .options import simulating


@RUNNERS.rule("sort")
def run_sort(executable, step, operands: list, stream) -> list:
    eqn = step.eqn
    # The operands' shape is the results': an operand may be the unreshaped buffer of a
    # reshape that the program dropped (``program.drop_views``).
    shape = eqn.outputs[0].aval.shape
    if simulating():
        arrays = [array.copy_to_host(stream=stream).reshape(shape) for array in operands]
        stream.synchronize()
        results = eqn.prim.impl(*arrays, **eqn.params)
        return [
            device.device_input(result, var.aval, stream)
            for result, var in zip(results, step.outputs, strict=True)
        ]
    require_cupy("sorts with CuPy (numpy.sort, argsort, median, quantile, unique, top_k are sorts)")
    return _cupy_sort(eqn, shape, operands, stream)


def _cupy_sort(eqn, shape, operands: list, stream) -> list:
    import cupy
    from numba import cuda

    stream.synchronize()  # CuPy runs on its own stream: the kernels before must be done
    axis, num_keys = eqn.params["dimension"], eqn.params["num_keys"]
    arrays = [cupy.asarray(operand).reshape(shape) for operand in operands]
    keys = arrays[:num_keys]
    order = cupy.argsort(keys[-1], axis=axis)
    for key in reversed(keys[:-1]):
        ranked = cupy.take_along_axis(key, order, axis=axis)
        order = cupy.take_along_axis(order, cupy.argsort(ranked, axis=axis), axis=axis)
    results = [cupy.take_along_axis(array, order, axis=axis).ravel() for array in arrays]
    cupy.cuda.get_current_stream().synchronize()
    return [cuda.as_cuda_array(result) for result in results]
