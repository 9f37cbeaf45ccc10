"""Where the repository's own files live (the bundled sample, templates, the default database)."""
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = REPO_ROOT / "data"
