"""The launcher's call of a compiled kernel: by its address, with no linking (``units.py``).

Imported by generated launchers only (as ``nbx_launch``), so numbax imports no Numba.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core.errors import TypingError
from numba.extending import intrinsic


@intrinsic
def call(typingctx, address, result, arguments):
    """Call the kernel at ``address`` (an int64) with ``arguments`` (a tuple of arrays and
    scalars) and return its ``result`` (a scalar's Numba type, or None for a kernel that
    returns nothing). Every kernel takes one argument, an array of pointers
    (``units.KernelContext._function``): an array passes its data pointer, a scalar a
    pointer to its value, and a returned scalar a pointer to where it is stored. An array
    must be C-contiguous: the kernel rebuilds it from the pointer with its static shape."""
    for argument in arguments.types:
        if isinstance(argument, types.Array) and argument.layout != "C":
            raise TypingError(f"a kernel reads C-contiguous arrays, not {argument}")
    # A Numba type used as a value is typed as the class of its instances.
    returned = getattr(result, "instance_type", types.void)

    def codegen(context, builder, signature, values):
        pointer = ir.IntType(8).as_pointer()
        passed = []
        for k, argument in enumerate(signature.args[2].types):
            value = builder.extract_value(values[2], k)
            if isinstance(argument, types.Array):
                data = context.make_array(argument)(context, builder, value).data
            else:
                model = context.data_model_manager[argument]
                data = cgutils.alloca_once_value(builder, model.as_data(builder, value))
            passed.append(builder.bitcast(data, pointer))
        slot = None
        if returned != types.void:
            model = context.data_model_manager[returned]
            slot = cgutils.alloca_once(builder, model.get_data_type())
            passed.append(builder.bitcast(slot, pointer))
        table = cgutils.alloca_once(builder, pointer, size=max(len(passed), 1))
        for k, data in enumerate(passed):
            builder.store(data, builder.gep(table, [ir.Constant(ir.IntType(32), k)]))
        function_type = ir.FunctionType(ir.VoidType(), [pointer.as_pointer()])
        builder.call(builder.inttoptr(values[0], function_type.as_pointer()), [table])
        if slot is None:
            return context.get_dummy_value()
        return context.data_model_manager[returned].from_data(builder, builder.load(slot))

    return returned(address, result, arguments), codegen
