"""Where the app may read files from, and how uploaded files are laid out before import."""
from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path, PurePosixPath

from lib.errors import JudgeLensError
from lib.ingest.formats import fastchat

from lib.paths import DATA_DIR as REPO_DATA
KIND_FOLDERS = {"questions": "", "reference_answers": "reference_answer", "answers": "model_answer",
                "single_judgments": "model_judgment", "pair_judgments": "model_judgment"}
MAX_ZIP_MEMBERS = 10_000


class PathNotAllowed(JudgeLensError):
    title = "That folder is outside the import roots"


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
    if member.is_absolute() or ".." in member.parts or name.endswith("/"):
        return None
    if member.parts and member.parts[0] == "__MACOSX":
        return None
    return member


def stage_uploads(files: list[tuple[str, bytes]], dest: Path, bench: str) -> list[Path]:
    """Write uploaded files under ``dest`` in a layout the importers understand; return what to import.

    A zip keeps its own folder layout. A loose FastChat .jsonl is placed where its kind belongs in
    ``<bench>/…`` (its first record tells the kind); Swallow files keep their names.
    """
    dest.mkdir(parents=True, exist_ok=True)
    to_import: list[Path] = []
    for name, data in files:
        base = PurePosixPath(name.replace("\\", "/")).name
        if base.endswith(".zip"):
            unzipped = dest / base[: -len(".zip")]
            to_import.append(unzipped)
            with zipfile.ZipFile(io.BytesIO(data)) as zf:
                members = zf.infolist()[:MAX_ZIP_MEMBERS]
                for info in members:
                    member = _safe_member(info.filename)
                    if member is None:
                        continue
                    target = unzipped.joinpath(*member.parts)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(zf.read(info))
            continue
        loose = dest / "_loose" / base
        loose.parent.mkdir(parents=True, exist_ok=True)
        loose.write_bytes(data)
        to_import.append(loose)
        if base.endswith(".jsonl"):
            try:
                kind = fastchat.sniff(loose, bench).kind
            except JudgeLensError:
                continue  # leave it loose: the import says what is wrong with it
            if kind == "judge_prompts":
                target = dest / base
            elif kind == "questions":
                target = dest / bench / (base if base.startswith("question") else "question.jsonl")
            else:
                folder = KIND_FOLDERS[kind]
                if kind in ("single_judgments", "pair_judgments") and not base.endswith(("_single.jsonl", "_pair.jsonl")):
                    base = base[: -len(".jsonl")] + ("_single.jsonl" if kind == "single_judgments" else "_pair.jsonl")
                target = dest / bench / folder / base
            target.parent.mkdir(parents=True, exist_ok=True)
            loose.replace(target)
            to_import[-1] = target
    return to_import
