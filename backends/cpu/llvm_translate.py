"""A kernel's text (``units``) as an LLVM module: the statements, arrays and loops; the
expressions are ``llvm_expressions``'. See ``llvm_kernels`` for the language and why."""

from __future__ import annotations

import ast
import functools
import importlib
import math
from dataclasses import dataclass

import numpy as np
from llvmlite import ir
from numba import carray, prange

from . import fastmath
from .intrinsics import shaped_view
from .llvm_expressions import (
    DTYPES,
    Expressions,
    Scalar,
    Unsupported,
    int64,
    itemsize,
    numba_parts,
    numba_type,
)
from .llvm_helpers import LOCK
from .parallel_chunks import run_chunks
from .scalar import MATHLIB


@dataclass(frozen=True)
class _Array:
    pointer: ir.Value  # to the first element
    shape: tuple[int, ...]
    dtype: object  # numba type of the elements

    @property
    def strides(self) -> tuple[int, ...]:  # in elements, C order
        strides, step = [], 1
        for n in reversed(self.shape):
            strides.append(step)
            step *= n
        return tuple(reversed(strides))


# A loop of constant bounds this short with no loop inside is unrolled in full: its
# iterations' values then stay in registers (a 3-wide accumulator in a reduction kept
# 3x faster than in a loop), as LLVM's own heuristics would; those heuristics are off
# (``llvm_kernels.optimised``): they also unrolled loops around vectorised loops, which
# cost more compile time than the speed it bought.
UNROLL_TRIP_COUNT = 16


def _unrolled(node: ast.For, start, stop, step: int) -> bool:
    if not (isinstance(start, ir.Constant) and isinstance(stop, ir.Constant)):
        return False
    trips = max(0, -(-(stop.constant - start.constant) // step))
    nested = any(isinstance(n, (ast.For, ast.While)) for b in node.body for n in ast.walk(b))
    return trips <= UNROLL_TRIP_COUNT and not nested


class _LoopID(ir.values.MDValue):
    """``distinct !{!self, operands}``: LLVM identifies a loop's metadata by a node whose
    first operand is itself, which ``Module.add_metadata`` cannot make."""

    def descr(self, buf):
        operands = ", ".join([self.get_reference(), *(op.get_reference() for op in self.operands)])
        buf += (f"distinct !{{ {operands} }}", "\n")


# --- the translation -----------------------------------------------------------------------


class Translator(Expressions):
    def __init__(self, source: str, name: str):
        self.types, self.cgutils, self.typing, self.context = numba_parts()
        self.tree = ast.parse(source)
        self.name = name
        self.modules: dict[str, object] = {}
        self.constants: dict[str, tuple] = {}  # module-level name -> (numba type, value)
        self.libraries: dict[str, str] = {}  # llvm name -> IR of a linked njit function
        self.externals: dict[str, tuple] = {}  # llvm name -> a helper called by symbol
        self.helpers: dict[str, ast.FunctionDef] = {}  # functions the kernel calls inline
        self.loop_depth = 0
        self.indexing = 0  # inside an array index's expression
        self.returned = None  # (value, type) of an inlined function's ``return``
        self.function = None
        for statement in self.tree.body:
            self._module_statement(statement)
        if self.function is None:
            raise Unsupported(f"no function {name}")

    # module level

    def _module_statement(self, statement) -> None:
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
            return  # the docstring
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            self._import(statement)
        elif isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            (target,) = statement.targets
            if not isinstance(target, ast.Name):
                raise Unsupported("module-level assignment")
            if target.id not in ("PARALLEL", "SIGNATURE"):
                self.constants[target.id] = self._constant(statement.value)
        elif isinstance(statement, ast.FunctionDef):
            if statement.name == self.name:
                self.function = statement
            elif statement.name == f"{self.name}_loops":  # a parallel kernel's loops
                self.helpers[statement.name] = statement
            else:
                raise Unsupported(f"function {statement.name}")
        else:
            raise Unsupported(f"module statement {ast.dump(statement)[:60]}")

    def _import(self, statement) -> None:
        for alias in statement.names:
            local = alias.asname or alias.name
            if isinstance(statement, ast.Import):
                self.modules[local] = importlib.import_module(alias.name)
            elif (statement.module, alias.name) == (MATHLIB, "functions"):
                # Numba kernels call ``mathlib``'s wrappers (each compiled and cached once
                # for them); a translated kernel links the functions they wrap.
                self.modules[local] = fastmath
            else:
                module = importlib.import_module(statement.module)
                value = getattr(module, alias.name, None)
                if value is None:
                    value = importlib.import_module(f"{statement.module}.{alias.name}")
                self.modules[local] = value

    def _constant(self, node) -> tuple:
        """``np.float32(2.0)``, ``np.float32(-np.inf)``: (numba type, Python value)."""
        if not (isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords):
            raise Unsupported("a module constant that is not np.<dtype>(value)")
        dtype = self._np_dtype(node.func)
        value = ast.literal_eval(self._inf(node.args[0]))
        return numba_type(dtype), getattr(np, dtype)(value).item()

    def _inf(self, node):
        """``np.inf``/``np.nan`` as literals ``literal_eval`` reads."""

        class Literals(ast.NodeTransformer):
            def visit_Attribute(self, attribute):
                if isinstance(attribute.value, ast.Name) and attribute.value.id == "np":
                    if attribute.attr in ("inf", "nan"):
                        return ast.Constant(float(attribute.attr))
                raise Unsupported("an attribute in a constant")

        return Literals().visit(node)

    def _np_dtype(self, func) -> str:
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            if func.value.id == "np" and func.attr in DTYPES:
                return func.attr
        raise Unsupported("not a NumPy dtype")

    # the function

    def module(self) -> ir.Module:
        module = ir.Module(name=self.name)
        import llvmlite.binding as llvm

        module.triple = llvm.get_process_triple()
        pointer = ir.IntType(8).as_pointer()
        function = ir.Function(
            module, ir.FunctionType(ir.VoidType(), [pointer.as_pointer()]), self.name
        )
        self.module_ir = module
        self.builder = ir.IRBuilder(function.append_basic_block("entry"))
        self.table = function.args[0]
        self.scope: dict[str, object] = {}
        (parameter,) = [a.arg for a in self.function.args.args]
        self.table_name = parameter
        self.scratch: list = []
        self.inlining = False
        self._block(self.function.body)
        self._free_scratch()
        self.builder.ret_void()
        return module

    def _free_scratch(self) -> None:
        for memory in self.scratch:
            self.builder.call(self._c_function("free"), [memory])

    def _c_function(self, name: str):
        pointer = ir.IntType(8).as_pointer()
        signature = {
            "malloc": ir.FunctionType(pointer, [ir.IntType(64)]),
            "free": ir.FunctionType(ir.VoidType(), [pointer]),
        }[name]
        return self.cgutils.get_or_insert_function(self.module_ir, signature, name)

    def _block(self, statements) -> None:
        for statement in statements:
            if self.returned is not None:
                raise Unsupported("code after a return")
            self._statement(statement)

    def inline(self, function: ast.FunctionDef, arguments) -> tuple | None:
        """The call of a function of the kernel's module (a parallel kernel's loops),
        written in place: its parameters bound to the arguments' arrays and values; what
        it returns, or None."""
        if self.inlining or self.loop_depth:
            raise Unsupported("a call of the kernel's loops inside a loop or another call")
        parameters = [a.arg for a in function.args.args]
        if len(parameters) != len(arguments):
            raise Unsupported(f"a call of {function.name} with other arguments")
        scope = {}
        for parameter, argument in zip(parameters, arguments, strict=True):
            array = self._array_expression(argument)
            if array is None:
                value, kind = self._expression(argument)
                slot = self.cgutils.alloca_once_value(self.builder, value, name=parameter)
                array = Scalar(slot, kind)
            scope[parameter] = array
        outer, self.scope, self.inlining = self.scope, scope, True
        try:
            self._block(function.body)
            returned, self.returned = self.returned, None
        finally:
            self.scope, self.inlining = outer, False
        return returned

    def _statement(self, node) -> None:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            self._assign(node.targets[0], node.value)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            value = ast.BinOp(ast.Name(node.target.id, ast.Load()), node.op, node.value)
            self._assign(node.target, value)
        elif isinstance(node, ast.For):
            self._for(node)
        elif isinstance(node, ast.If):
            self._if(node)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            self._call(node.value)
        elif isinstance(node, ast.Pass):
            pass
        elif isinstance(node, ast.Return) and self.inlining and node.value is not None:
            self.returned = self._expression(node.value)
        else:
            raise Unsupported(f"statement {type(node).__name__}")

    def _assign(self, target, value) -> None:
        if isinstance(target, ast.Name):
            array = self._array_expression(value)
            if array is not None:
                self.scope[target.id] = array
            else:
                self._store_local(target.id, *self._expression(value))
        elif isinstance(target, ast.Tuple):
            result, kind = self._expression(value)
            if not isinstance(kind, self.types.BaseTuple) or len(kind) != len(target.elts):
                raise Unsupported("unpacking what is not a tuple")
            for k, (element, element_type) in enumerate(zip(target.elts, kind, strict=True)):
                if not isinstance(element, ast.Name):
                    raise Unsupported("unpacking into what is not a name")
                self._store_local(element.id, self.builder.extract_value(result, k), element_type)
        elif isinstance(target, ast.Subscript):
            array, index = self._element(target)
            value, kind = self._expression(value)
            value = self._cast(value, kind, array.dtype)
            self.context.pack_value(self.builder, array.dtype, value, self._address(array, index))
        else:
            raise Unsupported(f"assignment to {type(target).__name__}")

    def _store_local(self, name: str, value, kind) -> None:
        local = self.scope.get(name)
        if local is None:
            slot = self.cgutils.alloca_once(self.builder, value.type, name=name)
            local = self.scope[name] = Scalar(slot, kind)
        if not isinstance(local, Scalar) or local.type != kind:
            raise Unsupported(f"{name} takes another type")
        self.builder.store(value, local.slot)

    # arrays

    def _array_expression(self, node) -> _Array | None:
        """The array ``node`` makes or names; None where it is a scalar expression."""
        if isinstance(node, ast.Name) and isinstance(self.scope.get(node.id), _Array):
            return self.scope[node.id]
        if isinstance(node, ast.Subscript):  # ``x[i]`` of a 2-d ``x``: a row, in place
            array = self._array_expression(node.value)
            items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if array is None or len(items) >= len(array.shape):
                return None
            pointer = self._address(array, self._indices(array, items))
            return _Array(pointer, array.shape[len(items) :], array.dtype)
        if not isinstance(node, ast.Call):
            return None
        if isinstance(node.func, ast.Attribute) and node.func.attr == "reshape":
            owner = self._array_expression(node.func.value)  # ``x.reshape(shape)``
            if owner is not None:
                return _view(owner, node.args)
        function = self._callee(node.func)
        if function is carray:
            table, shape, dtype = node.args
            if not (isinstance(table, ast.Subscript) and isinstance(table.value, ast.Name)):
                raise Unsupported("carray of what is not the pointer table")
            if table.value.id != self.table_name:
                raise Unsupported("carray of another pointer")
            k = ast.literal_eval(table.slice)
            dtype = numba_type(self._np_dtype(dtype))
            pointer = self.builder.load(self.builder.gep(self.table, [int64(k)]))
            data = self.context.get_data_type(dtype).as_pointer()
            return _Array(self.builder.bitcast(pointer, data), _shape(shape), dtype)
        if function is np.empty:
            # The kernel's own array, on the heap as Numba's is (on the stack, LLVM's
            # analyses of a large array cost more than the kernel's whole compile).
            if self.loop_depth:
                raise Unsupported("an array allocated in a loop")
            shape, dtype = _shape(node.args[0]), numba_type(self._np_dtype(node.args[1]))
            element = self.context.get_data_type(dtype)
            size = int64(max(1, math.prod(shape)) * itemsize(dtype))
            memory = self.builder.call(self._c_function("malloc"), [size])
            self.scratch.append(memory)
            return _Array(self.builder.bitcast(memory, element.as_pointer()), shape, dtype)
        if function is shaped_view:
            array = self._array_expression(node.args[0])
            if array is None:
                raise Unsupported("shaped_view of what is not an array")
            return _view(array, node.args[1:])
        return None

    def _element(self, node) -> tuple[_Array, list]:
        """The array and index values of ``array[i, j]``, or of a scalar's one-element
        ``carray(...)[0]``."""
        array = self._array_expression(node.value)
        if array is None:
            raise Unsupported("indexing what is not an array")
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if len(items) != len(array.shape):
            raise Unsupported("an index of another rank")
        return array, self._indices(array, items)

    def _indices(self, array: _Array, items) -> list:
        """The leading indices ``items`` of ``array``, wrapped where negative (Numba's)."""
        index = []
        for item, n in zip(items, array.shape, strict=False):
            if isinstance(item, ast.Slice):
                raise Unsupported("a slice")
            self.indexing += 1
            try:
                value, kind = self._expression(item)
            finally:
                self.indexing -= 1
            if not isinstance(kind, self.types.Integer):
                raise Unsupported("an index that is not an integer")
            value = self._cast(value, kind, self.types.int64)
            if not (isinstance(value, ir.Constant) and value.constant >= 0):
                negative = self.builder.icmp_signed("<", value, int64(0))
                value = self.builder.select(negative, self.builder.add(value, int64(n)), value)
            index.append(value)
        return index

    def _offset(self, array: _Array, index: list):
        """The element offset of the leading ``index`` into ``array``."""
        offset = None
        for value, stride in zip(index, array.strides, strict=False):
            term = value if stride == 1 else self.builder.mul(value, int64(stride))
            offset = term if offset is None else self.builder.add(offset, term)
        return int64(0) if offset is None else offset

    def _address(self, array: _Array, index: list):
        # In bounds, as Numba's are: LLVM may then assume the offset arithmetic does not wrap.
        return self.builder.gep(array.pointer, [self._offset(array, index)], inbounds=True)

    # control flow

    def _for(self, node) -> None:
        if node.orelse or not isinstance(node.target, ast.Name):
            raise Unsupported("a for loop with else or a target that is not a name")
        call = node.iter
        kind = self._callee(call.func) if isinstance(call, ast.Call) else None
        if kind not in (range, prange):
            raise Unsupported("a loop over what is not a range")
        bounds = [self._cast(*self._expression(a), self.types.int64) for a in call.args]
        if len(bounds) == 1:
            bounds = [int64(0), *bounds]
        start, stop = bounds[:2]
        step = 1
        if len(bounds) == 3:
            if not isinstance(bounds[2], ir.Constant) or bounds[2].constant == 0:
                raise Unsupported("a range whose step is not a nonzero constant")
            step = bounds[2].constant
        if kind is prange and self.loop_depth == 0:
            if step != 1:
                raise Unsupported("a prange with a step")
            self._parallel_for(node, start, stop)
        else:  # a prange in a parallel loop runs in its thread, as Numba's does
            self._loop(node, start, stop, step)

    def _loop(self, node, start, stop, step: int) -> None:
        """A ``range`` loop. A short innermost loop of constant bounds is marked to be
        unrolled in full (``llvm_kernels.optimised`` runs no unrolling heuristics)."""
        builder = self.builder
        counter = self.cgutils.alloca_once_value(builder, start)
        header = builder.append_basic_block("loop_header")
        body = builder.append_basic_block("loop_body")
        done = builder.append_basic_block("loop_end")
        builder.branch(header)
        builder.position_at_end(header)
        index = builder.load(counter)
        builder.cbranch(builder.icmp_signed("<" if step > 0 else ">", index, stop), body, done)
        builder.position_at_end(body)
        self._store_local(node.target.id, index, self.types.int64)
        self.loop_depth += 1
        self._block(node.body)
        self.loop_depth -= 1
        builder.store(builder.add(builder.load(counter), int64(step)), counter)
        latch = builder.branch(header)
        if _unrolled(node, start, stop, step):
            latch.set_metadata("llvm.loop", self._unroll_in_full())
        builder.position_at_end(done)

    def _unroll_in_full(self):
        """A loop ID (``distinct !{self, ...}``) asking for a full unroll."""
        module = self.module_ir
        request = module.add_metadata([ir.MetaDataString(module, "llvm.loop.unroll.full")])
        return _LoopID(module, [request], name=str(len(module.metadata)))

    def _parallel_for(self, node, start, stop) -> None:
        """A ``prange`` loop: its body a function of its own over a piece of the range,
        run on Numba's threads by ``parallel_chunks.run_chunks``; the arrays and scalars
        it reads passed in a structure (``environment``). Names the loop assigns are its
        iterations' own; one the kernel also holds outside the loop is refused (Numba's
        parfor reductions: numbax's kernels write none)."""
        first = _first_uses(node)
        assigned = {name for name, use in first.items() if use is ast.Store}
        carried = {
            n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        } - assigned
        if carried & set(self.scope):  # read, then assigned: carried between iterations
            raise Unsupported("a prange loop carrying a value between its iterations")
        captured = [name for name in sorted(set(first) - assigned) if name in self.scope]
        values, types = [], []
        for name in captured:
            local = self.scope[name]
            value = local.pointer if isinstance(local, _Array) else self.builder.load(local.slot)
            values.append(value)
            types.append(value.type)
        environment_type = ir.LiteralStructType(types)
        environment = self.cgutils.alloca_once(self.builder, environment_type)
        for k, value in enumerate(values):
            self.builder.store(
                value, self.builder.gep(environment, [int64(0), ir.Constant(ir.IntType(32), k)])
            )
        pointer, i64 = ir.IntType(8).as_pointer(), ir.IntType(64)
        chunk = ir.Function(
            self.module_ir,
            ir.FunctionType(ir.VoidType(), [pointer, i64, i64]),
            f"{self.name}_chunk_{len(self.module_ir.functions)}",
        )
        chunk.linkage = "internal"
        outer = (self.builder, self.scope, self.scratch)
        self.builder = ir.IRBuilder(chunk.append_basic_block("entry"))
        self.scope, self.scratch = {}, []
        fields = self.builder.bitcast(chunk.args[0], environment_type.as_pointer())
        for k, name in enumerate(captured):
            field = self.builder.load(self.builder.gep(fields, [int64(0), _field(k)]))
            local = outer[1][name]
            if isinstance(local, _Array):
                self.scope[name] = _Array(field, local.shape, local.dtype)
            else:
                self.scope[name] = Scalar(
                    self.cgutils.alloca_once_value(self.builder, field), local.type
                )
        if isinstance(start, ir.Constant) and start.constant >= 0:
            # The pieces lie in the range, whose indices are then never negative: LLVM
            # drops the indexing's wrap-around (which would keep the loop from vectorising).
            assume = self.module_ir.declare_intrinsic("llvm.assume")
            self.builder.call(assume, [self.builder.icmp_signed(">=", chunk.args[1], int64(0))])
        self._loop(node, chunk.args[1], chunk.args[2], 1)
        self._free_scratch()
        self.builder.ret_void()
        self.builder, self.scope, self.scratch = outer
        self._call_external(
            run_chunks,
            [
                (self.builder.ptrtoint(chunk, i64), self.types.int64),
                (self.builder.ptrtoint(environment, i64), self.types.int64),
                (start, self.types.int64),
                (stop, self.types.int64),
            ],
        )

    def _if(self, node) -> None:
        condition = self._truth(*self._expression(node.test))
        if node.orelse:
            with self.builder.if_else(condition) as (then, otherwise):
                with then:
                    self._block(node.body)
                with otherwise:
                    self._block(node.orelse)
        else:
            with self.builder.if_then(condition):
                self._block(node.body)


def _first_uses(loop: ast.For) -> dict:
    """Each name of ``loop`` (its target included) and how it is first used, in the order
    the statements run: ``ast.Store`` or ``ast.Load``."""
    first: dict = {}

    class Order(ast.NodeVisitor):
        def visit_Name(self, node):
            first.setdefault(node.id, type(node.ctx))

        def visit_Assign(self, node):
            self.visit(node.value)
            for target in node.targets:
                self.visit(target)

        def visit_AugAssign(self, node):
            self.visit(
                ast.Name(node.target.id, ast.Load())
                if isinstance(node.target, ast.Name)
                else node.target
            )
            self.visit(node.value)
            self.visit(node.target)

        def visit_For(self, node):
            self.visit(node.iter)
            self.visit(node.target)
            for statement in node.body:
                self.visit(statement)

    Order().visit(loop)
    return first


def _field(k: int) -> ir.Constant:
    return ir.Constant(ir.IntType(32), k)


def _view(array: _Array, shape_arguments) -> _Array:
    """``array`` (C-contiguous) seen with another shape: ``reshape(n)``, ``reshape(a, b)``
    or ``reshape((a, b))``."""
    if len(shape_arguments) == 1 and isinstance(shape_arguments[0], ast.Tuple):
        shape = _shape(shape_arguments[0])
    else:
        shape = _shape(ast.Tuple(list(shape_arguments), ast.Load()))
    if math.prod(shape) != math.prod(array.shape):
        raise Unsupported("a reshape to another number of elements")
    return _Array(array.pointer, shape, array.dtype)


def _shape(node) -> tuple[int, ...]:
    shape = ast.literal_eval(node)
    if not (isinstance(shape, tuple) and all(isinstance(n, int) for n in shape)):
        raise Unsupported("a shape that is not a tuple of integers")
    return shape


@functools.lru_cache(maxsize=512)  # ``llvm_ir`` shows what was compiled
def translate(source: str, name: str) -> tuple[str, dict, tuple]:
    """The unoptimised IR of the kernel ``name`` of ``source``, the IR of the njit
    functions it calls inline, and the helpers it calls by symbol (``external_name``);
    ``Unsupported`` where the translation has no rule for its text."""
    with LOCK:
        translator = Translator(source, name)
        text = str(translator.module())
        return text, translator.libraries, tuple(translator.externals.values())
