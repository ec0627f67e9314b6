"""The launcher's call of a compiled kernel: by its address, with no linking (``units.py``).

Imported by generated launchers only (as ``nbx_launch``), so numbax imports no Numba.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core.errors import TypingError
from numba.extending import intrinsic


@intrinsic
def call(typingctx, address, result, arguments):
    """Call the C function at ``address`` (an int64) with ``arguments`` (a tuple: an
    array passes its data pointer, a scalar its value) and return its ``result`` (a
    scalar's Numba type, or None for a function that returns nothing). An array must be
    C-contiguous: the kernel rebuilds it from the pointer with its static shape."""
    for argument in arguments.types:
        if isinstance(argument, types.Array) and argument.layout != "C":
            raise TypingError(f"a kernel reads C-contiguous arrays, not {argument}")
    # A Numba type used as a value is typed as the class of its instances.
    returned = getattr(result, "instance_type", types.void)

    def codegen(context, builder, signature, values):
        pointer = ir.IntType(8).as_pointer()
        passed, passed_types = [], []
        for k, argument in enumerate(signature.args[2].types):
            value = builder.extract_value(values[2], k)
            if isinstance(argument, types.Array):
                data = context.make_array(argument)(context, builder, value).data
                passed.append(builder.bitcast(data, pointer))
                passed_types.append(pointer)
            else:
                passed.append(value)
                passed_types.append(context.get_value_type(argument))
        return_type = ir.VoidType() if returned == types.void else context.get_value_type(returned)
        function_type = ir.FunctionType(return_type, passed_types)
        function = builder.inttoptr(values[0], function_type.as_pointer())
        returned_value = builder.call(function, passed)
        return context.get_dummy_value() if returned == types.void else returned_value

    return returned(address, result, arguments), codegen
