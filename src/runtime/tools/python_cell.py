# The program the `ipython` tool runs with `python3 -u -c`: reads the cell's code from standard input and runs it as
# the `__main__` module in the workspace, like a notebook cell in a fresh kernel. The value of a last bare expression
# is printed (its repr); an exception prints its traceback without this program's own frame and exits with 1;
# `sys.exit(n)` exits with n. Standard error is merged into standard output at the file descriptor, so a traceback,
# and the output of child processes, land in order with what was printed before.
import ast
import linecache
import os
import sys
import traceback
import types

os.dup2(1, 2)
sys.stderr = sys.stdout
sys.argv[:] = [""]
CELL = "<cell>"


def run(source):
    # Tracebacks show the cell's lines, as IPython's do.
    linecache.cache[CELL] = (len(source), None, source.splitlines(True), CELL)
    try:
        tree = ast.parse(source, CELL, "exec")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = compile(ast.Expression(tree.body.pop().value), CELL, "eval")
        body = compile(tree, CELL, "exec")
    except SyntaxError as error:
        sys.stderr.write("".join(traceback.format_exception_only(type(error), error)))
        return 1
    main = types.ModuleType("__main__")
    main.__builtins__ = __builtins__
    sys.modules["__main__"] = main
    try:
        exec(body, main.__dict__)
        if last is not None:
            value = eval(last, main.__dict__)
            if value is not None:
                print(repr(value))
    except SystemExit:
        raise
    except BaseException as error:
        traceback.print_exception(type(error), error, error.__traceback__.tb_next)
        return 1
    return 0


sys.exit(run(sys.stdin.read()))
