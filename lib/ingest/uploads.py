"""Where the app may read files from, and how uploaded files are laid out before import."""
from __future__ import annotations

import io
import os
import shutil
import tempfile
import weakref
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from lib.errors import JudgeLensError, PathNotAllowed, UploadRefused
from lib.ingest.formats import registry
from lib.ingest.zipread import ZstdError, open_member

from lib.paths import DATA_DIR as REPO_DATA
MAX_ZIP_MEMBERS = 10_000
# Harness files compress 5-10x (JSON Lines of judge prompts and answers); deflate tops out near 1030x. A member
# expanding more than MAX_RATIO times its packed size (once past RATIO_FLOOR bytes) is a zip bomb.
MAX_RATIO = 100
RATIO_FLOOR = 1 << 20
CHUNK = 1 << 20


def max_unzipped_bytes() -> int:
    """What one upload may expand to on disk: $JUDGELENS_MAX_UNZIPPED_MB (default 4096 MiB)."""
    try:
        return int(float(os.environ.get("JUDGELENS_MAX_UNZIPPED_MB", "4096")) * 2**20)
    except ValueError:
        return 4096 * 2**20


def _size(n: int) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n} bytes"


def allowed_import_roots() -> list[Path]:
    """Folders the app may import from by path: $JUDGELENS_IMPORT_ROOTS (os.pathsep-separated), else data/."""
    configured = os.environ.get("JUDGELENS_IMPORT_ROOTS", "")
    roots = [Path(p).expanduser().resolve() for p in configured.split(os.pathsep) if p.strip()]
    return roots or [REPO_DATA.resolve()]


def check_import_path(text: str) -> Path:
    path = Path(text.strip()).expanduser().resolve()
    roots = allowed_import_roots()
    if not any(path == root or root in path.parents for root in roots):
        raise PathNotAllowed(
            f"{text} is not inside an allowed import folder ({', '.join(map(str, roots))}). "
            "Ask whoever runs this JudgeLens to add it to JUDGELENS_IMPORT_ROOTS, or upload the files instead.")
    if not path.exists():
        raise PathNotAllowed(f"{text}: no such file or folder on the server", title="Not found")
    return path


def _safe_member(name: str) -> PurePosixPath | None:
    member = PurePosixPath(name)
    if member.is_absolute() or ".." in member.parts:
        return None
    return member


@dataclass
class Staged:
    """What ``stage_uploads`` laid out: the paths to import, and zip members it left out (to tell the user)."""

    paths: list[Path] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def notes(self) -> list[str]:
        if not self.skipped:
            return []
        return [f"skipped {len(self.skipped)} zip member(s) whose path leads outside the zip's folder: "
                + ", ".join(self.skipped)]


class StagingArea:
    """A private temporary folder for one upload. Removed by ``cleanup()``, on leaving a ``with`` block unless
    ``keep()`` was called (the page keeps it for "Import again, skipping the bad lines"), when the object is
    garbage-collected (the Streamlit session holding it ended) and at interpreter exit."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="judgelens-upload-"))
        self.folder = self.root / "upload"
        self._kept = False
        self._finalizer = weakref.finalize(self, shutil.rmtree, str(self.root), ignore_errors=True)

    def keep(self) -> None:
        self._kept = True

    def cleanup(self) -> None:
        self._finalizer()

    @property
    def removed(self) -> bool:
        return not self.root.exists()

    def __enter__(self) -> "StagingArea":
        return self

    def __exit__(self, *exc) -> None:
        if not self._kept or exc[0] is not None:
            self.cleanup()


def _unzip(name: str, data: bytes, dest: Path, skipped: list[str]) -> None:
    """Stream the members of one uploaded zip to ``dest``, refusing bombs, clashes and damaged archives."""
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        if data.startswith(b"PK"):
            raise UploadRefused(f"{name} is damaged: it starts like a zip but its table of contents is missing or "
                                "broken (was the upload or the download cut off?). Create the zip again and upload "
                                "it again.") from None
        raise UploadRefused(f"{name} is not a zip file (its bytes are not a zip archive, whatever its name). "
                            "Upload the .jsonl / .json / .parquet files themselves, or a real .zip.") from None
    except (OSError, EOFError, ValueError) as exc:
        raise UploadRefused(f"{name} is damaged and cannot be opened as a zip ({exc}). Create the zip again "
                            "and upload it again.") from None
    cap = max_unzipped_bytes()
    with zf:
        infos = zf.infolist()
        if len(infos) > MAX_ZIP_MEMBERS:
            raise UploadRefused(f"{name} holds {len(infos)} entries, over the limit of {MAX_ZIP_MEMBERS} per zip. "
                                "Split it into several zips, or import the folder from the server.")
        declared = sum(i.file_size for i in infos)
        if declared > cap:
            raise UploadRefused(f"{name} expands to {_size(declared)}, over the {_size(cap)} one upload may unpack "
                                "to (JUDGELENS_MAX_UNZIPPED_MB). Import data this big from a server folder.")
        members: dict[PurePosixPath, zipfile.ZipInfo] = {}
        for info in infos:
            member = _safe_member(info.filename)
            if member is None:
                skipped.append(info.filename)
                continue
            if info.is_dir() or not member.parts or member.parts[0] == "__MACOSX":
                continue
            if info.file_size > RATIO_FLOOR and info.file_size > MAX_RATIO * max(info.compress_size, 1):
                raise UploadRefused(_bomb(name, info.filename, info.file_size, info.compress_size))
            if member in members:
                raise UploadRefused(f"{name}: {info.filename} is in the zip twice. Keep one and zip again.")
            members[member] = info
        files = set(members)
        for member in members:
            for parent in member.parents:
                if parent in files:
                    raise UploadRefused(f"{name}: {parent} is a file, and {member} needs a folder of that name. "
                                        "Rename one of them and zip again.")
        written = 0
        for member, info in members.items():
            target = dest.joinpath(*member.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            size = 0
            try:
                with open_member(zf, info) as src, open(target, "wb") as out:
                    while chunk := src.read(CHUNK):
                        size += len(chunk)
                        written += len(chunk)
                        if written > cap:
                            raise UploadRefused(
                                f"{name} expands to more than {_size(cap)}, the most one upload may unpack to "
                                "(JUDGELENS_MAX_UNZIPPED_MB). Import data this big from a server folder.")
                        if size > RATIO_FLOOR and size > MAX_RATIO * max(info.compress_size, 1):
                            raise UploadRefused(_bomb(name, info.filename, size, info.compress_size))
                        out.write(chunk)
            except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError,
                    ZstdError) as exc:
                raise UploadRefused(f"{name} is damaged: {info.filename} cannot be unpacked ({exc}). Create the "
                                    "zip again and upload it again.") from None


def _bomb(name: str, member: str, size: int, packed: int) -> str:
    return (f"{name}: {member} expands from {_size(packed)} to {_size(size)} (over {MAX_RATIO} times its packed "
            "size; harness files compress about 10 times), so it looks like a zip bomb. Upload the files "
            "themselves, or import them from a server folder.")


def stage_uploads(files: list[tuple[str, bytes]], dest: Path, bench: str) -> Staged:
    """Write uploaded files under ``dest`` in a layout the importers understand; return what to import.

    A zip keeps its own folder layout (members leading outside it are skipped and listed). A loose file is
    placed where a reader's layout wants it (``Reader.stage``: a FastChat .jsonl goes where its kind belongs in
    ``<bench>/…``, its first record telling the kind); other files keep their names. Raises UploadRefused for a zip that is not one, is damaged, is a
    bomb or has too many members; the caller removes ``dest`` (see StagingArea).
    """
    dest.mkdir(parents=True, exist_ok=True)
    staged = Staged()
    to_import = staged.paths
    for name, data in files:
        base = PurePosixPath(name.replace("\\", "/")).name
        if base.lower().endswith(".zip"):
            unzipped = dest / base[: -len(".zip")]
            _unzip(base, data, unzipped, staged.skipped)
            to_import.append(unzipped)
            continue
        loose = dest / "_loose" / base
        loose.parent.mkdir(parents=True, exist_ok=True)
        loose.write_bytes(data)
        to_import.append(loose)
        for reader in registry.READERS:
            try:
                target = reader.stage(loose, dest, bench) if reader.stage else None
            except JudgeLensError:
                break  # leave it loose: the import says what is wrong with it
            if target is not None:
                target.parent.mkdir(parents=True, exist_ok=True)
                loose.replace(target)
                to_import[-1] = target
                break
    return staged
