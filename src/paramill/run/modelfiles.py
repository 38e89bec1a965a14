"""Model files users hand commands: paramill's torch files (embedding models, reference
classifiers, resume checkpoints), SentencePiece models and sentence-transformers folders (the
identifier's sentence encoder), each read so that a file that is not one is an
:class:`~paramill.errors.InputError` naming it, not a library's traceback. torch,
sentencepiece and sentence-transformers are imported where a file is read."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from paramill.errors import InputError, check_regular_file, first_line


def torch_load_problem(exc: BaseException) -> str:
    """What ``torch.load`` found wrong with a file, in a line: torch's own explanation is long
    (and suggests allowlisting what the file asks for); keep what its unpickler found, or
    the first line of another error (a cut file, not a torch file)."""
    text = " ".join(str(exc).split())
    found = text.split("WeightsUnpickler error:", 1)[-1].strip()
    first = found.split(". Please use")[0].split(" Check the documentation")[0]
    first = first.split(" This is an internal miniz error")[0]
    return f"{type(exc).__name__}: {first[:200]}"


def compressed_member(source: str | os.PathLike | bytes) -> str | None:
    """The first member of the zip archive ``source`` (a path, or a file's bytes: torch's file
    layout) that is compressed, None where none is or it is no zip archive (torch names what
    else is wrong). torch inflates a deflated member whatever its ratio (195 KB were a 200 MB
    tensor); ``torch.save`` stores every member as it is, so a reader refuses one first."""
    import io
    import zipfile

    try:
        with zipfile.ZipFile(io.BytesIO(source) if isinstance(source, bytes) else source) as archive:
            return next((i.filename for i in archive.infolist() if i.compress_type != zipfile.ZIP_STORED), None)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return None


def read_torch_file(path: str | os.PathLike, mark: str, what: str) -> dict[str, Any]:
    """The dict a paramill torch file (``torch.save``) holds, read by torch's weights-only
    unpickler, with ``format`` ``mark``; an :class:`InputError` naming the file and ``what``
    it should be where it is missing, cut, not a torch file, asks the unpickler for more
    than tensors and containers, or is another program's file (torch's own errors name no
    file)."""
    import torch

    check_regular_file(path)
    packed = compressed_member(path)
    if packed:
        raise InputError(path, None, f"not a {what} (its member {packed} is compressed: torch.save "
                                     "stores every member as it is)")
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # UnpicklingError, RuntimeError (a cut zip), EOFError, ...
        raise InputError(path, None, f"not a {what} ({torch_load_problem(exc)})") from None
    if not isinstance(data, dict) or data.get("format") != mark:
        raise InputError(path, None, f"not a {what} (a torch file without the format mark "
                                     f"{mark!r})")
    return data


def open_sentencepiece(path: str | os.PathLike):
    """A ``SentencePieceProcessor`` of the model file ``path``, or an :class:`InputError`
    naming it (SentencePiece's own errors are tracebacks: ``could not parse ModelProto``)."""
    import sentencepiece as spm

    check_regular_file(path)
    try:
        return spm.SentencePieceProcessor(model_file=str(path))
    except (RuntimeError, OSError) as exc:
        raise InputError(path, None, f"not a SentencePiece model ({first_line(exc)})") from None


@contextlib.contextmanager
def rebuilt_from(path: str | os.PathLike, what: str,
                 why: str = "damaged or from another paramill") -> Iterator[None]:
    """Around building a model from what :func:`read_torch_file` read: a part that does not
    fit (torch keeps no checksum of a tensor's bytes, so a damaged file can read yet hold a
    broken SentencePiece model or weights of the wrong shape; an OpenNMT-py checkpoint's
    options of 0 heads) is an :class:`InputError` naming the file, not a traceback. The
    host or the device running out of memory is raised as it is."""
    from paramill.run import device

    try:
        yield
    except InputError:
        raise
    except (RuntimeError, ValueError, KeyError, TypeError, AttributeError, ZeroDivisionError,
            AssertionError) as exc:
        if device.gpu_out_of_memory(exc) or device.host_out_of_memory(exc):
            raise
        article = "an" if what[:1].lower() in "aeiou" else "a"
        raise InputError(path, None, f"{article} {what} that cannot be rebuilt, {why} "
                                     f"({type(exc).__name__}: {first_line(exc, '')})") from None


@contextlib.contextmanager
def on_meta() -> Iterator[None]:
    """Modules built inside are on torch's meta device (shapes, no memory), their random
    initialisations skipped: they write nothing there, and torch's ``normal_`` on a meta
    tensor (a decomposition that lazily imports ``torch._dynamo``) costs about a second a
    process, in every job that only loads a model (an embedding's ``nn.Embedding``).
    ``torch.nn.init.normal_`` passes meta tensors through while the block runs; any other
    tensor, in any thread, is initialised as before."""
    import torch
    from torch.nn import init

    normal = init.normal_

    def normal_unless_meta(tensor, *args, **kwargs):
        return tensor if tensor.is_meta else normal(tensor, *args, **kwargs)

    init.normal_ = normal_unless_meta
    try:
        with torch.device("meta"):
            yield
    finally:
        init.normal_ = normal


def with_weights(build: Callable[[], Any], state: dict[str, Any]) -> Any:
    """The module ``build()`` makes, made on torch's meta device (no memory), its parameters
    then the tensors of ``state`` (a checkpoint's ``state_dict``) themselves: memory holds what
    the file holds, whatever sizes its settings name (a 250 KB model file whose spec said
    ``dim`` 2,000,000,000 asked for 96 GB before its weights were compared with them). A
    tensor missing, unexpected, of another shape or not laid out as its own values (a view
    repeating fewer) is a ``RuntimeError``, for :func:`rebuilt_from`."""
    import torch

    for name, tensor in state.items():  # torch.save keeps a tensor's own strides: one of
        # stride 0 over a float read as 12 x 100,000,000 (a 254 KB file encoded into 800 MB)
        if isinstance(tensor, torch.Tensor) and not tensor.is_contiguous():
            raise RuntimeError(f"{name}'s {tuple(tensor.shape)} values are not its own (strides "
                               f"{tensor.stride()} over {tensor.untyped_storage().nbytes():,} bytes)")
    with on_meta():
        module = build()
    try:
        module.load_state_dict(state, assign=True)
    except RuntimeError as exc:  # torch names the tensor on the lines after its first
        raise RuntimeError(" ".join(str(exc).split())[:400]) from None
    empty = [name for name, t in [*module.named_parameters(), *module.named_buffers()] if t.is_meta]
    if empty:
        raise RuntimeError(f"no weights in the file for {', '.join(empty[:3])}")
    return module


def set_aside(path: Path, label: str, why: object, then: str) -> None:
    """Rename ``path``, a checkpoint that does not read, to ``<name>.unreadable`` (kept for a
    look, never read again) and say so on stderr: ``label: why; set aside as ...; then``."""
    aside = path.with_name(path.name + ".unreadable")
    path.replace(aside)
    print(f"{label}: {why}; set aside as {aside.name}, {then}", file=sys.stderr)


def sentence_transformer(path: str | os.PathLike, device: str):
    """The sentence-transformers model in the folder ``path`` on ``device``, or an
    :class:`InputError` naming the folder. A folder it cannot load raised whatever its
    libraries raise (a ``RuntimeError`` for a ``config.json`` whose sizes do not fit the
    weights, ``ZeroDivisionError`` for 0 attention heads, safetensors' ``SafetensorError`` for
    a cut weight file: in a job, a traceback; a negative ``max_seq_length`` or a token id past
    the embeddings failed at the first sentence), and one whose ``config.json`` describes
    more than its weight files hold (100 layers over 6 layers' weights) loaded, transformers
    filling the rest at random with a warning: an encoder of random layers, no error."""
    from paramill.run import device as devices

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    try:
        model = SentenceTransformer(str(path), device=device, local_files_only=True)
    except (MemoryError, KeyboardInterrupt):
        raise
    except Exception as exc:  # noqa: BLE001 - every library's own error, said as the folder's
        if devices.gpu_out_of_memory(exc) or devices.host_out_of_memory(exc):
            raise
        raise InputError(path, None, "not a sentence-transformers model paramill can load "
                         f"({type(exc).__name__}: {first_line(exc)})") from None
    longest = model.max_seq_length
    if longest is not None and (not isinstance(longest, int) or longest < 1):
        raise InputError(path, None, f"max_seq_length {longest!r} (sentence_bert_config.json) is "
                         "not a positive whole number of tokens")
    rows = model[0].auto_model.get_input_embeddings().num_embeddings
    token, top = max(model.tokenizer.get_vocab().items(), key=lambda item: item[1])
    if top >= rows:  # an IndexError at the first sentence that holds it
        raise InputError(path, None, f"its tokenizer gives {token!r} the id {top:,}, and its "
                         f"model embeds {rows:,} ids (vocab_size in config.json)")
    missing, unused = unloaded_weights(Path(path), model[0].auto_model)
    if missing:
        raise InputError(path, None, f"{len(missing)} of its model's weights are in none of its "
                         f"weight files ({', '.join(missing[:3])}, …): its config.json describes "
                         "a larger model than its weights, which transformers would fill with "
                         "random values")
    if unused:
        raise InputError(path, None, f"its weight files hold {len(unused)} weights of parts its "
                         f"config.json does not build ({', '.join(unused[:3])}, …): its "
                         "config.json describes a smaller model than its weights (fewer layers), "
                         "which transformers would load leaving them out")
    return model


def unloaded_weights(path: Path, module) -> tuple[list[str], list[str]]:
    """The parameters of ``module`` (a transformers model; its unused pooler aside) that no
    weight file under ``path`` holds, by name or as the end of a name (a checkpoint of
    ``BertForX`` names them ``bert.…``), and the weights the files hold that are another
    instance of a part the model has but not one of its own (``encoder.layer.5.…`` where it
    builds layers 0 and 1, or none: a head such as ``cls.…`` is no part of it, and left alone); none
    where the folder has no weight file paramill reads (``*.safetensors``; where there is
    none, ``pytorch_model*.bin``, as transformers prefers them), only their names."""
    import zipfile

    import torch
    from safetensors import safe_open

    keys: set[str] = set()
    safetensors = sorted(path.rglob("*.safetensors"))
    for file in safetensors:
        with safe_open(str(file), "pt") as weights:
            keys.update(weights.keys())
    for file in [] if safetensors else sorted(path.rglob("pytorch_model*.bin")):  # as transformers
        try:  # mapped where torch can (its zip layout), never held: only the names are needed
            keys.update(torch.load(file, map_location="meta", weights_only=True,
                                   mmap=zipfile.is_zipfile(file)))
        except Exception as exc:  # noqa: BLE001 - torch's errors of a file that is not one
            raise InputError(file, None, f"not a torch weight file paramill reads "
                             f"({torch_load_problem(exc)})") from None
    if not keys:
        return [], []

    def ends(key: str) -> list[str]:  # the name and each end of it after a dot
        return [key.split(".", i)[-1] for i in range(key.count(".") + 1)]

    def shape(name: str) -> str:  # the name with each index a mark: a part, whichever instance
        return ".".join("#" if part.isdigit() else part for part in name.split("."))

    held = {end for key in keys for end in ends(key)}
    parameters = {name for name, _ in module.named_parameters()}
    names = parameters | {name for name, _ in module.named_buffers()}
    missing = [name for name in sorted(parameters) if name not in held and not name.startswith("pooler.")]
    parts = {shape(name) for name in names}
    lists = {name for name, _ in module.named_modules()}  # an empty list of layers is one too

    def another(end: str) -> bool:  # another instance of a part, or one of a list it left empty
        head = end.split(".")
        return shape(end) in parts or any(
            head[i].isdigit() and ".".join(head[:i]) in lists for i in range(1, len(head)))

    unused = [key for key in sorted(keys) if not any(end in names for end in ends(key))
              and any(another(end) for end in ends(key))]
    return missing, unused
