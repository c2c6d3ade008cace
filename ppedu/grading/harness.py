"""The evaluator's harness (ppedu.grading.evaluate): run in a fresh interpreter (``python -I -S``), in a
sandbox, as ``harness.py FD``. Reads its request (JSON) on standard input: the import path, the code
to run first (imports the notebook's setup cell makes too), the answer cell's text, the student's
values, the calls to make and an optional driver.
Writes one JSON line per step on file descriptor FD: first ``{"loaded": [errors]}``, then
``{"call": [name, args], "result": data}`` per call, each as soon as it is made (``"absent"`` in place
of ``"result"`` when the name is not a function: what it holds, or ``null``).
"""

import ast
import json
import os
import sys


def send(channel: int, record: object) -> None:
    data = (json.dumps(record) + "\n").encode()
    while data:
        data = data[os.write(channel, data):]


def statements(source: str) -> list[ast.Module]:
    """The cell's top-level statements, one module each (IPython's own syntax turned into Python first)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        from IPython.core.inputtransformer2 import TransformerManager

        tree = ast.parse(TransformerManager().transform_cell(source))
    return [ast.Module([node], []) for node in tree.body]


class Values(dict[str, object]):
    """The student's values, read as ``values.p`` or ``values["p"]``, as in the notebook."""

    def __getattr__(self, name: str) -> object:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def main(channel: int) -> None:
    request = json.loads(sys.stdin.buffer.read())
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)  # nothing more to read for the code that runs next
    sys.path[:] = request["path"]
    from ppedu.grading.answers import calls

    driver = None
    if request["driver"]:
        import importlib

        module, _, name = request["driver"].partition(":")
        driver = getattr(importlib.import_module(module), name)
    namespace = {"__name__": "__main__", "values": Values(request["values"])}
    exec(compile(request["setup"], "<setup>", "exec"), namespace)
    errors = []
    try:
        for module in statements(request["source"]):
            try:
                exec(compile(module, "<your answer cell>", "exec"), namespace)
            except BaseException as error:  # noqa: B036 (a SystemExit in the cell is the cell's own)
                errors.append(f"{type(error).__name__}: {error}"[:300])
    except SyntaxError as error:
        errors.append(f"SyntaxError: {error.msg} (line {error.lineno})")
    send(channel, {"loaded": errors})
    run = None if driver is None else (lambda function, args: driver(function, *args))
    for name, args in request["calls"]:
        try:
            result = calls(namespace, name, [args], run)
            if not isinstance(result, list):  # not a function: what the name holds instead (None: nothing)
                send(channel, {"call": [name, args], "absent": result})
                continue
            send(channel, {"call": [name, args], "result": result[0][1]})
        except BaseException as error:  # noqa: B036 (its result could not even be sent)
            send(channel, {"call": [name, args],
                           "result": {"__raised__": type(error).__name__[:60], "message": str(error)[:300]}})


if __name__ == "__main__":
    main(int(sys.argv[1]))
