"""Zip uploads that are bombs, damaged, not zips, or clash with themselves; staging folders that must not
outlive their import; server-folder links out of the import roots (issue 8, defects 2 and 4)."""
from __future__ import annotations

import gc
import io
import json
import os
import zipfile
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import lib.ingest.uploads as uploads
from lib.errors import PathNotAllowed, UploadRefused
from lib.ingest.importer import ingest
from lib.ingest.uploads import StagingArea, stage_uploads
from lib.store import Store, default_db_path

ROOT = Path(__file__).resolve().parents[2]
LINE = json.dumps({"question_id": 1, "model": "m", "judge": ["j", "single-v1"], "score": 5, "turn": 1,
                   "judgment": "Rating: [[5]]"}) + "\n"


def zip_of(members: dict[str, bytes], compression=zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as zf:
        for name, data in members.items():
            zf.writestr(zipfile.ZipInfo(name), data, compress_type=compression)
    return buf.getvalue()


def refused(tmp_path, name: str, data: bytes) -> str:
    dest = tmp_path / "upload"
    with pytest.raises(UploadRefused) as info:
        stage_uploads([(name, data)], dest, "b")
    assert info.value.title == "Upload refused: nothing was imported"
    return info.value.message


def written(tmp_path) -> list[str]:
    return [p.name for p in (tmp_path / "upload").rglob("*") if p.is_file()]


def test_a_zip_bomb_is_refused_before_anything_is_written(tmp_path, monkeypatch):
    data = zip_of({"b/model_judgment/x_single.jsonl": b"\0" * (40 << 20)})  # 40 MiB of zeros, ~40 KiB packed
    assert len(data) < 100_000
    packed = zipfile.ZipFile(io.BytesIO(data)).infolist()[0].compress_size
    opened = []   # refused from the sizes in the zip's directory: no member is opened (decompressed) at all
    real_open = zipfile.ZipFile.open

    def counting_open(self, name, *args, **kwargs):
        opened.append(name)
        return real_open(self, name, *args, **kwargs)

    monkeypatch.setattr(zipfile.ZipFile, "open", counting_open)
    message = refused(tmp_path, "bomb.zip", data)
    assert opened == []
    assert message == (f"bomb.zip: b/model_judgment/x_single.jsonl expands from {packed} bytes to 40.0 MiB (over 100 "
                       "times its packed size; harness files compress about 10 times), so it looks like a zip bomb. "
                       "Upload the files themselves, or import them from a server folder.")
    assert written(tmp_path) == []


def test_a_zip_expanding_past_the_cap_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGELENS_MAX_UNZIPPED_MB", "1")
    data = zip_of({"a.jsonl": os.urandom(600_000), "b.jsonl": os.urandom(600_000)})
    assert refused(tmp_path, "big.zip", data) == (
        "big.zip expands to 1.1 MiB, over the 1.0 MiB one upload may unpack to (JUDGELENS_MAX_UNZIPPED_MB). "
        "Import data this big from a server folder.")
    assert written(tmp_path) == []


def test_a_zip_whose_sizes_lie_is_stopped_while_streaming(tmp_path, monkeypatch):
    """Headers may understate sizes: the cap is also counted on the bytes actually written."""
    monkeypatch.setattr(uploads, "max_unzipped_bytes", lambda: 2_000_000)
    real_infolist = zipfile.ZipFile.infolist

    def understated(self):
        infos = real_infolist(self)
        for info in infos:
            info.file_size, info.compress_size = 10, info.compress_size  # what a lying central directory says
        return infos

    data = zip_of({"a.bin": os.urandom(1_500_000), "b.bin": os.urandom(1_500_000)}, zipfile.ZIP_STORED)
    monkeypatch.setattr(zipfile.ZipFile, "infolist", understated)
    with pytest.raises(UploadRefused) as info:
        stage_uploads([("liar.zip", data)], tmp_path / "upload", "b")
    assert info.value.message in (
        "liar.zip expands to more than 1.9 MiB, the most one upload may unpack to (JUDGELENS_MAX_UNZIPPED_MB). "
        "Import data this big from a server folder.",
        # zipfile itself stops at the declared size and then finds the CRC wrong
        "liar.zip is damaged: a.bin cannot be unpacked (Bad CRC-32 for file 'a.bin'). Create the zip again and "
        "upload it again.")


def test_too_many_members_are_refused_not_dropped(tmp_path, monkeypatch):
    monkeypatch.setattr(uploads, "MAX_ZIP_MEMBERS", 3)
    data = zip_of({f"b/model_judgment/{i}_single.jsonl": LINE.encode() for i in range(4)})
    assert refused(tmp_path, "many.zip", data) == (
        "many.zip holds 4 entries, over the limit of 3 per zip. Split it into several zips, or import the folder "
        "from the server.")


def test_a_non_zip_named_zip(tmp_path):
    assert refused(tmp_path, "notes.zip", b"just some text\n") == (
        "notes.zip is not a zip file (its bytes are not a zip archive, whatever its name). Upload the .jsonl / "
        ".json / .parquet files themselves, or a real .zip.")


def test_a_cut_off_zip(tmp_path):
    data = zip_of({"b/model_judgment/x_single.jsonl": LINE.encode() * 50})
    assert refused(tmp_path, "cut.zip", data[: len(data) // 2]) == (
        "cut.zip is damaged: it starts like a zip but its table of contents is missing or broken (was the upload "
        "or the download cut off?). Create the zip again and upload it again.")


def test_a_zip_with_a_damaged_member(tmp_path):
    data = bytearray(zip_of({"b/model_judgment/x_single.jsonl": LINE.encode() * 50}))
    start = data.index(b"x_single.jsonl") + len("x_single.jsonl") + 5  # inside the packed bytes
    data[start:start + 8] = b"\xff" * 8
    message = refused(tmp_path, "bad.zip", bytes(data))
    assert message.startswith("bad.zip is damaged: b/model_judgment/x_single.jsonl cannot be unpacked (")
    assert message.endswith("). Create the zip again and upload it again.")


def test_a_file_and_a_folder_of_one_name(tmp_path):
    data = zip_of({"b/model_judgment": b"a file", "b/model_judgment/x_single.jsonl": LINE.encode()})
    assert refused(tmp_path, "clash.zip", data) == (
        "clash.zip: b/model_judgment is a file, and b/model_judgment/x_single.jsonl needs a folder of that name. "
        "Rename one of them and zip again.")


def test_a_member_twice(tmp_path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf, pytest.warns(UserWarning):
        zf.writestr("b/model_judgment/x_single.jsonl", LINE)
        zf.writestr("b/model_judgment/x_single.jsonl", LINE)
    assert refused(tmp_path, "twice.zip", buf.getvalue()) == (
        "twice.zip: b/model_judgment/x_single.jsonl is in the zip twice. Keep one and zip again.")


def test_unsafe_members_are_listed(tmp_path, store):
    data = zip_of({"b/model_judgment/x_single.jsonl": LINE.encode(), "../up_single.jsonl": LINE.encode(),
                   "/etc/abs_single.jsonl": LINE.encode()})
    staged = stage_uploads([("z.zip", data)], tmp_path / "upload", "b")
    assert staged.skipped == ["../up_single.jsonl", "/etc/abs_single.jsonl"]
    assert staged.notes() == ["skipped 2 zip member(s) whose path leads outside the zip's folder: "
                              "../up_single.jsonl, /etc/abs_single.jsonl"]
    assert ingest(store, staged.paths).imported[0].rows == 1


# --- staging folders ----------------------------------------------------------------------------

def test_staging_is_removed_when_the_import_ends(tmp_path):
    with StagingArea() as area:
        stage_uploads([("z.zip", zip_of({"b/model_judgment/x_single.jsonl": LINE.encode()}))], area.folder, "b")
        assert area.folder.is_dir()
    assert area.removed


def test_staging_is_removed_on_error():
    with pytest.raises(UploadRefused), StagingArea() as area:
        stage_uploads([("z.zip", b"not a zip")], area.folder, "b")
    assert area.removed


def test_kept_staging_lives_until_cleanup_or_the_session_ends():
    with StagingArea() as area:
        area.keep()  # the page keeps it so "Import again, skipping the bad lines" can read it
    assert not area.removed
    area.cleanup()
    assert area.removed

    with StagingArea() as area:
        area.keep()
    session_state = {"import_staging": area}
    root = area.root
    del area
    session_state.clear()  # Streamlit drops a session's state when the session ends
    gc.collect()
    assert not root.exists()


def test_the_import_page_leaves_no_staging_folder(tmp_path, monkeypatch):
    """The page's upload button, driven with a fake uploaded file (AppTest cannot drive st.file_uploader)."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with Store(default_db_path()) as s, s.write() as cur:
        cur.execute("INSERT OR REPLACE INTO meta VALUES ('sample_loaded', 'yes')")

    class Upload:
        def __init__(self, name, data):
            self.name, self._data = name, data

        def getvalue(self):
            return self._data

    bad = LINE + "{not json\n"
    data = zip_of({"b/model_judgment/x_single.jsonl": bad.encode(), "../evil_single.jsonl": LINE.encode()})
    import streamlit as st
    real = st.file_uploader
    monkeypatch.setattr(st, "file_uploader", lambda *a, **k: (real(*a, **k), [Upload("h.zip", data)])[1])
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    at.switch_page("app_pages/import_data.py").run()
    [b for b in at.button if b.label == "Import uploaded files"][0].click()
    at.run()
    assert not at.exception
    assert any("1 problem(s)" in e.value for e in at.error)
    kept = [p for p in tmp_path.iterdir() if p.name.startswith("judgelens-upload-")]
    assert len(kept) == 1  # kept for the retry
    [b for b in at.button if b.label == "Import again, skipping the bad lines"][0].click()
    at.run()
    assert not at.exception
    assert at.success[0].value == "1 file(s) imported, 0 unchanged (already imported)"
    assert ("note: skipped 1 zip member(s) whose path leads outside the zip's folder: ../evil_single.jsonl"
            in at.code[-1].value)
    assert [p for p in tmp_path.iterdir() if p.name.startswith("judgelens-upload-")] == []

    data = zip_of({"b/model_judgment/y_single.jsonl": b"\0" * (40 << 20)})
    monkeypatch.setattr(st, "file_uploader", lambda *a, **k: (real(*a, **k), [Upload("bomb.zip", data)])[1])
    [b for b in at.button if b.label == "Import uploaded files"][0].click()
    at.run()
    assert not at.exception
    assert [e.value for e in at.error] == ["**Upload refused: nothing was imported**"]
    assert "looks like a zip bomb" in at.code[-1].value
    assert [p for p in tmp_path.iterdir() if p.name.startswith("judgelens-upload-")] == []


# --- server folders: links out of the roots -----------------------------------------------------

def test_a_linked_file_outside_the_roots_is_refused(store, tmp_path):
    root = tmp_path / "root"
    (root / "b" / "model_judgment").mkdir(parents=True)
    (root / "b" / "model_judgment" / "ok_single.jsonl").write_text(LINE)
    secret = tmp_path / "outside" / "secret_single.jsonl"
    secret.parent.mkdir()
    secret.write_text(LINE)
    link = root / "b" / "model_judgment" / "link_single.jsonl"
    link.symlink_to(secret)
    with pytest.raises(PathNotAllowed) as info:
        ingest(store, [root], allowed_roots=[root])
    assert info.value.title == "Links out of the import folders"
    assert info.value.message == (
        f"1 file(s) to import lead outside the allowed import folders ({root}), so nothing was imported:\n"
        f"{link} -> {secret}\n"
        "Remove those links, or ask whoever runs this JudgeLens to add their folder to JUDGELENS_IMPORT_ROOTS.")
    with store.read() as cur:
        assert cur.execute("SELECT count(*) FROM sources").fetchone() == (0,)
    # a link that stays inside the roots is fine, and the CLI (no roots) follows links as before
    link.unlink()
    link.symlink_to(root / "b" / "model_judgment" / "ok_single.jsonl")
    assert len(ingest(store, [root], allowed_roots=[root]).imported) == 1


def test_a_linked_folder_outside_the_roots_is_refused(store, tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    outside = tmp_path / "outside" / "b" / "model_judgment"
    outside.mkdir(parents=True)
    (outside / "x_single.jsonl").write_text(LINE)
    (root / "b").symlink_to(outside.parent)
    with pytest.raises(PathNotAllowed):
        ingest(store, [root / "b"], allowed_roots=[root])


def test_the_import_page_refuses_links_out_of_the_roots(tmp_path, monkeypatch):
    root = tmp_path / "root"
    (root / "b" / "model_judgment").mkdir(parents=True)
    secret = tmp_path / "secret_single.jsonl"
    secret.write_text(LINE)
    (root / "b" / "model_judgment" / "s_single.jsonl").symlink_to(secret)
    monkeypatch.setenv("JUDGELENS_IMPORT_ROOTS", str(root))
    with Store(default_db_path()) as s, s.write() as cur:
        cur.execute("INSERT OR REPLACE INTO meta VALUES ('sample_loaded', 'yes')")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    at.switch_page("app_pages/import_data.py").run()
    at.session_state["imp_tab"] = "Server folder"  # the tabs are lazy: only the open one is drawn
    at.run()
    at.text_input(key="import_folder").set_value(str(root / "b"))
    [b for b in at.button if b.label == "Import from server"][0].click()
    at.run()
    assert not at.exception
    assert [e.value for e in at.error] == ["**Links out of the import folders**"]
    assert f"{root / 'b' / 'model_judgment' / 's_single.jsonl'} -> {secret}" in at.code[-1].value
