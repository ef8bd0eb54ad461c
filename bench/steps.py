"""Step attribution for the release benchmark: every process's CPU seconds charged to named steps.

A child of the benchmark runs with ``sitecustomize`` (written by ``site_dir``) on its path, so
this module loads into every Python process of the build and the audit: the driver, the
forkserver, each pool worker. It wraps named functions as their modules are imported (so
names bound by ``from x import y`` see the wrapper) and charges each call's time, less that
of the wrapped calls inside it, to the call's path of step names. Time before the first step
is the process's start-up; what is left of its CPU time (user + system, every thread) after
the steps and the start-up is reported as unattributed. Each process writes its ledger and
its peak RSS to ``$VRFORGE_STEPS_DIR/<pid>.json``, at most every 0.25 s and when it ends
(exit or SIGTERM, which is how a pool stops its workers).

The wrapped names are looked up leniently: a base commit that lacks one is measured without it.
Nothing here changes what a function returns.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import importlib.abc
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ENV_DIR = "VRFORGE_STEPS_DIR"
DUMP_EVERY_S = 0.25

# module -> (attribute, or "Class.attribute", step name). Wrapped when the module is imported.
PATCHES: dict[str, list[tuple[str, str]]] = {
    "vrforge.builds.build": [("build", "build driver"), ("_finish", "finish"),
                             ("_gallery_example", "gallery: read back"), ("_gallery_examples", "gallery: read back")],
    "vrforge.builds.item": [("build_item", "item"), ("_check", "verify at build time")],
    "vrforge.builds.shards": [("write_shard", "shard write"), ("ShardWriter.add", "shard write: encode rows"),
                              ("ShardWriter._flush", "shard write: parquet"), ("ShardWriter.commit", "shard write: parquet")],
    "vrforge.builds.storage": [("Store.sha256", "sha256")],
    "vrforge.builds.executors": [("_gallery_job", "gallery")],
    "vrforge.cards.gallery": [("gallery_sheet", "gallery"), ("gallery_block", "gallery"), ("compose_sheet", "gallery")],
    "vrforge.cards.card": [("render_card", "card")],
    "vrforge.registry": [("register_task", ""), ("TaskSpec.meta_errors", "meta schema")],
    "vrforge.generators.tacit._option_set": [("choose_star", "variants and star choice")],
    "vrforge.render": [("rasterise_images", "render"), ("_RecordingSurface.__init__", "record (cairosvg SVG walk)"),
                       ("_DirectSurface.__init__", "direct render (cairosvg SVG walk)"), ("_white_surface", "white ground"),
                       ("_published", "rasterise (surface to image)"), ("_rgb", "rasterise (surface to image)"),
                       ("encode_png", "PNG encode")],
    "cairosvg.parser": [("Tree.__init__", "parse SVG")],
    "cairocffi.context": [("Context.paint", "replay (cairo paint)")],
    "vrforge.fileio": [("sha256_file", "sha256")],
    "vrforge.imageio": [("load_rgb", "decode PNG")],
    "vrforge.pickers": [("option_features", "picker features")],
    "vrforge.set_probes": [("set_inputs", "set inputs")],
    "pyarrow.parquet": [("read_table", "read parquet")],
    "vrforge.builds.audit": [("audit", "audit driver"), ("manifest_file_problems", "audit: manifest sha256"),
                             ("_audit_shard", "audit: rows"), ("_audit_rows", "audit: rows"),
                             ("_gate_job", "audit: gate"), ("_write_audit_into_card", "audit: card")],
    "multiprocessing.reduction": [("ForkingPickler.dumps", "IPC pickle")],
}
# spec fields wrapped when a task registers
SPEC_FIELDS = (("generate", "generate"), ("draw", "draw (SVG text)"), ("verify", "verify"))


class _Ledger:
    """One thread's steps."""

    def __init__(self) -> None:
        self.stack: list[str] = []
        self.mark_cpu = 0.0
        self.mark_wall = 0.0
        self.totals: dict[str, list[float]] = {}  # path -> [cpu, wall, calls]


_LEDGERS: dict[int, _Ledger] = {}  # thread ident -> its ledger
_STATE: dict[str, Any] = {"startup_cpu": None, "last_dump": 0.0, "handler": False}


def _charge(ledger: _Ledger) -> None:
    cpu, wall = time.thread_time(), time.perf_counter()
    if ledger.stack:
        entry = ledger.totals.setdefault(" > ".join(ledger.stack), [0.0, 0.0, 0])
        entry[0] += cpu - ledger.mark_cpu
        entry[1] += wall - ledger.mark_wall
    ledger.mark_cpu, ledger.mark_wall = cpu, wall


def timed(function: Callable[..., Any], name: str) -> Callable[..., Any]:
    """``function`` with its calls charged to ``name`` (nested inside the caller's step)."""
    if getattr(function, "__vrforge_step__", None):
        return function

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        ledger = _LEDGERS.get(threading.get_ident())
        if ledger is None:
            ledger = _LEDGERS[threading.get_ident()] = _Ledger()
            if threading.current_thread() is threading.main_thread():
                _STATE["startup_cpu"] = time.thread_time()
                _install_handler()
        _charge(ledger)
        ledger.stack.append(name)
        try:
            return function(*args, **kwargs)
        finally:
            _charge(ledger)
            ledger.totals[" > ".join(ledger.stack)][2] += 1
            ledger.stack.pop()
            if not ledger.stack and time.perf_counter() - _STATE["last_dump"] > DUMP_EVERY_S:
                dump()

    wrapper.__vrforge_step__ = name  # type: ignore[attr-defined]
    return wrapper


def _register_task(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def register(spec: Any) -> Any:
        for field, name in SPEC_FIELDS:
            value = getattr(spec, field, None)
            if callable(value):
                object.__setattr__(spec, field, timed(value, name))
        return original(spec)
    return register


def patch_module(module: Any) -> None:
    for target, name in PATCHES.get(module.__name__, []):
        owner_name, _, attribute = target.rpartition(".")
        owner = getattr(module, owner_name, None) if owner_name else module
        if owner is None or not hasattr(owner, attribute):
            continue
        raw = owner.__dict__.get(attribute) if isinstance(owner, type) else None
        value = getattr(owner, attribute)
        if target == "register_task":
            setattr(owner, attribute, _register_task(value))
        elif isinstance(raw, classmethod):
            setattr(owner, attribute, classmethod(timed(raw.__func__, name)))
        else:
            with contextlib.suppress(TypeError, AttributeError):  # a C type's slot: left as it is
                setattr(owner, attribute, timed(value, name))


class _Finder(importlib.abc.MetaPathFinder):
    """Wraps a patched module's names right after it executes, before an importer binds them."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname not in PATCHES:
            return None
        spec = None
        for finder in sys.meta_path:  # the finder that would have found it (an editable install's, or the path's)
            if finder is not self and hasattr(finder, "find_spec"):
                spec = finder.find_spec(fullname, path, target)
                if spec is not None:
                    break
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        execute = loader.exec_module

        def exec_module(module: Any) -> None:
            execute(module)
            patch_module(module)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def _peak_rss_mb() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def dump() -> None:
    folder = os.environ.get(ENV_DIR)
    if not folder:
        return
    _STATE["last_dump"] = time.perf_counter()
    steps: dict[str, list[float]] = {}
    for ledger in list(_LEDGERS.values()):
        for key, (cpu, wall, calls) in list(ledger.totals.items()):
            entry = steps.setdefault(key, [0.0, 0.0, 0])
            entry[0] += cpu
            entry[1] += wall
            entry[2] += calls
    times = os.times()
    record = {"pid": os.getpid(), "ppid": os.getppid(), "argv": sys.argv[:3], "cpu_total": times.user + times.system,
              "startup_cpu": _STATE["startup_cpu"] or 0.0, "peak_rss_mb": round(_peak_rss_mb(), 1), "steps": steps}
    path = Path(folder) / f"{os.getpid()}.json"
    temporary = path.with_suffix(".tmp")
    with contextlib.suppress(OSError):  # a ledger is best effort: it never fails the measured run
        temporary.write_text(json.dumps(record), encoding="utf-8")
        os.replace(temporary, path)


def _install_handler() -> None:
    if _STATE["handler"] or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return
    _STATE["handler"] = True

    def on_term(signum: int, frame: Any) -> None:
        dump()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    signal.signal(signal.SIGTERM, on_term)


def _forget() -> None:
    """A forked child starts its own ledger (a fork server's children would inherit its)."""
    _LEDGERS.clear()
    _STATE.update(startup_cpu=None, last_dump=0.0, handler=False)


def install() -> None:
    """Wrap the named functions of every module imported from now on (and of those already imported)."""
    if not os.environ.get(ENV_DIR) or any(isinstance(f, _Finder) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _Finder())
    os.register_at_fork(after_in_child=_forget)
    for name in PATCHES:
        if name in sys.modules:
            patch_module(sys.modules[name])
    atexit.register(dump)


def site_dir(folder: Path) -> Path:
    """A folder holding a ``sitecustomize`` that installs this module (by its file: the measured
    tree may be another commit's, without it)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(
        "import importlib.util, sys\n"
        f"_spec = importlib.util.spec_from_file_location('_vrforge_steps', {str(Path(__file__).resolve())!r})\n"
        "_module = importlib.util.module_from_spec(_spec)\n"
        "sys.modules['_vrforge_steps'] = _module\n"
        "_spec.loader.exec_module(_module)\n"
        "_module.install()\n", encoding="utf-8")
    return folder
