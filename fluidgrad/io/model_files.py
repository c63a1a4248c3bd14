"""Saving and loading programs and parameters: versioned JSON plus safetensors, no pickle.

Files written for a path (or path prefix) `P`:

    P.pdmodel.json            the program, as JSON (indented, keys sorted: readable and diffable):
                              {"fluidgrad_model": FILE_FORMAT_VERSION, "program": {...},
                               "feed_names": [...], "fetch_names": [...]}  (the last two only
                              for an inference model)
    P.pdparams.safetensors    every persistable variable the program declares, by name, with
                              its shape and dtype (safetensors: a JSON header plus raw bytes)

Why these choices: JSON keeps a saved model inspectable with `fluidgrad show` or a text
diff; safetensors cannot run code on load, unlike pickle. Each file is written atomically
(a temporary file in the same directory, fsync, then `os.replace`), so a crash mid-write
leaves the previous file intact. The pair is committed by the model file, which records the
sha256 of its parameters: new parameters are written under `P.pdparams.safetensors.next`, then
the model file, then renamed into place, and loading picks the file whose checksum the model
names, so a crash at any moment of a save leaves a loadable, matching pair (and a corrupted or
mismatched parameter file is refused). Loading validates everything before touching the scope:
a truncated or corrupted file, a newer format version, or a parameter whose name, shape or
dtype does not fit the program raises `ModelFileError` and the scope is left unchanged.

0-D values are stored with shape []. Parameter files written before that (without the
`fluidgrad_0d` metadata entry) hold them with shape [1]; loading such a file reads a [1]
tensor as the 0-D value when the program declares that variable with shape [].
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..executor import Scope, global_scope
from ..framework import BACKWARD, OPTIMIZE, Block, Program, Variable, default_main_program
from ..framework.errors import FluidgradError
from ..framework.variable import names_of
from ..framework.names import EMPTY_VAR_NAME
from ..framework.serialize import FORMAT_VERSION as PROGRAM_FORMAT_VERSION
from ..framework.serialize import program_from_dict, program_to_dict
from ..ops.registry import registered_ops

MODEL_SUFFIX = ".pdmodel.json"
PARAMS_SUFFIX = ".pdparams.safetensors"
FILE_FORMAT_VERSION = 1
# metadata entry of parameter files that keep 0-D values 0-D (older files made them [1])
_ZERO_D_KEY = "fluidgrad_0d"

__all__ = ["MODEL_SUFFIX", "PARAMS_SUFFIX", "ModelFileError", "load", "load_inference_model", "read_metadata",
           "read_model", "save", "save_inference_model"]


class ModelFileError(FluidgradError, ValueError):
    """A model or parameter file that cannot be read, or whose contents do not fit the program."""


def c_ordered(value: Any) -> np.ndarray:
    """`value` as a C-contiguous array for a file, keeping its shape (np.ascontiguousarray
    would make a 0-D value 1-D)."""
    return np.asarray(value, order="C")


# NumPy dtypes of safetensors' dtype names; "BF16" (bfloat16, from ml_dtypes) is one that
# safetensors' own NumPy reader refuses, so files holding it are read here, from the raw bytes.
_SAFETENSORS_DTYPES = {"BOOL": "bool", "U8": "uint8", "I8": "int8", "U16": "uint16", "I16": "int16",
                       "U32": "uint32", "I32": "int32", "U64": "uint64", "I64": "int64", "F16": "float16",
                       "F32": "float32", "F64": "float64", "BF16": "bfloat16"}


def load_safetensors(raw: bytes) -> dict[str, np.ndarray]:
    """The tensors of a safetensors file's bytes, bfloat16 ones included (as ml_dtypes.bfloat16)."""
    from safetensors.numpy import load as st_load
    size = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + size])
    if not any(isinstance(v, dict) and v.get("dtype") == "BF16" for v in header.values()):
        return st_load(raw)
    import ml_dtypes  # noqa: F401  (optional dependency: teaches NumPy "bfloat16")
    body, tensors = memoryview(raw)[8 + size:], {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = np.dtype(_SAFETENSORS_DTYPES[info["dtype"]])
        start, end = info["data_offsets"]
        shape = [int(d) for d in info["shape"]]
        if not 0 <= start <= end <= len(body) or end - start != int(np.prod(shape)) * dtype.itemsize:
            raise ValueError(f"tensor {name!r}: offsets {start}..{end} do not fit shape {shape} of {info['dtype']}")
        tensors[name] = np.frombuffer(body[start:end], dtype=dtype).reshape(shape).copy()
    return tensors


# ---------------------------------------------------------------- atomic files

def atomic_write(path: str | os.PathLike, data: bytes) -> None:
    """Write `data` to `path` so that readers see either the old file or the whole new one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(tmp, _file_mode(path))  # mkstemp makes 0600; give what open() would
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    _fsync_directory(path.parent)


def _fsync_directory(directory: Path) -> None:
    """Make the rename itself durable (a power cut after os.replace could otherwise lose it)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # e.g. platforms that cannot open directories
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _file_mode(path: Path) -> int:
    """The replaced file's mode, or the default for a new file (0666 less the umask)."""
    try:
        return path.stat().st_mode & 0o777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _read_bytes(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise ModelFileError(f"{what} file {path} does not exist") from None


# ---------------------------------------------------------------- program files

def _write_model(path: Path, program: Program, feed_names: Sequence[str] | None = None,
                 fetch_names: Sequence[str] | None = None, params_sha256: str | None = None,
                 metadata: dict | None = None) -> None:
    doc: dict[str, Any] = {"fluidgrad_model": FILE_FORMAT_VERSION, "program": program_to_dict(program)}
    if metadata:
        doc["metadata"] = metadata
    if params_sha256 is not None:
        doc["params_sha256"] = params_sha256
    if feed_names is not None:
        doc["feed_names"] = list(feed_names)
        doc["fetch_names"] = list(fetch_names or [])
    text = json.dumps(doc, indent=1, sort_keys=True, allow_nan=False)
    atomic_write(path, (text + "\n").encode("utf-8"))


def read_model(path: str | os.PathLike) -> tuple[Program, list[str] | None, list[str] | None]:
    """Read a `.pdmodel.json` file (or a prefix naming one): (program, feed_names, fetch_names).

    feed_names and fetch_names are None for a file written by `save` (not an inference model).
    """
    path = _model_path(path)
    raw = _read_bytes(path, "model")
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelFileError(f"model file {path} is truncated or corrupted (not valid JSON: {exc})") from None
    if not isinstance(doc, dict) or "fluidgrad_model" not in doc or not isinstance(doc.get("program"), dict):
        raise ModelFileError(f"model file {path} is not a fluidgrad model (no 'fluidgrad_model' and "
                             f"'program' entries)")
    _check_version(path, "has format version", doc["fluidgrad_model"], FILE_FORMAT_VERSION)
    _check_version(path, "holds a program of format version", doc["program"].get("format_version"),
                   PROGRAM_FORMAT_VERSION)
    try:
        program = program_from_dict(doc["program"])
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise ModelFileError(f"model file {path} holds a malformed program: {type(exc).__name__}: {exc}") from None
    unknown = sorted({op.type for block in program.blocks for op in block.ops} - set(registered_ops()))
    if unknown:
        raise ModelFileError(f"model file {path} uses op types this fluidgrad does not have: {', '.join(unknown)}")
    return program, doc.get("feed_names"), doc.get("fetch_names")


def read_metadata(path: str | os.PathLike) -> dict:
    """The `metadata` a model file was saved with ({} if none)."""
    path = _model_path(path)
    try:
        doc = json.loads(_read_bytes(path, "model").decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelFileError(f"model file {path} is truncated or corrupted (not valid JSON: {exc})") from None
    metadata = doc.get("metadata", {}) if isinstance(doc, dict) else {}
    if not isinstance(metadata, dict):
        raise ModelFileError(f"model file {path} holds metadata that is not a JSON object: {metadata!r}")
    return metadata


def _check_version(path: Path, what: str, version: Any, supported: int) -> None:
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ModelFileError(f"model file {path} {what} {version!r}, which is not a valid version number")
    if version > supported:
        raise ModelFileError(f"model file {path} {what} {version}, newer than this fluidgrad reads "
                             f"(up to {supported}); upgrade fluidgrad")


def _model_path(path: str | os.PathLike) -> Path:
    text = os.fspath(path)
    return Path(text if text.endswith(MODEL_SUFFIX) else text + MODEL_SUFFIX)


def _params_path(path: str | os.PathLike) -> Path:
    text = os.fspath(path)
    if text.endswith(MODEL_SUFFIX):
        text = text[: -len(MODEL_SUFFIX)]
    return Path(text if text.endswith(PARAMS_SUFFIX) else text + PARAMS_SUFFIX)


# ---------------------------------------------------------------- parameter files

def _persistables(program: Program) -> list[Variable]:
    """Dense persistable variables of the global block: parameters, optimizer state, counters."""
    return [v for v in program.global_block().vars.values()
            if v.persistable and v.type == Variable.DENSE and v.name != EMPTY_VAR_NAME]


def _next_path(path: Path) -> Path:
    """Where a save puts the new parameters until its model file (the commit point) is written."""
    return path.with_name(path.name + ".next")


def _write_params(path: Path, variables: Sequence[Variable], scope: Scope) -> str:
    """Write the parameters to `_next_path(path)`; return their sha256 (for the model file)."""
    from safetensors.numpy import save as st_save
    tensors = {}
    for var in variables:
        value = scope.get(var.name)
        if value is None:
            raise ModelFileError(f"cannot save {path}: persistable variable {var.name!r} is not in the scope "
                                 f"(run the startup program first)")
        tensors[var.name] = c_ordered(value)
    data = st_save(tensors, metadata={"fluidgrad_params": str(FILE_FORMAT_VERSION), _ZERO_D_KEY: "kept"})
    atomic_write(_next_path(path), data)
    return hashlib.sha256(data).hexdigest()


def _save_pair(params_path: Path, model_path: Path, variables: Sequence[Variable], scope: Scope,
               program: Program, feed_names: Sequence[str] | None = None,
               fetch_names: Sequence[str] | None = None, metadata: dict | None = None) -> None:
    """Parameters, then the model naming their checksum (the commit point), then the rename.

    Each step is atomic; a crash before the model file is replaced leaves the old pair, a crash
    after it leaves the new model with its parameters still under the `.next` name, where
    loading finds them by their checksum. So a crash anywhere leaves a loadable, matching pair.
    """
    digest = _write_params(params_path, variables, scope)
    _write_model(model_path, program, feed_names, fetch_names, params_sha256=digest, metadata=metadata)
    os.replace(_next_path(params_path), params_path)


def _expected_params_digest(model_path: Path) -> str | None:
    """The checksum of the parameters the model file was saved with (None: no model file, or
    one written before checksums). A damaged model file is an error: its checksum cannot be
    read, so the parameters cannot be verified, and a bit-flipped parameter file would load."""
    try:
        raw = model_path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelFileError(f"model file {model_path} is truncated or corrupted (not valid JSON: {exc}), so the "
                             f"checksum of its parameter file cannot be verified; refusing to load") from None
    if not isinstance(doc, dict) or "fluidgrad_model" not in doc:
        raise ModelFileError(f"model file {model_path} is not a fluidgrad model, so the checksum of its parameter "
                             f"file cannot be verified; refusing to load")
    digest = doc.get("params_sha256")
    if digest is not None and not (isinstance(digest, str) and re.fullmatch(r"[0-9a-f]{64}", digest)):
        raise ModelFileError(f"model file {model_path} is corrupted: its params_sha256 {digest!r} is not a "
                             f"sha256 digest; refusing to load its parameter file")
    return digest


def _params_bytes(path: Path, expected: str | None) -> bytes:
    """The parameter file's bytes, verified against the model's checksum when there is one; a
    save interrupted after its model file keeps the matching parameters under `.next`."""
    raw = _read_bytes(path, "parameter") if expected is None or path.exists() else b""
    if expected is None or hashlib.sha256(raw).hexdigest() == expected:
        return raw
    pending = _next_path(path)
    if pending.exists():
        raw_next = pending.read_bytes()
        if hashlib.sha256(raw_next).hexdigest() == expected:
            return raw_next
    if not raw and not path.exists():
        raise ModelFileError(f"parameter file {path} does not exist")
    raise ModelFileError(f"parameter file {path} is truncated or corrupted, or comes from another save: its "
                         f"sha256 differs from the one its model file records")


def _read_params(path: Path, expected: str | None = None,
                 variables: Sequence[Variable] = ()) -> dict[str, np.ndarray]:
    """The file's tensors; a file from before 0-D values were kept gives its [1] tensors of
    the 0-D `variables` back as 0-D."""
    raw = _params_bytes(path, expected)
    try:
        tensors = load_safetensors(raw)
    except Exception as exc:  # safetensors raises its own SafetensorError (and sometimes others)
        raise ModelFileError(f"parameter file {path} is truncated or corrupted: {exc}") from None
    metadata = _params_metadata(raw)
    version = metadata.get("fluidgrad_params", "1")
    if not version.isdigit() or int(version) > FILE_FORMAT_VERSION:
        raise ModelFileError(f"parameter file {path} has format version {version!r}, newer than this "
                             f"fluidgrad reads (up to {FILE_FORMAT_VERSION}); upgrade fluidgrad")
    if _ZERO_D_KEY not in metadata:
        for var in variables:
            value = tensors.get(var.name)
            if tuple(var.shape) == () and value is not None and value.shape == (1,):
                tensors[var.name] = value.reshape(())
    return tensors


def _params_metadata(raw: bytes) -> dict[str, str]:
    """The `__metadata__` of a safetensors header (an 8-byte length, then JSON)."""
    size = int.from_bytes(raw[:8], "little")
    return json.loads(raw[8:8 + size]).get("__metadata__") or {}


def _check_params(path: Path, variables: Sequence[Variable], tensors: dict[str, np.ndarray],
                  strict: bool) -> None:
    """Every persistable must be present with a fitting shape and dtype; raise naming all misfits."""
    problems = []
    for var in variables:
        value = tensors.get(var.name)
        if value is None:
            problems.append(f"{var.name!r} is missing from the file")
            continue
        fits = len(value.shape) == len(var.shape) and all(d in (-1, s) for d, s in zip(var.shape, value.shape))
        if not fits:
            problems.append(f"{var.name!r} has shape {list(value.shape)} in the file but {list(var.shape)} "
                            f"in the program")
        if value.dtype.name != var.dtype:
            problems.append(f"{var.name!r} has dtype {value.dtype.name} in the file but {var.dtype} "
                            f"in the program")
    if strict:
        declared = {v.name for v in variables}
        extra = sorted(set(tensors) - declared)
        if extra:
            problems.append(f"the file holds {', '.join(map(repr, extra))}, which the program does not declare "
                            f"as persistable (pass strict=False to ignore)")
    if problems:
        raise ModelFileError(f"parameter file {path} does not fit the program: " + "; ".join(problems))


def _load_params_into(path: Path, variables: Sequence[Variable], scope: Scope, strict: bool = True,
                      model_path: Path | None = None) -> None:
    tensors = _read_params(path, _expected_params_digest(model_path) if model_path is not None else None, variables)
    _check_params(path, variables, tensors, strict)
    # validated: only now touch the scope
    for var in variables:
        scope.vars[var.name] = np.array(tensors[var.name], copy=True)


# ---------------------------------------------------------------- public API

def save(program: Program | None, path: str | os.PathLike, scope: Scope | None = None) -> None:
    """Save `program` to `path.pdmodel.json` and its persistable values to `path.pdparams.safetensors`.

    Values are read from `scope` (default: the global scope); a persistable that is missing
    there is an error naming it.
    """
    program = program if program is not None else default_main_program()
    scope = scope if scope is not None else global_scope()
    _save_pair(_params_path(path), _model_path(path), _persistables(program), scope, program)


def load(program: Program | None, path: str | os.PathLike, executor: Any = None, scope: Scope | None = None,
         strict: bool = True) -> None:
    """Load `path.pdparams.safetensors` into `scope` (default: global scope) for `program`.

    Every persistable of the program must be in the file with the same shape and dtype;
    with `strict`, the file must not hold other tensors. Nothing is written on a mismatch.
    `executor` is accepted for Paddle compatibility; loading needs none.
    """
    program = program if program is not None else default_main_program()
    scope = scope if scope is not None else global_scope()
    _load_params_into(_params_path(path), _persistables(program), scope, strict, _model_path(path))


def save_inference_model(path_prefix: str | os.PathLike, feed_vars: Sequence[Variable | str] | Variable | str,
                         fetch_vars: Sequence[Variable | str] | Variable | str, executor: Any = None,
                         program: Program | None = None, scope: Scope | None = None, *,
                         metadata: dict | None = None) -> Program:
    """Save the part of `program` that computes `fetch_vars` from `feed_vars`, and its parameters.

    The program is cloned for test (no backward or optimizer ops; dropout and batch-norm in
    inference mode) and pruned to the ops the fetches need. Returns the pruned program.
    `metadata`: JSON values kept in the model file (`read_metadata`), e.g. jit.save's output nesting.
    """
    program, where = _program_of(feed_vars, fetch_vars, program)
    scope = scope if scope is not None else global_scope()
    feed_names = _names(feed_vars, "feed_vars")
    fetch_names = _names(fetch_vars, "fetch_vars")
    pruned = prune(program.clone(for_test=True), feed_names, fetch_names, where)
    _save_pair(_params_path(path_prefix), _model_path(path_prefix), _persistables(pruned), scope, pruned,
               feed_names, fetch_names, metadata)
    return pruned


def load_inference_model(path_prefix: str | os.PathLike, executor: Any = None,
                         scope: Scope | None = None) -> list[Any]:
    """Load what `save_inference_model` wrote: [program, feed_names, fetch_vars].

    Parameters go into `scope` (default: the global scope); run with
    `executor.run(program, feed={name: array}, fetch_list=fetch_vars)`.
    """
    scope = scope if scope is not None else global_scope()
    path = _model_path(path_prefix)
    program, feed_names, fetch_names = read_model(path)
    if feed_names is None or fetch_names is None:
        raise ModelFileError(f"model file {path} was written by save(), not save_inference_model(): "
                             f"it names no feeds and fetches; use read_model() or load()")
    block = program.global_block()
    missing = [n for n in list(feed_names) + list(fetch_names) if not block.has_var(n)]
    if missing:
        raise ModelFileError(f"model file {path} names feeds/fetches {missing} that its program does not declare")
    _load_params_into(_params_path(path_prefix), _persistables(program), scope, model_path=path)
    return [program, list(feed_names), [block.var(n) for n in fetch_names]]


def _program_of(feed_vars: Any, fetch_vars: Any, program: Program | None) -> tuple[Program, str]:
    """The program to save, and how to name it in errors: `program` if given, else the one
    the feed and fetch Variables belong to (they must agree), else the default main program."""
    if program is not None:
        return program, "the given program"
    items = [v for group in (feed_vars, fetch_vars)
             for v in ([group] if isinstance(group, (Variable, str)) else list(group))]
    owners = {id(v.block.program): (v.block.program, v.name) for v in items if isinstance(v, Variable)}
    if len(owners) > 1:
        names = [name for _, name in owners.values()]
        raise ValueError(f"save_inference_model: the feed and fetch Variables {names} belong to different "
                         f"programs; pass program= explicitly")
    if owners:
        owner, name = next(iter(owners.values()))
        return owner, f"the program that {name!r} belongs to"
    return default_main_program(), "the default main program (feeds and fetches given by name; pass program=)"


def _names(items: Sequence[Variable | str] | Variable | str, what: str) -> list[str]:
    items = [items] if isinstance(items, (Variable, str)) else list(items)
    names = names_of(items, what)
    if not names:
        raise ValueError(f"{what} is empty")
    return names


# ---------------------------------------------------------------- pruning

def _sub_blocks(block: Block) -> list[Block]:
    return [v for op in block.ops for v in op.attrs.values() if isinstance(v, Block)]


def _outer_reads(block: Block) -> set[str]:
    """Names a sub-block (and its nested blocks) reads that it does not declare itself."""
    names: set[str] = set()
    for op in block.ops:
        names.update(op.input_arg_names)
        names.update(op.output_arg_names)  # an outer var written in the loop must exist outside too
        for sub in (v for v in op.attrs.values() if isinstance(v, Block)):
            names |= _outer_reads(sub)
    return {n for n in names if not block.has_var(n)}


def prune(program: Program, feed_names: Sequence[str], fetch_names: Sequence[str],
          where: str = "the program") -> Program:
    """Keep the global-block ops that `fetch_names` need from `feed_names` (in place; returns it).

    Ops holding a sub-block keep it, and whatever the sub-block reads from outside counts as
    needed. Blocks no kept op references are dropped and the rest renumbered; unused
    global-block variables are dropped. A fetch that needs a variable that is neither fed,
    persistable, nor computed is an error naming both.
    """
    block = program.global_block()
    for name in list(feed_names) + list(fetch_names):
        if not block.has_var(name):
            raise ValueError(f"save_inference_model: {name!r} is not a variable of the global block of {where}, "
                             f"which was searched")
    feeds = set(feed_names)
    needed = set(fetch_names) - feeds
    kept = []
    for op in reversed(block.ops):
        if op.role in (BACKWARD, OPTIMIZE) or not needed & set(op.output_arg_names):
            continue
        kept.append(op)
        needed |= set(op.input_arg_names)
        for sub in (v for v in op.attrs.values() if isinstance(v, Block)):
            needed |= _outer_reads(sub)
        needed -= feeds
    kept.reverse()
    produced = {n for op in kept for n in op.output_arg_names}
    for name in sorted(needed - produced - {EMPTY_VAR_NAME}):
        var = block._find_var_recursive(name)
        if var is None or not var.persistable:
            raise ValueError(f"save_inference_model: the fetches {list(fetch_names)} need {name!r}, which is "
                             f"neither fed ({sorted(feeds)}), persistable, nor computed by a kept op")
    block.ops = kept
    used = feeds | set(fetch_names) | produced | needed
    block.vars = {n: v for n, v in block.vars.items() if n in used}
    _drop_unreferenced_blocks(program)
    program._bump()
    return program


def _drop_unreferenced_blocks(program: Program) -> None:
    reachable, stack = {0}, [program.global_block()]
    while stack:
        for sub in _sub_blocks(stack.pop()):
            if sub.idx not in reachable:
                reachable.add(sub.idx)
                stack.append(sub)
    new_index = {old: new for new, old in enumerate(sorted(reachable))}
    blocks = [program.blocks[old] for old in sorted(reachable)]
    for blk in blocks:
        blk.idx = new_index[blk.idx]
        blk.parent_idx = new_index.get(blk.parent_idx, -1) if blk.parent_idx >= 0 else -1
        blk.forward_block_idx = new_index.get(blk.forward_block_idx, -1)
    program.blocks = blocks
    program._current_block_idx = 0
