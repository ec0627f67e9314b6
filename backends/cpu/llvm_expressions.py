"""The expressions of a kernel's text as LLVM IR (``llvm_translate``): each a value and
its Numba type. Operators are typed by Numba's typing context and computed here; casts are
Numba's ``context.cast``; numbax's ``@intrinsic`` helpers are lowered by their own code
generators; its ``njit`` helpers are called by Numba's calling convention and their IR,
compiled once per installation and kept in the cache folder, linked into the kernel
(``llvm_helpers.library_function``). ``Unsupported`` for anything else."""

from __future__ import annotations

import ast
import builtins
import functools
import operator
from dataclasses import dataclass

import numpy as np
from llvmlite import ir

from .llvm_helpers import external_function, external_name, library_function


@dataclass(frozen=True)
class Scalar:
    """A scalar local of the kernel."""

    slot: ir.Value  # a stack slot (LLVM's mem2reg makes it a register)
    type: object  # numba type


class Unsupported(Exception):
    """The kernel's text uses something this translation has no rule for."""


# --- Numba's context and types -------------------------------------------------------------


@functools.cache
def numba_parts():
    from numba import types
    from numba.core import cgutils
    from numba.core.registry import cpu_target

    from . import gemm, intrinsics  # noqa: F401 - registers the BLAS symbols kernels call

    cpu_target.typing_context.refresh()
    cpu_target.target_context.refresh()
    return types, cgutils, cpu_target.typing_context, cpu_target.target_context


DTYPES = ("bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
DTYPES += ("float32", "float64")


def numba_type(name: str):
    types = numba_parts()[0]
    if name not in DTYPES:
        raise Unsupported(f"dtype {name}")
    return types.boolean if name == "bool_" else getattr(types, name)


_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
}
_COMPARE = {
    ast.Eq: (operator.eq, "=="),
    ast.NotEq: (operator.ne, "!="),
    ast.Lt: (operator.lt, "<"),
    ast.LtE: (operator.le, "<="),
    ast.Gt: (operator.gt, ">"),
    ast.GtE: (operator.ge, ">="),
}


@functools.cache
def _resolve(op, *operands):
    """Numba's signature of ``op`` of ``operands`` (its argument types are what to convert
    them to)."""
    from numba.core.errors import TypingError

    typing = numba_parts()[2]
    try:
        signature = typing.resolve_function_type(op, operands, {})
    except TypingError:
        signature = None
    if signature is None:
        raise Unsupported(f"{op.__name__} of {operands}")
    return signature


# The ufuncs the kernel writers call on real scalars whose Numba implementation is an
# LLVM intrinsic or a libm call (``Expressions._scalar_ufunc``); others, ``np.hypot`` for
# one, compile a helper through Numba's calling convention.
SCALAR_UFUNCS = (np.power, np.arctan2, np.rint)


class Expressions:
    """The translator's expressions (a mixin of ``llvm_translate.Translator``)."""

    def _expression(self, node):
        method = getattr(self, f"_e_{type(node).__name__}", None)
        if method is None:
            raise Unsupported(f"expression {type(node).__name__}")
        return method(node)

    def _e_Constant(self, node):
        types = self.types
        if isinstance(node.value, bool):
            return ir.Constant(ir.IntType(1), int(node.value)), types.boolean
        if isinstance(node.value, int):
            return int64(node.value), types.int64
        if isinstance(node.value, float):
            return ir.Constant(ir.DoubleType(), node.value), types.float64
        raise Unsupported(f"constant {node.value!r}")

    def _e_Name(self, node):
        local = self.scope.get(node.id)
        if isinstance(local, Scalar):
            return self.builder.load(local.slot), local.type
        if node.id in self.constants:
            kind, value = self.constants[node.id]
            return self.context.get_constant(kind, value), kind
        raise Unsupported(f"name {node.id}")

    def _e_Attribute(self, node):
        if isinstance(node.value, ast.Name) and node.value.id == "np":
            if node.attr in ("inf", "nan"):
                return ir.Constant(ir.DoubleType(), float(node.attr)), self.types.float64
        raise Unsupported("attribute")

    def _e_Subscript(self, node):
        array, index = self._element(node)
        value = self.context.unpack_value(self.builder, array.dtype, self._address(array, index))
        return value, array.dtype

    def _e_UnaryOp(self, node):
        if isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
            return self._e_Constant(ast.Constant(-node.operand.value))  # a literal's sign
        value, kind = self._expression(node.operand)
        types, builder = self.types, self.builder
        if isinstance(node.op, ast.Not):
            return builder.not_(self._truth(value, kind)), types.boolean
        if isinstance(node.op, ast.UAdd):
            return value, kind
        op = {ast.USub: operator.neg, ast.Invert: operator.invert}[type(node.op)]
        result = _resolve(op, kind).return_type  # Numba's: the operand converted to it
        value = self._cast(value, kind, result)
        if isinstance(result, types.Float) and op is operator.neg:
            return builder.fneg(value), result
        if isinstance(result, (types.Integer, types.Boolean)):
            if op is operator.neg:
                return builder.sub(ir.Constant(value.type, 0), value), result
            return builder.not_(value), result
        raise Unsupported(f"unary {type(node.op).__name__} of {kind}")

    def _e_BinOp(self, node):
        op = _BINARY.get(type(node.op))
        if op is None:
            raise Unsupported(f"operator {type(node.op).__name__}")
        (left, left_type), (right, right_type) = map(self._expression, (node.left, node.right))
        signature = _resolve(op, left_type, right_type)
        result = signature.return_type
        left, right = (
            self._cast(value, kind, target)
            for value, kind, target in zip(
                (left, right), (left_type, right_type), signature.args, strict=True
            )
        )
        kind = signature.args[0]
        if isinstance(result, self.types.Float) and isinstance(kind, self.types.Integer):
            left, right = self._cast(left, kind, result), self._cast(right, kind, result)
            kind = result
        return self._arithmetic(op, left, right, kind, node.right), result

    def _arithmetic(self, op, left, right, kind, right_node):
        types, builder = self.types, self.builder
        if isinstance(kind, types.Float):
            instruction = {
                operator.add: builder.fadd,
                operator.sub: builder.fsub,
                operator.mul: builder.fmul,
                operator.truediv: builder.fdiv,
            }.get(op)
            if instruction is None:
                raise Unsupported(f"{op.__name__} of floats")
            return instruction(left, right)
        if isinstance(kind, (types.Integer, types.Boolean)):
            simple = {
                operator.add: builder.add,
                operator.sub: builder.sub,
                operator.mul: builder.mul,
                operator.and_: builder.and_,
                operator.or_: builder.or_,
                operator.xor: builder.xor,
            }.get(op)
            if op in (operator.add, operator.sub, operator.mul) and self.indexing:
                # An index's arithmetic: one that overflowed would be out of bounds, so it
                # does not overflow (``nsw``), which lets LLVM see ``2 + i`` is never
                # negative, drop the index's wrap-around and read the row as a vector.
                return simple(left, right, flags=("nsw",))
            if simple is not None:
                return simple(left, right)
            if op in (operator.floordiv, operator.mod) and _positive_literal(right_node):
                # Python's floor division by a positive constant: no zero, no -1.
                signed = getattr(kind, "signed", False)
                quotient = (builder.sdiv if signed else builder.udiv)(left, right)
                remainder = (builder.srem if signed else builder.urem)(left, right)
                if signed:
                    below = builder.icmp_signed("<", remainder, ir.Constant(left.type, 0))
                    quotient = builder.select(
                        below, builder.sub(quotient, ir.Constant(left.type, 1)), quotient
                    )
                    remainder = builder.select(below, builder.add(remainder, right), remainder)
                return quotient if op is operator.floordiv else remainder
        raise Unsupported(f"{op.__name__} of {kind}")

    def _e_Compare(self, node):
        # ``a < b < c``: each comparison in turn, stopping at the first false one.
        if len(node.ops) == 1:
            values = [self._expression(e) for e in (node.left, node.comparators[0])]
            return self._compare(node.ops[0], *values), self.types.boolean
        values = []
        left = node.left
        builder = self.builder
        end = builder.append_basic_block("compare_end")
        left_value = self._expression(left)
        for k, (op, right) in enumerate(zip(node.ops, node.comparators, strict=True)):
            right_value = self._expression(right)
            test = self._compare(op, left_value, right_value)
            values.append((test, builder.block))
            if k < len(node.ops) - 1:
                following = builder.append_basic_block("compare_next")
                builder.cbranch(test, following, end)
                builder.position_at_end(following)
            else:
                builder.branch(end)
            left_value = right_value
        builder.position_at_end(end)
        phi = builder.phi(ir.IntType(1))
        for _, block in values[:-1]:
            phi.add_incoming(ir.Constant(ir.IntType(1), 0), block)
        phi.add_incoming(values[-1][0], values[-1][1])
        return phi, self.types.boolean

    def _compare(self, op, left_value, right_value):
        entry = _COMPARE.get(type(op))
        if entry is None:
            raise Unsupported(f"comparison {type(op).__name__}")
        op, symbol = entry
        (left, left_type), (right, right_type) = left_value, right_value
        signature = _resolve(op, left_type, right_type)
        kind = signature.args[0]
        left, right = self._cast(left, left_type, kind), self._cast(right, right_type, kind)
        if isinstance(kind, self.types.Float):
            return (
                self.builder.fcmp_unordered(symbol, left, right)
                if symbol == "!="
                else (self.builder.fcmp_ordered(symbol, left, right))
            )
        if isinstance(kind, self.types.Boolean) or not getattr(kind, "signed", True):
            return self.builder.icmp_unsigned(symbol, left, right)
        if isinstance(kind, self.types.Integer):
            return self.builder.icmp_signed(symbol, left, right)
        raise Unsupported(f"comparison of {kind}")

    def _e_BoolOp(self, node):
        # Python's ``and``/``or`` of truth values, short-circuiting.
        builder = self.builder
        end = builder.append_basic_block("boolean_end")
        incoming = []
        for k, operand in enumerate(node.values):
            truth = self._truth(*self._expression(operand))
            incoming.append((truth, builder.block))
            if k < len(node.values) - 1:
                following = builder.append_basic_block("boolean_next")
                if isinstance(node.op, ast.And):
                    builder.cbranch(truth, following, end)
                else:
                    builder.cbranch(truth, end, following)
                builder.position_at_end(following)
            else:
                builder.branch(end)
        builder.position_at_end(end)
        phi = builder.phi(ir.IntType(1))
        for truth, block in incoming:
            phi.add_incoming(truth, block)
        return phi, self.types.boolean

    def _e_IfExp(self, node):
        condition = self._truth(*self._expression(node.test))
        builder = self.builder
        results = []
        with builder.if_else(condition) as (then, otherwise):
            with then:
                results.append((*self._expression(node.body), builder.block))
            with otherwise:
                results.append((*self._expression(node.orelse), builder.block))
        (a, a_type, _), (b, b_type, _) = results
        if a_type != b_type:
            raise Unsupported("a conditional expression of two types")
        phi = builder.phi(a.type)
        for value, _, block in results:
            phi.add_incoming(value, block)
        return phi, a_type

    def _e_Tuple(self, node):
        values = [self._expression(e) for e in node.elts]
        kinds = [k for _, k in values]
        if len(set(kinds)) != 1:
            raise Unsupported("a tuple of mixed types")
        kind = self.types.UniTuple(kinds[0], len(kinds))
        return self.cgutils.pack_array(self.builder, [v for v, _ in values]), kind

    def _e_Call(self, node):
        return self._call(node)

    # calls

    def _callee(self, node):
        if isinstance(node, ast.Name):
            if node.id in self.modules:
                return self.modules[node.id]
            if node.id in self.helpers:
                return self.helpers[node.id]
            if node.id in ("range", "abs", "min", "max", "int", "float", "bool"):
                return getattr(builtins, node.id)
            raise Unsupported(f"call of {node.id}")
        if isinstance(node, ast.Attribute):
            owner = self._callee(node.value)
            if owner is None or not hasattr(owner, node.attr):
                raise Unsupported(f"call of {node.attr}")
            return getattr(owner, node.attr)
        raise Unsupported("call of an expression")

    def _call(self, node):
        if node.keywords:
            raise Unsupported("keyword arguments")
        function = self._callee(node.func)
        if isinstance(function, ast.FunctionDef):
            returned = self.inline(function, node.args)
            return returned if returned is not None else (None, self.types.none)
        types = self.types
        if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
            if node.func.value.id == "np" and node.func.attr in DTYPES:
                (value,) = (self._expression(a) for a in node.args)
                target = numba_type(node.func.attr)
                return self._cast(*value, target), target
        if function is np.sqrt or function is abs:
            ((value, kind),) = (self._expression(a) for a in node.args)
            if function is abs and not isinstance(kind, types.Float):
                result = _resolve(abs, kind).return_type
                value = self._cast(value, kind, result)
                if not getattr(result, "signed", False):
                    return value, result
                negative = self.builder.icmp_signed("<", value, ir.Constant(value.type, 0))
                negated = self.builder.sub(ir.Constant(value.type, 0), value)
                return self.builder.select(negative, negated, value), result
            if not isinstance(kind, (types.Float, types.Integer)):
                raise Unsupported(f"{function.__name__} of {kind}")
            if not isinstance(kind, types.Float):
                value, kind = self._cast(value, kind, types.float64), types.float64
            name = "llvm.sqrt" if function is np.sqrt else "llvm.fabs"
            intrinsic = self.module_ir.declare_intrinsic(name, [value.type])
            return self.builder.call(intrinsic, [value]), kind
        if function in (min, max):
            values = [self._expression(a) for a in node.args]
            if len(values) != 2 or not all(isinstance(k, types.Integer) for _, k in values):
                raise Unsupported("min/max of what are not two integers")
            signature = _resolve(operator.lt, values[0][1], values[1][1])
            kind = signature.args[0]
            if not isinstance(kind, types.Integer):  # uint64 with int64: floats, in Numba
                raise Unsupported(f"{function.__name__} of {values[0][1]} and {values[1][1]}")
            a, b = (self._cast(v, k, kind) for v, k in values)
            compare = self.builder.icmp_signed if kind.signed else self.builder.icmp_unsigned
            pick = compare("<" if function is min else ">", b, a)
            return self.builder.select(pick, b, a), kind
        if function in (int, float, bool):
            ((value, kind),) = (self._expression(a) for a in node.args)
            target = {int: types.int64, float: types.float64, bool: types.boolean}[function]
            return self._cast(value, kind, target), target
        from numba.core.dispatcher import Dispatcher
        from numba.core.extending import _Intrinsic

        if function in SCALAR_UFUNCS:
            return self._scalar_ufunc(function, node.args)
        if isinstance(function, _Intrinsic):
            return self._intrinsic(function, node.args)
        if isinstance(function, Dispatcher):
            return self._njit(function, node.args)
        raise Unsupported(f"call of {ast.unparse(node.func)}")

    def _operand(self, node):
        """A call's argument: a scalar, a tuple, or an array as Numba's array struct."""
        array = self._array_expression(node)
        if array is None:
            return self._expression(node)
        types, context, builder = self.types, self.context, self.builder
        from numba.np.arrayobj import make_array, populate_array

        kind = types.Array(array.dtype, len(array.shape), "C")
        value = make_array(kind)(context, builder)
        size = itemsize(array.dtype)
        populate_array(
            value,
            data=array.pointer,
            shape=[int64(n) for n in array.shape],
            strides=[int64(s * size) for s in array.strides],
            itemsize=int64(size),
            meminfo=None,
        )
        return value._getvalue(), kind

    def _intrinsic(self, function, arguments):
        values = [self._operand(a) for a in arguments]
        typed = function._defn(self.typing, *[k for _, k in values])
        if typed is None:
            raise Unsupported(f"{function._name} of {[k for _, k in values]}")
        signature, codegen = typed
        converted = [
            self._cast(v, k, target) for (v, k), target in zip(values, signature.args, strict=True)
        ]
        result = codegen(self.context, self.builder, signature, converted)
        return result, signature.return_type

    def _call_external(self, function, values) -> tuple:
        """A call by symbol of the parallel helper ``function`` (``external_function``)."""
        argtypes = tuple(k for _, k in values)
        name = external_name(function, argtypes)
        llvm_name, result = external_function(name)
        self.externals[llvm_name] = name
        return self._call_numba_function(llvm_name, result, values)

    def _call_numba_function(self, llvm_name: str, result, values) -> tuple:
        argtypes = tuple(k for _, k in values)
        call_conv = self.context.call_conv
        signature_type = call_conv.get_function_type(result, argtypes)
        callee = self.cgutils.get_or_insert_function(self.module_ir, signature_type, llvm_name)
        _, value = call_conv.call_function(
            self.builder, callee, result, argtypes, [v for v, _ in values]
        )
        return value, result

    def _scalar_ufunc(self, function: np.ufunc, arguments):
        """One of ``SCALAR_UFUNCS`` of real scalars, typed and lowered by Numba's own
        implementation (``numba.np.npyfuncs``), as in Numba's kernels."""
        values = [self._expression(a) for a in arguments]
        if not all(isinstance(k, self.types.Number) for _, k in values):
            raise Unsupported(f"{function.__name__} of what are not scalars")
        signature = _resolve(function, *(k for _, k in values))
        floats = (*signature.args, signature.return_type)
        if not all(isinstance(k, self.types.Float) for k in floats):
            # Numba's integer and complex implementations call helpers it compiles.
            raise Unsupported(f"{function.__name__} of {signature.args}")
        casted = [self._cast(v, k, t) for (v, k), t in zip(values, signature.args, strict=True)]
        try:
            implementation = self.context.get_function(function, signature)
        except NotImplementedError as error:
            raise Unsupported(f"{function.__name__} of {signature.args}: {error}") from error
        # An implementation may compile a helper into a library of its own to be linked
        # (an integer power): the kernel then has no rule here, Numba compiles it.
        library = self.context.codegen().create_library(f"numbax_{function.__name__}")
        with self.context.push_code_library(library):
            result = implementation(self.builder, casted)
        if library._linking_libraries:
            raise Unsupported(f"{function.__name__} of {signature.args} links a library")
        return result, signature.return_type

    def _njit(self, function, arguments):
        """A call of one of numbax's ``njit`` helpers, by Numba's calling convention: its
        IR linked in (LLVM inlines it; a math function's loop vectorises), or, for a
        parallel one, a call by symbol of the code Numba compiled and cached (its IR is
        large and holds the parallel runtime's globals), resolved as the kernel loads."""
        values = [self._operand(a) for a in arguments]
        if function.targetoptions.get("parallel"):
            return self._call_external(function, values)
        argtypes = tuple(k for _, k in values)
        llvm_name, result, text = library_function(function, argtypes)
        self.libraries[llvm_name] = text
        return self._call_numba_function(llvm_name, result, values)

    # conversions

    def _cast(self, value, kind, target):
        if kind == target:
            return value
        if isinstance(kind, self.types.BaseTuple) or isinstance(target, self.types.BaseTuple):
            raise Unsupported(f"{kind} as {target}")
        return self.context.cast(self.builder, value, kind, target)

    def _truth(self, value, kind):
        return self._cast(value, kind, self.types.boolean)


def itemsize(dtype) -> int:
    return 1 if dtype == numba_parts()[0].boolean else np.dtype(str(dtype)).itemsize


def int64(value: int) -> ir.Constant:
    return ir.Constant(ir.IntType(64), value)


def _positive_literal(node) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, int) and node.value > 0
