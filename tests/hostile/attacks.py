"""The hostile outputs: wrong candidates that each try to look right.

Every attack is *wrong* (on the visible example, so the seed verifier can know it, and on the
hidden inputs) and uses one trick to hide that: make the harness or the parent unable to judge,
forge the report, fool the comparison, or outlast the limits. Two tasks of the bundled HumanEval
family are attacked: ``add`` (HumanEval/53, examples ``add(2, 3) == 5``, ``add(5, 7) == 12``)
and ``unique`` (HumanEval/34, example ``unique([5, 3, 5, 2, 3, 3, 9, 0, 123]) == [0, 2, 3, 5, 9,
123]``).
"""

from __future__ import annotations

import textwrap

import attrs

ADD, UNIQUE = "HumanEval/53", "HumanEval/34"

#: Hidden inputs for ground-truth labelling (the visible examples among them).
HIDDEN = {
    ADD: ([2, 3], [5, 7], [0, 1], [1, 0], [-3, 8], [7, 7], [100, 23]),
    UNIQUE: ([[5, 3, 5, 2, 3, 3, 9, 0, 123]], [[]], [[1, 1]], [[3, 2, 1]], [[-1, 0, -1, 7]]),
}


@attrs.frozen
class Attack:
    name: str
    task: str
    code: str
    #: What the attack is (the class of trick), for people reading a failure.
    trick: str
    #: Seconds the seed verifier and the ground truth may take on it together (per layer).
    seconds: float = 15.0
    #: An xfail reason while the hole is open (removed when fixed).
    open_issue: str = ""


def _src(text: str) -> str:
    return textwrap.dedent(text).strip() + "\n"


#: Writes a complete, well-formed result stream (the bodies given) to every open descriptor and
#: leaves before the harness can write its own: the strongest forgery a candidate can make.
FORGE = _src(
    """
    import os as _os
    def _forge(*bodies):
        data = b"".join(len(b).to_bytes(4, "big") + b for b in bodies)
        for fd in range(3, 4096):
            try:
                _os.write(fd, data)
            except OSError:
                pass
        _os._exit(0)
    """
)


def _load(status: str, exc_type: str = "null", message: str = "null") -> str:
    fields = (
        f'"t":"load","status":"{status}","stdout":"","stdout_truncated":false,"exc_type":{exc_type},'
        f'"exc_message":{message},"line":1'
    )
    return "b'{" + fields + "}'"


DONE = 'b\'{"t":"done"}\''
LOAD_OK = _load("ok")
LOAD_SYNTAX = _load("syntax_error", '"SyntaxError"', '"invalid syntax"')
LOAD_NO_ENTRY = _load("no_entry_point", "null", '"no callable named add is defined"')

WRONG_ADD = "def add(x: int, y: int):\n    return x - y\n"
WRONG_UNIQUE = "def unique(l: list):\n    return sorted(l)\n"  # keeps duplicates

ATTACKS: list[Attack] = [
    # --- the entry point disappears after the static root saw it (abstain-to-pass) -------------
    Attack("del-entry-point", ADD, WRONG_ADD + "del add\n", "deletes the entry point after defining it"),
    Attack("globals-pop", ADD, WRONG_ADD + "globals().pop('add')\n", "removes the entry point through globals()"),
    Attack("rebind-to-object", ADD, WRONG_ADD + "add = object()\n", "rebinds the entry point to a non-callable"),
    Attack(
        "rebind-through-globals",
        ADD,
        WRONG_ADD + "globals()['add'] = 5\n",
        "rebinds the entry point to a number, invisibly to the AST",
    ),
    Attack("exec-del", ADD, WRONG_ADD + "exec('del add')\n", "deletes the entry point from a string of code"),
    # --- forged result streams ----------------------------------------------------------------------
    Attack(
        "forged-syntax-error",
        ADD,
        FORGE + WRONG_ADD + f"_forge({LOAD_SYNTAX}, {DONE})\n",
        "forges a complete stream claiming the code does not compile",
    ),
    Attack(
        "forged-no-entry-point",
        ADD,
        FORGE + WRONG_ADD + f"_forge({LOAD_NO_ENTRY}, {DONE})\n",
        "forges a complete stream claiming there is no entry point",
    ),
    Attack(
        "forged-huge-duration",
        ADD,
        FORGE
        + WRONG_ADD
        + (
            "_forge(" + LOAD_OK + ', b\'{"t":"call","i":0,"status":"ok","value":5,"type":"int","exc_type":null,'
            '"exc_message":null,"stdout":"","stdout_truncated":false,"duration":1'
            + "0" * 400
            + ',"args_after":null}\')\n'
        ),
        "forges a call report whose duration overflows a float in the parent",
    ),
    Attack(
        "forged-frame-mid-call",
        ADD,
        FORGE.replace("_os._exit(0)", "return")
        + _src(
            """
        def add(x: int, y: int):
            _forge(b'{"t":"call","i":0,"status":"ok","value":5,"type":"int","exc_type":null,"exc_message":null,'
                   b'"stdout":"","stdout_truncated":false,"duration":0.0,"args_after":null}')
            return x - y
        """
        ),
        "writes a call report with the expected value into the result channel",
    ),
    Attack(
        "forged-frames-on-stdout",
        ADD,
        _src(
            """
        import os
        F = b'{"t":"call","i":0,"status":"ok","value":5,"type":"int","exc_type":null,"exc_message":null,' \\
            b'"stdout":"","stdout_truncated":false,"duration":0.0,"args_after":null}'
        def add(x: int, y: int):
            os.write(1, len(F).to_bytes(4, "big") + F)
            print(F.decode())
            return x - y
        """
        ),
        "prints forged frames on stdout",
    ),
    Attack(
        "forged-key-flood",
        ADD,
        FORGE
        + WRONG_ADD
        + ("_forge(" + LOAD_OK + ", b'{' + b','.join(b'\"k%d\":0' % i for i in range(300000)) + b'}')\n"),
        "forges a frame with a flood of JSON object keys",
    ),
    Attack(
        "forged-empty-lists",
        ADD,
        FORGE
        + WRONG_ADD
        + (
            "_forge(" + LOAD_OK + ', b\'{"t":"call","i":0,"status":"ok","value":[\' + b\',\'.join([b\'[]\'] * 6000000)'
            ' + b\'],"type":"list","exc_type":null,"exc_message":null,"stdout":"","stdout_truncated":false,'
            '"duration":0.0,"args_after":null}\')\n'
        ),
        "forges an 18 MB frame of empty lists (gigabytes once decoded)",
    ),
    Attack(
        "forged-hash-flood",
        ADD,
        FORGE
        + WRONG_ADD
        + (
            "_forge(" + LOAD_OK + ', b\'{"t":"call","i":0,"status":"ok","value":{"set":[\' + '
            "b','.join(b'{\"int\":\"%s\"}' % hex(k * (2**61 - 1)).encode() for k in range(1, 40000)) + "
            'b\']},"type":"set","exc_type":null,"exc_message":null,"stdout":"","stdout_truncated":false,'
            '"duration":0.0,"args_after":null}\')\n'
        ),
        "forges a set whose 40000 members share one hash (quadratic to decode)",
    ),
    Attack(
        "patched-harness-encoder",
        ADD,
        _src(
            """
        import sys
        def add(x: int, y: int):
            harness = sys._getframe(1).f_globals
            harness["encode_value"] = lambda value, budget=0: "5"
            return x - y
        """
        ),
        "replaces the harness's encoder so that every value is reported as 5",
    ),
    Attack(
        "emptied-request",
        ADD,
        _src(
            """
        import gc
        for obj in gc.get_objects():
            if type(obj) is dict and "calls" in obj and "entry_point" in obj:
                obj["calls"] = []
        def add(x: int, y: int):
            return x - y
        """
        ),
        "finds the harness's request in memory and removes every call",
    ),
    Attack(
        "closed-result-fd",
        ADD,
        _src(
            """
        import os
        for fd in range(3, 4096):
            try:
                os.close(fd)
            except OSError:
                pass
        """
        )
        + WRONG_ADD,
        "closes the result channel at load",
    ),
    Attack(
        "devnull-over-result-fd",
        ADD,
        _src(
            """
        import os
        null = os.open("/dev/null", os.O_WRONLY)
        for fd in range(3, 4096):
            if fd != null:
                try:
                    os.dup2(null, fd)
                except OSError:
                    pass
        """
        )
        + WRONG_ADD,
        "points the result channel at /dev/null",
    ),
    # --- early exits ---------------------------------------------------------------------------
    Attack("os-exit-at-load", ADD, WRONG_ADD + "import os\nos._exit(0)\n", "exits with status 0 while loading"),
    Attack(
        "os-exit-in-call",
        ADD,
        "import os\ndef add(x: int, y: int):\n    os._exit(0)\n",
        "exits with status 0 in the call",
    ),
    Attack("sys-exit-at-load", ADD, WRONG_ADD + "import sys\nsys.exit(0)\n", "raises SystemExit(0) while loading"),
    Attack(
        "sys-exit-in-call",
        ADD,
        "import sys\ndef add(x: int, y: int):\n    sys.exit(0)\n",
        "raises SystemExit(0) in the call",
    ),
    Attack(
        "atexit-exit",
        ADD,
        WRONG_ADD + "import atexit, os, sys\natexit.register(os._exit, 0)\natexit.register(sys.exit, 0)\n",
        "registers exits at interpreter shutdown",
    ),
    Attack(
        "keyboard-interrupt", ADD, "def add(x: int, y: int):\n    raise KeyboardInterrupt\n", "raises KeyboardInterrupt"
    ),
    Attack(
        "finalizer-exit",
        ADD,
        _src(
            """
        import os
        class Bye:
            def __del__(self):
                os._exit(0)
        def add(x: int, y: int):
            Bye()
            return x - y
        """
        ),
        "exits from a finalizer that runs inside the harness",
    ),
    Attack(
        "fork-and-leave",
        ADD,
        WRONG_ADD + "import os\nif os.fork():\n    os._exit(0)\n",
        "forks at load; the original process leaves, the copy carries on",
    ),
    # --- values that fool a comparison ----------------------------------------------------------
    Attack(
        "rigged-eq",
        ADD,
        "class A:\n    def __eq__(self, other):\n        return True\n    __hash__ = None\n"
        "def add(x: int, y: int):\n    return A()\n",
        "returns an object equal to everything",
    ),
    Attack(
        "int-subclass-eq",
        ADD,
        "class I(int):\n    def __eq__(self, other):\n        return True\n"
        "    __hash__ = int.__hash__\ndef add(x: int, y: int):\n    return I(x - y)\n",
        "an int subclass equal to everything",
    ),
    Attack(
        "int-subclass-repr",
        ADD,
        "class I(int):\n    def __repr__(self):\n        return '5'\n    __str__ = __repr__\n"
        "def add(x: int, y: int):\n    return I(x - y)\n",
        "an int subclass that prints as the expected value",
    ),
    Attack(
        "float-subclass-eq",
        ADD,
        "class F(float):\n    def __eq__(self, other):\n        return True\n"
        "    __hash__ = float.__hash__\ndef add(x: int, y: int):\n    return F(x - y)\n",
        "a float subclass equal to everything",
    ),
    Attack(
        "list-subclass-iter",
        UNIQUE,
        _src(
            """
        class L(list):
            def __iter__(self):
                return iter([0, 2, 3, 5, 9, 123])
            def __eq__(self, other):
                return True
            def __len__(self):
                return 6
        def unique(l: list):
            return L(sorted(l))
        """
        ),
        "a list subclass that iterates and compares as the expected value",
    ),
    Attack("nan", ADD, "def add(x: int, y: int):\n    return float('nan')\n", "returns NaN"),
    Attack(
        "huge-int",
        ADD,
        "def add(x: int, y: int):\n    return 10 ** 5000 + x - y\n",
        "returns an int too long for repr() in the parent",
    ),
    Attack(
        "deep-value",
        UNIQUE,
        _src(
            """
        def unique(l: list):
            v = []
            for _ in range(100000):
                v = [v]
            return v
        """
        ),
        "returns a list nested 100000 deep",
    ),
    Attack(
        "huge-value", UNIQUE, "def unique(l: list):\n    return list(range(6_000_000))\n", "returns 6 million elements"
    ),
    Attack(
        "hash-flood",
        UNIQUE,
        "def unique(l: list):\n    return {k * (2**61 - 1) for k in range(1, 30000)}\n",
        "returns a set whose members share one hash (quadratic to build, in the child's time)",
    ),
    Attack(
        "generator", UNIQUE, "def unique(l: list):\n    return (x for x in sorted(set(l)))\n", "returns a generator"
    ),
    Attack(
        "thread-mutation",
        UNIQUE,
        _src(
            """
        import threading
        def unique(l: list):
            out = sorted(set(l))
            def churn():
                while True:
                    out.append(0)
                    out.pop()
                    out.insert(0, -1)
            threading.Thread(target=churn, daemon=True).start()
            return out
        """
        ),
        "keeps changing the returned list from a thread",
    ),
    # --- broken interpreter state ---------------------------------------------------------------
    Attack(
        "patched-builtins",
        ADD,
        _src(
            """
        import builtins
        builtins.isinstance = lambda *a: True
        builtins.len = lambda *a: 0
        builtins.repr = lambda *a: "5"
        builtins.str = lambda *a: "5"
        builtins.print = lambda *a, **k: None
        """
        )
        + WRONG_ADD,
        "replaces builtins the harness might use",
    ),
    Attack(
        "deleted-builtins",
        ADD,
        "import builtins\nfor n in ('len', 'type', 'isinstance', 'repr', 'hex'):\n"
        "    delattr(builtins, n)\n" + WRONG_ADD,
        "deletes builtins",
    ),
    Attack(
        "stdout-replaced",
        ADD,
        "import sys\nclass Out:\n    def write(self, s):\n        raise SystemExit(0)\n"
        "sys.stdout = Out()\ndef add(x: int, y: int):\n    print(5)\n    return x - y\n",
        "replaces sys.stdout",
    ),
    Attack(
        "trace-hook",
        ADD,
        "import sys\ndef hook(*a):\n    raise SystemExit(0)\nsys.settrace(hook)\nsys.setprofile(hook)\n" + WRONG_ADD,
        "installs trace and profile hooks that exit",
    ),
    Attack(
        "tiny-recursion-limit",
        ADD,
        "import sys\nsys.setrecursionlimit(30)\n" + WRONG_ADD,
        "sets a tiny recursion limit",
    ),
    Attack(
        "surrogate-markup-message",
        ADD,
        "def add(x: int, y: int):\n    raise ValueError('\\ud800 [/] [bold]5')\n",
        "raises with an unencodable, markup-laden message",
    ),
    Attack(
        "slow-exception-str",
        ADD,
        _src(
            """
        class E(Exception):
            def __str__(self):
                while True:
                    pass
        def add(x: int, y: int):
            raise E()
        """
        ),
        "raises an exception whose message never finishes rendering",
        seconds=45.0,
    ),
    # --- outlasting the limits ------------------------------------------------------------------
    Attack(
        "swallowed-alarm",
        ADD,
        "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
        "def add(x: int, y: int):\n    while True:\n        pass\n",
        "ignores the call alarm and loops",
        seconds=45.0,
    ),
    Attack(
        "blocked-alarm",
        ADD,
        "import signal\ndef add(x: int, y: int):\n"
        "    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})\n    while True:\n        pass\n",
        "blocks the call alarm and loops",
        seconds=45.0,
    ),
    Attack(
        "sigstop-self",
        ADD,
        "import os, signal\ndef add(x: int, y: int):\n    os.kill(os.getpid(), signal.SIGSTOP)\n    return x - y\n",
        "stops its own process",
        seconds=45.0,
    ),
    Attack(
        "print-not-return", ADD, "def add(x: int, y: int):\n    print(x + y)\n", "prints the right answer, returns None"
    ),
]

assert len({a.name for a in ATTACKS}) == len(ATTACKS)
